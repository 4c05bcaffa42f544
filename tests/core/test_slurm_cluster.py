"""The pipeline on a real Slurm cluster through the shipped profile (issues 11 and 25).

A session fixture brings up a one-node Slurm 22.05 cluster on loopback without an
accounting database (tests/helpers/slurm_cluster.py; Debian's packages are installed on
first use). The node has two GPUs as Slurm knows them (the generic resource `gpu` on
device files with no driver behind them) in a partition `gpu`, beside the default CPU
partition `debug`; TEST_PARTITIONS replaces the shipped partitions.yaml with these two.

* Every study at small sizes (helpers.project.small_all_studies) runs with `snakemake
  --profile workflow/profiles/slurm`, every job a Slurm job, and a second copy runs
  locally with `--cores 2`: every artifact under data/ and results/ must be equal. The
  rules that can ask for a GPU do (MMB's embeddings and FRAME's images from a tiny local
  diffusers pipeline; FRAME's beauty filter is the offline stand-in here, which runs on
  no device and asks for none, as GFPGAN's renders would: tests/core/test_gpu_assign.py),
  and each is checked as Slurm recorded it (`scontrol show job`): in the `gpu`
  partition with one GPU, every other job in `debug` with none; each GPU job's log
  shows the device Slurm gave it, taken through judgebias's one assignment path
  (models.gpu.job_gpus, issue 39), and the job still completes on the CPU (`device:
  auto`, no CUDA here; the local run's jobs, on a machine with no GPU, likewise).
* A vllm panel model with `resources.gpus: 2` is submitted to the `gpu` partition asking
  for two GPUs, gets both, and configures its engine for them (tensor_parallel_size 2, in
  its log); vLLM is not installed in this environment, so the job then fails on the
  import with a one-line error naming the model and the install hint, and the run fails.
"""

from __future__ import annotations

import filecmp
import getpass
import json
import os
import re
import subprocess
from pathlib import Path

import pandas as pd
import pytest
import yaml
from helpers.project import BIN, WARM, make_project, planned_jobs, small_all_studies, study_params
from helpers.slurm_cluster import SlurmCluster, ensure_slurm_packages
from helpers.tiny_diffusers import use_tiny_diffusers

from judgebias.models.vllm_backend import INSTALL_HINT

pytestmark = [pytest.mark.slurm, pytest.mark.slow]


NODE_CPUS = 9  # declared, not real: see SLURM_FLAGS
NODE_GPUS = 2
JUDGE = "corvid-pro"  # MMB's and FRAME's analysis judge in the default params
# The test cluster's partitions, for the plugin's partition selection: a job with a `gpu`
# resource fits only `gpu`; a CPU job fits both and the plugin prefers `debug`.
LIMITS = {"max_runtime": 60, "max_mem_mb": 8192, "max_cpus_per_task": 3}
TEST_PARTITIONS = {"partitions": {
    SlurmCluster.partition: {**LIMITS, "max_gpu": 0},
    SlurmCluster.gpu_partition: {**LIMITS, "max_gpu": NODE_GPUS}}}

# Test-only flags on top of the shipped profile (which already says `squeue`). Nine jobs at
# a time: the node declares nine CPUs on two cores, as a sim job is mostly Python start-up
# (snakemake in the job, then again under srun) and each round of jobs costs a status-check
# cycle, so the nine score jobs go in one round instead of three. The first status check
# comes 1 s after a submission instead of 40 s; after a check that finds no job finished the
# plugin waits 10 s longer than before, after one that does it waits 1 s again, so a round
# of jobs is seen finished after 12 s on a quiet machine and after 33 s on a loaded one (a
# job takes 10-22 s here from sbatch to its end).
# Small memory requests (the model jobs still ask for their 4000 MB); no retry hiding a
# failure; the job logs kept for the failure message.
SLURM_FLAGS = ["--jobs", str(NODE_CPUS), "--slurm-init-seconds-before-status-checks", "1",
               "--default-resources", "mem_mb=200", "runtime=30", "cpus_per_task=1",
               "--retries", "0", "--latency-wait", "10", "--slurm-keep-successful-logs"]


