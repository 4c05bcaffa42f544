"""Benchmark: the default pipeline's wall time, where its job-seconds go, and its critical path.

    .venv/bin/python benchmarks/default_run.py [--cores 2] [--clone DIR]
        [--studies philautia ...] [--images N] [--models N] [--until RULE] [--keep DIR]
        [--cold] [--revisions REV... [--repeat N]]
        [--log SNAKEMAKE_LOG]

Issue 24's first figure: `make run` (every study, default params.yaml) on 2 cores. Four
modes:

- ``--clone DIR``: what a newcomer does. ``git clone`` of this repository's HEAD into DIR
  (which must not exist), then ``make setup`` (a new virtualenv from PyPI; the pip cache
  is whatever the machine has) and ``make run CORES=N``, each timed.
- default: the working tree's workflow (Snakefile, workflow/, src/) in a temporary
  project with params.yaml, run by this virtualenv's ``snakemake --cores N`` (no set-up)
  under ``judgebias-warm`` as ``make run`` runs it (``--cold``: plain snakemake, each job
  a cold process; judgebias/warm.py).
  ``--studies`` keeps only those studies, ``--images`` and ``--models`` set philautia's
  synthetic image count and keep its first models, ``--until`` stops after a rule's jobs
  (Snakemake's ``--until``; the CI smoke run, tests/core/test_benchmarks.py: philautia
  alone, 3 models, 6 images, until its captions).
- ``--log FILE``: only read a Snakemake log that exists (e.g. ``.snakemake/log/*.log``
  of your own ``make run``).
- ``--revisions REV...``: before and after, side by side. Each revision's workflow and
  code (``git archive REV``) in a temporary project of its own, its jobs running that
  copy of the code (``PYTHONPATH``), with this virtualenv's packages; the revisions run
  in turn ``--repeat`` times (alternating, so both see the same machine load) and each
  prints its median wall time and its last run's table. The caches a run fills (model
  journal, perception store, render cache, embeddings) start empty in every run, as on a
  fresh clone.

From the log (every job's start and finish time, input and output files) it prints
Markdown: the wall time; in the default and ``--revisions`` modes the CPU seconds of
every process and of Snakemake's own process (its scheduling, which the job-seconds do
not show but which takes cores from the jobs); the job-seconds per rule; how busy the
cores were (job-seconds / (wall x cores)); and the critical path: the chain of jobs,
each waiting for the one before it (an input of one is an output of the other), with the
largest sum of durations. No schedule on any number of cores finishes before it. The log
has whole seconds, so a job shows 0 to 1 s more or less than it took.
"""

from __future__ import annotations

import argparse
import copy
import os
import re
import resource
import shutil
import statistics
import subprocess
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import yaml
from dag_scale import BIN, REPO, project

STUDIES = ("philautia", "pomms", "mmb", "frame", "birch", "leaderboard")
STAMP = re.compile(r"^\[(\w{3} \w{3}\s+\d+ \d\d:\d\d:\d\d \d{4})\]$")


@dataclass
class Job:
    rule: str
    start: datetime
    end: datetime | None = None
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)

    @property
    def seconds(self) -> float:
        assert self.end is not None
        return (self.end - self.start).total_seconds()


def parse_log(text: str) -> dict[int, Job]:
    """Every finished job of a Snakemake log: its rule, start, end, inputs and outputs."""
    jobs: dict[int, Job] = {}
    now: datetime | None = None
    rule: str | None = None
    files: dict[str, list[str]] = {}
    for line in text.splitlines():
        if stamp := STAMP.match(line.strip()):
            now = datetime.strptime(stamp.group(1), "%a %b %d %H:%M:%S %Y")
        elif match := re.match(r"^(?:local)?rule (\w+):$", line):
            rule, files = match.group(1), {}
        elif rule and (match := re.match(r"^\s+(input|output): (.*)$", line)):
            files[match.group(1)] = match.group(2).split(", ")
        elif rule and now and (match := re.match(r"^\s+jobid: (\d+)$", line)):
            jobs[int(match.group(1))] = Job(rule, now, inputs=files.get("input", []),
                                            outputs=files.get("output", []))
            rule = None
        elif (now and (match := re.match(r"^Finished job(?:id:)? (\d+)", line))
              and (found := jobs.get(int(match.group(1)))) is not None):
            found.end = now
    return {jobid: job for jobid, job in jobs.items() if job.end is not None}


