"""The recorded study's measures on recorded tables (judgebias.studies.recorded): the
rejection rate of each test under no bias and the coverage of each interval of a planted
effect, in worlds the study's default does not use.

Why: the study applies each paper's estimator to tables it did not produce, on the
judge's own scale, and for pairwise tables averages a pair's verdicts (both orders)
before BIRCH's bootstrap over pairs; each estimator's own benchmark covers its own
worlds (benchmarks/selfpref_coverage.py, position_bias.py, birch_null.py), this one the
recorded tables' shapes. The worlds are the tests' (tests/helpers/recorded_worlds.py
loads them from here):

* scores: four models (two in one family), every model writes one output per item and
  scores every output on 0-100: 40 + 40 x quality + planted points + noise, rounded;
  noise normal (sd 6), skewed (centred gamma, sd ~5.7) or discrete (steps of 10).
  no_bias plants nothing; planted gives alpha +8 points on its own outputs and beta +6
  on its sibling's. Reported: the share of own-effect tests rejecting at 0.05 where the
  truth is 0, and the coverage of the 95% intervals of own and family effects (truth:
  the planted points, 0 elsewhere).
* pairwise: pairs judged in both orders by a fair judge, a primacy judge (30 % of
  verdicts to the first slot) and a swayed judge (on pairs where the less informative
  answer is preferred, 40 % of verdicts go to the informative one), accuracy 0.8
  otherwise. Truth: IB = 0 for fair and primacy, 0.8 - 0.6 x 0.8 = 0.32 for swayed; PF
  = 0 for fair and swayed. Reported: PF's rejection rate for fair and swayed, and the
  coverage of IB's interval for each judge.

    python benchmarks/recorded_validity.py --datasets 400     # the note's table
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
import pandas as pd

from judgebias.studies.recorded.data import pair_id
from judgebias.studies.recorded.measures import pairwise_measures, score_measures

MODELS = ["alpha", "beta", "gamma", "delta"]
FAMILIES = {"alpha": "first", "beta": "first", "gamma": "second", "delta": "third"}
PLANTED_SELF, PLANTED_FAMILY = {"alpha": 8.0}, {"beta": 6.0}
PAIR_JUDGES = ("fair", "primacy", "swayed")
ACCURACY, FIRST_SLOT, PULL = 0.8, {"primacy": 0.3}, {"swayed": 0.4}
IB_TRUTH = {"fair": 0.0, "primacy": 0.0, "swayed": ACCURACY - (1 - 0.4) * ACCURACY}


def scores_world(n_items: int = 60, self_points: dict[str, float] | None = None,
                 family_points: dict[str, float] | None = None, noise: str = "normal",
                 seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The scores world (module docstring): the recorded table and human ratings
    (1 + 4 x quality + noise) of every output."""
    rng = np.random.default_rng(seed)
    self_points, family_points = self_points or {}, family_points or {}
    quality = dict(zip(MODELS, (0.7, 0.55, 0.6, 0.45), strict=True))
    rows, human = [], []
    for i in range(n_items):
        item = f"img{i:03d}"
        for generator in MODELS:
            q = float(np.clip(quality[generator] + rng.normal(0, 0.15), 0, 1))
            human.append({"item": item, "output_id": generator,
                          "rating": round(1 + 4 * q + rng.normal(0, 0.3), 1)})
            for judge in MODELS:
                bias = (self_points.get(judge, 0.0) if judge == generator else
                        family_points.get(judge, 0.0)
                        if FAMILIES[judge] == FAMILIES[generator] else 0.0)
                e = rng.gamma(2.0, 4.0) - 8.0 if noise == "skewed" else rng.normal(0, 6)
                score = 40 + 40 * q + bias + e
                score = round(score / 10) * 10 if noise == "discrete" else round(score)
                rows.append({"item": item, "output_id": generator, "generator": generator,
                             "output": f"a caption by {generator}", "judge": judge,
                             "score": float(np.clip(score, 0, 100))})
    return pd.DataFrame(rows), pd.DataFrame(human)


