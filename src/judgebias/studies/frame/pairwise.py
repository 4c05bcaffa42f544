"""Pairwise win rates before and after manipulating set A (seed 004 Fig. 3, §6).

Each comparison is run in both orders and the two preferences are averaged (§6: "each
pairwise comparison is conducted twice, with the image order reversed, and the preference
scores are averaged"); a win is 1, a tie 0.5, a loss 0 (spec frame.md). An item with an
unusable verdict in either order is counted and left out, never imputed.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

PREFERENCE = {"A": 1.0, "tie": 0.5, "B": 0.0}


def pair_preferences(verdicts: pd.DataFrame) -> pd.DataFrame:
    """Per (judge, domain, item, condition): A's preference averaged over both orders
    (NaN when a verdict is unusable or an order is missing)."""
    scored = verdicts.assign(preference=verdicts["verdict"].map(PREFERENCE))
    keys = ["judge", "domain", "item_id", "condition"]
    grouped = scored.groupby(keys, sort=False)
    out = grouped.agg(preference=("preference", "mean"), orders=("order", "nunique"),
                      usable=("preference", "count")).reset_index()
    out.loc[(out["usable"] < 2) | (out["orders"] < 2), "preference"] = np.nan
    return out[[*keys, "preference"]]


def _sign_flip_p(differences: np.ndarray, rng: np.random.Generator, n: int = 10000) -> float:
    if len(differences) == 0 or not np.any(differences):
        return 1.0
    signs = rng.choice([-1.0, 1.0], size=(n, len(differences)))
    null = np.abs(signs @ differences)
    return float((1 + (null >= abs(differences.sum())).sum()) / (n + 1))


def win_rates(verdicts: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """Fig. 3: per (judge, domain, condition) A's and B's win rates (mean preference), the
    shares of individual verdicts A / tie / B, items used and left out; on the manipulated
    rows the change in A's win rate from the originals and a paired sign-flip p-value of
    it (two-sided, items usable in both conditions)."""
    rng = np.random.default_rng(seed)
    items = pair_preferences(verdicts)
    rows = []
    for (judge, domain, condition), part in items.groupby(["judge", "domain", "condition"],
                                                          sort=False):
        shown = verdicts[(verdicts["judge"] == judge) & (verdicts["domain"] == domain)
                         & (verdicts["condition"] == condition)]["verdict"]
        usable = shown.dropna()
        a = part["preference"].mean()
        row = {"judge": judge, "domain": domain, "condition": condition,
               "a_win_rate": a, "b_win_rate": 1 - a,
               "share_a": (usable == "A").mean(), "share_tie": (usable == "tie").mean(),
               "share_b": (usable == "B").mean(), "n_items": int(part["preference"].notna().sum()),
               "n_unusable": int(part["preference"].isna().sum()),
               "change": np.nan, "p_change": np.nan}
        if condition == "manipulated":
            before = items[(items["judge"] == judge) & (items["domain"] == domain)
                           & (items["condition"] == "original")]
            both = part.merge(before, on="item_id", suffixes=("", "_before")).dropna(
                subset=["preference", "preference_before"])
            differences = (both["preference"] - both["preference_before"]).to_numpy()
            row["change"] = differences.mean() if len(differences) else np.nan
            row["p_change"] = _sign_flip_p(differences, rng)
        rows.append(row)
    return pd.DataFrame(rows)
