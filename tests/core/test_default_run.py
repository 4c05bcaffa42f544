"""benchmarks/default_run.py reads a Snakemake log into jobs and finds the critical path:
checked on a hand-written log whose answer is worked out below."""

from __future__ import annotations

import importlib.util
import sys

import pytest
from helpers.project import REPO

# a (1 s) -> b (4 s) and a -> c (2 s) -> d (3 s, reads a file inside c's output folder):
# chains a-b = 5 s and a-c-d = 6 s, so the critical path is a, c, d (6 s).
LOG = """\
[Wed Nov 25 10:00:00 2026]
rule a:
    output: data/x.parquet
    log: logs/a.log
    jobid: 1
[Wed Nov 25 10:00:01 2026]
Finished jobid: 1 (Rule: a)
[Wed Nov 25 10:00:01 2026]
rule b:
    input: data/x.parquet
    output: data/y.parquet
    jobid: 2
[Wed Nov 25 10:00:01 2026]
localrule c:
    input: data/x.parquet
    output: data/folder
    jobid: 3
[Wed Nov 25 10:00:03 2026]
Finished jobid: 3 (Rule: c)
[Wed Nov 25 10:00:03 2026]
rule d:
    input: data/folder/item.png, data/x.parquet
    output: results/d.json
    jobid: 4
[Wed Nov 25 10:00:05 2026]
Finished jobid: 2 (Rule: b)
[Wed Nov 25 10:00:06 2026]
Finished jobid: 4 (Rule: d)
[Wed Nov 25 10:00:06 2026]
rule never_finished:
    jobid: 5
"""


@pytest.fixture(scope="module")
def default_run():
    spec = importlib.util.spec_from_file_location("default_run",
                                                  REPO / "benchmarks" / "default_run.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(REPO / "benchmarks"))  # it imports dag_scale, as run from there
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


def test_the_log_gives_each_finished_job_its_seconds(default_run):
    jobs = default_run.parse_log(LOG)
    assert {j: (job.rule, job.seconds) for j, job in jobs.items()} == {
        1: ("a", 1), 2: ("b", 4), 3: ("c", 2), 4: ("d", 3)}
    assert jobs[4].inputs == ["data/folder/item.png", "data/x.parquet"]


def test_the_critical_path_is_the_longest_chain_of_dependent_jobs(default_run):
    assert default_run.critical_path(default_run.parse_log(LOG)) == (6.0, [1, 3, 4])
    table = default_run.report(default_run.parse_log(LOG), 2, {})
    assert "| job-seconds | 10 s |" in table and "| critical path | 6 s, 3 jobs |" in table
    assert "critical path: a (1 s) -> c (2 s) -> d (3 s)" in table
