"""Benchmark: `judgebias plan` on each configs/ file (issue 23, "How it is checked").

    .venv/bin/python benchmarks/configs_plan.py [--repeat 3] [CONFIG ...]

Why: a researcher plans a paper's panel before downloading anything or paying for a call,
so the plan of the largest (configs/philautia_eval.yaml: 1.8M calls, every one estimated
from the sizes the config declares) must come back in seconds, and what it says should be
on record. For each config (default: every configs/*.yaml) it runs `judgebias --params
<config> plan --json` as a user does, in a fresh process in an empty folder (no data, no
journal: what a new clone sees): import, validation, every study's plan hook. It reports
the median wall time, the process's peak memory (its own ru_maxrss), and the plan's
totals: calls, and the cost online, at the providers' batch prices and as configured.
Prints Markdown. CI smoke run (tests/core/test_benchmarks.py): --repeat 1.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# The CLI in-process, then its own peak memory (kB on Linux) on stderr's last line.
CHILD = ("import resource, sys\nfrom judgebias.cli import main\n"
         "code = main(sys.argv[1:])\n"
         "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
         "sys.exit(code)")


def run_plan(config: Path, folder: str) -> tuple[float, int, dict]:
    """Seconds, peak memory (MB) and the JSON plan of one `judgebias plan --json`."""
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-c", CHILD, "--params", str(config), "plan",
                             "--json"], capture_output=True, text=True, cwd=folder,
                            check=True)
    seconds = time.perf_counter() - start
    peak_kb = int(result.stderr.strip().splitlines()[-1])
    return seconds, peak_kb // 1024, json.loads(result.stdout)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("configs", nargs="*", type=Path,
                        default=sorted((REPO / "configs").glob("*.yaml")))
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print("| config | models | calls | estimated | online $ | batch $ | as configured $ "
          "| not counted | plan s (median) | peak MB |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        for config in args.configs:
            runs = [run_plan(config.resolve(), folder) for _ in range(args.repeat)]
            plan, total = runs[-1][2], runs[-1][2]["total"]
            print(f"| {config.name} | {len(plan['models'])} | {total['needed']:,} "
                  f"| {total['estimated']:,} | {total['cost_online_usd']:,.2f} "
                  f"| {total['cost_batch_usd']:,.2f} | {total['cost_usd']:,.2f} "
                  f"| {len(plan['not_counted'])} "
                  f"| {statistics.median(r[0] for r in runs):.2f} "
                  f"| {max(r[1] for r in runs)} |")


if __name__ == "__main__":
    main()
