"""Benchmark: the Philautia-Eval analysis at the paper's scale, from score files on disk
to every philautia output (seed 000 §5: 12 models x 4,500 images x 2 settings =
1,296,000 scores).

    .venv/bin/python benchmarks/analysis_scale.py [--images 4500] [--models 12] [--repeat 3]

Writes the score artifacts the pipeline's ``score`` jobs write (the SCORES schema, one
Parquet file per (setting, evaluator, generator), 1% failed answers) for the scale
configuration of :func:`dag_scale.scale_params`, then runs, per setting, exactly the
pipeline's commands: ``judgebias plumbing step philautia.phi`` (reads the 144 score files into
Phi), ``philautia.philautia`` (Phi-tilde, philautia scores, tests, 1,000 bootstrap
replicates, 10,000 permutations), ``philautia.selfpref`` (the score-unit regression) and
``philautia.heatmaps``. Each command is its own process, as a
Snakemake job is; the benchmark reports each step's median wall time and its peak
resident memory (``wait4``'s ru_maxrss), and the total per run (both settings, every
step in sequence). Targets (issue 11): seconds, well under 2 GB.

CI smoke run (tests/core/test_benchmarks.py): --images 50 --models 4 --repeat 1.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import yaml
from dag_scale import BIN, scale_params

from judgebias.io.artifacts import write_table
from judgebias.studies.philautia.tables import (
    ANALYSIS_TABLES,
    FIGURES,
    SCORES,
    figure_path,
    scores_path,
    setting_file,
)
from judgebias.workflow.step_dispatch import command_arguments

SETTINGS = ("ref_free", "ref_based")
RAW = "The caption names the objects in the image correctly. The final score is {}."


def write_scores(root: Path, models: list[str], n_images: int, seed: int = 0) -> int:
    """One SCORES file per (setting, evaluator, generator): planted quality, a small
    self-preference, noise, 1% failed answers; returns the number of rows written."""
    rng = np.random.default_rng(seed)
    quality = dict(zip(models, rng.uniform(50, 90, len(models)), strict=True))
    images = [f"img{i:05d}" for i in range(n_images)]
    rows = 0
    for setting in SETTINGS:
        for evaluator in models:
            for generator in models:
                mean = quality[generator] + 5.0 * (generator == evaluator)
                expected = np.clip(mean + rng.normal(0, 10, n_images), 0, 100)
                failed = rng.random(n_images) < 0.01
                value = np.where(failed, np.nan, np.round(expected))
                frame = pd.DataFrame({
                    "image_id": images, "generator": generator, "evaluator": evaluator,
                    "setting": setting, "value": value, "label": None,
                    "expected": np.where(failed, np.nan, expected),
                    "mass": np.where(failed, np.nan, 0.98), "probs": "",
                    "logprobs_available": ~failed, "model_id": f"sim/{evaluator}",
                    "revision": "1", "backend": "sim", "prompt_id": f"gveval_{setting}",
                    "sampling": '{"temperature": 1.0}', "request_key": None,
                    "status": np.where(failed, "failed", "ok"),
                    "error": np.where(failed, "gave up after 8 retries", ""),
                    "raw_text": [RAW.format(int(v)) if v == v else "" for v in value],
                    "logprobs": "", "finish_reason": "stop"})
                write_table(frame, root / scores_path(setting, evaluator, generator), SCORES)
                rows += n_images
    return rows


def timed(cmd: list[str], cwd: Path) -> tuple[float, float]:
    """(wall seconds, peak resident GB) of one command, which must succeed."""
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    start = time.perf_counter()
    process = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:4])} failed:\n{process.stderr.read().decode()}")
    process.stderr.close()
    return elapsed, usage.ru_maxrss / 1024**2  # KiB on Linux


def steps(setting: str, models: list[str]) -> dict[str, list[str]]:
    """The pipeline's philautia commands for one setting (workflow/rules/philautia.smk)."""
    jb = [str(BIN / "judgebias"), "--params", "params.yaml", "plumbing", "step"]
    file = {name: setting_file(setting, name)
            for name in ("scores", "phi", "counts", "phi_tilde", "philautia", "selfpref")}
    named = {
        "phi": ({"scores": [scores_path(setting, e, g) for e in models for g in models]},
                {"long": file["scores"], "phi": file["phi"], "counts": file["counts"]}, {}),
        "philautia": ({"scores": file["scores"]},
                      {"metrics": setting_file(setting, "metrics", ".json"),
                       "tables": [setting_file(setting, t) for t in ANALYSIS_TABLES]}, {}),
        "selfpref": ({"scores": file["scores"], "philautia": file["philautia"]},
                     {"selfpref": file["selfpref"]}, {}),
        "heatmaps": ({k: file[k] for k in ("phi", "phi_tilde", "philautia")},
                     {"figures": [figure_path(setting, f) for f in FIGURES]},
                     {"setting": setting}),
    }
    return {name: [*jb, f"philautia.{name}", *command_arguments(*args).split()]
            for name, args in named.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--images", type=int, default=4500)
    parser.add_argument("--models", type=int, default=12)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    params = scale_params(max(args.models, 6), args.images)
    models = params["philautia"]["models"] = params["philautia"]["models"][:args.models]
    seconds: dict[str, list[float]] = {}
    memory: dict[str, float] = {}
    totals = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
        rows = write_scores(root, models, args.images)
        size = sum(p.stat().st_size for p in (root / "data").rglob("*.parquet"))
        for _ in range(args.repeat):
            total = 0.0
            for setting in SETTINGS:
                for name, cmd in steps(setting, models).items():
                    elapsed, peak = timed(cmd, root)
                    seconds.setdefault(name, []).append(elapsed)
                    memory[name] = max(memory.get(name, 0.0), peak)
                    total += elapsed
            totals.append(total)
    print(f"{rows:,} score rows ({args.models} models, {args.images} images, "
          f"{len(SETTINGS)} settings) in {args.models ** 2 * len(SETTINGS)} files, "
          f"{size / 1024**2:.0f} MB; medians of {args.repeat} runs")
    print("| step (per setting) | median (s) | peak memory (GB) |\n|---|---|---|")
    for name, values in seconds.items():
        print(f"| `judgebias {name}` | {statistics.median(values):.2f} | "
              f"{memory[name]:.2f} |")
    print(f"| all steps, both settings | {statistics.median(totals):.2f} | "
          f"{max(memory.values()):.2f} |")


if __name__ == "__main__":
    main()
