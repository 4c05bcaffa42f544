"""Benchmark: the README's set-up (`make setup`) with uv and with pip, side by side.

    .venv/bin/python benchmarks/setup_time.py [--installers uv pip] [--repeat 2]
        [--revs HEAD~1 HEAD] [--cold-uv] [--dry-run] [--set VAR=VALUE ...]

Issue 24's set-up figure. Each git revision in ``--revs`` (default: HEAD) is cloned once
into a temporary folder; each round then runs ``make setup INSTALLER=<installer>`` for
every revision and installer in turn (alternating, so all see the same machine load),
deleting ``.venv`` before each. ``--revs <before> <after>`` is a Makefile change's
before/after; each ``--set VAR=VALUE`` goes to every ``make`` (``--set TORCH=cpu``, say).
What it measures is a second clone on a machine: the package caches (pip's, uv's in
``~/.cache/uv``) are whatever the machine has, warm after the first round. ``--cold-uv``
adds uv with an empty cache of its own (``UV_CACHE_DIR`` in a temporary folder): a first
clone, downloading every wheel from PyPI (about 3 GB for PyTorch's CUDA build).
``--dry-run`` passes ``-n`` to make (the CI smoke run: the plumbing, not the figure).

Prints Markdown: per revision and installer, the median and every run's wall seconds, the
median CPU seconds (user + sys of make and all it ran: on a machine shared with other
work, the steadier figure), and the size of the virtualenv it made.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def folder_size(path: Path) -> int:
    """Bytes under `path` (0 if it does not exist)."""
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def children_cpu() -> float:
    """User + sys seconds of every waited-for child process so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_setup(clone: Path, installer: str, env: dict[str, str], dry_run: bool,
                make_vars: list[str]) -> tuple[float, float, int]:
    """One ``make setup`` from no virtualenv: its wall and CPU seconds, the virtualenv's
    bytes."""
    shutil.rmtree(clone / ".venv", ignore_errors=True)
    command = ["make", *(["-n"] if dry_run else []), "setup", f"INSTALLER={installer}",
               *make_vars]
    cpu = children_cpu()
    start = time.perf_counter()
    done = subprocess.run(command, cwd=clone, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - start
    cpu = children_cpu() - cpu
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stdout[-3000:]}"
                         f"{done.stderr[-3000:]}")
    return seconds, cpu, folder_size(clone / ".venv")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--installers", nargs="+", choices=["uv", "pip"], default=["uv", "pip"])
    parser.add_argument("--revs", nargs="+", default=["HEAD"],
                        help="git revisions to compare (each cloned once)")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--cold-uv", action="store_true")
    parser.add_argument("--dry-run", action="store_true")
    parser.add_argument("--set", dest="make_vars", action="append", default=[],
                        metavar="VAR=VALUE", help="passed to every make (e.g. TORCH=cpu)")
    args = parser.parse_args()
    if bad := [v for v in args.make_vars if "=" not in v]:
        parser.error(f"not VAR=VALUE: {' '.join(bad)}")
    with tempfile.TemporaryDirectory() as tmp:
        clones: dict[str, Path] = {}
        for i, rev in enumerate(args.revs):
            clones[rev] = Path(tmp) / f"clone{i}"
            subprocess.run(["git", "clone", "-q", "--no-checkout", str(REPO), str(clones[rev])],
                           check=True)
            sha = subprocess.run(["git", "rev-parse", rev], cwd=REPO, check=True,
                                 capture_output=True, text=True).stdout.strip()
            subprocess.run(["git", "checkout", "-q", sha], cwd=clones[rev], check=True)
        variants = [(name, name, {}) for name in args.installers]
        if args.cold_uv:
            variants.append(("uv, empty cache", "uv", {"UV_CACHE_DIR": ""}))
        runs: dict[tuple[str, str], list[tuple[float, float]]] = {}
        sizes: dict[tuple[str, str], int] = {}
        for _ in range(args.repeat):
            for rev, clone in clones.items():
                for label, installer, extra in variants:
                    env = dict(os.environ)
                    if "UV_CACHE_DIR" in extra:  # a new empty cache for every cold run
                        env["UV_CACHE_DIR"] = tempfile.mkdtemp(dir=tmp, prefix="uv-cache-")
                    seconds, cpu, size = timed_setup(clone, installer, env, args.dry_run,
                                                     args.make_vars)
                    runs.setdefault((rev, label), []).append((seconds, cpu))
                    sizes[rev, label] = size
                    if "UV_CACHE_DIR" in extra:
                        shutil.rmtree(env["UV_CACHE_DIR"], ignore_errors=True)
    extra_vars = "".join(f" {v}" for v in args.make_vars)
    print("| rev | make setup | median | runs (s) | CPU (median) | .venv |")
    print("|---|---|---|---|---|---|")
    for (rev, label), measured in runs.items():
        walls = [s for s, _ in measured]
        cpus = [c for _, c in measured]
        print(f"| {rev} | INSTALLER={label}{extra_vars} | {statistics.median(walls):.1f} s | "
              + ", ".join(f"{s:.1f}" for s in walls)
              + f" | {statistics.median(cpus):.1f} s | {sizes[rev, label] / 1e9:.2f} GB |")


if __name__ == "__main__":
    main()
