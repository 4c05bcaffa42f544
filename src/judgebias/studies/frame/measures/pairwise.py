"""Pairwise win rates before and after manipulating set A (seed 004 Fig. 3, §6).

For each benchmark instruction the paper generates a second image set B with the same
settings; the judge compares A with B ("original") and the manipulated A with the
original B ("manipulated"), with the Fig. 8 prompt. Each comparison is run in both orders
and the two preferences are averaged (§6: "each pairwise comparison is conducted twice,
with the image order reversed, and the preference scores are averaged"); a win is 1, a
tie 0.5, a loss 0 (spec frame.md: the paper does not print how a tie scores).

Input (one row per item, condition and order): ``verdict`` names the *image* the judge
preferred ("A", "B" or "tie"; the first/second answer already mapped through ``order``),
None or NaN when the answer was unusable. An item with an unusable verdict (or a missing
order) in a condition is counted as unusable there and left out, never imputed.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

PREFERENCE = {"A": 1.0, "tie": 0.5, "B": 0.0}
KEYS = ["judge", "domain", "item_id", "condition"]
ORDERS = ("ab", "ba")


def pair_preferences(pairwise: pd.DataFrame) -> pd.DataFrame:
    """Per (judge, domain, item, condition): the preference for A in each order and their
    mean (win 1, tie 0.5, loss 0), ``usable`` False (and preference NaN) when either
    order's verdict is unusable or missing. Raises on two rows for the same order.

    Columns: judge, domain, item_id, condition, preference_ab, preference_ba, preference,
    usable.
    """
    if pairwise.duplicated([*KEYS, "order"]).any():
        raise ValueError("pairwise: more than one verdict for an (item, condition, order)")
    scored = pairwise.assign(preference=pairwise["verdict"].map(PREFERENCE))
    wide = scored.pivot_table(index=KEYS, columns="order", values="preference",
                              aggfunc="first")
    wide = wide.reindex(columns=list(ORDERS))
    # pivot_table drops the (item, condition) keys whose verdicts are all unusable
    every = pairwise[KEYS].drop_duplicates().set_index(KEYS).index
    wide = wide.reindex(every)
    out = pd.DataFrame({"preference_ab": wide["ab"], "preference_ba": wide["ba"]},
                       index=wide.index).reset_index()
    out["usable"] = out["preference_ab"].notna() & out["preference_ba"].notna()
    out["preference"] = np.where(out["usable"],
                                 (out["preference_ab"] + out["preference_ba"]) / 2, np.nan)
    return out


def sign_flip_p(differences: np.ndarray, n_permutations: int = 10000,
                rng: np.random.Generator | None = None, exact_up_to: int = 16) -> float:
    """Two-sided paired sign-flip p-value of the mean of `differences` (H0: each item's
    difference is symmetric about 0). Exact over all 2^m sign vectors of the m non-zero
    differences when m <= `exact_up_to`, else (1 + #{|flipped sum| >= |sum|}) /
    (1 + n_permutations) from seeded flips, one matrix product. No difference: 1."""
    d = np.asarray(differences, dtype=float)
    d = d[d != 0]
    if len(d) == 0:
        return 1.0
    observed = abs(d.sum()) - 1e-12
    if len(d) <= exact_up_to:
        grid = np.array(np.meshgrid(*[[-1.0, 1.0]] * len(d), indexing="ij"))
        signs = grid.reshape(len(d), -1).T
        return float((np.abs(signs @ d) >= observed).mean())
    rng = rng if rng is not None else np.random.default_rng(0)
    signs = rng.choice(np.array([-1.0, 1.0]), size=(n_permutations, len(d)))
    return float((1 + (np.abs(signs @ d) >= observed).sum()) / (1 + n_permutations))


def win_rates(pairwise: pd.DataFrame, seed: int = 0, n_permutations: int = 10000
              ) -> pd.DataFrame:
    """Seed 004 Fig. 3: per (judge, domain, condition) A's and B's win rates and the flip.

    ``a_win_rate``: mean over usable items of A's preference (both orders averaged);
    ``b_win_rate`` = 1 - a_win_rate (each comparison's preference for B is 1 minus A's).
    ``share_a``, ``share_tie``, ``share_b``: shares of the individual verdicts of the
    usable items (two per item), so that a_win_rate = share_a + share_tie / 2.
    ``n_items`` usable, ``n_unusable`` left out.

    The flip (manipulated rows only; NaN on the original rows): on the items usable in
    both conditions (``n_paired``), ``change`` = mean of (manipulated - original)
    preference for A, i.e. the change in A's win rate on the same items, with a two-sided
    paired sign-flip p-value (:func:`sign_flip_p`, exact for up to 16 non-zero
    differences, otherwise `n_permutations` flips seeded by `seed`); ``reversed``: A's
    rate was at most B's on the originals and exceeds it after manipulation (§6's
    "this ranking reverses").

    Columns: judge, domain, condition, n_items, n_unusable, a_win_rate, b_win_rate,
    share_a, share_tie, share_b, n_paired, change, p_change, reversed.
    """
    columns = ["judge", "domain", "condition", "n_items", "n_unusable", "a_win_rate",
               "b_win_rate", "share_a", "share_tie", "share_b", "n_paired", "change",
               "p_change", "reversed"]
    items = pair_preferences(pairwise)
    rng = np.random.default_rng(seed)
    verdicts = pairwise.merge(items.loc[items["usable"], KEYS], on=KEYS)
    rows = []
    for (judge, domain, condition), part in items.groupby(
            ["judge", "domain", "condition"], sort=False):
        usable = part[part["usable"]]
        shown = verdicts.loc[(verdicts["judge"] == judge) & (verdicts["domain"] == domain)
                             & (verdicts["condition"] == condition), "verdict"]
        a = usable["preference"].mean() if len(usable) else np.nan
        share = {v: (shown == v).mean() if len(shown) else np.nan for v in PREFERENCE}
        row = {"judge": judge, "domain": domain, "condition": condition,
               "n_items": len(usable), "n_unusable": int((~part["usable"]).sum()),
               "a_win_rate": a, "b_win_rate": 1 - a, "share_a": share["A"],
               "share_tie": share["tie"], "share_b": share["B"], "n_paired": np.nan,
               "change": np.nan, "p_change": np.nan, "reversed": pd.NA}
        if condition == "manipulated":
            before = items[(items["judge"] == judge) & (items["domain"] == domain)
                           & (items["condition"] == "original") & items["usable"]]
            both = usable.merge(before, on="item_id", suffixes=("", "_original"))
            d = (both["preference"] - both["preference_original"]).to_numpy(dtype=float)
            a_before = before["preference"].mean() if len(before) else np.nan
            row |= {"n_paired": len(d), "change": d.mean() if len(d) else np.nan,
                    "p_change": sign_flip_p(d, n_permutations, rng) if len(d) else np.nan,
                    "reversed": (bool(a_before <= 1 - a_before and a > 1 - a)
                                 if len(before) and len(usable) else pd.NA)}
        rows.append(row)
    out = pd.DataFrame(rows, columns=columns)
    return out.astype({"reversed": "boolean"})
