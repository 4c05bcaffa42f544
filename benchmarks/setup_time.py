"""Benchmark: the README's set-up (`make setup`) with uv and with pip, side by side.

    .venv/bin/python benchmarks/setup_time.py [--installers uv pip] [--repeat 2]
        [--cold-uv] [--dry-run]

Issue 24's set-up figure. The repository's HEAD is cloned once into a temporary folder;
each round then runs ``make setup INSTALLER=<installer>`` for every installer in turn
(alternating, so both see the same machine load), deleting ``.venv`` before each. What it
measures is a second clone on a machine: the package caches (pip's, uv's in
``~/.cache/uv``) are whatever the machine has, warm after the first round. ``--cold-uv``
adds uv with an empty cache of its own (``UV_CACHE_DIR`` in a temporary folder): a first
clone, downloading every wheel from PyPI (about 3 GB for PyTorch's CUDA build).
``--dry-run`` passes ``-n`` to make (the CI smoke run: the plumbing, not the figure).

Prints Markdown: per installer, the median and every run's seconds, and the size of the
virtualenv it made.
"""

from __future__ import annotations

import argparse
import os
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


def timed_setup(clone: Path, installer: str, env: dict[str, str], dry_run: bool
                ) -> tuple[float, int]:
    """One ``make setup`` from no virtualenv: its seconds and the virtualenv's bytes."""
    shutil.rmtree(clone / ".venv", ignore_errors=True)
    command = ["make", *(["-n"] if dry_run else []), "setup", f"INSTALLER={installer}"]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=clone, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stdout[-3000:]}"
                         f"{done.stderr[-3000:]}")
    return seconds, folder_size(clone / ".venv")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--installers", nargs="+", choices=["uv", "pip"], default=["uv", "pip"])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--cold-uv", action="store_true")
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        clone = Path(tmp) / "clone"
        subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
        runs: dict[str, list[float]] = {}
        sizes: dict[str, int] = {}
        variants = [(name, name, {}) for name in args.installers]
        if args.cold_uv:
            variants.append(("uv, empty cache", "uv", {"UV_CACHE_DIR": ""}))
        for _ in range(args.repeat):
            for label, installer, extra in variants:
                env = dict(os.environ)
                if "UV_CACHE_DIR" in extra:  # a new empty cache for every cold run
                    env["UV_CACHE_DIR"] = tempfile.mkdtemp(dir=tmp, prefix="uv-cache-")
                seconds, size = timed_setup(clone, installer, env, args.dry_run)
                runs.setdefault(label, []).append(seconds)
                sizes[label] = size
                if "UV_CACHE_DIR" in extra:
                    shutil.rmtree(env["UV_CACHE_DIR"], ignore_errors=True)
    print("| make setup | median | runs | .venv |")
    print("|---|---|---|---|")
    for label, seconds in runs.items():
        print(f"| INSTALLER={label} | {statistics.median(seconds):.1f} s | "
              + ", ".join(f"{s:.1f}" for s in seconds) + f" | {sizes[label] / 1e9:.2f} GB |")


if __name__ == "__main__":
    main()
