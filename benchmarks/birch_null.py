"""Benchmark: BIRCH's McNemar tests under simulated nulls, and the coverage of its paired
bootstrap intervals on planted worlds (issue 20, item 5).

    .venv/bin/python benchmarks/birch_null.py [--datasets 4000] [--coverage-datasets 2000]
        [--resamples 999] [--ns 20 50 257 1000] [--coverage-ns 50 257 1000] [--seed 0]

Why: `judgebias.studies.birch.measures.inference` reports a McNemar test of each method
against Base and bootstrap intervals for every measure of seed 003 (Acc, Acc_IDS, Acc_CDS,
balanced accuracy, IB, LB, IRS, each method's gain over Base, Table 2's IB change). A
test is only worth printing if it rejects a true null at its nominal rate, and an
interval only if it covers the truth at its nominal rate; both are checked here on
worlds whose truth is known, through the pipeline's own functions
(``inference.mcnemar_rows``, ``with_fdr``, ``correctness_table``, ``estimands``,
``combine`` and ``judgebias.stats.bootstrap.bootstrap_weighted_means``).

**Nulls** (method ≡ Base): pair i has a difficulty d_i (drawn afresh per data set, so
pairs are a sample of a population); a variant gets pair i right iff d_i + e > 0. Under
the null the method's verdict has the same distribution as Base's on every pair: with
probability ``rho`` it repeats Base's verdict, else it is a fresh draw. Noise e:
``logistic`` (the sim's), ``skewed`` (Exp(1) - 1, right-skewed), ``discrete`` (e in
{-1, 0, 1} on integer difficulties: ties, counted wrong as the pipeline does),
``rare discordance`` (rho = 0.98: a handful of discordant pairs, the exact branch), and
``offsetting`` (a *population* null: the method is 0.2 better on D_IDS and worse on D_CDS
by the amount that leaves its accuracy equal to Base's; per pair it differs). Rows report
the rejection rate at alpha = 0.05 of the test on D_IDS ∪ D_CDS (``offsetting``: its
only null set), the share of data sets that went to the exact branch, and ``BH family``:
P(any rejection) among 9 tests of one judge (3 null methods x D_IDS ∪ D_CDS, D_IDS,
D_CDS, as ``inference.mcnemar_rows`` tests them; BH at 0.05), which must stay at most
0.05 (the family-wise rate under the global null).

**Coverage**: planted worlds of pair types (IB subset x whether y^c is longer) with known
per-type probabilities of being right per variant (Base, no image, BIRCH, equalised on a
kept 60%), 2% of verdicts missing at random, verdicts of different variants sharing the
pair's draw with probability 0.5. The truth of each estimand is the population value
(type probabilities x accuracies). Worlds: ``planted`` (the default's shape: CDS share
0.3, IB 0.5, BIRCH +0.2 on CDS), ``no bias`` (every variant 0.7 everywhere: every
difference is 0), ``ceiling`` (accuracy 0.97 on IDS, CDS share 0.1: few, near-certain
pairs). Coverage is reported for the percentile and BCa intervals of the same bootstrap
(resamples ``--resamples``); a data set whose interval is undefined (a resample with an
empty subset) counts as a miss. Prints Markdown.
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from statsmodels.stats.multitest import multipletests

from judgebias.stats.bootstrap import bootstrap_weighted_means
from judgebias.studies.birch.measures import inference

ALPHA = 0.05
LEVEL = 0.95


# ----------------------------------------------------------------------------- nulls


@dataclass(frozen=True)
class NullWorld:
    """A judge and a method that equals it in distribution (module docstring)."""

    name: str
    noise: str  # logistic | skewed | discrete
    rho: float  # P(the method repeats Base's verdict on a pair)
    offset: float = 0.0  # offsetting: the method's shift on IDS (CDS gets the balancing one)


NULLS = (
    NullWorld("logistic", "logistic", 0.5),
    NullWorld("skewed", "skewed", 0.5),
    NullWorld("discrete", "discrete", 0.5),
    NullWorld("rare discordance", "logistic", 0.98),
    NullWorld("offsetting", "logistic", 0.0, offset=0.2),
)
CDS_SHARE = 0.3


def _noise(kind: str, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    if kind == "logistic":
        return rng.logistic(size=shape)
    if kind == "skewed":
        return rng.exponential(size=shape) - 1.0
    if kind == "discrete":
        return rng.choice([-1.0, 0.0, 1.0], p=[0.3, 0.3, 0.4], size=shape)
    raise ValueError(kind)


def _difficulty(kind: str, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    if kind == "discrete":
        return rng.integers(-1, 3, size=shape).astype(float)  # ties with the noise happen
    return rng.normal(0.8, 1.0, size=shape)


def null_verdicts(world: NullWorld, n: int, datasets: int, rng: np.random.Generator
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(base (D, n), methods (3, D, n), is_cds (D, n)): correctness 1/0 of `datasets`
    data sets of n pairs, three null methods each."""
    shape = (datasets, n)
    cds = rng.random(shape) < CDS_SHARE
    if world.offset:
        # Base right with P = 0.5 everywhere; the method with 0.5 + offset on D_IDS and
        # 0.5 - offset (1 - r) / r on D_CDS: equal population accuracy, no pair a null
        shift = np.where(cds, -world.offset * (1 - CDS_SHARE) / CDS_SHARE, world.offset)
        base = rng.random(shape) < 0.5
        methods = np.stack([rng.random(shape) < 0.5 + shift for _ in range(3)])
        return base, methods, cds
    d = _difficulty(world.noise, rng, shape)
    base = d + _noise(world.noise, rng, shape) > 0
    methods = []
    for _ in range(3):
        fresh = d + _noise(world.noise, rng, shape) > 0
        methods.append(np.where(rng.random(shape) < world.rho, base, fresh))
    return base, np.stack(methods), cds


