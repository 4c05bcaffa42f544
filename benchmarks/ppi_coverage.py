"""Coverage and width of the leaderboard's 95% intervals with human labels
(judgebias.stats.ppi): judge-only, human-only, PPI (lambda = 1), PPI++ (tuned lambda,
clipped to [0, 1] as ppi_py) and PPI++ with the unclipped lambda, for one system's mean
and for the paired difference of two systems.

Why: PPI++ is the leaderboard's answer to a biased judge (specs/leaderboard.md, "Human
labels"), and its intervals are CLT ones (as the papers and ppi_py give them). They are
valid only asymptotically; the user brings 20 to 200 labels, so this measures whether they
cover at those sizes, by how much they beat the labels alone, and how badly the naive
judge-only interval misses.

Worlds. N = 1,000 items; on each, two systems' true quality (the human label, on a 0-10
scale) is ``Y_s = mu_s + u_i + e_si`` with mu_a = 6, mu_b = 5.5, a shared item effect u and
an own error e (sd 1 each); the judge scores ``f_s = g_s(Y_s) + eps`` (judge noise sd
0.7). A random n of the items carry human labels. Judges:

* ``no_bias``: g(Y) = Y, everything should cover;
* ``additive``: g(Y) = Y + 1 on both systems (biased means, unbiased difference);
* ``self_pref``: g_a(Y) = Y + 1, g_b(Y) = Y (a judge preferring system a: the difference
  is biased by 1);
* ``compressed``: the same judge on a half-size scale, ``f = 0.5 (Y + eps) + 2.5`` (means
  biased by -0.5 and -0.25, the difference halved). The variance-minimising lambda is
  about 1.1 to 1.6 here (2 for a noiseless judge), so clipping it to 1 (ppi_py) gives
  PPI's width; the unclipped column shows what that costs.

Noise kinds (u, e and eps alike): ``normal``; ``skewed`` (centred exponential, sd 1 and
0.7); ``discrete`` (normal, with the judge's scores rounded to integers and clipped to
0..10). Truth: mu_a for the mean, mu_a - mu_b = 0.5 for the difference.

    .venv/bin/python benchmarks/ppi_coverage.py                       # 2,000 reps per cell
    .venv/bin/python benchmarks/ppi_coverage.py --reps 50 --ns 20 50  # smoke (CI)

Each cell: coverage (%) / mean width of the 95% interval (in label points); the
Monte-Carlo error of a coverage near 95% is +-1.0 point (95%, 2,000 reps).

What it shows. Judge-only covers 0% wherever the judge is biased (its width is that of
1,000 items: narrow around the wrong value), and covers only where the bias is absent or
cancels (``no_bias``; the difference under ``additive``). Human-only, PPI and PPI++ cover
at 93-96% from n = 50 on, but for a system's mean with skewed noise at n = 50 (human-only
93%, PPI++ 91-92%), and at 88-94% at n = 20, where the CLT interval is short for all three
(divisor-n SD, z quantile; the tuned lambda costs up to 3 more points there, the
finite-sample price of estimating it, cf. Mani et al., arXiv 2505.20178). PPI++ is the
narrowest valid interval: 50-65% of the labels-only width at n = 20, 60-70% at n = 200,
and clearly narrower than PPI for the difference of two systems (0.266 against 0.363 at
n = 200): the judge is noisier relative to the difference's signal, so its best lambda
is below 1. With the compressed judge the best lambda is above 1, and ppi_py's clipping
makes a system's interval 4-12% wider than the unclipped one from n = 50 on (1-4% with
the discrete judge, 0-2% for the difference); unclipped, lambda is noisy at n = 20 (1-2
points less coverage, no gain in width).

Measured (2,000 reps, seed 0, 140 s on one core of a shared 2-core machine)::

    .venv/bin/python benchmarks/ppi_coverage.py

normal noise:

| world | n | estimand | judge-only | human-only | PPI | PPI++ | PPI++ unclipped |
|---|---|---|---|---|---|---|---|
| no_bias | 20 | mean a | 95.3/0.196 | 91.8/1.197 | 93.8/0.622 | 92.9/0.591 | 93.0/0.619 |
| no_bias | 20 | a - b | 95.3/0.214 | 92.9/1.196 | 93.3/0.863 | 93.5/0.736 | 93.5/0.749 |
| no_bias | 50 | mean a | 94.2/0.195 | 95.3/0.773 | 93.4/0.432 | 94.8/0.390 | 94.9/0.394 |
| no_bias | 50 | a - b | 94.5/0.214 | 94.1/0.771 | 94.2/0.583 | 93.5/0.475 | 93.5/0.475 |
| no_bias | 100 | mean a | 94.3/0.195 | 94.3/0.551 | 94.6/0.342 | 94.0/0.295 | 94.0/0.295 |
| no_bias | 100 | a - b | 95.2/0.214 | 94.3/0.551 | 94.5/0.446 | 94.8/0.349 | 94.8/0.349 |
| no_bias | 200 | mean a | 94.4/0.196 | 95.1/0.390 | 94.5/0.292 | 93.6/0.234 | 93.6/0.234 |
| no_bias | 200 | a - b | 94.9/0.214 | 94.8/0.391 | 94.8/0.363 | 94.6/0.266 | 94.6/0.266 |
| additive | 20 | mean a | 0.0/0.195 | 94.2/1.191 | 93.1/0.624 | 92.0/0.590 | 92.4/0.620 |
| additive | 20 | a - b | 95.3/0.214 | 92.7/1.196 | 93.2/0.861 | 91.8/0.730 | 91.8/0.742 |
| additive | 50 | mean a | 0.0/0.195 | 93.5/0.772 | 94.5/0.432 | 93.5/0.390 | 93.6/0.393 |
| additive | 50 | a - b | 93.5/0.214 | 93.8/0.767 | 94.3/0.584 | 94.2/0.473 | 94.2/0.473 |
| additive | 100 | mean a | 0.0/0.196 | 95.4/0.552 | 95.2/0.342 | 94.2/0.295 | 94.2/0.295 |
| additive | 100 | a - b | 95.2/0.214 | 95.4/0.550 | 95.0/0.447 | 94.6/0.350 | 94.6/0.350 |
| additive | 200 | mean a | 0.0/0.195 | 94.9/0.391 | 95.6/0.292 | 95.2/0.235 | 95.2/0.235 |
| additive | 200 | a - b | 94.8/0.214 | 95.5/0.391 | 94.8/0.363 | 95.0/0.266 | 95.0/0.266 |
| self_pref | 20 | mean a | 0.0/0.196 | 92.9/1.190 | 93.5/0.626 | 91.5/0.592 | 91.8/0.620 |
| self_pref | 20 | a - b | 0.0/0.214 | 92.6/1.183 | 92.6/0.865 | 91.1/0.728 | 91.1/0.737 |
| self_pref | 50 | mean a | 0.0/0.196 | 93.0/0.773 | 94.0/0.431 | 93.0/0.390 | 93.0/0.394 |
| self_pref | 50 | a - b | 0.0/0.214 | 94.8/0.776 | 94.6/0.583 | 94.2/0.476 | 94.2/0.476 |
| self_pref | 100 | mean a | 0.0/0.195 | 94.9/0.550 | 95.3/0.341 | 94.7/0.294 | 94.7/0.294 |
| self_pref | 100 | a - b | 0.0/0.214 | 95.1/0.550 | 95.0/0.446 | 94.8/0.349 | 94.8/0.349 |
| self_pref | 200 | mean a | 0.0/0.195 | 95.0/0.391 | 95.0/0.292 | 94.1/0.235 | 94.1/0.235 |
| self_pref | 200 | a - b | 0.0/0.214 | 94.6/0.391 | 94.8/0.363 | 94.2/0.267 | 94.2/0.267 |
| compressed | 20 | mean a | 0.0/0.098 | 91.8/1.187 | 93.3/0.669 | 93.0/0.676 | 92.0/0.614 |
| compressed | 20 | a - b | 0.0/0.107 | 93.3/1.195 | 93.5/0.739 | 93.2/0.748 | 92.4/0.744 |
| compressed | 50 | mean a | 0.0/0.098 | 94.0/0.772 | 93.1/0.442 | 93.1/0.442 | 93.5/0.393 |
| compressed | 50 | a - b | 0.0/0.107 | 94.4/0.774 | 93.9/0.484 | 93.8/0.485 | 93.5/0.474 |
| compressed | 100 | mean a | 0.0/0.098 | 94.8/0.549 | 94.8/0.324 | 94.8/0.324 | 93.6/0.295 |
| compressed | 100 | a - b | 0.0/0.107 | 96.4/0.551 | 95.5/0.355 | 95.5/0.356 | 94.2/0.350 |
| compressed | 200 | mean a | 0.0/0.098 | 95.2/0.392 | 95.8/0.244 | 95.9/0.244 | 95.2/0.235 |
| compressed | 200 | a - b | 0.0/0.107 | 95.2/0.391 | 95.2/0.267 | 95.2/0.267 | 95.2/0.267 |

skewed noise:

| world | n | estimand | judge-only | human-only | PPI | PPI++ | PPI++ unclipped |
|---|---|---|---|---|---|---|---|
| no_bias | 20 | mean a | 96.0/0.195 | 90.4/1.176 | 90.9/0.607 | 88.8/0.582 | 89.5/0.688 |
| no_bias | 20 | a - b | 95.1/0.214 | 93.1/1.175 | 94.2/0.845 | 92.8/0.717 | 92.8/0.772 |
| no_bias | 50 | mean a | 95.2/0.195 | 93.8/0.766 | 93.2/0.429 | 91.7/0.392 | 92.0/0.409 |
| no_bias | 50 | a - b | 95.0/0.214 | 93.7/0.762 | 93.7/0.581 | 94.2/0.476 | 94.3/0.479 |
| no_bias | 100 | mean a | 94.5/0.195 | 94.8/0.549 | 95.2/0.341 | 93.8/0.297 | 93.9/0.299 |
| no_bias | 100 | a - b | 94.4/0.214 | 95.0/0.547 | 95.5/0.446 | 94.8/0.350 | 94.8/0.350 |
| no_bias | 200 | mean a | 95.0/0.195 | 94.7/0.390 | 94.5/0.291 | 94.0/0.235 | 94.0/0.235 |
| no_bias | 200 | a - b | 94.5/0.214 | 94.2/0.390 | 94.2/0.362 | 94.6/0.266 | 94.6/0.266 |
| additive | 20 | mean a | 0.0/0.195 | 90.7/1.166 | 91.4/0.614 | 88.2/0.583 | 88.8/0.683 |
| additive | 20 | a - b | 94.8/0.214 | 93.3/1.159 | 93.3/0.862 | 92.3/0.715 | 92.3/0.765 |
| additive | 50 | mean a | 0.0/0.195 | 92.9/0.767 | 93.2/0.427 | 92.0/0.390 | 92.3/0.409 |
| additive | 50 | a - b | 94.4/0.213 | 93.4/0.767 | 94.3/0.579 | 94.2/0.475 | 94.2/0.481 |
| additive | 100 | mean a | 0.0/0.195 | 94.5/0.549 | 95.0/0.341 | 94.0/0.298 | 94.0/0.299 |
| additive | 100 | a - b | 95.0/0.214 | 95.8/0.551 | 95.2/0.446 | 94.3/0.351 | 94.3/0.352 |
| additive | 200 | mean a | 0.0/0.195 | 94.5/0.390 | 94.8/0.291 | 93.8/0.235 | 93.8/0.235 |
| additive | 200 | a - b | 95.0/0.214 | 95.2/0.390 | 95.5/0.363 | 96.0/0.266 | 96.0/0.266 |
| self_pref | 20 | mean a | 0.0/0.196 | 92.0/1.185 | 90.3/0.611 | 89.2/0.583 | 90.0/0.688 |
| self_pref | 20 | a - b | 0.0/0.214 | 92.5/1.177 | 93.7/0.852 | 91.6/0.723 | 91.8/0.774 |
| self_pref | 50 | mean a | 0.0/0.196 | 92.8/0.769 | 93.5/0.432 | 91.3/0.394 | 91.5/0.413 |
| self_pref | 50 | a - b | 0.0/0.214 | 93.8/0.769 | 93.7/0.581 | 93.1/0.476 | 93.2/0.483 |
| self_pref | 100 | mean a | 0.0/0.195 | 94.5/0.550 | 95.4/0.340 | 94.1/0.297 | 94.0/0.299 |
| self_pref | 100 | a - b | 0.0/0.214 | 94.2/0.547 | 95.5/0.446 | 95.0/0.349 | 95.0/0.350 |
| self_pref | 200 | mean a | 0.0/0.195 | 95.4/0.390 | 94.3/0.292 | 94.5/0.235 | 94.5/0.235 |
| self_pref | 200 | a - b | 0.0/0.214 | 94.5/0.390 | 94.1/0.363 | 93.7/0.267 | 93.7/0.267 |
| compressed | 20 | mean a | 0.0/0.098 | 91.7/1.170 | 93.0/0.663 | 91.8/0.677 | 89.7/0.678 |
| compressed | 20 | a - b | 0.0/0.107 | 92.7/1.177 | 93.8/0.730 | 93.2/0.741 | 93.7/0.786 |
| compressed | 50 | mean a | 0.0/0.098 | 93.2/0.764 | 94.1/0.440 | 93.6/0.442 | 93.8/0.411 |
| compressed | 50 | a - b | 0.0/0.107 | 94.2/0.768 | 95.1/0.483 | 94.7/0.486 | 94.0/0.481 |
| compressed | 100 | mean a | 0.0/0.098 | 93.5/0.547 | 94.3/0.323 | 94.2/0.323 | 93.8/0.298 |
| compressed | 100 | a - b | 0.0/0.107 | 94.2/0.547 | 95.3/0.354 | 95.1/0.355 | 95.0/0.350 |
| compressed | 200 | mean a | 0.0/0.098 | 94.9/0.391 | 95.3/0.244 | 95.3/0.244 | 94.5/0.235 |
| compressed | 200 | a - b | 0.0/0.107 | 94.7/0.390 | 95.3/0.267 | 95.0/0.267 | 94.5/0.266 |

discrete noise:

| world | n | estimand | judge-only | human-only | PPI | PPI++ | PPI++ unclipped |
|---|---|---|---|---|---|---|---|
| no_bias | 20 | mean a | 93.8/0.198 | 92.6/1.188 | 93.8/0.672 | 91.9/0.621 | 92.0/0.648 |
| no_bias | 20 | a - b | 94.2/0.219 | 94.0/1.199 | 92.8/0.931 | 91.4/0.761 | 91.5/0.772 |
| no_bias | 50 | mean a | 95.0/0.198 | 94.0/0.772 | 94.8/0.461 | 94.8/0.410 | 94.9/0.412 |
| no_bias | 50 | a - b | 94.3/0.219 | 95.4/0.776 | 94.6/0.626 | 94.3/0.496 | 94.3/0.496 |
| no_bias | 100 | mean a | 95.2/0.198 | 94.8/0.552 | 94.8/0.361 | 95.0/0.306 | 95.0/0.307 |
| no_bias | 100 | a - b | 94.6/0.219 | 94.0/0.552 | 94.8/0.476 | 93.8/0.364 | 93.8/0.364 |
| no_bias | 200 | mean a | 94.7/0.198 | 93.8/0.390 | 95.4/0.304 | 95.4/0.241 | 95.4/0.241 |
| no_bias | 200 | a - b | 94.2/0.219 | 95.5/0.391 | 95.8/0.383 | 95.5/0.274 | 95.5/0.274 |
| additive | 20 | mean a | 0.0/0.194 | 93.5/1.197 | 93.0/0.664 | 91.7/0.622 | 92.0/0.648 |
| additive | 20 | a - b | 94.8/0.217 | 92.7/1.190 | 93.9/0.918 | 92.3/0.759 | 92.3/0.767 |
| additive | 50 | mean a | 0.0/0.194 | 93.6/0.773 | 95.2/0.456 | 94.3/0.411 | 94.4/0.413 |
| additive | 50 | a - b | 94.8/0.216 | 94.5/0.773 | 96.0/0.623 | 95.0/0.500 | 95.0/0.500 |
| additive | 100 | mean a | 0.0/0.194 | 95.0/0.552 | 95.2/0.357 | 94.7/0.309 | 94.7/0.309 |
| additive | 100 | a - b | 94.2/0.217 | 93.6/0.551 | 94.5/0.473 | 94.3/0.364 | 94.3/0.364 |
| additive | 200 | mean a | 0.0/0.194 | 95.5/0.391 | 95.2/0.300 | 95.0/0.242 | 95.0/0.242 |
| additive | 200 | a - b | 94.2/0.216 | 95.0/0.391 | 94.9/0.380 | 95.3/0.275 | 95.3/0.275 |
| self_pref | 20 | mean a | 0.0/0.194 | 92.1/1.187 | 93.7/0.667 | 92.2/0.620 | 92.2/0.648 |
| self_pref | 20 | a - b | 0.0/0.217 | 93.4/1.187 | 93.2/0.925 | 92.2/0.765 | 92.3/0.772 |
| self_pref | 50 | mean a | 0.0/0.194 | 93.8/0.773 | 93.7/0.457 | 93.7/0.412 | 93.7/0.414 |
| self_pref | 50 | a - b | 0.0/0.217 | 93.5/0.770 | 94.6/0.624 | 93.8/0.496 | 93.8/0.497 |
| self_pref | 100 | mean a | 0.0/0.194 | 94.5/0.551 | 94.6/0.357 | 94.0/0.308 | 94.0/0.308 |
| self_pref | 100 | a - b | 0.0/0.217 | 94.3/0.551 | 95.0/0.474 | 95.0/0.365 | 95.0/0.365 |
| self_pref | 200 | mean a | 0.0/0.194 | 95.3/0.391 | 95.3/0.300 | 95.5/0.242 | 95.5/0.242 |
| self_pref | 200 | a - b | 0.0/0.217 | 95.1/0.391 | 95.8/0.381 | 95.1/0.275 | 95.1/0.275 |
| compressed | 20 | mean a | 0.0/0.104 | 93.0/1.192 | 93.0/0.716 | 92.7/0.724 | 91.8/0.710 |
| compressed | 20 | a - b | 0.0/0.118 | 92.7/1.190 | 93.0/0.816 | 92.0/0.820 | 91.5/0.834 |
| compressed | 50 | mean a | 0.0/0.104 | 94.3/0.774 | 94.0/0.473 | 94.0/0.474 | 93.8/0.454 |
| compressed | 50 | a - b | 0.0/0.118 | 93.9/0.773 | 93.6/0.535 | 93.3/0.537 | 93.1/0.541 |
| compressed | 100 | mean a | 0.0/0.104 | 95.2/0.551 | 95.0/0.346 | 95.0/0.346 | 95.0/0.335 |
| compressed | 100 | a - b | 0.0/0.118 | 94.6/0.551 | 95.0/0.393 | 94.7/0.393 | 94.5/0.394 |
| compressed | 200 | mean a | 0.0/0.104 | 95.2/0.390 | 94.2/0.259 | 94.2/0.259 | 93.7/0.257 |
| compressed | 200 | a - b | 0.0/0.118 | 95.0/0.390 | 95.0/0.295 | 95.0/0.292 | 95.0/0.292 |
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable

import numpy as np

from judgebias.stats.ppi import MeanInterval, human_only_mean, judge_only_mean, ppi_mean

MU_A, MU_B = 6.0, 5.5
JUDGE_SD = 0.7

Noise = Callable[[np.random.Generator, float, int], np.ndarray]
NOISES: dict[str, Noise] = {
    "normal": lambda rng, sd, n: sd * rng.standard_normal(n),
    "skewed": lambda rng, sd, n: sd * (rng.exponential(1.0, n) - 1.0),
    "discrete": lambda rng, sd, n: sd * rng.standard_normal(n),
}
# the judge's g_a, g_b
WORLDS: dict[str, tuple[Callable[[np.ndarray], np.ndarray], ...]] = {
    "no_bias": (lambda y: y, lambda y: y),
    "additive": (lambda y: y + 1.0, lambda y: y + 1.0),
    "self_pref": (lambda y: y + 1.0, lambda y: y),
    "compressed": (lambda y: y, lambda y: y),  # then halved with its noise (`draw`)
}
METHODS = ("judge-only", "human-only", "PPI", "PPI++", "PPI++ unclipped")


def draw(rng: np.random.Generator, world: str, noise: str, n_items: int
         ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One data set: human labels and judge scores of systems a and b on every item."""
    draw_noise = NOISES[noise]
    item = draw_noise(rng, 1.0, n_items)
    y_a = MU_A + item + draw_noise(rng, 1.0, n_items)
    y_b = MU_B + item + draw_noise(rng, 1.0, n_items)
    g_a, g_b = WORLDS[world]
    f_a = g_a(y_a) + draw_noise(rng, JUDGE_SD, n_items)
    f_b = g_b(y_b) + draw_noise(rng, JUDGE_SD, n_items)
    if world == "compressed":
        f_a, f_b = 0.5 * f_a + 2.5, 0.5 * f_b + 2.5
    if noise == "discrete":
        f_a, f_b = np.clip(np.round(f_a), 0, 10), np.clip(np.round(f_b), 0, 10)
    return y_a, y_b, f_a, f_b


