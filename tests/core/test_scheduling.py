"""How Snakemake schedules the workflow's jobs on a local machine (workflow/rules/common.smk).

Snakemake's command line always sets a job rate limit, and with one every scheduling
round starts a 1-s timer that starts another round; each finished job adds such a chain
and none ends, so the rounds per second grow with the jobs done. The workflow lifts the
limit for local runs (`onstart:`); this test counts the rounds of a small run, which
reaches into Snakemake's scheduler and so must notice when an upgrade moves it.
"""

from __future__ import annotations

import re

import pytest
from helpers.project import BIN, make_project, run, study_params

pytestmark = pytest.mark.slow  # two real Snakemake runs of 19 jobs each (~35 s)

ROUND = "Resources before job selection"  # Snakemake's debug line, once per round


def _rounds_and_jobs(folder, params: dict, *extra: str) -> tuple[int, int]:
    folder.mkdir()
    project = make_project(folder, params)
    out = run([str(BIN / "snakemake"), "--cores", "2", "--verbose", "--until", "score",
               *extra], project)
    log = out.stdout + out.stderr
    jobs = len(re.findall(r"^Finished jobid: \d+", log, flags=re.MULTILINE))
    return log.count(ROUND), jobs


def test_a_local_run_schedules_once_per_finished_job(tmp_path, default_params):
    params = study_params(default_params, "philautia", small=True)
    rounds, jobs = _rounds_and_jobs(tmp_path / "lifted", params)
    # the dataset, each model's captions and scores: 22 jobs, 21 rounds (89 without the hook)
    assert jobs >= 13
    assert rounds <= jobs + 2, f"{rounds} scheduling rounds for {jobs} jobs"
    # Snakemake's own behaviour, which the hook undoes: with the hooks off, the timers
    # add rounds while jobs run
    rounds, jobs = _rounds_and_jobs(tmp_path / "limited", params, "--no-hooks")
    assert rounds > 2 * jobs, "Snakemake no longer re-schedules on a timer: drop the hook"
