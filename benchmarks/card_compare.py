"""Benchmark: the interval of a measure's change between two runs (`judgebias card
--compare`), its coverage and its false "moved" rate (issue 22, item 3).

    .venv/bin/python benchmarks/card_compare.py [--datasets 2000] [--ns 30 100 400]
        [--resamples 999] [--seed 0]

Why: `judgebias.card.compare.compare` builds the change B - A of a card measure and its
95% interval from the two runs' own 95% intervals, (B - A) +- 1.96 sqrt(se_A^2 + se_B^2)
with se = half-width / 1.96 (its module docstring). That is exact for independent normal
estimates; the card's intervals are often bootstrap percentile intervals of means and
proportions on small samples, and two runs of a comparison often judged the *same* items
(a new prompt on the same images), which makes the two estimates positively correlated.
This measures what the interval does in both cases, through the real `compare` function
on real card tables.

Each data set: n items; run A's per-item values x_i and run B's y_i; each run's card row
is the mean with a percentile bootstrap 95% interval over its items (``--resamples``), as
the studies compute them. The change's truth is E[y] - E[x]. Worlds (``noise``):
``normal``; ``skewed`` (Exp(1), right-skewed); ``discrete`` (Bernoulli(0.3): an accuracy);
each with ``design`` ``independent`` (B judged new items) or ``paired`` (B judged the
same items: y_i = x_i + delta + e_i with a per-item correlation of about 0.7). Rows report
the coverage of the change's interval at delta = 0.1 sd and the rate at which it reports
"moved" (interval excludes 0) at delta = 0, which should be at most 0.05 (it is the test's
size). Prints Markdown.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from judgebias.card.compare import compare
from judgebias.stats.bootstrap import bootstrap_weights

NOISES = ("normal", "skewed", "discrete")
DESIGNS = ("independent", "paired")


def draw(noise: str, n: int, rng: np.random.Generator) -> tuple[np.ndarray, float, float]:
    """n item values, their population mean and sd."""
    if noise == "normal":
        return rng.normal(0.0, 1.0, n), 0.0, 1.0
    if noise == "skewed":
        return rng.exponential(1.0, n), 1.0, 1.0
    return (rng.random(n) < 0.3).astype(float), 0.3, float(np.sqrt(0.21))


def runs(noise: str, design: str, n: int, delta: float, rng: np.random.Generator
         ) -> tuple[np.ndarray, np.ndarray, float]:
    """Per-item values of run A and run B, and the true change."""
    x, mean, sd = draw(noise, n, rng)
    if design == "independent":
        y, _, _ = draw(noise, n, rng)
        return x, y + delta * sd, delta * sd
    if noise == "discrete":  # the same items, a flip of 30% of the verdicts
        flip = rng.random(n) < 0.3
        y = np.where(flip, (rng.random(n) < 0.3).astype(float), x)
        y = np.where(rng.random(n) < delta * sd, 1.0, y)  # raise the rate by ~delta sd
        truth = (0.3 * (1 - delta * sd) + delta * sd) - 0.3
        return x, y, truth
    e, _, _ = draw(noise, n, rng)
    return x, x + (e - mean) * 0.65 + delta * sd, delta * sd


def card(values: np.ndarray, resamples: int, rng: np.random.Generator) -> pd.DataFrame:
    """Card rows of D runs (the columns of `values`, (n, D)): each run's mean and its
    percentile bootstrap 95% interval over its items, as the studies compute them."""
    n, count = values.shape
    boot = bootstrap_weights(n, resamples, rng) @ values / n  # (resamples, D)
    low, high = np.percentile(boot, [2.5, 97.5], axis=0)
    return pd.DataFrame({"model": "m", "study": "s", "measure": [f"x{k}" for k in
                                                                  range(count)],
                         "setting": "", "label": "x", "unit": "",
                         "estimate": values.mean(axis=0), "ci_low": low, "ci_high": high})


def world(noise: str, design: str, n: int, delta: float, datasets: int, resamples: int,
          rng: np.random.Generator) -> tuple[float, float]:
    """Coverage of the change's interval, and its 'moved' rate, over `datasets` pairs of
    runs (one `compare` call for all of them: each data set is its own measure)."""
    pairs = [runs(noise, design, n, delta, rng) for _ in range(datasets)]
    a = card(np.column_stack([x for x, _, _ in pairs]), resamples, rng)
    b = card(np.column_stack([y for _, y, _ in pairs]), resamples, rng)
    truth = np.array([t for _, _, t in pairs])
    change = compare(a, b).set_index("measure").loc[a["measure"]]
    covered = (change["ci_low"].to_numpy() <= truth) & (truth <= change["ci_high"].to_numpy())
    return float(covered.mean()), float(change["moved"].mean())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=int, default=2000)
    parser.add_argument("--ns", type=int, nargs="+", default=[30, 100, 400])
    parser.add_argument("--resamples", type=int, default=999)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    mc = 1.96 * np.sqrt(0.05 * 0.95 / args.datasets)
    print(f"{args.datasets} data sets per row (Monte-Carlo 95% error of a 0.05 rate "
          f"+-{mc:.3f}); percentile bootstrap intervals per run, {args.resamples} "
          "resamples\n")
    print("| noise | design | n | coverage at delta = 0.1 sd | 'moved' rate at delta = 0 |")
    print("|---|---|---|---|---|")
    for noise in NOISES:
        for design in DESIGNS:
            for n in args.ns:
                coverage, _ = world(noise, design, n, 0.1, args.datasets,
                                    args.resamples, rng)
                _, false_moved = world(noise, design, n, 0.0, args.datasets,
                                       args.resamples, rng)
                print(f"| {noise} | {design} | {n} | {coverage:.3f} | {false_moved:.3f} |")
    print(f"\n{time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
