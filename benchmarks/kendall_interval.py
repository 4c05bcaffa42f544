"""Benchmark: coverage of the cluster-bootstrap intervals of Kendall's tau-b / tau-c of a
judge against humans, and the rejection rate of their test of tau = 0 (issue 22).

    .venv/bin/python benchmarks/kendall_interval.py [--datasets 400] [--null-datasets 800]
        [--resamples 999] [--sizes 50 200 1000] [--truth-captions 250000] [--seed 0]
        [--worlds continuous flickr_like skewed no_agreement]

Why: the judge card reports "agreement with humans (Kendall tau-b/c)" with a 95% interval
and a test, computed by `judgebias.stats.agreement.agreement(..., cluster=..., n_resamples=...)`
on *rating-level* tables (one row per human rating, a caption's judge score repeated on
each of its rating rows, captions grouped by image). An interval is only worth printing
if it covers the truth at its nominal rate, and a test only if it rejects a true null at
its nominal rate; both are checked here through `agreement` itself, on worlds whose truth
is known.

**Worlds** (a data set has ``captions`` captions; q is a caption's quality, N(0, 1) plus
an image effect N(0, 0.7^2) where captions share images):

* ``continuous``: one row per caption, no images; human = q + N(0, 0.5^2) (a continuous
  scale), judge = q + N(0, 1). Rows are independent: ``cluster=None``. The truth is also
  known in closed form, (2 / pi) arcsin(rho) (printed as a check of the simulated one).
* ``flickr_like``: Flickr8k-Expert's shape: 5 captions per image, 3 expert ratings per
  caption on 1-4 (round(2.5 + 0.8 (q + N(0, 0.6^2))), clipped), one row per rating; the
  judge's 0-100 integer score round(50 + 15 (q + N(0, 1) + 0.5 g)), clipped, with g a
  judge-specific image bias N(0, 1), repeated on the caption's 3 rows. Heavy ties (4 x
  101 values), two levels of clustering: ``cluster="image_id"``.
* ``skewed``: 2 ratings per caption on a continuous scale, human = q + 0.5 e and judge
  = q + 0.8 e' with e, e' right-skewed (lognormal(0, 1) minus its mean; skewness 6); no
  images: ``cluster="caption_id"``.
* ``no_agreement`` (the null): ``flickr_like``'s structure, but the judge scores an
  independent quality q' (with its own image effect): judge and humans are independent,
  tau-b = tau-c = 0 exactly, while both are clustered by image.

**Truth**: the population value of a variant is the limit of the statistic on one data
set as the number of captions grows (pairs of rows then come from different images): one
simulated data set of ``--truth-captions`` captions per world, `scipy.stats.kendalltau`,
twice with independent draws (the tables print their mean; their difference is the
simulation error, printed too). ``no_agreement``'s truth is 0 by construction.

**Tables**: coverage of the 95% percentile intervals (a data set with an undefined
interval counts as a miss), mean width, and mean estimate minus truth (bias: tau is a
statistic over pairs of rows, and pairs inside one image or caption follow a different
law than pairs across, so with few images the estimate itself is off, which no interval
around it can repair); then the rejection rate at alpha 0.05 of the bootstrap test of
tau = 0 under ``no_agreement`` (its size) next to scipy's asymptotic p-value on the
rating rows, and one line for its power elsewhere. Each world is run with its right
cluster (marked *) and, in the image worlds, also with the finer units a caller might
wrongly pass (``caption_id``; ``rows`` = ``cluster=None``), to show what that costs.
Prints Markdown; a full run takes about 9 minutes of one core, ``--datasets 10
--null-datasets 10 --resamples 199 --sizes 50 --truth-captions 5000`` a few seconds.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from judgebias.stats.agreement import TAU_VARIANTS, agreement

ALPHA = 0.05
LEVEL = 0.95
IMAGE_SD = 0.7
CAPTIONS_PER_IMAGE = 5


@dataclass(frozen=True)
class World:
    """How one data set of the benchmark is drawn (module docstring)."""

    name: str
    raters: int  # rating rows per caption
    images: bool  # captions grouped by image (CAPTIONS_PER_IMAGE each)
    human: str  # continuous | likert
    noise: str  # normal | skewed
    agree: bool  # False: the judge scores an independent quality
    units: tuple[str, ...]  # cluster columns to run, the right one first ("rows": None)


WORLDS = (
    World("continuous", 1, False, "continuous", "normal", True, ("rows",)),
    World("flickr_like", 3, True, "likert", "normal", True, ("image_id", "caption_id", "rows")),
    World("skewed", 2, False, "continuous", "skewed", True, ("caption_id",)),
    World("no_agreement", 3, True, "likert", "normal", False, ("image_id", "caption_id", "rows")),
)


def _skewed(rng: np.random.Generator, size: int) -> np.ndarray:
    """Right-skewed noise with mean 0: lognormal(0, 1) minus its mean."""
    return rng.lognormal(0.0, 1.0, size) - np.exp(0.5)


def simulate(world: World, captions: int, datasets: int, rng: np.random.Generator) -> pd.DataFrame:
    """``datasets`` data sets of ``captions`` captions each, rating-level rows, one table
    (columns dataset, image_id, caption_id, human_score, judge)."""
    n = captions * datasets
    caption = np.arange(n)
    image = caption // CAPTIONS_PER_IMAGE if world.images else caption
    n_images = image[-1] + 1

    def quality() -> np.ndarray:
        effect = rng.normal(0.0, IMAGE_SD, n_images)[image] if world.images else 0.0
        return effect + rng.normal(size=n)

    q = quality()
    seen = q if world.agree else quality()  # what the judge scores
    noise = 0.8 * _skewed(rng, n) if world.noise == "skewed" else rng.normal(size=n)
    judge = seen + noise
    if world.images:
        judge = judge + 0.5 * rng.normal(size=n_images)[image]
    if world.human == "likert":
        judge = np.clip(np.round(50 + 15 * judge), 0, 100)
    row = np.repeat(caption, world.raters)
    if world.noise == "skewed":
        human = q[row] + 0.5 * _skewed(rng, row.size)
    elif world.human == "likert":
        human = np.clip(np.round(2.5 + 0.8 * (q[row] + rng.normal(0.0, 0.6, row.size))), 1, 4)
    else:
        human = q[row] + rng.normal(0.0, 0.5, row.size)
    return pd.DataFrame(
        {
            "dataset": row // captions,
            "image_id": image[row],
            "caption_id": row,
            "human_score": human,
            "judge": judge[row],
        }
    )


def truth(
    world: World, captions: int, rng: np.random.Generator
) -> tuple[dict[str, float], dict[str, float]]:
    """(population tau-b / tau-c, simulation error) from two huge data sets."""
    draws = []
    for _ in range(2):
        table = simulate(world, captions, 1, rng)
        draws.append(
            {
                v: float(
                    stats.kendalltau(table["judge"], table["human_score"], variant=v[-1]).statistic
                )
                for v in TAU_VARIANTS
            }
        )
    mean = {v: (draws[0][v] + draws[1][v]) / 2 for v in TAU_VARIANTS}
    error = {v: abs(draws[0][v] - draws[1][v]) / 2 for v in TAU_VARIANTS}
    if not world.agree:
        mean = dict.fromkeys(TAU_VARIANTS, 0.0)  # independent: 0 exactly
    return mean, error


def cell(
    world: World,
    captions: int,
    datasets: int,
    resamples: int,
    target: dict[str, float],
    rng: np.random.Generator,
) -> list[dict[str, object]]:
    """One row per unit: coverage, width, bias and rejection rates over ``datasets``."""
    table = simulate(world, captions, datasets, rng)
    scipy_p = {
        v: np.array(
            [
                stats.kendalltau(g["judge"], g["human_score"], variant=v[-1]).pvalue
                for _, g in table.groupby("dataset")
            ]
        )
        for v in TAU_VARIANTS
    }
    rows = []
    for i, unit in enumerate(world.units):
        cluster = None if unit == "rows" else unit
        out = agreement(
            table,
            "judge",
            by="dataset",
            cluster=cluster,
            n_resamples=resamples,
            seed=int(rng.integers(2**31)),
            confidence_level=LEVEL,
        )
        row: dict[str, object] = {
            "world": world.name,
            "captions": captions,
            "rows": len(table) // datasets,
            "unit": unit + (" *" if i == 0 else ""),
            "clusters": int(out["n_clusters"].median()),
        }
        for v in TAU_VARIANTS:
            low, high = out[f"{v}_low"], out[f"{v}_high"]
            row[f"{v} truth"] = target[v]
            row[f"{v} coverage"] = float(((low <= target[v]) & (target[v] <= high)).mean())
            row[f"{v} width"] = float((high - low).mean())
            row[f"{v} bias"] = float(out[v].mean() - target[v])
            row[f"{v} reject"] = float((out[f"{v}_p"] < ALPHA).mean())
            row[f"{v} scipy reject"] = float((scipy_p[v] < ALPHA).mean())
        rows.append(row)
    return rows


def _band(p: float, n: int) -> str:
    half = 1.96 * np.sqrt(p * (1 - p) / n)
    return f"{p - half:.3f}-{p + half:.3f}"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--datasets", type=int, default=400, help="data sets per cell of the worlds with agreement"
    )
    parser.add_argument(
        "--null-datasets",
        type=int,
        default=800,
        help="data sets per cell of no_agreement (the size of the test)",
    )
    parser.add_argument("--resamples", type=int, default=999)
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=[50, 200, 1000], help="captions per data set"
    )
    parser.add_argument("--truth-captions", type=int, default=250_000)
    parser.add_argument(
        "--worlds", nargs="+", default=[w.name for w in WORLDS], choices=[w.name for w in WORLDS]
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore", category=RuntimeWarning)
    rng = np.random.default_rng(args.seed)
    start, cpu = time.perf_counter(), time.process_time()
    worlds = [w for w in WORLDS if w.name in args.worlds]

    print(
        f"## Population tau ({args.truth_captions:,} captions, twice; ± is half the two "
        "draws' difference)\n"
    )
    print("| world | tau_b | tau_c | check |")
    print("|---|---|---|---|")
    targets = {}
    for world in worlds:
        target, error = truth(world, args.truth_captions, rng)
        targets[world.name] = target
        check = ""
        if world.name == "continuous":  # bivariate normal: (2/pi) arcsin(rho)
            rho = 1 / np.sqrt(1.25 * 2.0)
            check = f"(2/pi) arcsin(rho) = {2 / np.pi * np.arcsin(rho):.4f}"
        elif not world.agree:
            check = "0 by construction (used)"
        print(
            f"| {world.name} | {target['tau_b']:.4f} ± {error['tau_b']:.4f} | "
            f"{target['tau_c']:.4f} ± {error['tau_c']:.4f} | {check} |",
            flush=True,
        )

    results = []
    for world in worlds:
        datasets = args.datasets if world.agree else args.null_datasets
        for captions in args.sizes:
            results += cell(world, captions, datasets, args.resamples, targets[world.name], rng)
            print(f"{world.name} {captions}: {time.perf_counter() - start:.0f} s", file=sys.stderr)

    print(
        f"\n## Coverage of the 95% percentile cluster-bootstrap intervals "
        f"({args.resamples} resamples; {args.datasets} data sets per cell, Monte-Carlo "
        f"95% band {_band(LEVEL, args.datasets)}; no_agreement {args.null_datasets}, "
        f"{_band(LEVEL, args.null_datasets)}); * = the right cluster\n"
    )
    print(
        "| world | captions | rows | unit (clusters) | tau_b cover | width | bias | "
        "tau_c cover | width | bias |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        print(
            f"| {r['world']} | {r['captions']} | {r['rows']} | {r['unit']} "
            f"({r['clusters']}) | {r['tau_b coverage']:.3f} | {r['tau_b width']:.3f} | "
            f"{r['tau_b bias']:+.4f} | {r['tau_c coverage']:.3f} | {r['tau_c width']:.3f} | "
            f"{r['tau_c bias']:+.4f} |"
        )

    nulls = [r for r in results if r["world"] == "no_agreement"]
    if nulls:
        print(
            f"\n## Size of the test of tau = 0 at alpha {ALPHA} under no_agreement "
            f"({args.null_datasets} data sets per cell, Monte-Carlo 95% band "
            f"{_band(ALPHA, args.null_datasets)}): the bootstrap test per unit beside "
            "scipy's asymptotic p on the rating rows\n"
        )
        print(
            "| captions | unit (clusters) | bootstrap tau_b | bootstrap tau_c | scipy tau_b | "
            "scipy tau_c |"
        )
        print("|---|---|---|---|---|---|")
        for r in nulls:
            print(
                f"| {r['captions']} | {r['unit']} ({r['clusters']}) | "
                f"{r['tau_b reject']:.3f} | {r['tau_c reject']:.3f} | "
                f"{r['tau_b scipy reject']:.3f} | {r['tau_c scipy reject']:.3f} |"
            )
    powers = [
        min(r["tau_b reject"], r["tau_c reject"])
        for r in results
        if r["world"] != "no_agreement" and r["unit"].endswith("*")
    ]
    if powers:
        print(
            f"\nPower of the same test (right unit) in the worlds with agreement: at least "
            f"{min(powers):.3f} in every cell."
        )
    print(f"\n({time.perf_counter() - start:.0f} s wall, {time.process_time() - cpu:.0f} s CPU)")


if __name__ == "__main__":
    main()
