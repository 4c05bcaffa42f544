"""Benchmark: how much validation data MMB needs before it helps, and whether its
comparison with AVG and BPE (studies/mmb/comparison.py) holds its level and coverage.

    .venv/bin/python benchmarks/mmb_power.py [--worlds 2000] [--boot 400]
        [--power-worlds 20] [--per-cluster 0 1 2 5 10 20 40] [--seed 0]

Three tables, Markdown:

1. Power view (issue 20, item 8). Simulated judges (studies/mmb/world.py: the sim
   backend's law without images, each judge its own landscape) in the default world and in
   one the default does not use (no position or brightness bias), at the default's size
   (30 test groups x 10 pairs, 160 validation candidates, 4 styles = K clusters of purity
   0.9, 10 instructions, 3 training x 5 sampling seeds). Against validation pairs per
   cluster: mean ECE of AVG, BPE and MMB, MMB's top-instruction recovery (share of
   clusters whose top instruction, fitted on the whole pool, is the planted best one), and
   the power of the comparison (share of judges where MMB's ECE is below AVG's with
   p < 0.05).
2. Null (the comparison's test). Data sets where MMB's and the baseline's runs follow one
   law, so they are equally calibrated by construction: p = sigmoid(x + e) with the
   pair's true logit x (humans: y ~ Bernoulli(sigmoid(x))) and e normal, skewed (centred
   exponential) or discrete (a smoothed choice, 2/3 or 1/3 as a backend without log-probs
   gives). Rejection rate at alpha = 0.05 with its Monte-Carlo standard error.
3. Coverage (the comparison's interval). Planted worlds where the baseline is
   over-confident (sigmoid(2x + e)) or under-confident (sigmoid(x / 2 + e)); the true D
   (difference of expected ECE at this test size) is the mean of D over 10,000 fresh data
   sets; coverage of the 95 % interval with its Monte-Carlo standard error.

Full run (00:00 UTC, 2026-11-25, a shared 2-core machine; --boot 400 for the power view,
200 for null and coverage: tables 2-3 are in studies/mmb/comparison.py's docstring). Power
view, 20 judges per world, ECE means; recovery = top is the planted instruction; power =
share of judges where MMB beats AVG with p < 0.05:

============  =====  =====  =====  ========  =====  =====  =====  ========  =====
per cluster   default world (position 0.5, brightness 3)  no nuisance bias
------------  -----------------------------------------  ------------------------------
n_val / K     AVG    BPE    MMB    recovery  power  BPE    MMB    recovery  power
============  =====  =====  =====  ========  =====  =====  =====  ========  =====
0             0.132  0.132  0.132  0.000     0.00   0.137  0.137  0.000     0.00
1             0.132  0.100  0.104  0.008     0.55   0.106  0.109  0.004     0.55
2             0.132  0.097  0.089  0.021     0.65   0.102  0.095  0.029     0.65
5             0.132  0.114  0.093  0.083     0.45   0.118  0.098  0.096     0.45
10            0.132  0.109  0.096  0.296     0.55   0.116  0.103  0.329     0.45
20            0.132  0.108  0.095  0.433     0.50   0.118  0.102  0.458     0.40
40            0.132  0.106  0.091  0.675     0.50   0.116  0.099  0.725     0.35
============  =====  =====  =====  ========  =====  =====  =====  ========  =====

(AVG in the no-nuisance world: 0.137 throughout.) In this idealised world (clusters =
styles, purity 0.9) MMB's ECE is below AVG's with or without the nuisance biases; the
30 test groups, not the validation data, limit how often the comparison can show it.

``--sections`` runs some of the three; ``--jobs`` spreads the data sets over processes
(each data set has its own seeded generator, so the numbers do not depend on it).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import numpy as np
import pandas as pd
from joblib import Parallel, delayed
from scipy.special import expit

from judgebias.studies.mmb.comparison import cell_predictions, compare_ece, weighted_ece
from judgebias.studies.mmb.factorial import Design
from judgebias.studies.mmb.params import builtin_pool
from judgebias.studies.mmb.power import recovery
from judgebias.studies.mmb.sim import JudgeTraits, landscape_key
from judgebias.studies.mmb.synthetic import STYLES
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
                test = compare_ece(runs["MMB"], runs["AVG"], world.split.y_test,
                                   world.test_groups, n_boot=args.boot, seed=judge)
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
}


def dataset(rng: np.random.Generator, noise: str, base_scale: float
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(MMB runs, baseline runs, y, groups): RUNS runs each on GROUPS x PER_GROUP pairs;
    the baseline's logits are the truth times base_scale (1: the null)."""
    x = rng.normal(0.0, 1.5, GROUPS * PER_GROUP)
    y = (rng.random(len(x)) < expit(x)).astype(int)

    def runs(scale: float) -> np.ndarray:
        logit = scale * x[None, :] + NOISE[noise](rng, (RUNS, len(x)))
        return np.where(logit > 0, 2 / 3, 1 / 3) if noise == "discrete" else expit(logit)

    return runs(1.0), runs(base_scale), y, np.repeat(np.arange(GROUPS), PER_GROUP)


