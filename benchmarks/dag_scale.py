"""Benchmark: planning the whole DAG at the papers' scale (issue: "the papers' scale").

    .venv/bin/python benchmarks/dag_scale.py [--models 12] [--images 4500] [--repeat 3]
        [--keep DIR]

The scale configuration (:func:`scale_params`, written to ``DIR/params.yaml`` with
``--keep``) is the default ``params.yaml`` grown to the papers' sizes: a panel of
``--models`` simulated models (the six of the default, then copies with their own ids and
signatures), philautia on ``--images`` images in both settings (seed 000 §5: 12 x 4,500 x
2 = 1,296,000 scores), Pomms unchanged, MMB's full factorial (its defaults are the
paper's), FRAME with 9 judges and 100 items per domain (seed 004: 500 images), BIRCH with
8 judges on 7,756 pairs (seed 003: MLLM-as-a-Judge's pairwise size).

It times ``snakemake -n`` (building the DAG, every job's params and code dependencies)
in a fresh project copy, and reports the number of jobs. Prints Markdown. CI smoke run
(tests/core/test_benchmarks.py): ``--models 6 --images 20 --repeat 1``.
"""

from __future__ import annotations

import argparse
import copy
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def scale_params(models: int, images: int) -> dict:
    """The default params grown to the papers' sizes (module docstring)."""
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    panel = params["panel"]
    base = list(panel)
    for index in range(len(base), models):
        source = base[index % len(base)]
        key = f"{source}-{index}"
        model = copy.deepcopy(panel[source])
        model["model_id"] = f"sim/{key}"
        model["sim"]["signature"] = f"sig{index}"
        panel[key] = model
    keys = list(panel)[:models]
    params["panel"] = {k: panel[k] for k in keys}
    philautia = params["philautia"]
    philautia["dataset"]["synthetic"]["n_images"] = images
    philautia["models"] = keys
    params["frame"]["models"] = keys[:9]
    params["frame"]["analysis_judge"] = keys[0]
    params["frame"]["dataset"]["synthetic"]["n_per_domain"] = 100
    params["birch"]["models"] = keys[:8]
    params["birch"]["datasets"]["synthetic"]["n_pairs"] = 7756
    for study in ("frame", "birch"):
        for key in params[study]["models"]:
            sim = params["panel"][key]["sim"]
            donor = next(panel[k]["sim"] for k in base if study in panel[k]["sim"])
            sim.setdefault(study, copy.deepcopy(donor[study]))
    return params


def project(dest: Path, params: dict, checkout: Path = REPO) -> Path:
    """A copy of `checkout`'s workflow and code with `params` as params.yaml."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in ("Snakefile", "workflow", "src"):
        source = checkout / name
        if source.is_dir():
            shutil.copytree(source, dest / name, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy(source, dest / name)
    (dest / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    return dest


def dry_run(folder: Path, *, own_code: bool = False, args: tuple[str, ...] = ("-n",)
            ) -> tuple[float, int]:
    """Seconds `snakemake -n` takes in `folder`, and its number of jobs (-1 if it does
    not say). With `own_code`, the project runs its own copy of the code (src/)."""
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    if own_code:
        env["PYTHONPATH"] = str(folder / "src")
    start = time.perf_counter()
    result = subprocess.run([str(BIN / "snakemake"), *args, "--cores", "1", "--quiet", "rules"],
                            cwd=folder, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(result.stdout + result.stderr)
    total = re.search(r"^total\s+(\d+)", result.stdout, re.MULTILINE)
    return elapsed, int(total.group(1)) if total else -1


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", type=int, default=12)
    parser.add_argument("--images", type=int, default=4500)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", type=Path, default=None)
    args = parser.parse_args()
    params = scale_params(args.models, args.images)
    with tempfile.TemporaryDirectory() as tmp:
        folder = project(args.keep or Path(tmp), params)
        runs = [dry_run(folder) for _ in range(args.repeat)]
    times = [t for t, _ in runs]
    print(f"| configuration | jobs | `snakemake -n` median (s) | runs |\n|---|---|---|---|\n"
          f"| {args.models} models, {args.images} images | {runs[0][1]} | "
          f"{statistics.median(times):.2f} | {', '.join(f'{t:.2f}' for t in times)} |")


if __name__ == "__main__":
    main()
