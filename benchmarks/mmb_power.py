"""Benchmark: how much validation data MMB needs before it helps, and whether its
comparison with AVG and BPE (studies/mmb/measures/comparison.py) holds its level and coverage.

    .venv/bin/python benchmarks/mmb_power.py [--worlds 2000] [--boot 400] [--perm 1999]
        [--groups 30 10] [--power-worlds 20] [--per-cluster 0 1 2 5 10 20 40] [--seed 0]
        [--sections power null coverage ece-null ece-coverage] [--jobs 2]

Five tables, Markdown:

1. power: the power view (issue 20, item 8). Simulated judges (studies/mmb/world.py: the
   sim backend's law without images, each judge its own landscape) in the default world
   and in one the default does not use (no position or brightness bias), at the default's
   size (30 test groups x 10 pairs, 160 validation candidates, 4 styles = K clusters of
   purity 0.9, 10 instructions, 3 training x 5 sampling seeds). Against validation pairs
   per cluster: mean ECE of AVG, BPE and MMB, MMB's top-instruction recovery (share of
   clusters whose top instruction, fitted on the whole pool, is the planted best one), and
   the power of the verdict's test (share of judges where MMB's Brier score is below
   AVG's with t-test p < 0.05).
2. null: the Brier comparison's tests (t and sign flip) on data sets where MMB's and the
   baseline's runs follow one law, so neither is better by construction: p = sigmoid(x +
   e) with the pair's true logit x (humans: y ~ Bernoulli(sigmoid(x))) and e normal,
   skewed (centred exponential) or discrete (a smoothed choice, 2/3 or 1/3 as a backend
   without log-probs gives), at every --groups. Rejection rate at alpha = 0.05 with its
   Monte-Carlo standard error.
3. coverage: the Brier t-interval on planted worlds where the baseline's logits are the
   truth times 2 or times 1/2 (discrete: it answers sigmoid(2 ln 2) = 0.8 or
   sigmoid(ln 2 / 2) = 0.59 instead of 2/3); the true D is the mean pair difference over
   --truth-groups x 10 fresh pairs; coverage of the 95 % interval with its MC error.
4-5. ece-null, ece-coverage: the same for the approximate ECE bootstrap (30 groups; the
   true ECE difference at this test size is the mean over --truth-draws data sets).

The null and coverage tables are in studies/mmb/measures/comparison.py's docstring.

Full run of the power view (00:44 UTC, 2026-11-25, ``--sections power``), 20 judges per
world, ECE means; recovery = top is the planted instruction; power = share of judges where
MMB's Brier score beats AVG's with t-test p < 0.05 (the verdict's test):

============  =====  =====  =====  ========  =====  =====  =====  ========  =====
per cluster   default world (position 0.5, brightness 3)  no nuisance bias
------------  -----------------------------------------  ------------------------------
n_val / K     AVG    BPE    MMB    recovery  power  BPE    MMB    recovery  power
============  =====  =====  =====  ========  =====  =====  =====  ========  =====
0             0.132  0.132  0.132  0.000     0.00   0.137  0.137  0.000     0.00
1             0.132  0.100  0.104  0.008     0.60   0.106  0.109  0.004     0.65
2             0.132  0.097  0.089  0.021     0.55   0.102  0.095  0.029     0.55
5             0.132  0.114  0.093  0.083     0.60   0.118  0.098  0.096     0.60
10            0.132  0.109  0.096  0.296     0.50   0.116  0.103  0.329     0.60
20            0.132  0.108  0.095  0.433     0.65   0.118  0.102  0.458     0.70
40            0.132  0.106  0.091  0.675     0.55   0.116  0.099  0.725     0.60
============  =====  =====  =====  ========  =====  =====  =====  ========  =====

(AVG in the no-nuisance world: 0.137 throughout.) In this idealised world (clusters =
styles, purity 0.9) MMB's ECE is below AVG's with or without the nuisance biases; the
30 test groups, not the validation data, limit how often the comparison can show it.

``--sections`` runs some of the five; ``--jobs`` spreads the data sets over processes
(each data set has its own seeded generator, so the numbers do not depend on it).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import numpy as np
import pandas as pd
from joblib import Parallel, delayed
from scipy.special import expit

from judgebias.studies.mmb.data.synthetic import STYLES
from judgebias.studies.mmb.jobs import sampled_p_first
from judgebias.studies.mmb.measures.comparison import (
    cell_predictions,
    compare_brier,
    compare_ece,
    weighted_ece,
)
from judgebias.studies.mmb.measures.factorial import Design
from judgebias.studies.mmb.measures.power import recovery
from judgebias.studies.mmb.params import builtin_pool
from judgebias.studies.mmb.sim import JudgeTraits, landscape_key
from judgebias.studies.mmb.world import simulate_world

DEFAULT_TRAITS = {"gamma": 6.0, "position_bias": 0.5, "brightness_bias": 3.0, "noise": 0.3}
EXPERTS = {"pastel landscape": "landscape painter", "neon sci-fi": "graphic designer",
           "ink sketch": "comic book inker", "pixel mosaic": "pixel artist"}
WORLDS = {"default (position + brightness bias)": {},
          "no nuisance bias": {"position_bias": 0.0, "brightness_bias": 0.0}}
GROUPS, PER_GROUP, RUNS = 30, 10, 6


def power_table(args: argparse.Namespace) -> pd.DataFrame:
    pool = [p["text"] for p in builtin_pool()]
    styles = list(STYLES)
    design = Design(n_prompts=[10], n_val=[0], train_seeds=range(3), sampling_seeds=range(5))
    rows = []
    for name, change in WORLDS.items():
        for judge in range(args.power_worlds):
            traits = JudgeTraits(experts=EXPERTS, world=landscape_key(args.seed, f"j{judge}"),
                                 **{**DEFAULT_TRAITS, **change})
            world = simulate_world(traits, pool, styles=styles, n_test_groups=GROUPS,
                                   images_per_test_group=5, n_val_pairs=160, purity=0.9,
                                   rng=np.random.default_rng([args.seed, judge]))
            ones = np.ones(len(world.split.y_test))
            for per_cluster in args.per_cluster:
                n_val = per_cluster * len(styles)
                runs = cell_predictions(world.split, design, 10, n_val, len(styles))
                ece = {m: float(weighted_ece(p, world.split.y_test, ones).mean())
                       for m, p in runs.items()}
                test = compare_brier(runs["MMB"], runs["AVG"], world.split.y_test,
                                     world.test_groups, n_perm=args.perm, seed=judge)
                rows.append({"world": name, "per cluster": per_cluster, **ece,
                             "recovery": recovery(world.split, world.split.R_pool[
                                 (len(styles), 0)], n_val, world.planted,
                                 train_seeds=design.train_seeds),
                             "power vs AVG": test["p_value"] < 0.05 and test["difference"] < 0})
    return pd.DataFrame(rows).groupby(["world", "per cluster"]).mean().round(3)


NOISE: dict[str, Callable[[np.random.Generator, tuple[int, int]], np.ndarray]] = {
    "normal": lambda rng, shape: rng.normal(0.0, 0.5, shape),
    "skewed": lambda rng, shape: rng.exponential(0.7, shape) - 0.7,
    "discrete": lambda rng, shape: rng.normal(0.0, 0.5, shape),
    **{f"sampled n={n}": lambda rng, shape: rng.normal(0.0, 0.5, shape) for n in (4, 8, 16)},
}
SCALES = {"baseline logit x 2": 2.0, "baseline logit x 1/2": 0.5}


def dataset(rng: np.random.Generator, noise: str, base_scale: float, groups: int = GROUPS
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(MMB runs, baseline runs, y, groups): RUNS runs each on groups x PER_GROUP pairs;
    the baseline's logits are the truth times base_scale (1: the null). Discrete noise
    answers expit(scale ln 2) or its complement (2/3 or 1/3 at scale 1, the smoothed
    choice), so a planted scale changes its confidence, not its side. ``sampled n=N``: the
    run's probability is read from N verdicts drawn with it, (k + 1) / (N + 2) as
    mmb.probability's samples route (studies/mmb/jobs.py), so the binomial noise of the
    samples is in every run and in the truth."""
    x = rng.normal(0.0, 1.5, groups * PER_GROUP)
    y = (rng.random(len(x)) < expit(x)).astype(int)

    def runs(scale: float) -> np.ndarray:
        logit = scale * x[None, :] + NOISE[noise](rng, (RUNS, len(x)))
        if noise == "discrete":
            confident = expit(scale * np.log(2))
            return np.where(logit > 0, confident, 1 - confident)
        if noise.startswith("sampled"):
            n = int(noise.rpartition("=")[2])
            return sampled_p_first(rng.binomial(n, expit(logit)), np.full(logit.shape, n),
                                   1.0)
        return expit(logit)

    return runs(1.0), runs(base_scale), y, np.repeat(np.arange(groups), PER_GROUP)


