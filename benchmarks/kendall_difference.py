"""Benchmark: the paired difference of two judges' Kendall tau with humans
(`judgebias.stats.agreement.agreement(..., versus=...)`, issue 22): the size of its test of no
difference and the coverage of its interval.

    .venv/bin/python benchmarks/kendall_difference.py [--datasets 400] [--null-datasets 800]
        [--resamples 999] [--sizes 50 200 1000] [--truth-captions 250000] [--seed 0]

Why: the judge card says whether the Pomms ensemble agrees with people significantly
better than a judge alone (seed 000 §6.3; studies/pomms/card.py), from
tau(ensemble) - tau(judge) on the same rating rows, with a percentile interval and a
bootstrap test computed from both taus on the same cluster resamples. Both metrics score
the same captions, and an ensemble contains the judge, so the two estimates co-vary; the
pairing is what makes the interval honest and narrow, and it is checked here, through
`agreement` itself, on worlds whose truth is known.

**Worlds**, in Flickr8k-Expert's shape as in benchmarks/kendall_interval.py (5 captions
per image, image effect N(0, 0.7^2) on the quality q, 3 expert ratings per caption on 1-4,
one row per rating, images as clusters). Each judge scores q plus its own noise and its
own image bias 0.5 N(0, 1), on 0-100 unless said; ``A`` is the judge, ``B`` the metric it
is compared with (``versus``):

* nulls, A and B of one law (tau(B) - tau(A) = 0 exactly by exchangeability):
  ``equal_normal`` (noise N(0, 1)), ``equal_shared`` (noise 0.8 s + 0.6 e, s shared by A
  and B per caption: two judges that err alike, strongly correlated estimates),
  ``equal_skewed`` (centred lognormal noise, skewness 6) and ``equal_discrete`` (a 1-5
  judge: round(3 + q + N(0, 1)), clipped; heavy ties in both variables);
* with a difference: ``less_noisy`` (B's noise sd 0.5, A's 1) and ``ensemble`` (B is the
  mean of A and two other judges of A's law, noise sd 1.2: the Pomms situation, B
  contains A).

**Truth**: tau(B) - tau(A) on one data set of ``--truth-captions`` captions, twice (mean
and half-difference printed, as in kendall_interval.py); 0 by construction in the nulls.

**Tables**: coverage of the 95% interval, its mean width and the mean estimate minus the
truth, and the rejection rate at alpha 0.05 of the test (its size in the nulls, power
otherwise), for tau-b and tau-c. Prints Markdown; a full run takes about 10 minutes of
one core; ``--datasets 10 --null-datasets 10 --resamples 199 --sizes 50
--truth-captions 5000`` a few seconds.

Measured (defaults: 999 resamples, 800 data sets per null row, MC band 0.035-0.065 for
the size and 0.935-0.965 for coverage; 400 per other row, 0.929-0.971; truth:
less_noisy +0.1065 / +0.1202, ensemble +0.1320 / +0.1520, tau-b / tau-c):

| world | images | tau_b cover | width | bias | reject | tau_c cover | width | bias | reject |
|---|---|---|---|---|---|---|---|---|---|
| equal_normal | 10 | 0.936 | 0.317 | +0.0033 | 0.062 | 0.935 | 0.344 | +0.0036 | 0.064 |
| equal_normal | 40 | 0.954 | 0.158 | +0.0020 | 0.044 | 0.955 | 0.178 | +0.0023 | 0.045 |
| equal_normal | 200 | 0.943 | 0.071 | -0.0002 | 0.054 | 0.941 | 0.080 | -0.0002 | 0.054 |
| equal_shared | 10 | 0.935 | 0.247 | -0.0015 | 0.062 | 0.932 | 0.268 | -0.0017 | 0.061 |
| equal_shared | 40 | 0.946 | 0.124 | +0.0001 | 0.052 | 0.945 | 0.139 | +0.0001 | 0.050 |
| equal_shared | 200 | 0.945 | 0.056 | +0.0004 | 0.050 | 0.948 | 0.063 | +0.0004 | 0.049 |
| equal_skewed | 10 | 0.901 | 0.357 | -0.0047 | 0.096 | 0.901 | 0.387 | -0.0052 | 0.095 |
| equal_skewed | 40 | 0.951 | 0.183 | -0.0025 | 0.049 | 0.950 | 0.205 | -0.0029 | 0.049 |
| equal_skewed | 200 | 0.944 | 0.083 | -0.0013 | 0.051 | 0.945 | 0.094 | -0.0015 | 0.050 |
| equal_discrete | 10 | 0.910 | 0.305 | +0.0023 | 0.084 | 0.912 | 0.300 | +0.0021 | 0.083 |
| equal_discrete | 40 | 0.941 | 0.152 | -0.0019 | 0.054 | 0.940 | 0.154 | -0.0019 | 0.058 |
| equal_discrete | 200 | 0.941 | 0.067 | -0.0002 | 0.051 | 0.944 | 0.069 | -0.0002 | 0.050 |
| less_noisy | 10 | 0.912 | 0.270 | +0.0081 | 0.425 | 0.917 | 0.293 | +0.0067 | 0.425 |
| less_noisy | 40 | 0.945 | 0.141 | +0.0004 | 0.848 | 0.940 | 0.157 | -0.0002 | 0.845 |
| less_noisy | 200 | 0.950 | 0.062 | -0.0001 | 1.000 | 0.950 | 0.070 | -0.0002 | 1.000 |
| ensemble | 10 | 0.925 | 0.228 | -0.0001 | 0.672 | 0.917 | 0.248 | -0.0027 | 0.682 |
| ensemble | 40 | 0.935 | 0.111 | -0.0030 | 0.998 | 0.925 | 0.125 | -0.0041 | 0.998 |
| ensemble | 200 | 0.968 | 0.049 | -0.0012 | 1.000 | 0.965 | 0.056 | -0.0014 | 1.000 |

From 40 images on, the test holds its level (0.044-0.058) in every null, the shared-noise
one included, and the interval covers 0.925-0.968. With 10 images it is liberal
(0.062-0.096, skewed noise worst) and covers 0.90-0.94, as the single-tau interval does
(kendall_interval.py): studies/pomms/card.py says so on a row with fewer than 40 images.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd
from kendall_interval import CAPTIONS_PER_IMAGE, IMAGE_SD, _band, _skewed
from scipy import stats

from judgebias.stats.agreement import TAU_VARIANTS, agreement

ALPHA = 0.05
LEVEL = 0.95
RATERS = 3
NULLS = ("equal_normal", "equal_shared", "equal_skewed", "equal_discrete")
WORLDS = (*NULLS, "less_noisy", "ensemble")


def _judge(world: str, q: np.ndarray, image: np.ndarray, rng: np.random.Generator,
           sd: float = 1.0, shared: np.ndarray | None = None) -> np.ndarray:
    """One judge's caption scores in `world` (module docstring)."""
    n = q.size
    if world == "equal_skewed":
        noise = 0.8 * _skewed(rng, n)
    elif shared is not None:
        noise = 0.8 * shared + 0.6 * rng.normal(size=n)
    else:
        noise = rng.normal(0.0, sd, n)
    if world == "equal_discrete":
        return np.clip(np.round(3 + q + noise), 1, 5)
    latent = q + noise + 0.5 * rng.normal(size=image[-1] + 1)[image]
    return np.clip(np.round(50 + 15 * latent), 0, 100)


