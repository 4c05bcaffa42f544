"""Sharing a Snakemake-built project through DVC remotes (issue 11, part 2).

One small project (Philautia on one setting, and Pomms) is built by Snakemake, recorded in
dvc.lock without recomputing (`judgebias dvc-record`), pushed to a local-folder remote and
to an SSH remote on loopback, and cloned afresh for each remote: after the one command the
README gives (`judgebias dvc pull`: `dvc pull`, then every job's Snakemake record) neither
DVC nor Snakemake has anything to do. The metrics of the committed revision stay
readable (`dvc metrics diff`): the judge card's headline cells, a column per judge.

The SSH server is Debian's openssh-server, installed if missing (under a lock, for
pytest-xdist), with a private sshd_config (its own host key, port and authorized_keys,
so root's ~/.ssh is left alone) started by absolute path. Every command runs with HOME
set to a temporary folder whose ~/.ssh/known_hosts holds the server's key.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from helpers.project import BIN, make_project, study_params, write_params

from judgebias.workflow.paramstamp import PARAMS_DIR

SSHD = Path("/usr/sbin/sshd")
UP_TO_DATE = "Data and pipelines are up to date."
PANEL = ["lumen-large", "lumen-mini", "corvid-pro"]

pytestmark = [pytest.mark.remote, pytest.mark.slow]


def remote_params(default_params: dict) -> dict:
    """test_pipeline's small project on the reference-free setting only (Pomms reads it,
    and scores its judgement datasets with it too)."""
    params = study_params(default_params, "philautia", "pomms", small=True)
    params["philautia"]["settings"].pop("ref_based")
    params["pomms"]["judgement_setting"] = None
    return params


class Env:
    """Commands with BIN first on PATH and HOME (so ~/.ssh) in a temporary folder."""

    def __init__(self, home: Path):
        self.vars = {**os.environ, "HOME": str(home),
                     "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}

    def run(self, cmd: list[str], cwd: Path, check: bool = True) -> subprocess.CompletedProcess:
        result = subprocess.run(cmd, cwd=cwd, env=self.vars, capture_output=True, text=True,
                                timeout=600, stdin=subprocess.DEVNULL)
        if check and result.returncode != 0:
            raise AssertionError(f"{' '.join(cmd)} failed:\n{result.stdout}\n{result.stderr}")
        return result

    def dvc(self, cwd: Path, *args: str) -> str:
        result = self.run([str(BIN / "dvc"), *args], cwd)
        return result.stdout + result.stderr

    def dvc_json(self, cwd: Path, *args: str):
        """A `dvc ... --json` answer (stdout only: warnings go to stderr)."""
        return json.loads(self.run([str(BIN / "dvc"), *args, "--json"], cwd).stdout)

    def git(self, cwd: Path, *args: str) -> str:
        return self.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd).stdout

    def planned(self, cwd: Path) -> list[str]:
        """The rules of the jobs `snakemake --dry-run` would run (`all` left out)."""
        out = self.run([str(BIN / "snakemake"), "--dry-run", "--cores", "1"], cwd).stdout
        rules = re.findall(r"^(?:local)?rule (\w+):$", out, flags=re.M)
        return sorted(r for r in rules if r != "all")


@pytest.fixture(scope="session")
def openssh(tmp_path_factory) -> Path:
    """Debian's openssh-server and -client, installed once; the lock (in the folder all
    pytest-xdist workers share) serialises the workers, apt's lock timeout other apt users."""
    with open(tmp_path_factory.getbasetemp().parent / "openssh-install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (SSHD.exists() and shutil.which("ssh-keyscan") and shutil.which("ssh")):
            apt = ["apt-get", "-o", "DPkg::Lock::Timeout=600", "install", "-y", "-q",
                   "--no-install-recommends", "openssh-server", "openssh-client"]
            env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
            if subprocess.run(apt, env=env, capture_output=True).returncode != 0:
                subprocess.run(["apt-get", "-o", "DPkg::Lock::Timeout=600", "update", "-q"],
                               env=env, capture_output=True, check=True)
                subprocess.run(apt, env=env, capture_output=True, check=True)
    return SSHD


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def sshd(openssh, tmp_path) -> Iterator[dict]:
    """sshd on a free loopback port, key login for root; torn down after the test."""
    base = tmp_path / "sshd"
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh").chmod(0o700)
    base.mkdir()
    for name in ("host_key", "client_key"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(base / name)],
                       check=True)
    authorized = base / "authorized_keys"
    shutil.copy(base / "client_key.pub", authorized)
    authorized.chmod(0o600)
    port = free_port()
    config = base / "sshd_config"
    config.write_text("\n".join([
        f"Port {port}", "ListenAddress 127.0.0.1", f"HostKey {base / 'host_key'}",
        f"PidFile {base / 'sshd.pid'}", f"AuthorizedKeysFile {authorized}",
        "PermitRootLogin prohibit-password", "PasswordAuthentication no",
        "KbdInteractiveAuthentication no", "UsePAM no",
        "StrictModes no",  # the key files live under /tmp (world-writable) by design
        "Subsystem sftp internal-sftp", ""]))
    Path("/run/sshd").mkdir(parents=True, exist_ok=True)  # sshd's privilege separation
    server = subprocess.Popen([str(openssh), "-D", "-e", "-f", str(config)],
                              stdout=subprocess.DEVNULL, stderr=(base / "sshd.log").open("w"))
    try:
        known = ""
        for _ in range(50):
            scan = subprocess.run(["ssh-keyscan", "-p", str(port), "localhost"],
                                  capture_output=True, text=True)
            known = scan.stdout
            if known.strip() or server.poll() is not None:
                break
            time.sleep(0.2)
        assert known.startswith(f"[localhost]:{port} "), (base / "sshd.log").read_text()
        (home / ".ssh/known_hosts").write_text(known)
        (home / ".ssh/known_hosts").chmod(0o600)
        # OpenSSH checks the host key strictly: the server and the key login work. (It finds
        # ~ in the password database, not in $HOME, hence UserKnownHostsFile; asyncssh,
        # under dvc-ssh, expands $HOME.)
        login = subprocess.run(
            ["ssh", "-p", str(port), "-i", str(base / "client_key"), "-o", "BatchMode=yes",
             "-o", "StrictHostKeyChecking=yes",
             "-o", f"UserKnownHostsFile={home / '.ssh/known_hosts'}", "root@localhost", "true"],
            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        assert login.returncode == 0, login.stderr
        yield {"port": port, "key": base / "client_key", "home": home,
               "store": tmp_path / "ssh_store"}
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def test_snakemake_outputs_travel_through_dvc_remotes(tmp_path, default_params, sshd):
    env = Env(sshd["home"])
    (tmp_path / "origin").mkdir()
    origin = make_project(tmp_path / "origin", remote_params(default_params))
    env.run([str(BIN / "judgebias"), "export-dvc"], origin)
    env.git(origin, "init", "-q")
    env.git(origin, "add", "-A")
    env.git(origin, "commit", "-qm", "project")

    # 1. Snakemake builds; dvc.lock records it without running a stage again.
    env.run([str(BIN / "snakemake"), "--cores", "2", "--quiet"], origin)
    assert UP_TO_DATE not in env.dvc(origin, "status")  # DVC has no record yet
    recorded = env.run([str(BIN / "judgebias"), "dvc-record"], origin).stdout
    assert UP_TO_DATE in recorded  # its last step is `dvc status`
    assert env.planned(origin) == []  # recording left Snakemake's view alone
    lock = yaml.safe_load((origin / "dvc.lock").read_text())["stages"]
    philautia = lock["philautia__ref_free"]
    assert lock["params"]["params"]["params.yaml"]["philautia"]["ddof"] == 0  # dvc_export
    assert "results/philautia/ref_free/scores.parquet" in {d["path"] for d in philautia["deps"]}
    stamp = next(d["path"] for d in philautia["deps"] if d["path"].startswith(PARAMS_DIR))
    assert json.loads((origin / stamp).read_text())["philautia.ddof"] == 0
    assert "results/philautia/ref_free/metrics.json" in {o["path"] for o in philautia["outs"]}

    # 2. Two remotes, URLs committed; the SSH login is each side's own (.dvc/config.local).
    local_store = tmp_path / "local_store"
    ssh_url = f"ssh://localhost:{sshd['port']}{sshd['store']}"
    env.dvc(origin, "remote", "add", "-d", "folder", str(local_store))
    env.dvc(origin, "remote", "add", "box", ssh_url)

    def ssh_login(project: Path) -> None:
        env.dvc(project, "remote", "modify", "--local", "box", "user", "root")
        env.dvc(project, "remote", "modify", "--local", "box", "keyfile", str(sshd["key"]))

    ssh_login(origin)
    for remote in ("folder", "box"):
        assert "pushed" in env.dvc(origin, "push", "-r", remote)
    env.git(origin, "add", "dvc.lock", ".dvc/config")
    env.git(origin, "commit", "-qm", "results: dvc.lock and remotes")
    by_origin = (origin / "results/philautia/ref_free/metrics.json").read_text()

    for remote in ("folder", "box"):
        clone = tmp_path / f"clone_{remote}"
        env.run(["git", "clone", "-q", str(origin), str(clone)], tmp_path)
        assert not (clone / ".dvc/config.local").exists()  # the login does not travel
        if remote == "box":
            ssh_login(clone)
        # The README's one command after a clone: dvc pull, then every job's Snakemake
        # record (file times in the order of the DAG).
        said = env.run([str(BIN / "judgebias"), "dvc", "pull", "-r", remote], clone).stdout
        assert "snakemake has nothing to do" in said
        assert (clone / "results/philautia/ref_free/metrics.json").read_text() == by_origin
        assert UP_TO_DATE in env.dvc(clone, "status")
        if remote == "box":
            assert "Running stage" not in env.dvc(clone, "repro")
        assert env.planned(clone) == [], remote
        # no job ran: no model was called (the pull restored only the stamps there)
        assert not list((clone / ".judgebias").rglob("*.sqlite"))
        assert (clone / ".judgebias/code/caption.json").is_file()
        assert (clone / stamp).is_file()

    # 3. Readable metrics: the judge card's headline cells only (a file per headline
    # measure, a number per judge: issue 42 item 7), and the committed revision's values
    # (read from the cache through dvc.lock) next to the workspace's after a change.
    metrics = env.dvc_json(clone, "metrics", "show")[""]["data"]
    assert metrics and all(path.startswith("results/card/philautia.") for path in metrics)
    by_judge = {path: entry["data"] for path, entry in metrics.items()}
    judges = set().union(*by_judge.values())
    assert judges and judges <= set(PANEL)  # a judge without an estimate is left out
    shown = env.run([str(BIN / "dvc"), "metrics", "show"], clone).stdout.splitlines()
    assert set(shown[0].split()) == {"Path", *judges}  # a column per judge
    assert max(map(len, shown)) <= 120, "\n".join(shown)
    plots = env.dvc_json(clone, "plots", "show")
    assert not plots.get("errors") and plots["data"]  # the figures, as image plots
    params = remote_params(default_params)
    params["philautia"]["ddof"] = 1
    write_params(clone, params)
    assert env.planned(clone) == ["card", "heatmaps", "philautia", "pomms", "pomms_heatmap",
                                  "report", "selfpref"]
    env.run([str(BIN / "snakemake"), "--cores", "2", "--quiet"], clone)
    diff = env.dvc_json(clone, "metrics", "diff", "--all")
    assert set(diff) == set(by_judge)
    for path, values in by_judge.items():
        assert {judge: change["old"] for judge, change in diff[path].items()} == values
    table = env.run([str(BIN / "dvc"), "exp", "show", "--no-pager", "--only-changed", "--csv"],
                    clone).stdout
    header = table.splitlines()[0].split(",")
    assert "philautia.ddof" in header
    assert not [c for c in header if c.startswith(("panel.", "src/"))], header
