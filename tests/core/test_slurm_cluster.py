"""The pipeline on a real Slurm cluster through the shipped profile (issue 11, part 1).

A session fixture brings up a one-node Slurm 22.05 cluster on loopback without an
accounting database (tests/helpers/slurm_cluster.py; Debian's packages are installed on first use).
A small project (Philautia alone: three simulated models, one setting, 12 images) then runs
with `snakemake --profile workflow/profiles/slurm`, every job a Slurm job, and a second
copy runs locally with `--cores 2`: every artifact under data/ and results/ must be equal.

GPU jobs: no job of this project asks for a GPU (the default panel is all `sim`, every
`gpus: 0`), so none is submitted with `--gpus`. The shipped partitions.yaml sends a job
with a `gpu` resource to its `gpu` partition; the test cluster has a single partition,
`debug`, without GPUs (TEST_PARTITIONS below replaces the shipped file), where a GPU job
would fit no partition, fall back to the default one and be refused by sbatch (no GRES).
"""

from __future__ import annotations

import filecmp
import getpass
import json
import os
import subprocess
from pathlib import Path

import pandas as pd
import pytest
import yaml
from helpers.project import BIN, PANEL, WARM, make_project, study_params
from helpers.slurm_cluster import SlurmCluster, ensure_slurm_packages

pytestmark = [pytest.mark.slurm, pytest.mark.slow]


# The test cluster's only partition, for the plugin's partition selection.
TEST_PARTITIONS = {"partitions": {SlurmCluster.partition: {
    "max_runtime": 60, "max_mem_mb": 8192, "max_cpus_per_task": 3, "max_gpu": 0}}}
NODE_CPUS = 9  # declared, not real: see SLURM_FLAGS

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


def tiny_params(default_params: dict) -> dict:
    params = study_params(default_params, "philautia", small=True)
    philautia = params["philautia"]
    philautia["settings"] = {"ref_free": philautia["settings"]["ref_free"]}
    return params


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory):
    ensure_slurm_packages()
    with SlurmCluster(tmp_path_factory.mktemp("slurm-cluster"), cpus=NODE_CPUS) as cluster:
        yield cluster


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


def test_pipeline_on_slurm_equals_local_run(slurm_cluster, tmp_path, default_params):
    params = tiny_params(default_params)
    (tmp_path / "slurm").mkdir()
    (tmp_path / "local").mkdir()
    on_slurm = make_project(tmp_path / "slurm", params)
    local = make_project(tmp_path / "local", params)
    partitions = tmp_path / "partitions.yaml"
    partitions.write_text(yaml.safe_dump(TEST_PARTITIONS))

    env = {**slurm_cluster.env, "PATH": f"{BIN}{os.pathsep}{slurm_cluster.env['PATH']}",
           "USER": os.environ.get("USER") or getpass.getuser()}
    local_env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    # The local run goes alongside: the Slurm run mostly waits for its status checks.
    local_run = start_snakemake(local, ["--cores", "2", "--quiet"], local_env)
    slurm_run = start_snakemake(on_slurm, ["--profile", "workflow/profiles/slurm",
                                           *SLURM_FLAGS, "--slurm-partition-config",
                                           str(partitions)], env)
    try:
        out = finish_snakemake(slurm_run, on_slurm, timeout=600)
    finally:
        finish_snakemake(local_run, local, timeout=600)
    # every job went through sbatch, and the job state came from squeue, never sacct
    submitted = out.count("has been submitted with SLURM jobid")
    # the philautia project's 19 jobs (selfpref and the judge card included)
    assert submitted == 19, out[-5000:]
    assert "Falling back to 'sacct'" not in out, out[-5000:]
    job_logs = list((on_slurm / ".snakemake/slurm_logs").rglob("*.log"))
    assert len(job_logs) == submitted
    assert any("rule_score" in str(p) for p in job_logs)

    names = artifacts(local)
    assert names == artifacts(on_slurm)
    assert sum(n.endswith(".parquet") for n in names) >= 9 + 3 + 6
    for name in sorted(names):
        a, b = local / name, on_slurm / name
        if name.endswith(".parquet"):
            pd.testing.assert_frame_equal(pd.read_parquet(a), pd.read_parquet(b), obj=name)
        elif name.endswith(".json"):
            assert json.loads(a.read_text()) == json.loads(b.read_text()), name
        else:  # images, figures, the report: nothing in them depends on where a job ran
            assert filecmp.cmp(a, b, shallow=False), name
    metrics = json.loads((on_slurm / "results/philautia/ref_free/metrics.json").read_text())
    assert set(metrics["philautia"]) == set(PANEL)