def null_rates(world: NullWorld, n: int, datasets: int, rng: np.random.Generator
               ) -> dict[str, float]:
    """Rejection rate of the test on D_IDS ∪ D_CDS, its exact share, and the BH family's
    rate (3 methods x the pair sets of ``inference.mcnemar_rows``: labelled, IDS, CDS)."""
    base, methods, cds = null_verdicts(world, n, datasets, rng)
    sets = {"labelled": np.ones_like(cds), "IDS": ~cds, "CDS": cds}
    p_values, tests = [], []
    for method in methods:
        for inside in sets.values():
            b = ((base & ~method) & inside).sum(axis=1)
            c = ((~base & method) & inside).sum(axis=1)
            found = [inference.mcnemar_p(int(x), int(y)) for x, y in zip(b, c, strict=True)]
            p_values.append([f[1] for f in found])
            tests.append([f[2] for f in found])
    p = np.array(p_values).T  # (datasets, 9)
    family = [multipletests(row, alpha=ALPHA, method="fdr_bh")[0].any() for row in p]
    return {"rejection": float((p[:, 0] < ALPHA).mean()),
            "exact share": float(np.mean([t == "exact binomial" for t in tests[0]])),
            # the offsetting method is no null on D_IDS or D_CDS alone: no family there
            "BH family": np.nan if world.offset else float(np.mean(family))}


# -------------------------------------------------------------------------- coverage


@dataclass(frozen=True)
class PlantedWorld:
    """Pair types (subset, y^c longer?) with probabilities and per-variant accuracies."""

    name: str
    cds_share: float
    longer: Mapping[str, float]  # P(y^c longer | subset)
    accuracy: Mapping[str, Mapping[tuple[str, bool], float]]  # variant -> type -> P(right)
    unlabelled: float = 0.1  # pairs the labeller left inconsistent (in "all" only)


def _types(ids_longer: float, ids_shorter: float, cds_longer: float, cds_shorter: float
           ) -> dict[tuple[str, bool], float]:
    return {("IDS", True): ids_longer, ("IDS", False): ids_shorter,
            ("CDS", True): cds_longer, ("CDS", False): cds_shorter,
            ("none", True): (ids_longer + cds_longer) / 2,
            ("none", False): (ids_shorter + cds_shorter) / 2}


WORLDS = (
    PlantedWorld("planted", 0.3, {"IDS": 0.8, "CDS": 0.25, "none": 0.5}, {
        "base": _types(0.88, 0.75, 0.40, 0.25),
        "no_image": _types(0.90, 0.80, 0.30, 0.20),
        "birch": _types(0.90, 0.82, 0.55, 0.48),
        "equalised": _types(0.80, 0.80, 0.35, 0.35)}),
    PlantedWorld("no bias", 0.3, {"IDS": 0.5, "CDS": 0.5, "none": 0.5},
                 {v: _types(0.7, 0.7, 0.7, 0.7)
                  for v in ("base", "no_image", "birch", "equalised")}),
    PlantedWorld("ceiling", 0.1, {"IDS": 0.7, "CDS": 0.3, "none": 0.5}, {
        "base": _types(0.98, 0.96, 0.9, 0.85),
        "no_image": _types(0.98, 0.97, 0.85, 0.8),
        "birch": _types(0.99, 0.97, 0.95, 0.92),
        "equalised": _types(0.97, 0.97, 0.88, 0.88)}),
)
KEPT = 0.6  # share of pairs length equalisation keeps
MISSING = 0.02
SHARED_DRAW = 0.5


