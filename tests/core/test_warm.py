"""Warm starts (judgebias/warm.py): a job forked from the server behaves as its own
process.

Every test runs the real console scripts (`judgebias-warm`, `judgebias`) as processes.
The pipeline tests run their Snakemake and DVC commands warm (tests/helpers/project.py
`run`), and the Slurm test compares such a local run with one whose jobs the server
refuses (they descend from slurmd, not from Snakemake), so warm and ordinary jobs are
also compared artifact for artifact there.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from helpers.project import BIN, REPO, WARM

from judgebias.warm import SOCKET_ENV, refusal

JB = str(BIN / "judgebias")


def _params_with_secret(folder: Path) -> Path:
    """The default params with one model behind an API key named by WARM_TEST_KEY."""
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    model = params["panel"]["lumen-large"]
    model.update(backend="openai", base_url="http://127.0.0.1:9/v1",
                 api_key_env="WARM_TEST_KEY")
    model.pop("sim")
    (folder / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    return folder


def _sh(script: str, cwd: Path, env: dict[str, str] | None = None
        ) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", script], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}",
                               **(env or {})}, timeout=300)


@pytest.mark.slow  # a server start: ~2 s of imports
def test_a_warm_job_takes_the_jobs_streams_cwd_environment_and_exit_status(tmp_path):
    """The server starts without the key; each job brings its own environment."""
    project = _params_with_secret(tmp_path)
    script = (f"env -u WARM_TEST_KEY {JB} validate > no_key.out 2> no_key.err; "
              "echo $? > no_key.rc; "
              f"WARM_TEST_KEY=x {JB} --log logs/v.log validate > key.out; echo $? > key.rc; "
              f"{JB} plumbing step nosuch.step 2> bad.err; echo $? > bad.rc; "
              "printenv JUDGEBIAS_WARM_SOCKET > socket")
    done = _sh(" ".join(WARM) + " bash -c " + repr(script), project,
               env={"WARM_TEST_KEY": ""})
    assert done.returncode == 0, done.stderr
    assert Path((project / "socket").read_text().strip()).name == "socket"
    read = {p.name: p.read_text() for p in project.iterdir() if p.is_file()}
    assert read["no_key.rc"].strip() == "2" and read["no_key.out"] == ""
    assert "environment variable WARM_TEST_KEY is not set" in read["no_key.err"]
    assert read["key.rc"].strip() == "0" and "valid (6 panel models" in read["key.out"]
    assert (project / "logs/v.log").exists()  # relative to the job's own directory
    assert read["bad.rc"].strip() == "1" and "StepError" in read["bad.err"]
    # ... exactly what the same commands print and return without a server
    plain = _sh(f"WARM_TEST_KEY=x {JB} validate; echo rc=$?; "
                f"env -u WARM_TEST_KEY {JB} validate; echo rc=$?", project)
    assert plain.stdout == read["key.out"] + "rc=0\nrc=2\n"
    assert not Path(read["socket"].strip()).parent.exists()  # removed at the end


@pytest.mark.slow  # a server start: ~2 s of imports
def test_the_command_exit_status_is_the_servers():
    assert subprocess.run([*WARM, "bash", "-c", "exit 7"]).returncode == 7
    assert subprocess.run([str(BIN / "judgebias-warm")], capture_output=True).returncode == 2


@pytest.mark.slow  # a server start: ~2 s of imports
def test_only_the_commands_own_jobs_in_the_same_interpreter_are_served(tmp_path):
    """Another process that inherits the variable (a Slurm job on a node, a test) and a
    job of another virtualenv both start the ordinary way."""
    project = _params_with_secret(tmp_path)
    request = {"executable": sys.executable, "prefix": sys.prefix, "path": sys.path[1:]}
    assert refusal(request, os.getpid(), os.getppid()) is None  # a descendant
    assert refusal(request, os.getpid(), os.getpid()) is None  # the command itself
    unrelated = subprocess.Popen(["sleep", "30"])
    try:
        assert refusal(request, os.getpid(), unrelated.pid) == "not a job of the served command"
    finally:
        unrelated.kill()
    other = {**request, "prefix": "/elsewhere/venv"}
    assert refusal(other, os.getpid(), os.getppid()) == "another interpreter (prefix differs)"
    # a real refusal: the server serves `sleep`, this test process is no job of it
    server = subprocess.Popen([*WARM, "bash", "-c", "echo $JUDGEBIAS_WARM_SOCKET; sleep 60"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        socket_path = server.stdout.readline().strip()
        done = subprocess.run([JB, "validate"], cwd=project, capture_output=True, text=True,
                              env={**os.environ, SOCKET_ENV: socket_path,
                                   "WARM_TEST_KEY": "x"})
        assert done.returncode == 0 and "valid (6 panel models" in done.stdout
    finally:
        server.terminate()
        assert server.wait(timeout=30) != 0


def _children(pid: int) -> set[int]:
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.add(int(stat.parent.name))
    return found


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_a_killed_job_stops_its_forked_child(tmp_path):
    """kill -9 of a job's process (what Snakemake's cancel or an OOM kill does) stops the
    fork that runs it: nothing goes on writing or paying for a job that is gone."""
    script = (f"{JB} --params {REPO / 'params.yaml'} serve-sim --port 0 > serving.out & "
              "echo $! > client.pid; wait")
    server = subprocess.Popen([*WARM, "bash", "-c", script], cwd=tmp_path,
                              stderr=subprocess.PIPE, text=True)
    try:
        # only a hang catcher: the warm server imports the package before it forks, which
        # took over 60 s once beside the Slurm and vLLM-CPU tests on 2 cores
        deadline = time.monotonic() + 180
        serving = tmp_path / "serving.out"
        while (time.monotonic() < deadline and server.poll() is None
               and not (serving.exists() and "listening" in serving.read_text())):
            time.sleep(0.2)
        forks = {p for p in _children(server.pid)  # the server's forks, not bash
                 if b"judgebias-warm" in _cmdline(p)}
        if not forks:  # say why: the server ended (serve-sim failed?), or the job ran cold
            server.terminate()
            _, stderr = server.communicate(timeout=30)
            pytest.fail(f"no forked child serves (server exit status {server.returncode}, "
                        f"{deadline - time.monotonic():.0f} s before the deadline, "
                        f"serve-sim's output {_text(serving)!r}); the server's stderr:\n"
                        f"{stderr}")
        client = int((tmp_path / "client.pid").read_text())
        os.kill(client, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and any(Path(f"/proc/{p}").exists()
                                                  and _alive(p) for p in forks):
            time.sleep(0.2)
        assert not any(Path(f"/proc/{p}").exists() and _alive(p) for p in forks)
    finally:
        server.terminate()
        server.wait(timeout=30)


def _text(path: Path) -> str:
    return path.read_text() if path.exists() else "(none)"


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:  # ended since /proc was listed
        return b""


def _alive(pid: int) -> bool:
    """Running, not a zombie waiting to be reaped."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_child_takes_the_jobs_blas_thread_count():
    """Snakemake sets OPENBLAS_NUM_THREADS & co. per job (`threads`); the server loaded
    the BLAS runtimes (numpy's, scipy's) under its own. The child sets the job's count on
    them. In a fresh interpreter that loads what the server preloads (a test worker may
    hold other runtimes, e.g. torch's, loaded under other settings)."""
    script = """
import importlib, json, os
from judgebias.warm import PRELOAD, _adopt_thread_counts
for name in PRELOAD:
    importlib.import_module(name)
from threadpoolctl import threadpool_info
def blas():
    return sorted({p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"})
seen = {"loaded": blas()}
_adopt_thread_counts({"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "2"})
seen["openblas_1"] = blas()
_adopt_thread_counts({"OMP_NUM_THREADS": "2"})  # OpenBLAS falls back to OpenMP's
seen["omp_2"] = blas()
_adopt_thread_counts({})  # nothing set: one per CPU, as at load
seen["unset"] = blas()
print(json.dumps(seen))
"""
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, check=True)
    seen = json.loads(done.stdout)
    assert seen["loaded"], "no BLAS runtime loaded"
    assert seen["openblas_1"] == [1]
    assert seen["omp_2"] == [min(2, os.cpu_count() or 1)]
    assert seen["unset"] == seen["loaded"]