def critical_path(jobs: dict[int, Job]) -> tuple[float, list[int]]:
    """The chain of dependent jobs with the largest summed duration, and its length.

    A job depends on another when one of its inputs is one of the other's outputs (or
    lies inside an output folder). Jobs in start order are a topological order: a job
    starts only after every job it depends on has finished.
    """
    producer: dict[str, int] = {}
    for jobid, job in jobs.items():
        for path in job.outputs:
            producer[path.rstrip("/")] = jobid
    longest: dict[int, tuple[float, int | None]] = {}
    for jobid in sorted(jobs, key=lambda j: (jobs[j].start, j)):
        best: tuple[float, int | None] = (0.0, None)
        for path in jobs[jobid].inputs:
            parts = Path(path).parts
            for depth in range(len(parts), 0, -1):  # the file, or a folder containing it
                upstream = producer.get(str(Path(*parts[:depth])))
                if upstream is not None and upstream in longest:
                    best = max(best, (longest[upstream][0], upstream), key=lambda b: b[0])
                    break
        longest[jobid] = (best[0] + jobs[jobid].seconds, best[1])
    if not longest:
        return 0.0, []
    end = max(longest, key=lambda j: longest[j][0])
    chain: list[int] = []
    cursor: int | None = end
    while cursor is not None:
        chain.append(cursor)
        cursor = longest[cursor][1]
    return longest[end][0], chain[::-1]


def report(jobs: dict[int, Job], cores: int, timings: dict[str, float]) -> str:
    """The Markdown this benchmark prints."""
    wall = (max(j.end for j in jobs.values() if j.end) - min(j.start for j in jobs.values())
            ).total_seconds()
    per_rule: dict[str, list[float]] = defaultdict(list)
    for job in jobs.values():
        per_rule[job.rule].append(job.seconds)
    total = sum(sum(v) for v in per_rule.values())
    length, chain = critical_path(jobs)
    lines = [f"| {name} | {seconds:.1f} s |" for name, seconds in timings.items()]
    lines = ["| measure | value |", "|---|---|", *lines,
             f"| jobs | {len(jobs)} |",
             f"| pipeline wall (first job start to last job end) | {wall:.0f} s |",
             f"| job-seconds | {total:.0f} s |",
             f"| cores busy (job-s / (wall x {cores})) | {total / max(wall * cores, 1):.0%} |",
             f"| critical path | {length:.0f} s, {len(chain)} jobs |", "",
             "| rule | jobs | job-seconds | per job | share |", "|---|---|---|---|---|"]
    for rule, seconds in sorted(per_rule.items(), key=lambda item: -sum(item[1])):
        lines.append(f"| {rule} | {len(seconds)} | {sum(seconds):.0f} | "
                     f"{sum(seconds) / len(seconds):.1f} s | {sum(seconds) / total:.0%} |")
    lines += ["", "critical path: " + " -> ".join(
        f"{jobs[j].rule} ({jobs[j].seconds:.0f} s)" for j in chain)]
    return "\n".join(lines)