def one_comparison(seed: int, stream: int, i: int, noise: str, scale: float, boot: int
                   ) -> dict[str, float]:
    """compare_ece on data set i of a stream, from its own seeded generator."""
    rng = np.random.default_rng([seed, stream, i])
    return compare_ece(*dataset(rng, noise, scale), n_boot=boot, seed=i)


def comparisons(args: argparse.Namespace, noise: str, scale: float, stream: int
                ) -> list[dict[str, float]]:
    """one_comparison on `args.worlds` data sets (forked processes: the numbers do not
    depend on --jobs)."""
    return Parallel(n_jobs=args.jobs, backend="multiprocessing")(
        delayed(one_comparison)(args.seed, stream, i, noise, scale, args.boot)
        for i in range(args.worlds))


def null_table(args: argparse.Namespace) -> pd.DataFrame:
    rows = []
    for stream, noise in enumerate(NOISE):
        found = comparisons(args, noise, 1.0, 100 + stream)
        rate = float(np.mean([f["p_value"] < 0.05 for f in found]))
        rows.append({"noise": noise, "data sets": args.worlds, "rejection at 0.05": rate,
                     "MC se": float(np.sqrt(0.05 * 0.95 / args.worlds))})
    return pd.DataFrame(rows).set_index("noise").round(4)


def true_difference(noise: str, scale: float, draws: int, rng: np.random.Generator
                    ) -> float:
    values = []
    for _ in range(draws):
        mmb, base, y, _ = dataset(rng, noise, scale)
        ones = np.ones(len(y))
        values.append(weighted_ece(mmb, y, ones).mean() - weighted_ece(base, y, ones).mean())
    return float(np.mean(values))


def coverage_table(args: argparse.Namespace) -> pd.DataFrame:
    rows = []
    for label, scale in (("over-confident baseline", 2.0), ("under-confident baseline", 0.5)):
        for noise in ("normal", "skewed"):
            rng = np.random.default_rng([args.seed, 2, len(rows)])
            truth = true_difference(noise, scale, args.truth_draws, rng)
            covered = [f["low"] <= truth <= f["high"]
                       for f in comparisons(args, noise, scale, 200 + len(rows))]
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
    parser.add_argument("--truth-draws", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--sections", nargs="+", default=list(SECTIONS), choices=SECTIONS)
    args = parser.parse_args()
    for name in args.sections:
        title, table = SECTIONS[name]
        print(f"## {title}\n\n{table(args).to_markdown()}\n", flush=True)


SECTIONS = {
    "power": ("Power: ECE, top-instruction recovery and the comparison's power against "
              "validation pairs per cluster", power_table),
    "null": ("Null: the comparison's rejection rate at alpha = 0.05", null_table),
    "coverage": ("Coverage of the comparison's 95 % interval", coverage_table),
}


if __name__ == "__main__":
    main()