def simulate(world: str, captions: int, datasets: int, rng: np.random.Generator
             ) -> pd.DataFrame:
    """``datasets`` data sets of ``captions`` captions each, one row per rating (columns
    dataset, image_id, human_score, A, B)."""
    n = captions * datasets
    image = np.arange(n) // CAPTIONS_PER_IMAGE
    q = rng.normal(0.0, IMAGE_SD, image[-1] + 1)[image] + rng.normal(size=n)
    if world == "ensemble":
        judges = [_judge(world, q, image, rng, sd=1.2) for _ in range(3)]
        a, b = judges[0], np.mean(judges, axis=0)
    elif world == "less_noisy":
        a, b = _judge(world, q, image, rng), _judge(world, q, image, rng, sd=0.5)
    else:
        shared = rng.normal(size=n) if world == "equal_shared" else None
        a, b = (_judge(world, q, image, rng, shared=shared) for _ in range(2))
    row = np.repeat(np.arange(n), RATERS)
    human = np.clip(np.round(2.5 + 0.8 * (q[row] + rng.normal(0.0, 0.6, row.size))), 1, 4)
    return pd.DataFrame({"dataset": row // captions, "image_id": image[row],
                         "human_score": human, "A": a[row], "B": b[row]})


def truth(world: str, captions: int, rng: np.random.Generator
          ) -> tuple[dict[str, float], dict[str, float]]:
    """(population tau(B) - tau(A) per variant, simulation error) from two huge data sets."""
    if world in NULLS:
        return dict.fromkeys(TAU_VARIANTS, 0.0), dict.fromkeys(TAU_VARIANTS, 0.0)
    draws = []
    for _ in range(2):
        table = simulate(world, captions, 1, rng)
        draws.append({v: float(stats.kendalltau(table["B"], table["human_score"],
                                                variant=v[-1]).statistic
                               - stats.kendalltau(table["A"], table["human_score"],
                                                  variant=v[-1]).statistic)
                      for v in TAU_VARIANTS})
    return ({v: (draws[0][v] + draws[1][v]) / 2 for v in TAU_VARIANTS},
            {v: abs(draws[0][v] - draws[1][v]) / 2 for v in TAU_VARIANTS})