def one_comparison(args: argparse.Namespace, stream: int, i: int, noise: str, scale: float,
                   groups: int, statistic: str) -> dict[str, float]:
    """The comparison (compare_brier, or compare_ece with statistic "ece") on data set i
    of a stream, from its own seeded generator."""
    data = dataset(np.random.default_rng([args.seed, stream, i]), noise, scale, groups)
    if statistic == "ece":
        return compare_ece(*data, n_boot=args.boot, seed=i)
    return compare_brier(*data, n_perm=args.perm, seed=i)


def comparisons(args: argparse.Namespace, noise: str, scale: float, stream: int,
                groups: int = GROUPS, statistic: str = "brier") -> list[dict[str, float]]:
    """one_comparison on `args.worlds` data sets (forked processes: the numbers do not
    depend on --jobs)."""
    return Parallel(n_jobs=args.jobs, backend="multiprocessing")(
        delayed(one_comparison)(args, stream, i, noise, scale, groups, statistic)
        for i in range(args.worlds))


def rejection_rate(found: list[dict[str, float]], column: str) -> float:
    return float(np.mean([f[column] < 0.05 for f in found]))


def null_table(args: argparse.Namespace) -> pd.DataFrame:
    """The Brier comparison's two tests under the null, at every --groups."""
    rows = []
    for groups in args.groups:
        for stream, noise in enumerate(NOISE):
            if noise not in args.noises:
                continue
            found = comparisons(args, noise, 1.0, 100 + 10 * groups + stream, groups)
            rows.append({"groups": groups, "noise": noise, "data sets": args.worlds,
                         "t-test": rejection_rate(found, "p_value"),
                         "sign flip": rejection_rate(found, "p_sign_flip"),
                         "MC se": float(np.sqrt(0.05 * 0.95 / args.worlds))})
    return pd.DataFrame(rows).set_index(["groups", "noise"]).round(4)


