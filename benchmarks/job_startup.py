"""Benchmark: what every pipeline job pays before its own work (start-up and params).

    .venv/bin/python benchmarks/job_startup.py [--repeat 9] [--baseline-src DIR]

Every Snakemake/DVC job runs one ``judgebias <step>`` process, which starts Python,
imports the CLI and validates params.yaml before the step does anything: with hundreds of
short jobs that start-up is most of a pipeline's wall time. This times ``judgebias
validate`` (exactly that start-up plus validation, no step work) cold (a new process, as
plain ``snakemake`` runs a job) and warm (forked from ``judgebias-warm``'s server, as
``make run`` runs it; judgebias/warm.py), and ``python -c pass`` (the interpreter alone),
as medians over ``--repeat`` interleaved runs. With ``--baseline-src`` (the ``src`` folder
of another checkout, e.g. a ``git worktree`` of an older commit) the cold command runs
against that code too, and the ratio is printed. Prints Markdown. The script re-runs
itself under ``judgebias-warm`` so that the warm runs have a server. CI smoke run
(tests/core/test_benchmarks.py): --repeat 1.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from judgebias.warm import SOCKET_ENV

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def once(command: list[str], src: Path | None, warm: bool) -> float:
    env = dict(os.environ)
    if not warm:
        env.pop(SOCKET_ENV, None)
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
    if SOCKET_ENV not in os.environ:  # again, with a warm server for the warm runs
        sys.exit(subprocess.run([str(BIN / "judgebias-warm"), "--", sys.executable,
                                 *sys.argv]).returncode)
    validate = [str(BIN / "judgebias"), "validate"]
    variants = {"python -c pass": ([sys.executable, "-c", "pass"], None, False),
                "judgebias validate, cold (plain snakemake)": (validate, None, False),
                "judgebias validate, warm (make run)": (validate, None, True)}
    if args.baseline_src:
        variants["judgebias validate, cold (baseline)"] = (validate, args.baseline_src.resolve(),
                                                           False)
    times: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(args.repeat):  # interleaved: every variant sees the same machine load
        for name, (command, src, warm) in variants.items():
            times[name].append(once(command, src, warm))
    print("| command | median (s) | runs |\n|---|---|---|")
    for name, values in times.items():
        print(f"| {name} | {statistics.median(values):.3f} | {len(values)} |")
    cold = statistics.median(times["judgebias validate, cold (plain snakemake)"])
    warm = statistics.median(times["judgebias validate, warm (make run)"])
    print(f"| ratio cold / warm | {cold / warm:.2f} | |")
    if args.baseline_src:
        ratio = statistics.median(times["judgebias validate, cold (baseline)"]) / cold
        print(f"| ratio baseline / this checkout (cold) | {ratio:.2f} | |")


if __name__ == "__main__":
    main()
