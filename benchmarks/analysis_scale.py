"""Benchmark: Philautia-Eval analysis at the paper's scale (seed 000 §5: 4,500 images,
12 models; 648,000 scores per setting, 1.296M for both settings).

    .venv/bin/python benchmarks/analysis_scale.py [--images 4500] [--models 12] [--repeat 3]

Prints the median wall time of each step over `--repeat` runs. CI smoke run
(tests/test_benchmarks.py): --images 50 --models 4 --repeat 1.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import pandas as pd

from judgebias.studies.philautia.analysis import analyse, phi_matrix, score_tensor


def synthetic_scores(n_images: int, n_models: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    models = [f"m{i:02d}" for i in range(n_models)]
    quality = rng.uniform(0.5, 0.9, n_models)
    g, e, k = np.meshgrid(np.arange(n_models), np.arange(n_models), np.arange(n_images),
                          indexing="ij")
    score = quality[g] + 0.05 * (g == e) + rng.normal(0, 0.1, g.shape)
    score = np.clip(score, 0, 1).ravel()
    score[rng.random(score.size) < 0.01] = np.nan  # 1% failed answers
    return pd.DataFrame({"image_id": [f"img{i}" for i in k.ravel()],
                         "generator": np.array(models)[g.ravel()],
                         "evaluator": np.array(models)[e.ravel()], "score": score}), models


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--images", type=int, default=4500)
    parser.add_argument("--models", type=int, default=12)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    scores, models = synthetic_scores(args.images, args.models)
    families = {m: f"f{i % 3}" for i, m in enumerate(models)}
    timings: dict[str, list[float]] = {"score_tensor+phi": [], "analyse (B=1000)": []}
    for _ in range(args.repeat):
        start = time.perf_counter()
        phi_matrix(score_tensor(scores, models)[1])
        timings["score_tensor+phi"].append(time.perf_counter() - start)
        start = time.perf_counter()
        analyse(scores, models, families, n_boot=1000, n_permutations=10_000)
        timings["analyse (B=1000)"].append(time.perf_counter() - start)
    print(f"{len(scores):,} scores ({args.images} images x {args.models}^2 cells)")
    for name, values in timings.items():
        print(f"  {name:20s} median {statistics.median(values):.2f} s over {args.repeat} runs")


if __name__ == "__main__":
    main()
