"""Benchmark: how close MMB comes without log-probs, p(y | x, a) read from n sampled
verdicts (``mmb.probability: samples``, issue 41 item 7), to the log-prob route.

    .venv/bin/python benchmarks/mmb_sampling.py [--judges 20] [--samples 1 4 8 16]
        [--per-cluster 10] [--seed 0]

Why: a judge without log-probs (Claude, a reasoning model) gives one verdict per call, so
MMB estimates p(y | x, a) per (pair, instruction) as (k + 1) / (n + 2) from n verdicts
sampled at temperature 1 (studies/mmb/jobs.py). That estimate is noisier than the
softmax of the answer token's log-probs and shrunk towards 1/2 by n / (n + 2); both
change the ECE, the Brier score and what the ensembles learn. This benchmark measures
by how much, on planted worlds where each verdict is drawn with the log-prob route's p
(the sim backend's law at temperature 1; studies/mmb/world.py): per world, 20 simulated
judges (each its own landscape), 30 test groups x 10 pairs, 160 validation candidates, 4
styles = K clusters of purity 0.9, 10 instructions, 10 validation pairs per cluster, 3
training x 5 sampling seeds; n = 1 is the smoothed single choice (2/3 or 1/3).

Worlds: the default judge (position and brightness bias), a judge with no bias at all
(every instruction the humans' own law), and a noisier judge the default does not use
(opinion noise 1.0, position bias 1.0, no brightness bias). Columns: the mean over judges
of each method's ECE (Guo et al. 2017, 15 bins) and Brier score (mean of (p - y)^2) on
the test pairs, averaged over the cell's replicate runs. The sampled routes' null and
coverage (the Brier comparison's t-test and interval with binomial sampling noise) are in
benchmarks/mmb_power.py (noises ``sampled n=4/8/16``) and the table in
studies/mmb/measures/comparison.py.

Full run (03:26 UTC, 2026-12-06, the defaults; 40 s):

====================================  =========  =====  =====  =====  =====  =====  =====
world                                 p from     ECE    Brier  ECE    Brier  ECE    Brier
                                                 AVG    AVG    BPE    BPE    MMB    MMB
====================================  =========  =====  =====  =====  =====  =====  =====
default (position + brightness bias)  log-probs  0.132  0.175  0.109  0.179  0.096  0.160
default                               1 sample   0.180  0.217  0.141  0.197  0.186  0.191
default                               4          0.159  0.192  0.077  0.167  0.090  0.154
default                               8          0.147  0.184  0.068  0.163  0.064  0.150
default                               16         0.138  0.180  0.077  0.164  0.066  0.150
no bias at all                        log-probs  0.047  0.133  0.047  0.133  0.047  0.133
no bias at all                        1 sample   0.188  0.187  0.161  0.191  0.179  0.188
no bias at all                        4          0.109  0.148  0.099  0.152  0.106  0.149
no bias at all                        8          0.078  0.139  0.073  0.141  0.078  0.139
no bias at all                        16         0.063  0.135  0.059  0.136  0.062  0.135
noisier judge                         log-probs  0.118  0.177  0.127  0.198  0.076  0.169
noisier judge                         1 sample   0.182  0.218  0.138  0.199  0.187  0.193
noisier judge                         4          0.152  0.194  0.073  0.172  0.087  0.155
noisier judge                         8          0.138  0.187  0.076  0.172  0.061  0.151
noisier judge                         16         0.128  0.182  0.088  0.175  0.057  0.152
====================================  =========  =====  =====  =====  =====  =====  =====

Reading: for a judge with no bias (every instruction calibrated) sampling only costs:
ECE 0.047 with log-probs, 0.063 at 16 samples, 0.078 at 8, 0.109 at 4, 0.18-0.19 from one
parsed choice; Brier is within 0.002 of the log-prob route at 16 samples. For the biased
judges, BPE and MMB from 4-16 samples score *below* their log-prob route. That is not
information gained by sampling: (k + 1) / (n + 2) shrinks every instruction's p towards
1/2, which tempers the over-confident instructions (slope 2.5-4.5 x the humans') this
judge has, and the ensembles' weights then favour the instructions whose shrunk p fit
best. A user whose judge is over-confident gains the same from a calibrated log-prob
route with temperature scaling; a calibrated judge only loses. n = 1 (the smoothed
choice) is far from every other row: 8 samples or more is the working range.
"""