def timed(cmd: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    return time.perf_counter() - start


def newest_log(project: Path) -> Path:
    return max((project / ".snakemake" / "log").glob("*.snakemake.log"),
               key=lambda p: p.stat().st_mtime)


def fresh_clone(dest: Path, cores: int) -> tuple[Path, dict[str, float]]:
    """`git clone`, `make setup`, `make run`: the README's first command, timed in two."""
    subprocess.run(["git", "clone", "-q", str(REPO), str(dest)], check=True)
    timings = {"make setup (fresh virtualenv)": timed(["make", "setup"], dest),
               "make run (validate + pipeline)": timed(["make", "run", f"CORES={cores}"], dest)}
    return newest_log(dest), timings


def copied_project(dest: Path, args: argparse.Namespace) -> tuple[Path, dict[str, float]]:
    """The working tree's workflow with (a subset of) the default params, run here."""
    checkout = getattr(args, "checkout", REPO)
    params = copy.deepcopy(yaml.safe_load((checkout / "params.yaml").read_text()))
    for study in set(STUDIES) - set(args.studies):
        params.pop(study, None)
    if args.images is not None:
        params["philautia"]["dataset"]["synthetic"]["n_images"] = args.images
    if args.models is not None:
        params["philautia"]["models"] = params["philautia"]["models"][:args.models]
    project(dest, params, checkout)
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    if checkout != REPO:  # the revision's own code, not this virtualenv's editable install
        env["PYTHONPATH"] = str(dest / "src")
    own_cpu = dest / ".snakemake-cpu"
    # a revision from before judgebias-warm runs cold, as its own `make run` did, and its
    # `judgebias` is its own cli's main (this virtualenv's launcher is judgebias.warm's)
    has_warm = (checkout / "src/judgebias/warm.py").exists()
    cold = args.cold or not has_warm
    if not has_warm:
        launcher = dest / ".bin" / "judgebias"
        launcher.parent.mkdir()
        launcher.write_text(f"#!{BIN / 'python'}\nimport sys\nfrom judgebias.cli import main\n"
                            "sys.exit(main())\n")
        launcher.chmod(0o755)
        env["PATH"] = f"{launcher.parent}{os.pathsep}{env['PATH']}"
    command = [*([] if cold else [str(BIN / "judgebias-warm"), "--"]),
               str(BIN / "python"), "-c", CPU_PROBE, str(own_cpu),
               str(BIN / "snakemake"), "--cores", str(args.cores),
               *(["--until", args.until] if args.until else [])]
    before = _children_cpu()
    start = time.perf_counter()
    done = subprocess.run(command, cwd=dest, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"snakemake failed:\n{done.stderr[-3000:]}")
    return newest_log(dest), {
        "snakemake --cores N": wall,
        "CPU, every process (user + sys)": _children_cpu() - before,
        "CPU, snakemake's own process and its job launchers": float(own_cpu.read_text())}


# Runs snakemake (argv[2:]) and writes the CPU seconds of it and its waited-for children to
# argv[1]: its own scheduling work and each job's `judgebias` launcher, not a job forked by
# judgebias-warm (that one is the warm server's child).
CPU_PROBE = ("import pathlib, resource, subprocess, sys; rc = subprocess.call(sys.argv[2:]); "
             "u = resource.getrusage(resource.RUSAGE_CHILDREN); "
             "pathlib.Path(sys.argv[1]).write_text(str(u.ru_utime + u.ru_stime)); "
             "sys.exit(rc)")


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def revisions(args: argparse.Namespace, tmp: Path) -> str:
    """``--revisions``: each revision run ``--repeat`` times in turn; Markdown of each."""
    checkouts = {}
    for rev in args.revisions:
        folder = tmp / f"checkout-{len(checkouts)}"
        folder.mkdir()
        archive = subprocess.run(["git", "archive", rev], cwd=REPO, check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
        checkouts[rev] = folder
    walls: dict[str, list[float]] = defaultdict(list)
    tables: dict[str, str] = {}
    for round_ in range(args.repeat):
        for rev, folder in checkouts.items():
            dest = tmp / f"run-{round_}-{rev}"
            log, timings = copied_project(dest, argparse.Namespace(**{**vars(args),
                                                                      "checkout": folder}))
            walls[rev].append(timings["snakemake --cores N"])
            tables[rev] = report(parse_log(log.read_text()), args.cores, timings)
            shutil.rmtree(dest)
    lines = ["| revision | snakemake wall, median | runs |", "|---|---|---|"]
    lines += [f"| {rev} | {statistics.median(w):.0f} s | {', '.join(f'{x:.0f}' for x in w)} |"
              for rev, w in walls.items()]
    for rev, table in tables.items():
        lines += ["", f"### {rev} (last run)", "", table]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--clone", type=Path, default=None)
    parser.add_argument("--studies", nargs="+", choices=STUDIES, default=list(STUDIES))
    parser.add_argument("--images", type=int, default=None)
    parser.add_argument("--models", type=int, default=None)
    parser.add_argument("--until", default=None)
    parser.add_argument("--keep", type=Path, default=None)
    parser.add_argument("--log", type=Path, default=None)
    parser.add_argument("--revisions", nargs="+", default=None,
                        help="git revisions to run side by side (e.g. c0e85a8 HEAD)")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--cold", action="store_true",
                        help="plain snakemake: every job a cold process (make run is warm)")
    args = parser.parse_args()
    timings: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        if args.revisions:
            print(revisions(args, Path(tmp)))
            return
        if args.log:
            log = args.log
        elif args.clone:
            log, timings = fresh_clone(args.clone, args.cores)
        else:
            log, timings = copied_project(args.keep or Path(tmp) / "project", args)
        print(report(parse_log(log.read_text()), args.cores, timings))


if __name__ == "__main__":
    main()
