"""The human side of FRAME (seed 004 Tables 2 and 7, §4.1-4.2, App. A) and, beyond the
paper (its Limitations: it does not report correlations between the LVLM judges' scores
and human judgments), each judge's agreement with the human scores.

Human scores run from 1 to 5; ``human_score`` is the mean of the annotators, so half
points occur (spec "Human scores 1-5").
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from judgebias.studies.frame.recipes import DOMAINS, ORIGINAL

# Table 2's bins are printed "1-2, 2-3, 3-4, 4-5" and do not say where an edge goes. We
# read them as [1, 2), [2, 3), [3, 4) and [4, 5] (the last closed), so a score on an edge
# (2.0, 3.0, 4.0) goes to the upper bin and 5.0 to "4-5".
BINS = ("1-2", "2-3", "3-4", "4-5")
EDGES = np.array([1.0, 2.0, 3.0, 4.0, 5.0])


def score_bin(values: np.ndarray) -> np.ndarray:
    """Index 0-3 of each score's Table 2 bin ([1,2), [2,3), [3,4), [4,5]); raises on a
    score outside [1, 5] (human scores are 1-5: such a value is a data error)."""
    values = np.asarray(values, dtype=float)
    if np.any((values < EDGES[0]) | (values > EDGES[-1])):
        raise ValueError("human scores must lie in [1, 5]")
    return np.minimum(np.searchsorted(EDGES, values, side="right") - 1, len(BINS) - 1)


def score_distribution(items: pd.DataFrame) -> pd.DataFrame:
    """Seed 004 Table 2: item counts per human-score bin (module constant ``BINS``; edge
    values go to the upper bin), per domain (Table 2's order) and in total, with the mean
    human score ("Avg."). Items without a human score are left out.

    Columns: domain ("total" for the last row), 1-2, 2-3, 3-4, 4-5, total, mean.
    """
    rows = []
    present = [d for d in DOMAINS if (items["domain"] == d).any()]
    others = [d for d in dict.fromkeys(items["domain"]) if d not in DOMAINS]
    parts = [(d, items[items["domain"] == d]) for d in [*present, *others]]
    for name, part in [*parts, ("total", items)]:
        scores = part["human_score"].dropna().to_numpy(dtype=float)
        counts = np.bincount(score_bin(scores), minlength=len(BINS))
        rows.append({"domain": name, **dict(zip(BINS, counts.tolist(), strict=True)),
                     "total": len(scores), "mean": scores.mean() if len(scores) else np.nan})
    return pd.DataFrame(rows, columns=["domain", *BINS, "total", "mean"])


def _correlation(function, x: np.ndarray, y: np.ndarray) -> float:
    """A scipy correlation, NaN (without a warning) when either side is constant or
    fewer than 3 pairs exist."""
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return np.nan
    return float(function(x, y)[0])


def inter_annotator(items: pd.DataFrame) -> pd.DataFrame:
    """Seed 004 Table 7: Pearson and Spearman correlations between the two annotators per
    domain (App. A), on the items both annotators scored (``annotator_2`` may be NaN when
    only one annotator scored an item). Empty when no item has two annotators.

    Columns: domain, n, pearson, spearman.
    """
    columns = ["domain", "n", "pearson", "spearman"]
    if "annotator_2" not in items.columns:
        return pd.DataFrame(columns=columns)
    both = items.dropna(subset=["annotator_1", "annotator_2"])
    rows = []
    for domain in [d for d in DOMAINS if (both["domain"] == d).any()]:
        part = both[both["domain"] == domain]
        a = part["annotator_1"].to_numpy(dtype=float)
        b = part["annotator_2"].to_numpy(dtype=float)
        rows.append({"domain": domain, "n": len(part),
                     "pearson": _correlation(stats.pearsonr, a, b),
                     "spearman": _correlation(stats.spearmanr, a, b)})
    return pd.DataFrame(rows, columns=columns)


def _slope(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """OLS slope of y on x and its standard error (``scipy.stats.linregress``)."""
    if len(x) < 3 or np.ptp(x) == 0:
        return np.nan, np.nan
    fit = stats.linregress(x, y)
    return float(fit.slope), float(fit.stderr)


def human_correlation(scores: pd.DataFrame, items: pd.DataFrame, prompt: str = "standard",
                      *, n_resamples: int = 0, seed: int = 0) -> pd.DataFrame:
    """Beyond the paper (Limitations): per judge, agreement with the humans on the
    original (unmanipulated) images under `prompt`.

    Pearson, Spearman and Kendall (tau-b, ``scipy.stats.kendalltau``) of the judge's score
    with ``human_score``; the OLS slope (with its standard error) of the judge's score on
    the human score; and, where ``alignment`` (the planted truth of synthetic data) is
    present, the slope on it, which estimates the simulated judge's planted slope. Only
    usable (non-NaN) judge scores count; an item scored several times under the prompt
    (bias-definition: once per named manipulation) enters with its mean score.

    Kendall's tau-b gets a 95% percentile bootstrap interval over items
    (``kendall_low``/``kendall_high``, `n_resamples` resamples, NaN with 0), by
    judgebias.stats.agreement.agreement: each original image is one item with one (mean) human
    score, so the items are the independent units (its ``continuous`` and ``flickr_like``
    worlds, benchmarks/kendall_interval.py, measure the coverage: 0.93-0.95 from 40 units).
    No test: agreeing with people is what a judge is for, not a bias (the judge card).

    Columns: judge, n, pearson, spearman, kendall, kendall_low, kendall_high,
    slope_on_human, slope_on_human_se, n_alignment, slope_on_alignment,
    slope_on_alignment_se.
    """
    from judgebias.stats.agreement import agreement

    columns = ["judge", "n", "pearson", "spearman", "kendall", "kendall_low",
               "kendall_high", "slope_on_human", "slope_on_human_se", "n_alignment",
               "slope_on_alignment", "slope_on_alignment_se"]
    originals = scores[(scores["recipe"] == ORIGINAL) & (scores["prompt"] == prompt)
                       & scores["score"].notna()]
    per_item = originals.groupby(["judge", "item_id"], sort=False)["score"].mean()
    keep = ["item_id", "human_score", *(["alignment"] if "alignment" in items.columns else [])]
    merged = per_item.reset_index().merge(items[keep], on="item_id")
    intervals = (agreement(merged, "score", by="judge", n_resamples=n_resamples, seed=seed)
                 .set_index("judge") if n_resamples and len(merged) else None)
    rows = []
    for judge, part in merged.groupby("judge", sort=False):
        rated = part.dropna(subset=["human_score"])
        x = rated["human_score"].to_numpy(dtype=float)
        y = rated["score"].to_numpy(dtype=float)
        slope, se = _slope(x, y)
        row = {"judge": judge, "n": len(rated),
               "pearson": _correlation(stats.pearsonr, y, x),
               "spearman": _correlation(stats.spearmanr, y, x),
               "kendall": _correlation(stats.kendalltau, y, x),
               "kendall_low": np.nan, "kendall_high": np.nan,
               "slope_on_human": slope, "slope_on_human_se": se,
               "n_alignment": 0, "slope_on_alignment": np.nan,
               "slope_on_alignment_se": np.nan}
        if intervals is not None and np.isfinite(row["kendall"]):
            row["kendall_low"] = float(intervals.loc[judge, "tau_b_low"])
            row["kendall_high"] = float(intervals.loc[judge, "tau_b_high"])
        if "alignment" in part.columns:
            known = part.dropna(subset=["alignment"])
            row["n_alignment"] = len(known)
            row["slope_on_alignment"], row["slope_on_alignment_se"] = _slope(
                known["alignment"].to_numpy(dtype=float), known["score"].to_numpy(dtype=float))
        rows.append(row)
    return pd.DataFrame(rows, columns=columns)