from __future__ import annotations

import argparse
import dataclasses

import numpy as np
import pandas as pd

from judgebias.studies.mmb.data.synthetic import STYLES
from judgebias.studies.mmb.jobs import sampled_p_first
from judgebias.studies.mmb.measures.comparison import cell_predictions, weighted_ece
from judgebias.studies.mmb.measures.factorial import Design
from judgebias.studies.mmb.params import builtin_pool
from judgebias.studies.mmb.sim import JudgeTraits, landscape_key
from judgebias.studies.mmb.world import simulate_world

EXPERTS = {"pastel landscape": "landscape painter", "neon sci-fi": "graphic designer",
           "ink sketch": "comic book inker", "pixel mosaic": "pixel artist"}
WORLDS = {
    "default (position + brightness bias)": {"gamma": 6.0, "position_bias": 0.5,
                                             "brightness_bias": 3.0, "noise": 0.3},
    "no bias at all": {"gamma": 6.0, "position_bias": 0.0, "brightness_bias": 0.0,
                       "noise": 0.3, "miscalibrated": 0.0},
    "noisier judge": {"gamma": 6.0, "position_bias": 1.0, "brightness_bias": 0.0,
                      "noise": 1.0},
}
METHODS = ("AVG", "BPE", "MMB")


def sampled_split(split, n: int, rng: np.random.Generator):
    """The split with every p(A | pair, instruction) replaced by its estimate from n
    verdicts drawn with it (jobs.sampled_p_first, Laplace's prior)."""
    def draw(P: np.ndarray) -> np.ndarray:
        return sampled_p_first(rng.binomial(n, P), np.full(P.shape, n), 1.0)

    return dataclasses.replace(split, P_pool=draw(split.P_pool), P_test=draw(split.P_test))


def scores(split, y: np.ndarray, design: Design, n_val: int, k: int) -> dict[str, float]:
    runs = cell_predictions(split, design, 10, n_val, k)
    ones = np.ones(len(y))
    out = {}
    for method in METHODS:
        out[f"ECE {method}"] = float(weighted_ece(runs[method], y, ones).mean())
        out[f"Brier {method}"] = float(((runs[method] - y[None, :]) ** 2).mean())
    return out


def table(args: argparse.Namespace) -> pd.DataFrame:
    pool = [p["text"] for p in builtin_pool()]
    styles = list(STYLES)
    design = Design(n_prompts=[10], n_val=[0], train_seeds=range(3), sampling_seeds=range(5))
    n_val = args.per_cluster * len(styles)
    rows = []
    for world, traits in WORLDS.items():
        for judge in range(args.judges):
            planted = JudgeTraits(experts=EXPERTS, world=landscape_key(args.seed, f"j{judge}"),
                                  **traits)
            simulated = simulate_world(planted, pool, styles=styles, n_test_groups=30,
                                       images_per_test_group=5, n_val_pairs=160,
                                       purity=0.9, rng=np.random.default_rng([args.seed,
                                                                              judge]))
            y = simulated.split.y_test
            rows.append({"world": world, "p(y | x, a) from": "log-probs",
                         **scores(simulated.split, y, design, n_val, len(styles))})
            for n in args.samples:
                rng = np.random.default_rng([args.seed, judge, n])
                rows.append({"world": world, "p(y | x, a) from": f"{n} sample(s)",
                             **scores(sampled_split(simulated.split, n, rng), y, design,
                                      n_val, len(styles))})
    return pd.DataFrame(rows).groupby(["world", "p(y | x, a) from"], sort=False
                                      ).mean().reset_index().round(4)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--judges", type=int, default=20, help="simulated judges per world")
    parser.add_argument("--samples", type=int, nargs="+", default=[1, 4, 8, 16])
    parser.add_argument("--per-cluster", type=int, default=10,
                        help="validation pairs per cluster")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print("## MMB from sampled verdicts against the log-prob route: ECE and Brier "
          f"(mean over {args.judges} judges per world)\n")
    print(table(args).to_markdown(index=False), flush=True)


if __name__ == "__main__":
    main()