def true_brier_difference(noise: str, scale: float, rng: np.random.Generator,
                          groups: int) -> float:
    """E[Brier(MMB) - Brier(baseline)] per pair: the mean over `groups` x PER_GROUP
    fresh pairs (RUNS runs each; the run mean has the same expectation)."""
    mmb, base, y, _ = dataset(rng, noise, scale, groups)
    return float(((mmb - y) ** 2).mean() - ((base - y) ** 2).mean())


def coverage_table(args: argparse.Namespace) -> pd.DataFrame:
    """Coverage of the Brier t-interval on planted worlds, at every --groups."""
    rows = []
    cells = [(groups, label, scale, noise) for groups in args.groups
             for label, scale in SCALES.items() for noise in NOISE]
    # each row's streams as before the sampled noises came (theirs are numbered from
    # 10,000), so the docstring's rows reproduce, with or without --noises
    plain = [cell for cell in cells if not cell[3].startswith("sampled")]
    for cell in cells:
        groups, label, scale, noise = cell
        if noise not in args.noises:
            continue
        row = plain.index(cell) if cell in plain else 10_000 + cells.index(cell)
        truth = true_brier_difference(noise, scale, np.random.default_rng([args.seed, 3, row]),
                                      args.truth_groups)
        found = comparisons(args, noise, scale, 300 + row, groups)
        rows.append({"groups": groups, "world": label, "noise": noise,
                     "true D": truth, "data sets": args.worlds,
                     "coverage of 95 %": float(np.mean(
                         [f["low"] <= truth <= f["high"] for f in found])),
                     "MC se": float(np.sqrt(0.95 * 0.05 / args.worlds))})
    return pd.DataFrame(rows).set_index(["groups", "world", "noise"]).round(4)


