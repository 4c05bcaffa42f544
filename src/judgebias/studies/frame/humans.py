"""The human side of FRAME (seed 004 Tables 2 and 7) and, beyond the paper (its
Limitations: "we do not report correlation metrics between LVLM-generated scores and human
judgments"), each judge's agreement with the human scores."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from judgebias.studies.frame.recipes import DOMAINS, ORIGINAL

# Table 2's bins are printed as 1-2, 2-3, 3-4, 4-5: we read them as [1, 2), [2, 3),
# [3, 4) and [4, 5], so a score on an edge (2.0, 3.0, 4.0) goes to the upper bin.
BINS = (("1-2", 1.0, 2.0), ("2-3", 2.0, 3.0), ("3-4", 3.0, 4.0), ("4-5", 4.0, 5.0001))


def score_distribution(items: pd.DataFrame) -> pd.DataFrame:
    """Table 2: item counts per human-score bin, per domain and in total, and the mean."""
    rows = []
    groups = [(d, items[items["domain"] == d]) for d in DOMAINS if (items["domain"] == d).any()]
    for name, part in [*groups, ("total", items)]:
        scores = part["human_score"].dropna().to_numpy(dtype=float)
        row = {"domain": name}
        row |= {label: int(((scores >= low) & (scores < high)).sum())
                for label, low, high in BINS}
        row |= {"total": len(scores), "mean": scores.mean() if len(scores) else np.nan}
        rows.append(row)
    return pd.DataFrame(rows)


def inter_annotator(items: pd.DataFrame) -> pd.DataFrame:
    """Table 7: Pearson and Spearman between the two annotators per domain (items scored
    by both only; empty when no item has two annotators)."""
    both = items.dropna(subset=["annotator_1", "annotator_2"])
    rows = []
    for domain in [d for d in DOMAINS if (both["domain"] == d).any()]:
        part = both[both["domain"] == domain]
        if len(part) < 3:
            continue
        rows.append({"domain": domain, "n": len(part),
                     "pearson": stats.pearsonr(part["annotator_1"], part["annotator_2"])[0],
                     "spearman": stats.spearmanr(part["annotator_1"],
                                                 part["annotator_2"])[0]})
    return pd.DataFrame(rows, columns=["domain", "n", "pearson", "spearman"])


def human_correlation(scores: pd.DataFrame, items: pd.DataFrame, prompt: str = "standard"
                      ) -> pd.DataFrame:
    """Per judge, on the original images: Pearson, Spearman and Kendall (tau-b) with the
    human score, the OLS slope of the judge's score on the human score, and, where the
    planted alignment is known (synthetic), the slope on it (what the simulated judge's
    planted ``slope`` is)."""
    originals = scores[(scores["recipe"] == ORIGINAL) & (scores["prompt"] == prompt)
                       & scores["score"].notna()]
    merged = originals.merge(items[["item_id", "human_score", "alignment"]], on="item_id")
    rows = []
    for judge, part in merged.groupby("judge", sort=False):
        part = part.dropna(subset=["human_score"])
        row = {"judge": judge, "n": len(part),
               "pearson": stats.pearsonr(part["score"], part["human_score"])[0],
               "spearman": stats.spearmanr(part["score"], part["human_score"])[0],
               "kendall": stats.kendalltau(part["score"], part["human_score"])[0],
               "slope_on_human": stats.linregress(part["human_score"], part["score"]).slope}
        known = part.dropna(subset=["alignment"])
        row["slope_on_alignment"] = (stats.linregress(known["alignment"], known["score"]).slope
                                     if known["alignment"].nunique() > 1 else np.nan)
        rows.append(row)
    return pd.DataFrame(rows)