def pairwise_world(n_pairs: int = 300, accuracy: float = ACCURACY,
                   first_slot: dict[str, float] | None = None,
                   informative_pull: dict[str, float] | None = None,
                   seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The pairwise world (module docstring): the table, the human preferences (item, a,
    b, preferred) and the informativeness labels (item, a, b, more_informative)."""
    rng = np.random.default_rng(seed)
    first_slot, informative_pull = first_slot or {}, informative_pull or {}
    rows, human, informative = [], [], []
    for p in range(n_pairs):
        item, x, y = f"q{p:03d}", f"q{p:03d}-x", f"q{p:03d}-y"
        preferred = x if rng.random() < 0.5 else y
        more = y if rng.random() < 0.5 else x
        human.append({"item": item, "a": x, "b": y, "preferred": preferred})
        informative.append({"item": item, "a": x, "b": y, "more_informative": more})
        for judge in PAIR_JUDGES:
            for first, second in ((x, y), (y, x)):
                if rng.random() < first_slot.get(judge, 0.0):
                    pick = first
                elif preferred != more and rng.random() < informative_pull.get(judge, 0.0):
                    pick = more
                else:
                    other = y if preferred == x else x
                    pick = preferred if rng.random() < accuracy else other
                rows.append({"item": item, "judge": judge, "first": first, "second": second,
                             "verdict": "first" if pick == first else "second",
                             "probability": np.nan})
    return pd.DataFrame(rows), pd.DataFrame(human), pd.DataFrame(informative)


def labels(frame: pd.DataFrame, column: str) -> pd.Series:
    """A side table's label by pair id (as the study's data module reads it)."""
    ids = [pair_id(i, a, b) for i, a, b in zip(frame["item"], frame["a"], frame["b"],
                                               strict=True)]
    return pd.Series(frame[column].to_numpy(), index=pd.Index(ids, name="pair"))


def scores_cell(world: str, noise: str, datasets: int, n_items: int, resamples: int
                ) -> dict[str, float]:
    """Rejection of a true-null own effect, coverage of own and family effects."""
    planted = world == "planted"
    rejected = nulls = covered = intervals = 0
    for seed in range(datasets):
        table, _ = scores_world(n_items, PLANTED_SELF if planted else {},
                                PLANTED_FAMILY if planted else {}, noise, seed)
        tables, _ = score_measures(table, (0, 100), FAMILIES, ci=0.95, resamples=resamples,
                                   seed=seed)
        for row in tables["self_preference"].to_dict("records"):
            truths = {"own": (PLANTED_SELF if planted else {}).get(row["model"], 0.0),
                      "family": (PLANTED_FAMILY if planted else {}).get(row["model"], 0.0)}
            if truths["own"] == 0 and np.isfinite(row["own_p_value"]):
                nulls += 1
                rejected += row["own_p_value"] < 0.05
            for kind, truth in truths.items():
                if np.isfinite(row[f"{kind}_ci_low"]):
                    intervals += 1
                    covered += row[f"{kind}_ci_low"] <= truth <= row[f"{kind}_ci_high"]
    return {"rejection": rejected / max(nulls, 1), "coverage": covered / max(intervals, 1)}


def pairwise_cell(datasets: int, n_pairs: int, resamples: int) -> dict[str, float]:
    """PF's rejection for the judges without position bias; IB's coverage per judge."""
    rejected = nulls = 0
    covered = dict.fromkeys(PAIR_JUDGES, 0)
    for seed in range(datasets):
        table, human, informative = pairwise_world(n_pairs, ACCURACY, FIRST_SLOT, PULL, seed)
        tables, _ = pairwise_measures(table, preferred=labels(human, "preferred"),
                                      more_informative=labels(informative,
                                                              "more_informative"),
                                      randomised=False, ci=0.95, resamples=resamples,
                                      seed=seed)
        position = tables["position"].set_index(["judge", "measure"])
        for judge in ("fair", "swayed"):
            nulls += 1
            rejected += position.loc[(judge, "pf"), "p_value"] < 0.05
        accuracy = tables["accuracy"].set_index(["judge", "statistic"])
        for judge in PAIR_JUDGES:
            row = accuracy.loc[(judge, "ib")]
            covered[judge] += row["low"] <= IB_TRUTH[judge] <= row["high"]
    return {"pf_rejection": rejected / nulls,
            **{f"ib_coverage_{j}": covered[j] / datasets for j in PAIR_JUDGES}}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--datasets", type=int, default=400)
    parser.add_argument("--items", type=int, default=40)
    parser.add_argument("--pairs", type=int, default=150)
    parser.add_argument("--resamples", type=int, default=500)
    args = parser.parse_args()
    mc = 1.96 * math.sqrt(0.05 * 0.95 / args.datasets)
    start = time.perf_counter()
    print(f"{args.datasets} tables per cell; Monte-Carlo error of a 0.05 rate +-{mc:.3f}\n")
    print("| scores world | noise | own-effect rejection at 0.05 (truth 0) | coverage of "
          "own and family 95% intervals |")
    print("|---|---|---|---|")
    for world in ("no_bias", "planted"):
        for noise in ("normal", "skewed", "discrete"):
            cell = scores_cell(world, noise, args.datasets, args.items, args.resamples)
            print(f"| {world} | {noise} | {cell['rejection']:.3f} | {cell['coverage']:.3f} |")
    cell = pairwise_cell(args.datasets, args.pairs, args.resamples)
    print("\n| pairwise world | PF rejection (fair, swayed; truth 0) | IB coverage: fair "
          "(0) | primacy (0) | swayed (0.32) |")
    print("|---|---|---|---|---|")
    print(f"| planted | {cell['pf_rejection']:.3f} | {cell['ib_coverage_fair']:.3f} | "
          f"{cell['ib_coverage_primacy']:.3f} | {cell['ib_coverage_swayed']:.3f} |")
    print(f"\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
