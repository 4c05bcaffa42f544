"""Benchmark: what every pipeline job pays before its own work (start-up and params).

    .venv/bin/python benchmarks/job_startup.py [--repeat 9] [--baseline-src DIR]

Every Snakemake/DVC job runs one ``judgebias <step>`` process, which starts Python,
imports the CLI and validates params.yaml before the step does anything: with hundreds of
short jobs that start-up is most of a pipeline's wall time. This times ``judgebias
validate`` (exactly that start-up plus validation, no step work) and ``python -c pass``
(the interpreter alone) as medians over ``--repeat`` alternating runs. With
``--baseline-src`` (the ``src`` folder of another checkout, e.g. a ``git worktree`` of an
older commit) the same command runs against that code too, interleaved, and the ratio is
printed. Prints Markdown. CI smoke run (tests/core/test_benchmarks.py): --repeat 1.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def once(command: list[str], src: Path | None) -> float:
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = str(src)
    start = time.perf_counter()
    subprocess.run(command, cwd=REPO, env=env, check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--baseline-src", type=Path, default=None)
    args = parser.parse_args()
    validate = [sys.executable, "-m", "judgebias.cli", "validate"]
    variants = {"python -c pass": ([sys.executable, "-c", "pass"], None),
                "judgebias validate (this checkout)": (validate, REPO / "src")}
    if args.baseline_src:
        variants["judgebias validate (baseline)"] = (validate, args.baseline_src.resolve())
    times: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(args.repeat):  # interleaved: every variant sees the same machine load
        for name, (command, src) in variants.items():
            times[name].append(once(command, src))
    print("| command | median (s) | runs |\n|---|---|---|")
    for name, values in times.items():
        print(f"| {name} | {statistics.median(values):.3f} | {len(values)} |")
    if args.baseline_src:
        ratio = (statistics.median(times["judgebias validate (baseline)"])
                 / statistics.median(times["judgebias validate (this checkout)"]))
        print(f"| ratio baseline / this checkout | {ratio:.2f} | |")


if __name__ == "__main__":
    main()
