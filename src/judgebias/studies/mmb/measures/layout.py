"""The layout's own effect (issue 45): does a judge answer differently when the same words
come in the other order (``mmb.layout``: the paper's, instruction first and the images
last, or shared-first, the images first and the instruction last)?

A cache-friendly layout saves money only if it leaves the answers alone, so the layout
check (steps.layout_check) asks a seeded sample of each judge's (pair, instruction, order
shown) items in both layouts and compares them item by item. Per item and layout:

* ``p_first``: p(the image shown first is preferred), the judge's p(y | x, a) in the
  order shown (jobs.py: from the answer token's log-probs, the smoothed choice, or n
  sampled verdicts);
* ``verdict_first``: the share of its usable verdicts that chose the image shown first
  (one verdict per item for a log-prob judge, n for a sampled one).

The quantity reported is the difference shared_first - paper of each, and the share of
verdicts that change (``changed``: the mean of |verdict_first(shared_first) -
verdict_first(paper)|, the share of items whose verdict flips for one verdict per item).
A position pull that moves with the layout shows in both differences; a layout that only
makes the judge noisier shows in ``changed`` alone.

The statistics. Estimand: the mean over pairs of each pair's mean item difference (pairs
count equally: a pair's items share its two images, so they are not independent, and the
pairs are the sampled units; the instructions are the pool, asked of every drawn pair, or
a seeded sample of it). Interval and test: one-sample t over the G pair means, G - 1
degrees of freedom (Student 1908; scipy.stats.ttest_1samp and its confidence_interval),
as MMB's comparison of methods does over test groups (measures/comparison.py). When every
pair has the same number of items this is exactly the cluster-robust Wald test of the
mean, clustered by pair, with the CR1 small-sample factor G / (G - 1) and t(G - 1)
reference that Cameron and Miller (2015, "A Practitioner's Guide to Cluster-Robust
Inference", J. Human Resources 50(2)) advise for few clusters (statsmodels' OLS of the
differences on a constant, ``cov_type="cluster"``, ``use_t=True``, gives the same); with
unequal sizes (failed answers left out) it weights pairs equally instead of items. Why not
a cluster bootstrap (judgebias.stats.bootstrap): the statistic is a mean, whose sampling
law the t gets without resampling, and a percentile bootstrap of a mean over few pairs
under-covers (it reads the spread with G, not G - 1, and without the t's tails).
benchmarks/layout_effect.py measures the test's rejection rate under no layout effect
(continuous, skewed and discrete answers, 10 and 30 pairs of 10 items; 2,000 data sets
per row: 0.045-0.056 at 0.05, Monte Carlo se 0.005) and the interval's coverage under a
planted shift (0.939-0.952 for 95 %; the lowest, 0.939-0.942, at 10 pairs with
continuous answers), and finds a planted shift through the sim judge.

A difference is ``None`` (no interval, no test) with fewer than 2 pairs; when every pair
mean is the same (a deterministic judge whose answers the layout leaves alone) the
interval is that value and the test's p is 1 if it is 0, else 0.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from judgebias.judging.answers import STATUS_NO_LOGPROBS, STATUS_OK

CONFIDENCE = 0.95
KEYS = ["pair_id", "instruction", "order"]
MEASURES = ("p_first", "verdict_first")


def item_answers(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per (pair, instruction, order shown) of judgements `rows` (the JUDGEMENTS
    schema, one row per sample): ``p_first`` (NaN where no answer was usable) and
    ``verdict_first`` (NaN where no verdict was usable)."""
    swapped = (rows["order"] == "ba").to_numpy()
    p_a = rows["p_a"].astype("Float64").to_numpy(dtype=float, na_value=np.nan)
    usable = (rows["status"].isin([STATUS_OK, STATUS_NO_LOGPROBS])
              & rows["label"].isin(["A", "B"])).to_numpy()
    frame = rows[KEYS].assign(
        p_first=np.where(swapped, 1 - p_a, p_a),
        first=np.where(usable, (rows["label"] == "A").to_numpy(dtype=float), np.nan))
    out = frame.groupby(KEYS, sort=False).agg(p_first=("p_first", "mean"),
                                              verdict_first=("first", "mean"))
    return out.reset_index()


def paired_items(answers: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """The items of both layouts side by side: ``answers`` maps each layout to its
    judgements rows; columns ``<measure>_<layout>`` for each measure and layout, one row
    per item asked in both."""
    frames = []
    for layout, rows in answers.items():
        items = item_answers(rows).set_index(KEYS)
        frames.append(items.add_suffix(f"_{layout}"))
    return pd.concat(frames, axis=1, join="inner").reset_index()


def clustered_mean(values: Sequence[float] | np.ndarray, clusters: Sequence[Any] | np.ndarray,
                   *, confidence: float = CONFIDENCE) -> dict[str, Any]:
    """The mean over clusters of each cluster's mean of `values` (NaN values left out),
    with its t-interval and the t-test of 0 over the cluster means (module docstring)."""
    frame = pd.DataFrame({"v": np.asarray(values, dtype=float), "c": list(clusters)})
    frame = frame.dropna()
    means = frame.groupby("c", sort=False)["v"].mean().to_numpy()
    g = len(means)
    out: dict[str, Any] = {"estimate": float(means.mean()) if g else None, "low": None,
                           "high": None, "se": None, "p_value": None, "df": g - 1,
                           "n_pairs": g, "n_items": len(frame)}
    if g < 2:
        return out
    estimate = float(means.mean())
    if np.ptp(means) == 0:  # no spread: the t is undefined
        return {**out, "low": estimate, "high": estimate, "se": 0.0,
                "p_value": 1.0 if estimate == 0 else 0.0}
    test = stats.ttest_1samp(means, 0.0)
    interval = test.confidence_interval(confidence)
    return {**out, "low": float(interval.low), "high": float(interval.high),
            "se": float(means.std(ddof=1) / math.sqrt(g)), "p_value": float(test.pvalue)}


def layout_effect(paired: pd.DataFrame, *, confidence: float = CONFIDENCE
                  ) -> dict[str, Any]:
    """The differences shared_first - paper of :func:`paired_items`' table, each
    :func:`clustered_mean` over pairs, with each layout's mean beside it, and the share
    of verdicts that change (module docstring)."""
    out: dict[str, Any] = {}
    for measure in MEASURES:
        paper, shared = paired[f"{measure}_paper"], paired[f"{measure}_shared_first"]
        both = paper.notna() & shared.notna()
        found = clustered_mean((shared - paper)[both], paired["pair_id"][both],
                               confidence=confidence)
        out[measure] = {"paper": _mean(paper[both]), "shared_first": _mean(shared[both]),
                        "difference": found.pop("estimate"), **found}
    paper, shared = paired["verdict_first_paper"], paired["verdict_first_shared_first"]
    both = paper.notna() & shared.notna()
    changed = clustered_mean((shared - paper).abs()[both], paired["pair_id"][both],
                             confidence=confidence)
    changed.pop("p_value")  # no test: a judge that samples changes verdicts by chance
    out["changed"] = changed
    return out


def _mean(values: pd.Series) -> float | None:
    return float(values.mean()) if len(values) else None