def cell(world: str, captions: int, datasets: int, resamples: int,
         target: dict[str, float], rng: np.random.Generator) -> dict[str, object]:
    """Coverage, width, bias and rejection rate of one (world, size) over ``datasets``."""
    table = simulate(world, captions, datasets, rng)
    out = agreement(table, ["A", "B"], by="dataset", cluster="image_id",
                    n_resamples=resamples, seed=int(rng.integers(2**31)),
                    confidence_level=LEVEL, versus="B")
    out = out[out["metric"] == "A"]
    row: dict[str, object] = {"world": world, "captions": captions,
                              "images": captions // CAPTIONS_PER_IMAGE}
    for v in TAU_VARIANTS:
        low, high = out[f"{v}_diff_low"], out[f"{v}_diff_high"]
        row[f"{v} truth"] = target[v]
        row[f"{v} coverage"] = float(((low <= target[v]) & (target[v] <= high)).mean())
        row[f"{v} width"] = float((high - low).mean())
        row[f"{v} bias"] = float(out[f"{v}_diff"].mean() - target[v])
        row[f"{v} reject"] = float((out[f"{v}_diff_p"] < ALPHA).mean())
    return row


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", type=int, default=400,
                        help="data sets per cell of the worlds with a difference")
    parser.add_argument("--null-datasets", type=int, default=800,
                        help="data sets per cell of the null worlds (the size of the test)")
    parser.add_argument("--resamples", type=int, default=999)
    parser.add_argument("--sizes", type=int, nargs="+", default=[50, 200, 1000],
                        help="captions per data set (5 per image)")
    parser.add_argument("--truth-captions", type=int, default=250_000)
    parser.add_argument("--worlds", nargs="+", default=list(WORLDS), choices=WORLDS)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore", category=RuntimeWarning)
    rng = np.random.default_rng(args.seed)
    start, cpu = time.perf_counter(), time.process_time()
    targets = {}
    print(f"## Population tau(B) - tau(A) ({args.truth_captions:,} captions, twice; ± is "
          "half the two draws' difference; the nulls 0 by construction)\n")
    print("| world | tau_b | tau_c |\n|---|---|---|")
    for world in args.worlds:
        target, error = truth(world, args.truth_captions, rng)
        targets[world] = target
        print(f"| {world} | {target['tau_b']:+.4f} ± {error['tau_b']:.4f} | "
              f"{target['tau_c']:+.4f} ± {error['tau_c']:.4f} |", flush=True)
    results = []
    for world in args.worlds:
        datasets = args.null_datasets if world in NULLS else args.datasets
        for captions in args.sizes:
            results.append(cell(world, captions, datasets, args.resamples, targets[world], rng))
            print(f"{world} {captions}: {time.perf_counter() - start:.0f} s", file=sys.stderr)
    print(f"\n## The paired interval and test ({args.resamples} resamples; coverage band "
          f"{_band(LEVEL, args.datasets)} with {args.datasets} data sets, "
          f"{_band(LEVEL, args.null_datasets)} with {args.null_datasets}; size band "
          f"{_band(ALPHA, args.null_datasets)})\n")
    print("| world | images | tau_b cover | width | bias | reject | tau_c cover | width | "
          "bias | reject |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['world']} | {r['images']} | " + " | ".join(
            f"{r[f'{v} coverage']:.3f} | {r[f'{v} width']:.3f} | {r[f'{v} bias']:+.4f} | "
            f"{r[f'{v} reject']:.3f}" for v in TAU_VARIANTS) + " |")
    print("\n(reject: the size of the test in the equal_* worlds, its power in the others)")
    print(f"\n({time.perf_counter() - start:.0f} s wall, {time.process_time() - cpu:.0f} s CPU)")


if __name__ == "__main__":
    main()