def _type_probabilities(world: PlantedWorld) -> dict[tuple[str, bool], float]:
    labelled = 1 - world.unlabelled
    share = {"IDS": labelled * (1 - world.cds_share), "CDS": labelled * world.cds_share,
             "none": world.unlabelled}
    return {(s, longer): share[s] * (world.longer[s] if longer else 1 - world.longer[s])
            for s in share for longer in (True, False)}


def truth(world: PlantedWorld, wanted: Sequence[inference.Estimand]) -> np.ndarray:
    """Population value of each estimand: column means are type-weighted accuracies."""
    types = _type_probabilities(world)
    sets = {"labelled": lambda s, lg: s != "none", "all": lambda s, lg: True,
            "IDS": lambda s, lg: s == "IDS", "CDS": lambda s, lg: s == "CDS",
            "longer": lambda s, lg: lg, "shorter": lambda s, lg: not lg}

    def mean(variant: str, pair_set: str) -> float:
        name = pair_set.split("_", 1)[1] if "_" in pair_set else pair_set
        inside = {t: w for t, w in types.items() if sets[name](*t)}
        accuracy = world.accuracy[variant]
        return sum(w * accuracy[t] for t, w in inside.items()) / sum(inside.values())

    return np.array([sum(w * mean(v, s) for (v, s), w in e.terms.items()) for e in wanted])


def planted_data(world: PlantedWorld, n: int, rng: np.random.Generator
                 ) -> tuple[dict[str, pd.Series], dict[str, pd.Series], pd.Series]:
    """One data set: correctness per variant, the subsets, the kept pairs' IB subsets."""
    types = _type_probabilities(world)
    keys = list(types)
    drawn = rng.choice(len(keys), size=n, p=np.array(list(types.values())))
    subset = np.array([k[0] for k in keys], dtype=object)[drawn]
    longer = np.array([k[1] for k in keys])[drawn]
    index = pd.RangeIndex(n)
    shared = rng.random(n)
    correct = {}
    for variant, accuracy in world.accuracy.items():
        p = np.array([accuracy[k] for k in keys])[drawn]
        u = np.where(rng.random(n) < SHARED_DRAW, shared, rng.random(n))
        values = pd.array(u < p, dtype="boolean")
        values[rng.random(n) < MISSING] = pd.NA
        correct[variant] = pd.Series(values, index=index)
    ib = pd.Series(np.where(subset == "none", None, subset), index=index, dtype=object)
    lb = pd.Series(np.where(longer, "longer", "shorter"), index=index, dtype=object)
    kept = ib.where(rng.random(n) < KEPT)
    return correct, {"ib": ib, "lb": lb}, kept


def coverage(world: PlantedWorld, n: int, datasets: int, resamples: int, batch: int,
             rng: np.random.Generator) -> pd.DataFrame:
    """Coverage of the percentile and BCa intervals of every estimand, and mean widths.

    Data sets are bootstrapped ``batch`` at a time: their tables side by side, one
    ``bootstrap_weighted_means`` call (the pipeline's), so the data sets of a batch share
    their resampled pair indices (independent data, independent batches)."""
    first = planted_data(world, max(n, 500), np.random.default_rng(0))
    columns = inference.correctness_table(first[0], first[1], first[2].index,
                                          first[2]).columns
    wanted = inference.estimands(pd.DataFrame(1.0, index=[0], columns=columns))
    matrix = inference.coefficients(pd.DataFrame(columns=columns), wanted)
    target = truth(world, wanted)
    k, s = matrix.shape
    hits = {"percentile": np.zeros(s), "BCa": np.zeros(s)}
    width, undefined = np.zeros(s), np.zeros(s)
    for start in range(0, datasets, batch):
        size = min(batch, datasets - start)
        tables = []
        for _ in range(size):
            correct, subsets, kept = planted_data(world, n, rng)
            table = inference.correctness_table(correct, subsets, kept.index, kept)
            tables.append(table[columns].to_numpy(dtype=float))

        def statistic(means: np.ndarray, size: int = size) -> np.ndarray:
            flat = inference.combine(means.reshape(-1, k), matrix)
            return flat.reshape(means.shape[0], size * s)

        summary = bootstrap_weighted_means(
            np.hstack(tables), statistic, n_resamples=resamples, confidence_level=LEVEL,
            method="BCa", rng=rng)
        distribution = summary.distribution.reshape(size, s, -1)
        missing = np.isnan(distribution).any(axis=2)
        low, high = np.percentile(np.nan_to_num(distribution), [2.5, 97.5], axis=2)
        bca = summary.low.reshape(size, s), summary.high.reshape(size, s)
        for name, (lo, hi) in {"percentile": (low, high), "BCa": bca}.items():
            inside = (lo <= target) & (target <= hi) & ~missing
            hits[name] += inside.sum(axis=0)
        width += np.where(missing, 0.0, high - low).sum(axis=0)
        undefined += missing.sum(axis=0)
    return pd.DataFrame({
        "estimand": [_label(e) for e in wanted], "truth": target,
        "percentile": hits["percentile"] / datasets, "BCa": hits["BCa"] / datasets,
        "width": width / np.maximum(datasets - undefined, 1),
        "undefined": undefined / datasets})