def ece_null_table(args: argparse.Namespace) -> pd.DataFrame:
    """The approximate ECE bootstrap test under the null (30 groups)."""
    rows = []
    for stream, noise in enumerate(NOISE):
        if noise not in args.noises:
            continue
        found = comparisons(args, noise, 1.0, 100 + stream, statistic="ece")
        rows.append({"noise": noise, "data sets": args.worlds,
                     "rejection at 0.05": rejection_rate(found, "p_value"),
                     "MC se": float(np.sqrt(0.05 * 0.95 / args.worlds))})
    return pd.DataFrame(rows).set_index("noise").round(4)


def true_ece_difference(noise: str, scale: float, draws: int, rng: np.random.Generator
                        ) -> float:
    values = []
    for _ in range(draws):
        mmb, base, y, _ = dataset(rng, noise, scale)
        ones = np.ones(len(y))
        values.append(weighted_ece(mmb, y, ones).mean() - weighted_ece(base, y, ones).mean())
    return float(np.mean(values))


def ece_coverage_table(args: argparse.Namespace) -> pd.DataFrame:
    """Coverage of the approximate ECE bootstrap interval (30 groups)."""
    rows = []
    for label, scale in SCALES.items():
        for noise in ("normal", "skewed"):
            rng = np.random.default_rng([args.seed, 2, len(rows)])
            truth = true_ece_difference(noise, scale, args.truth_draws, rng)
            covered = [f["low"] <= truth <= f["high"] for f in comparisons(
                args, noise, scale, 200 + len(rows), statistic="ece")]
            rows.append({"world": label, "noise": noise, "true D": truth,
                         "data sets": args.worlds, "coverage of 95 %": float(np.mean(covered)),
                         "MC se": float(np.sqrt(0.95 * 0.05 / args.worlds))})
    return pd.DataFrame(rows).set_index(["world", "noise"]).round(4)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worlds", type=int, default=2000,
                        help="null and coverage data sets per row")
    parser.add_argument("--boot", type=int, default=400, help="bootstrap resamples")
    parser.add_argument("--power-worlds", type=int, default=20, help="judges per world")
    parser.add_argument("--per-cluster", type=int, nargs="+", default=[0, 1, 2, 5, 10, 20, 40])
    parser.add_argument("--perm", type=int, default=1999,
                        help="sign-flip resamples (exact when 2^groups is fewer)")
    parser.add_argument("--groups", type=int, nargs="+", default=[GROUPS, 10],
                        help="test groups of the null and coverage data sets")
    parser.add_argument("--truth-groups", type=int, default=100_000,
                        help="groups drawn for the true Brier difference")
    parser.add_argument("--truth-draws", type=int, default=10_000,
                        help="data sets averaged for the true ECE difference")
    parser.add_argument("--noises", nargs="+", default=list(NOISE), choices=list(NOISE),
                        help="the null and coverage tables' noises")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--sections", nargs="+", default=list(SECTIONS), choices=SECTIONS)
    args = parser.parse_args()
    for name in args.sections:
        title, table = SECTIONS[name]
        print(f"## {title}\n\n{table(args).to_markdown()}\n", flush=True)


SECTIONS = {
    "power": ("Power: ECE, top-instruction recovery and the Brier comparison's power "
              "against validation pairs per cluster", power_table),
    "null": ("Null: the Brier comparison's rejection rate at alpha = 0.05", null_table),
    "coverage": ("Coverage of the Brier comparison's 95 % t-interval", coverage_table),
    "ece-null": ("Null: the approximate ECE bootstrap test's rejection rate at alpha = 0.05",
                 ece_null_table),
    "ece-coverage": ("Coverage of the approximate ECE bootstrap interval",
                     ece_coverage_table),
}


if __name__ == "__main__":
    main()
