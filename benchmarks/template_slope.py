"""The template study's length slope (judgebias.studies._template.measures): its test's
rejection rate under no length preference, and its interval's coverage of a planted one.

Why: the template is what a newcomer copies, so its statistic must be honest too. The
simulated judge scores on a bounded, rounded 1..10 scale, where plain OLS standard errors
are not guaranteed; the study uses HC3 with t quantiles. Worlds: the template's own judge
(normal noise), a skewed-noise judge (centred exponential), a discrete-noise judge (noise
in whole points, -1/0/+1), each with no length preference (rejection rate at alpha 0.05)
and with a planted 0.5 points per ten words (coverage of the 95% interval), below the
scale's ceiling. Rounding makes the score a staircase in length, so the OLS slope
estimates its best linear approximation; where the noise is too coarse to smooth the
steps (the discrete world) that pseudo-true slope differs from the planted 0.5. Coverage
is measured of both; the pseudo-true slope is the fit on one data set of 10^6 answers.

    python benchmarks/template_slope.py             # 2,000 data sets per world
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from judgebias.studies._template.measures import length_slope
from judgebias.studies._template.sim import POINTS_PER_FACT

NOISES = {
    "normal": lambda rng, n: rng.standard_normal(n),
    "skewed": lambda rng, n: rng.exponential(1.0, n) - 1.0,
    "discrete": lambda rng, n: rng.choice([-1.0, 0.0, 1.0], n, p=[0.25, 0.5, 0.25]),
}


def world(rng: np.random.Generator, n: int, slope: float, noise: str, max_words: int
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One data set as the template's data and sim draw it (judgebias.studies._template)."""
    facts = rng.integers(0, 6, n)
    words = np.maximum(facts, rng.integers(2, max_words + 1, n))
    raw = 1 + POINTS_PER_FACT * facts + slope * words / 10 + NOISES[noise](rng, n)
    return np.clip(np.round(raw), 1, 10), facts, words


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--datasets", type=int, default=2000)
    parser.add_argument("--n", type=int, default=60, help="answers per judge")
    parser.add_argument("--max-words", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    mc = 1.96 * math.sqrt(0.05 * 0.95 / args.datasets)
    print(f"{args.datasets} data sets of {args.n} answers per world; Monte-Carlo "
          f"error +-{mc:.3f} (95%)\n")
    print("| noise | rejection rate, no bias (alpha 0.05) | pseudo-true slope | coverage of "
          "it, 95% CI | coverage of 0.5 |")
    print("|---|---|---|---|---|")
    for noise in NOISES:
        truth = length_slope(*world(rng, 10**6, 0.5, noise, args.max_words))["slope"]
        rejected = covered = covered_planted = 0
        for _ in range(args.datasets):
            null = length_slope(*world(rng, args.n, 0.0, noise, args.max_words))
            rejected += null["p_value"] < 0.05
            planted = length_slope(*world(rng, args.n, 0.5, noise, args.max_words))
            covered += planted["ci_low"] <= truth <= planted["ci_high"]
            covered_planted += planted["ci_low"] <= 0.5 <= planted["ci_high"]
        print(f"| {noise} | {rejected / args.datasets:.3f} | {truth:.3f} | "
              f"{covered / args.datasets:.3f} | {covered_planted / args.datasets:.3f} |")


if __name__ == "__main__":
    main()