def _label(e: inference.Estimand) -> str:
    gain = " − base" if e.versus else ""
    return f"{e.variant} {e.statistic}{gain}"


# ------------------------------------------------------------------------------ main


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", type=int, default=4000, help="null data sets per row")
    parser.add_argument("--coverage-datasets", type=int, default=2000)
    parser.add_argument("--resamples", type=int, default=999)
    parser.add_argument("--ns", type=int, nargs="*", default=[20, 50, 257, 1000],
                        help="pairs per null data set (none: skip the nulls)")
    parser.add_argument("--coverage-ns", type=int, nargs="*", default=[50, 257, 1000],
                        help="pairs per planted data set (none: skip the coverage)")
    parser.add_argument("--batch", type=int, default=50,
                        help="data sets bootstrapped together (memory vs speed)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    # a degenerate resample distribution (every resampled pair right) has no BCa interval:
    # scipy warns and returns NaN, which the coverage counts as a miss
    warnings.filterwarnings("ignore", message="The BCa confidence interval cannot be")
    warnings.filterwarnings("ignore", category=RuntimeWarning)
    rng = np.random.default_rng(args.seed)
    start = time.perf_counter()

    if args.ns:
        null_section(args, rng)
    if args.coverage_ns:
        coverage_section(args, rng)
    print(f"\n({time.perf_counter() - start:.0f} s)")


def null_section(args: argparse.Namespace, rng: np.random.Generator) -> None:
    """The McNemar rejection table."""
    band = 1.96 * np.sqrt(ALPHA * (1 - ALPHA) / args.datasets)
    print(f"## McNemar under the null (alpha {ALPHA}; {args.datasets} data sets per row; "
          f"Monte-Carlo 95% band {ALPHA - band:.3f}-{ALPHA + band:.3f})\n")
    print("| world | n | rejection | exact share | BH family (9 tests) |")
    print("|---|---|---|---|---|")
    for world in NULLS:
        for n in args.ns:
            r = null_rates(world, n, args.datasets, rng)
            family = "–" if np.isnan(r["BH family"]) else f"{r['BH family']:.3f}"
            print(f"| {world.name} | {n} | {r['rejection']:.3f} | {r['exact share']:.2f} | "
                  f"{family} |", flush=True)


def coverage_section(args: argparse.Namespace, rng: np.random.Generator) -> None:
    """The coverage tables: a summary line per (world, n) as it finishes, then every
    estimand."""
    band = 1.96 * np.sqrt(LEVEL * (1 - LEVEL) / args.coverage_datasets)
    print(f"\n## Coverage of the paired bootstrap 95% intervals ({args.coverage_datasets} "
          f"data sets per cell, {args.resamples} resamples; Monte-Carlo 95% band "
          f"{LEVEL - band:.3f}-{LEVEL + band:.3f}); cells: percentile / BCa\n")
    print("| world n | min percentile | min BCa | median percentile | median BCa | "
          "undefined (max share) |")
    print("|---|---|---|---|---|---|")
    results = {}
    for world in WORLDS:
        for n in args.coverage_ns:
            r = coverage(world, n, args.coverage_datasets, args.resamples, args.batch, rng)
            results[world.name, n] = r
            print(f"| {world.name} n={n} | {r['percentile'].min():.3f} | "
                  f"{r['BCa'].min():.3f} | {r['percentile'].median():.3f} | "
                  f"{r['BCa'].median():.3f} | {r['undefined'].max():.3f} |", flush=True)
    keys = list(results)
    print()
    print("| estimand | " + " | ".join(f"{w} n={n}" for w, n in keys) + " |")
    print("|---|" + "---|" * len(keys))
    first = results[keys[0]]
    for i, estimand in enumerate(first["estimand"]):
        cells = [f"{results[k]['percentile'].iloc[i]:.3f} / {results[k]['BCa'].iloc[i]:.3f}"
                 for k in keys]
        print(f"| {estimand} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
