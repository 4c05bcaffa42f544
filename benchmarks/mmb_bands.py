"""Benchmark: coverage of the error-coverage curves' 95 % bands (seed 002 Fig. 3 and Fig. 5).

    .venv/bin/python benchmarks/mmb_bands.py [--replicates 2000] [--train-pool 20]
        [--sampling-pool 100] [--train-seeds 3] [--sampling-seeds 20] [--n-boot 200]

Why: the report shades a band around each mean curve. The target is the mean curve over
the seeds' distribution (training seeds draw D_val, sampling seeds the prompt subset),
the judged data fixed. On a planted world (simulated pairs and judge: prompt slopes that
depend on a hidden image style, soft clusters that see it), the factorial runs a
population of train-pool x sampling-pool seeds once; the mean over it is the truth. Each
replicate draws the report's 3 training and 20 sampling seeds from the population (no
replacement) and builds both bands from those runs: runs resampled as independent (the
band before issue 20: crossed_bootstrap_band with every run under one training seed) and
the crossed-design band (bands.crossed_bootstrap_band). Coverage = share of (replicate,
coverage point) where the band holds the truth, per method and judge noise: Gaussian,
skewed (centred exponential) and discrete (probabilities on a 0.1 grid, so confidences
tie). Monte-Carlo error of a 95 % rate over R replicates: sqrt(.95 x .05 / R) (pointwise
rates are correlated along a curve, so read it as a lower bound). Prints Markdown.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from judgebias.studies.mmb.measures.bands import crossed_bootstrap_band, unit_curves
from judgebias.studies.mmb.measures.factorial import Design, Split, run_factorial

NOISES = ("gaussian", "skewed", "discrete")


def planted_split(noise: str, rng: np.random.Generator, n_test: int = 400,
                  n_pool: int = 300, n_prompts: int = 12) -> Split:
    """Pairs with a quality gap and one of 2 hidden styles; each prompt's slope depends on
    the style; p(A preferred) = sigmoid(slope x gap + bias + noise)."""
    n = n_test + n_pool
    gap, style = rng.normal(size=n), rng.integers(2, size=n)
    slopes = rng.uniform(0.2, 4.0, size=(2, n_prompts))
    bias = rng.normal(0, 0.3, size=n_prompts)
    shock = {"gaussian": rng.normal(0, 0.7, (n, n_prompts)),
             "skewed": rng.exponential(0.7, (n, n_prompts)) - 0.7,
             "discrete": rng.normal(0, 0.7, (n, n_prompts))}[noise]
    P = 1 / (1 + np.exp(-(slopes[style] * gap[:, None] + bias + shock)))
    if noise == "discrete":
        P = np.clip(np.round(P, 1), 0.05, 0.95)
    y = (rng.random(n) < 1 / (1 + np.exp(-2 * gap))).astype(int)
    logits = np.where(np.arange(2) == style[:, None], 2.0, 0.0) + rng.normal(0, 0.5, (n, 2))
    R = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    return Split(P[n_test:], y[n_test:], P[:n_test], y[:n_test],
                 {(2, 0): R[n_test:]}, {(2, 0): R[:n_test]})


def coverage(population: pd.DataFrame, args: argparse.Namespace,
             rng: np.random.Generator) -> list[dict]:
    """Rows of (method, band, coverage rate) for one planted world."""
    out = []
    for method, rows in population.groupby("method"):
        curves = unit_curves(rows)  # (train pool, sampling pool, G)
        truth = curves.mean(axis=(0, 1))
        hits = {"runs as independent": [], "crossed seeds": []}
        for r in range(args.replicates):
            t = rng.choice(curves.shape[0], args.train_seeds, replace=False)
            s = rng.choice(curves.shape[1], args.sampling_seeds, replace=False)
            sample = curves[np.ix_(t, s)]
            # every run as its own unit: one "training seed" holding all the runs
            _, low, high = crossed_bootstrap_band(sample.reshape(1, -1, sample.shape[2]),
                                                  n_boot=args.n_boot, seed=r)
            hits["runs as independent"].append((low <= truth) & (truth <= high))
            _, low, high = crossed_bootstrap_band(sample, n_boot=args.n_boot, seed=r)
            hits["crossed seeds"].append((low <= truth) & (truth <= high))
        out += [{"method": method, "band": band, "coverage": float(np.mean(h))}
                for band, h in hits.items()]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=2000)
    parser.add_argument("--train-pool", type=int, default=20)
    parser.add_argument("--sampling-pool", type=int, default=100)
    parser.add_argument("--train-seeds", type=int, default=3)
    parser.add_argument("--sampling-seeds", type=int, default=20)
    parser.add_argument("--n-boot", type=int, default=200)
    parser.add_argument("--noises", nargs="+", default=list(NOISES), choices=NOISES)
    args = parser.parse_args()
    start = time.perf_counter()
    rows = []
    for i, noise in enumerate(args.noises):
        rng = np.random.default_rng(i)
        design = Design(n_prompts=[5], n_val=[10], train_seeds=range(args.train_pool),
                        sampling_seeds=range(args.sampling_pool),
                        coverages=np.linspace(0.1, 1, 10))
        population = run_factorial(planted_split(noise, rng), design)
        rows += [{"noise": noise, **row} for row in coverage(population, args, rng)]
    table = pd.DataFrame(rows).pivot_table(index=["noise", "method"], columns="band",
                                           values="coverage")
    mc = np.sqrt(0.95 * 0.05 / args.replicates)
    print(f"Pointwise coverage of the 95 % bands, {args.replicates} replicates of "
          f"{args.train_seeds} training x {args.sampling_seeds} sampling seeds "
          f"(MC error >= {mc:.3f}); {time.perf_counter() - start:.0f} s\n")
    print(table.to_markdown(floatfmt=".3f"))


if __name__ == "__main__":
    main()
