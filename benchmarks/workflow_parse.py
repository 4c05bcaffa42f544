"""Benchmark: what every `snakemake` call of the workflow pays before it plans a job.

    .venv/bin/python benchmarks/workflow_parse.py [--repeat 5] [--study philautia]
        [--baseline DIR]

Every ``snakemake`` call (a run, a dry run, ``judgebias export-dvc``, the tests' hundred
or so) first executes the Snakefile: the rules files import their studies' helpers and
derive each rule's code dependencies (judgebias.workflow.codedeps), then Snakemake builds
the DAG. This times ``snakemake --list-rules`` (the Snakefile alone) and ``snakemake -n``
(the Snakefile and the DAG) on the default params and on a project running only
``--study`` (the other studies' blocks removed, as tests/helpers/project.study_params
does), beside ``snakemake -n`` on a one-rule Snakefile (Snakemake's own start-up, the
floor). Each project is a fresh copy of the workflow running its own code (PYTHONPATH at
its ``src``); with ``--baseline`` (the root of another checkout, e.g. a ``git worktree``
of an older commit) the same runs use that checkout's workflow and code too,
interleaved, and the ratio is printed. Prints Markdown: medians of ``--repeat`` runs, wall
time and CPU time (user + system of the ``snakemake`` process and its children, steadier
than wall time on a shared machine). CI smoke run (tests/core/test_benchmarks.py): ``--repeat 1``.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import tempfile
from pathlib import Path

import yaml
from dag_scale import REPO, dry_run, project

from judgebias.studies import STUDIES

COMMANDS = {"snakemake --list-rules": ("--list-rules",), "snakemake -n": ("-n",)}


def timed(folder: Path, **kwargs) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds and jobs of one `dag_scale.dry_run`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall, jobs = dry_run(folder, **kwargs)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return wall, cpu, jobs


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--study", default="philautia", choices=sorted(STUDIES))
    parser.add_argument("--baseline", type=Path, default=None,
                        help="the root of another checkout (its Snakefile, workflow, src)")
    args = parser.parse_args()
    default = yaml.safe_load((REPO / "params.yaml").read_text())
    one = {k: v for k, v in default.items() if k == args.study or k not in STUDIES}
    checkouts = {"this checkout": REPO}
    if args.baseline:
        checkouts["baseline"] = args.baseline.resolve()
    with tempfile.TemporaryDirectory() as tmp:
        floor = Path(tmp) / "floor"
        floor.mkdir()
        (floor / "Snakefile").write_text("rule all:\n    input: []\n")
        folders = {(name, params_name): project(Path(tmp) / f"{i}-{j}", params, root)
                   for i, (name, root) in enumerate(checkouts.items())
                   for j, (params_name, params) in enumerate(
                       (("default", default), (f"{args.study} only", one)))}
        times: dict[tuple[str, str, str], list[tuple[float, float]]] = {}
        jobs: dict[tuple[str, str], int] = {}
        for _ in range(args.repeat):  # interleaved: every variant sees the same load
            wall, cpu, _n = timed(floor)
            times.setdefault(("", "one-rule Snakefile", "snakemake -n"), []).append((wall, cpu))
            for (name, params_name), folder in folders.items():
                for command, flags in COMMANDS.items():
                    wall, cpu, n = timed(folder, own_code=True, args=flags)
                    times.setdefault((name, params_name, command), []).append((wall, cpu))
                    if flags == ("-n",):
                        jobs[name, params_name] = n
    print("| code | params | command | jobs | wall median (s) | CPU median (s) | wall runs |\n"
          "|---|---|---|---|---|---|---|")
    for (name, params_name, command), runs in times.items():
        n = jobs.get((name, params_name), "") if command == "snakemake -n" else ""
        print(f"| {name} | {params_name} | `{command}` | {n} | "
              f"{statistics.median(w for w, _ in runs):.2f} | "
              f"{statistics.median(c for _, c in runs):.2f} | "
              f"{', '.join(f'{w:.2f}' for w, _ in runs)} |")
    if args.baseline:
        for params_name in ("default", f"{args.study} only"):
            for command in COMMANDS:
                base, this = times["baseline", params_name, command], times[
                    "this checkout", params_name, command]
                ratios = [statistics.median(r[i] for r in base)
                          / statistics.median(r[i] for r in this) for i in (0, 1)]
                print(f"| ratio baseline / this checkout | {params_name} | `{command}` | | "
                      f"{ratios[0]:.2f} | {ratios[1]:.2f} | |")


if __name__ == "__main__":
    main()