def every_study_with_gpus(default_params: dict, folder: Path) -> dict:
    """Every study, small, with each rule that can ask for a GPU asking for one: MMB's
    CLIP embeddings and FRAME's images from a local diffusers pipeline (a tiny random one
    built in `folder`; its template instructions, as the imported human scores must name
    every item). `frame.beauty.gpus` stays asked for: the beauty filter here is the
    offline stand-in, whose renders take no GPU whatever it says (only GFPGAN's do).

    Smaller than small_all_studies where jobs only repeat (75 Slurm jobs, not 119): one
    judge for FRAME, BIRCH and MMB, one value of four manipulations (the pairwise one and
    the beauty filter among them), pairs only, one mitigation prompt, no instructions
    written by a model; one Philautia setting (Pomms judges its items in it too), and the
    leaderboard's captions task with one model system and three judges (a plain one, a
    panel of two and Pomms' members). Each Slurm job reads the workflow twice, ~5 s of
    CPU."""
    params = small_all_studies(default_params)
    philautia = params["philautia"]
    philautia["settings"] = {"ref_based": philautia["settings"]["ref_based"]}
    params["pomms"].update(setting="ref_based", judgement_setting=None)
    board = params["leaderboard"]
    board["tasks"]["captions"]["systems"].pop("lumen-base")
    board["methods"] = {"plain": board["methods"]["plain"],
                        "panel": {"kind": "panel", "judges": [JUDGE, "lumen-mini"]},
                        "pomms": board["methods"]["pomms"]}
    params["mmb"]["embedding"]["gpus"] = 1
    params["mmb"]["instructions"]["grow"] = None
    params["birch"]["models"] = [JUDGE]
    frame = params["frame"]
    frame.update(models=[JUDGE], mitigation=["cot"], combinations=[2])
    frame["manipulations"] = {m: grid[:1] for m, grid in frame["manipulations"].items()
                              if m in ("brightness", "instruction_overlay", "padding",
                                       "beauty_filter")}
    frame["beauty"]["gpus"] = 1
    frame["dataset"]["synthetic"]["writer"] = None
    use_tiny_diffusers(params, folder / "text-to-image", folder)
    frame["dataset"]["synthetic"]["images"]["gpus"] = 1
    return params


# (rule, wildcard values joined as the plugin names a job's log folder): GPUs asked for
GPU_JOBS = {("mmb_embed", ""): 1, ("frame_images", ""): 1}


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory):
    ensure_slurm_packages()
    with SlurmCluster(tmp_path_factory.mktemp("slurm-cluster"), cpus=NODE_CPUS,
                      gpus=NODE_GPUS) as cluster:
        yield cluster


@pytest.fixture
def partitions(tmp_path) -> Path:
    path = tmp_path / "partitions.yaml"
    path.write_text(yaml.safe_dump(TEST_PARTITIONS))
    return path


def slurm_env(cluster: SlurmCluster) -> dict[str, str]:
    return {**cluster.env, "PATH": f"{BIN}{os.pathsep}{cluster.env['PATH']}",
            "USER": os.environ.get("USER") or getpass.getuser()}


def slurm_args(partitions: Path) -> list[str]:
    return ["--profile", "workflow/profiles/slurm", *SLURM_FLAGS,
            "--slurm-partition-config", str(partitions)]


def slurm_jobs(cluster: SlurmCluster, project: Path) -> dict[tuple[str, str], dict[str, str]]:
    """The project's Slurm jobs as slurmctld recorded them (`scontrol show job`), by
    (rule, wildcards) read off the log path the plugin gave each job
    (.snakemake/slurm_logs/rule_<rule>/<wildcards>/<jobid>.log)."""
    shown = cluster.run(["scontrol", "show", "job", "--oneliner"])
    assert shown.returncode == 0, shown.stderr
    logs = project / ".snakemake" / "slurm_logs"
    jobs = {}
    for line in shown.stdout.splitlines():
        fields = dict(re.findall(r"(\S+?)=(\S*)", line))
        log = Path(fields.get("StdOut", "/"))
        if not log.is_relative_to(logs):
            continue  # another test's job, or the cluster's smoke test
        folder = log.relative_to(logs).parent
        rule = folder.parts[0].removeprefix("rule_")
        key = (rule, "/".join(folder.parts[1:]))
        assert key not in jobs, f"{key} submitted twice: {line}"
        jobs[key] = fields
    return jobs


def gpus_asked(job: dict[str, str]) -> int:
    """The GPUs a job asked for (`--gpus=N` is recorded as TresPerJob=gres:gpu:N)."""
    match = re.fullmatch(r"gres:gpu:(\d+)", job.get("TresPerJob", ""))
    return int(match.group(1)) if match else 0