def intervals(y: np.ndarray, f: np.ndarray, n: int) -> list[MeanInterval]:
    """The five methods' intervals; the first n items are the labelled ones (the items
    are exchangeable draws, so they are a random sample)."""
    return [judge_only_mean(f), human_only_mean(y[:n]),
            ppi_mean(y[:n], f[:n], f[n:], lam=1.0),
            ppi_mean(y[:n], f[:n], f[n:]),
            ppi_mean(y[:n], f[:n], f[n:], clip=False)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=2000, help="data sets per cell")
    parser.add_argument("--ns", type=int, nargs="+", default=[20, 50, 100, 200],
                        help="labelled items")
    parser.add_argument("--items", type=int, default=1000, help="items in all (N)")
    parser.add_argument("--worlds", nargs="+", choices=list(WORLDS), default=list(WORLDS))
    parser.add_argument("--noises", nargs="+", choices=list(NOISES), default=list(NOISES))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    mc = 1.96 * math.sqrt(0.05 * 0.95 / args.reps)
    print(f"{args.reps} data sets of {args.items} items per cell; 95% intervals; coverage "
          f"(%) / mean width; Monte-Carlo error of a coverage near 95%: +-{100 * mc:.1f} "
          "points (95%)")
    start = time.perf_counter()
    for noise in args.noises:
        print(f"\n{noise} noise:\n")
        print("| world | n | estimand | " + " | ".join(METHODS) + " |")
        print("|---|---|---|" + "---|" * len(METHODS))
        for world in args.worlds:
            for n in args.ns:
                covered = np.zeros((2, len(METHODS)))
                width = np.zeros((2, len(METHODS)))
                for _ in range(args.reps):
                    y_a, y_b, f_a, f_b = draw(rng, world, noise, args.items)
                    for k, (y, f, truth) in enumerate(
                            ((y_a, f_a, MU_A), (y_a - y_b, f_a - f_b, MU_A - MU_B))):
                        for m, result in enumerate(intervals(y, f, n)):
                            covered[k, m] += result.ci_low <= truth <= result.ci_high
                            width[k, m] += result.ci_high - result.ci_low
                for k, estimand in enumerate(("mean a", "a - b")):
                    cells = " | ".join(f"{100 * covered[k, m] / args.reps:.1f}/"
                                       f"{width[k, m] / args.reps:.3f}"
                                       for m in range(len(METHODS)))
                    print(f"| {world} | {n} | {estimand} | {cells} |", flush=True)
    print(f"\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
