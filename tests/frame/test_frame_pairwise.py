"""FRAME's pairwise analysis (judgebias.studies.frame.measures.pairwise, seed 004 Fig. 3, §6) on
hand-computed cases: both orders averaged, win 1 / tie 0.5 / loss 0, unusable verdicts
left out, and the flip of A's win rate under manipulation with a sign-flip test."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from judgebias.studies.frame.measures import pairwise


def _verdicts(rows, judge="j", domain="people"):
    return pd.DataFrame([{"judge": judge, "domain": domain, "item_id": i, "condition": c,
                          "order": o, "verdict": v} for i, c, o, v in rows])


HAND = [("a", "original", "ab", "A"), ("a", "original", "ba", "tie"),
        ("b", "original", "ab", "B"), ("b", "original", "ba", "B"),
        ("c", "original", "ab", "A"), ("c", "original", "ba", None),  # unusable
        ("d", "original", "ab", "A"),  # the reversed order is missing: unusable
        ("a", "manipulated", "ab", "A"), ("a", "manipulated", "ba", "A"),
        ("b", "manipulated", "ab", "A"), ("b", "manipulated", "ba", "B"),
        ("c", "manipulated", "ab", "A"), ("c", "manipulated", "ba", "A")]


def test_pair_preferences_average_the_two_orders():
    prefs = pairwise.pair_preferences(_verdicts(HAND)).set_index(["item_id", "condition"])
    assert prefs.loc[("a", "original"), "preference"] == 0.75  # (1 + 0.5) / 2
    assert prefs.loc[("b", "original"), "preference"] == 0.0
    assert prefs.loc[("b", "manipulated"), "preference"] == 0.5
    assert not prefs.loc[("c", "original"), "usable"]
    assert np.isnan(prefs.loc[("c", "original"), "preference"])  # never imputed
    assert prefs.loc[("c", "original"), "preference_ab"] == 1.0
    assert not prefs.loc[("d", "original"), "usable"]
    assert prefs["usable"].sum() == 5


def test_pair_preferences_keeps_an_item_whose_verdicts_all_failed():
    prefs = pairwise.pair_preferences(_verdicts([("a", "original", "ab", None),
                                                 ("a", "original", "ba", None)]))
    assert len(prefs) == 1 and not prefs["usable"].iloc[0]


def test_pair_preferences_rejects_duplicate_orders():
    with pytest.raises(ValueError):
        pairwise.pair_preferences(_verdicts([("a", "original", "ab", "A"),
                                             ("a", "original", "ab", "B")]))


def test_win_rates_by_hand():
    rates = pairwise.win_rates(_verdicts(HAND)).set_index("condition")
    orig, manip = rates.loc["original"], rates.loc["manipulated"]
    # originals: a 0.75, b 0; c and d unusable
    assert orig["n_items"] == 2 and orig["n_unusable"] == 2
    assert orig["a_win_rate"] == pytest.approx(0.375)
    assert orig["b_win_rate"] == pytest.approx(0.625)
    # verdicts of the usable items: A, tie, B, B
    assert (orig["share_a"], orig["share_tie"], orig["share_b"]) == (0.25, 0.25, 0.5)
    assert orig["a_win_rate"] == pytest.approx(orig["share_a"] + orig["share_tie"] / 2)
    assert np.isnan(orig["change"]) and pd.isna(orig["reversed"])
    # manipulated: a 1, b 0.5, c 1; verdicts A A A B A A
    assert manip["n_items"] == 3 and manip["n_unusable"] == 0
    assert manip["a_win_rate"] == pytest.approx(2.5 / 3)
    assert manip["share_a"] == pytest.approx(5 / 6) and manip["share_tie"] == 0
    # the flip on the items usable in both conditions (a, b): (0.25 + 0.5) / 2;
    # exact sign flips of (0.25, 0.5): |sums| 0.75, 0.25, 0.25, 0.75 -> p = 2 / 4
    assert manip["n_paired"] == 2 and manip["change"] == pytest.approx(0.375)
    assert manip["p_change"] == pytest.approx(0.5)
    assert bool(manip["reversed"])  # 0.375 <= 0.625 before, 0.83 > 0.17 after


def test_flip_p_values_exact_and_sampled():
    # 5 items going from B, B (0) to A, A (1): all 2^5 sign vectors, 2 as extreme
    rows = [(f"i{k}", c, o, v) for k in range(5) for c, v in (("original", "B"),
                                                              ("manipulated", "A"))
            for o in ("ab", "ba")]
    flip = pairwise.win_rates(_verdicts(rows)).set_index("condition").loc["manipulated"]
    assert flip["change"] == 1.0 and flip["p_change"] == pytest.approx(2 / 32)
    # 20 non-zero differences: seeded flips, p = (1 + hits) / (1 + B)
    d = np.full(20, 0.5)
    assert pairwise.sign_flip_p(d, 999, np.random.default_rng(0)) == pytest.approx(1 / 1000)
    assert pairwise.sign_flip_p(np.zeros(4)) == 1.0
    assert pairwise.sign_flip_p(np.array([1.0, -1.0, 0.0])) == 1.0


def test_win_rates_per_judge_and_domain():
    a = _verdicts([("x", "original", "ab", "A"), ("x", "original", "ba", "A")], judge="j1")
    b = _verdicts([("y", "original", "ab", "tie"), ("y", "original", "ba", "B")],
                  judge="j2", domain="indoor")
    rates = pairwise.win_rates(pd.concat([a, b])).set_index(["judge", "domain"])
    assert rates.loc[("j1", "people"), "a_win_rate"] == 1.0
    assert rates.loc[("j2", "indoor"), "a_win_rate"] == 0.25