def start_snakemake(project: Path, args: list[str], env: dict) -> subprocess.Popen:
    """Snakemake under judgebias-warm, as `make run` starts it. The Slurm jobs inherit the
    server's socket and, on this one-machine cluster, reach it; the server refuses them
    (they descend from slurmd, not from Snakemake), so they run under their allocation,
    cold, while the local run's jobs are forked warm: the artifacts compared below are
    then also warm jobs' against ordinary ones'."""
    out = open(project / "snakemake.out", "w")  # noqa: SIM115 (closed below)
    command = [*WARM, str(BIN / "snakemake"), *args]
    proc = subprocess.Popen(command, cwd=project, env=env,
                            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    out.close()
    return proc


def finish_snakemake(proc: subprocess.Popen, project: Path, timeout: float) -> str:
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.terminate()  # snakemake cancels its Slurm jobs (scancel) on SIGTERM
        proc.wait(timeout=60)
    output = (project / "snakemake.out").read_text(errors="replace")
    if proc.returncode != 0:
        logs = "\n".join(f"--- {p}\n{p.read_text(errors='replace')[-3000:]}"
                         for p in sorted((project / ".snakemake/slurm_logs").rglob("*.log")))
        raise AssertionError(f"{' '.join(proc.args)} failed "
                             f"(exit {proc.returncode}):\n{output[-20000:]}\n{logs}")
    return output


def artifacts(project: Path) -> set[str]:
    return {str(p.relative_to(project)) for top in ("data", "results")
            for p in (project / top).rglob("*")
            if p.is_file() and p.name != ".snakemake_timestamp"}


def test_every_study_on_slurm_equals_local_run_and_gpu_jobs_get_gpus(
        slurm_cluster, tmp_path, default_params, partitions):
    params = every_study_with_gpus(default_params, tmp_path)
    (tmp_path / "slurm").mkdir()
    (tmp_path / "local").mkdir()
    on_slurm = make_project(tmp_path / "slurm", params)
    local = make_project(tmp_path / "local", params)
    planned = planned_jobs(local)

    local_env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    # The local run goes alongside: the Slurm run mostly waits for its status checks.
    local_run = start_snakemake(local, ["--cores", "2", "--quiet"], local_env)
    slurm_run = start_snakemake(on_slurm, slurm_args(partitions), slurm_env(slurm_cluster))
    try:
        out = finish_snakemake(slurm_run, on_slurm, timeout=1500)
    finally:
        finish_snakemake(local_run, local, timeout=1500)
    # every job went through sbatch, and the job state came from squeue, never sacct
    assert out.count("has been submitted with SLURM jobid") == sum(planned.values())
    assert "Falling back to 'sacct'" not in out, out[-5000:]

    jobs = slurm_jobs(slurm_cluster, on_slurm)
    assert len(jobs) == sum(planned.values())
    for key, job in jobs.items():
        expected = (slurm_cluster.gpu_partition, GPU_JOBS[key]) if key in GPU_JOBS else (
            slurm_cluster.partition, 0)
        assert (job["Partition"], gpus_asked(job)) == expected, (key, job)
        assert job["JobState"] == "COMPLETED", (key, job)
    assert set(GPU_JOBS) <= set(jobs)
    # each GPU job saw the device Slurm assigned, and ran on the CPU (no CUDA here)
    given = r"GPUs given to this job: CUDA_VISIBLE_DEVICES=[0-9]\n"
    for log in ("mmb/embed", "frame/images"):
        text = (on_slurm / "logs" / f"{log}.log").read_text()
        assert re.search(given, text) and re.search(
            r"computing on cpu \(CUDA_VISIBLE_DEVICES=[0-9]\)", text), text
    for log in ("beauty_filter", "padding"):  # CPU renders (the stand-in, pixel arithmetic)
        assert "GPUs given" not in (on_slurm / f"logs/frame/render/{log}.log").read_text()

    names = artifacts(local)
    assert names == artifacts(on_slurm)
    for study in ("philautia", "pomms", "mmb", "frame", "birch", "leaderboard"):
        assert any(n.startswith(f"results/{study}") for n in names), study
    for name in sorted(names):
        a, b = local / name, on_slurm / name
        if name.endswith(".parquet"):
            pd.testing.assert_frame_equal(pd.read_parquet(a), pd.read_parquet(b), obj=name)
        elif name.endswith(".json"):
            assert json.loads(a.read_text()) == json.loads(b.read_text()), name
        else:  # images, figures, the report: nothing in them depends on where a job ran
            assert filecmp.cmp(a, b, shallow=False), name


def test_a_vllm_model_on_two_gpus_is_submitted_for_both_and_split_over_them(
        slurm_cluster, tmp_path, default_params, partitions):
    params = study_params(default_params, "philautia", small=True)
    model = params["panel"]["lumen-mini"]
    model.pop("sim")
    model.update(backend="vllm", model_id="Qwen/Qwen2.5-VL-7B-Instruct",
                 resources={"gpus": 2, "mem_mb": 1000}, engine={"dtype": "bfloat16"})
    project = make_project(tmp_path, params)
    captions = project / "data/captions/lumen-mini.parquet"
    run_ = start_snakemake(project, [*slurm_args(partitions), "--verbose",
                                     str(captions.relative_to(project))],
                           slurm_env(slurm_cluster))
    with pytest.raises(AssertionError, match="failed"):
        finish_snakemake(run_, project, timeout=600)
    job = slurm_jobs(slurm_cluster, project)[("caption", "lumen-mini")]
    assert (job["Partition"], gpus_asked(job)) == (slurm_cluster.gpu_partition, 2), job
    # the plugin's sbatch line (--verbose) asked for them
    out = (project / "snakemake.out").read_text()
    sbatch = [line for line in out.splitlines()
              if line.startswith("sbatch call:") and "rule_caption" in line]
    assert len(sbatch) == 1, out[-5000:]
    assert " -p gpu " in sbatch[0] and sbatch[0].count("--gpus=2") == 1, sbatch[0]
    assert job["JobState"] == "FAILED", job
    log = (project / "logs/caption/lumen-mini.log").read_text()
    assert "GPUs given to this job: CUDA_VISIBLE_DEVICES=0,1" in log, log
    assert "'tensor_parallel_size': 2" in log and "'dtype': 'bfloat16'" in log, log
    assert f"ERROR judgebias: panel.lumen-mini (vllm {model['model_id']}): {INSTALL_HINT}" in log
    assert "Traceback" not in log, log  # a missing extra is a configuration error, not a bug
    assert not captions.exists()
