"""Tests for judgebias.stats.ranking: the leaderboard's means, paired differences, tests
with BH over pairs, rank intervals, and win rates of a pairwise judge."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from judgebias.stats import ranking
from judgebias.stats.ranking import (
    PAIR_COLUMNS,
    SYSTEM_COLUMNS,
    draw_counts,
    item_win_rates,
    leaderboard,
    rank_interval,
    resample_ranks,
    win_rate_leaderboard,
)

# 4 items x 3 systems; means 4, 2, 3 -> ranks 1, 3, 2
TINY = np.array([[3.0, 1.0, 2.0],
                 [5.0, 2.0, 2.0],
                 [4.0, 3.0, 5.0],
                 [4.0, 2.0, 3.0]])


def _world(rng: np.random.Generator, n: int, mu: np.ndarray) -> np.ndarray:
    """Scores with a per-item difficulty shared by every system (pairing matters)."""
    return mu + 2.0 * rng.standard_normal((n, 1)) + rng.standard_normal((n, mu.size))


def test_tiny_matrix_by_hand() -> None:
    lb = leaderboard(TINY, ["a", "b", "c"], n_resamples=500)
    assert list(lb.systems.columns) == list(SYSTEM_COLUMNS)
    assert list(lb.pairs.columns) == list(PAIR_COLUMNS)
    sy = lb.systems.set_index("system")
    np.testing.assert_allclose(sy["mean"], [4.0, 2.0, 3.0])
    assert sy["rank"].tolist() == [1, 3, 2]
    assert sy["n"].tolist() == [4, 4, 4] and sy["n_missing"].tolist() == [0, 0, 0]
    # se = sd (ddof 1) / sqrt(n): a's scores 3, 5, 4, 4 have sd sqrt(2/3)
    np.testing.assert_allclose(sy.loc["a", "se"], np.sqrt(2 / 3) / 2)
    pa = lb.pairs
    assert list(zip(pa["system_a"], pa["system_b"], strict=True)) == [
        ("a", "b"), ("a", "c"), ("b", "c")]
    np.testing.assert_allclose(pa["difference"], [2.0, 1.0, -1.0])
    # a - b per item: 2, 3, 1, 2 -> sd sqrt(2/3)
    np.testing.assert_allclose(pa["se"].iloc[0], np.sqrt(2 / 3) / 2)
    assert pa["n"].tolist() == [4, 4, 4]
    assert (sy["low"] <= sy["mean"]).all() and (sy["mean"] <= sy["high"]).all()


def test_se_is_scipys_sem_and_interval_near_t_interval_for_normal_scores() -> None:
    rng = np.random.default_rng(3)
    scores = rng.normal(0.0, 1.0, (400, 2))
    scores[::7, 0] = np.nan
    sy = leaderboard(scores, n_resamples=2000).systems
    np.testing.assert_allclose(sy["se"], stats.sem(scores, nan_policy="omit"))
    t = stats.ttest_1samp(scores[:, 0], 0.0, nan_policy="omit").confidence_interval()
    assert sy["low"][0] == pytest.approx(t.low, abs=0.02)
    assert sy["high"][0] == pytest.approx(t.high, abs=0.02)


def test_missing_output_lowers_n_not_the_mean() -> None:
    scores = TINY.copy()
    scores[1, 0] = np.nan  # a's 5 is gone: mean over 3, 4, 4
    lb = leaderboard(scores, ["a", "b", "c"], n_resamples=200)
    a = lb.systems.iloc[0]
    assert a["mean"] == pytest.approx(11 / 3) and a["n"] == 3 and a["n_missing"] == 1
    # the pair a-b is over the 3 items both have: 2, 1, 2
    ab = lb.pairs.iloc[0]
    assert ab["difference"] == pytest.approx(5 / 3) and ab["n"] == 3
    # b-c keeps all 4 items
    assert lb.pairs.iloc[2]["n"] == 4


def test_ties_share_the_better_rank() -> None:
    ranks = resample_ranks(np.array([[1.0, 2.0, 2.0, 3.0], [2.0, np.nan, 2.0, 1.0]]))
    np.testing.assert_array_equal(ranks[0], [4, 2, 2, 1])
    # a NaN mean has no rank and counts for no one
    np.testing.assert_array_equal(ranks[1], [1, np.nan, 1, 3])
    worst = resample_ranks(np.array([[1.0, 2.0, 2.0, 3.0]]), worst=True)
    np.testing.assert_array_equal(worst[0], [4, 3, 3, 1])
    # a and b score alike on every item, c far below
    scores = np.array([[1.0, 1.0, -5.0], [0.0, 0.0, -5.0], [1.0, 1.0, -4.0], [0.5, 0.5, -5.0]])
    sy = leaderboard(scores, n_resamples=200).systems
    assert sy["rank"].tolist() == [1, 1, 3]
    # a and b tie in every resample: each interval holds both ways of breaking the tie
    assert sy["rank_low"].tolist() == [1, 1, 3] and sy["rank_high"].tolist() == [2, 2, 3]


def test_rank_interval_is_a_central_range_of_actual_ranks() -> None:
    # system 0 is 1st in 20% of resamples, 2nd in 60%, 3rd in 20%; system 1 (2.5) is
    # 2nd when system 0 is 1st, else 1st
    first = np.array([3.0, 2.0, 2.0, 2.0, 1.0])[np.arange(100) % 5]
    means = np.column_stack([first, np.full(100, 2.5), np.full(100, 1.5)])
    low, high = rank_interval(means, 0.95)
    assert (low[0], high[0]) == (1, 3) and (low[1], high[1]) == (1, 2)
    low, high = rank_interval(means, 0.5)  # 25%-75% range
    assert (low[0], high[0]) == (2, 2)


def test_bh_adjustment_equals_statsmodels() -> None:
    rng = np.random.default_rng(5)
    scores = _world(rng, 60, np.array([0.0, 0.1, 0.3, 0.4, 0.8]))
    pa = leaderboard(scores, n_resamples=1000, fdr=0.1).pairs
    reject, adjusted, *_ = multipletests(pa["p_value"], alpha=0.1, method="fdr_bh")
    np.testing.assert_allclose(pa["p_adjusted"], adjusted)
    np.testing.assert_array_equal(pa["significant"], reject)
    by = leaderboard(scores, n_resamples=1000, fdr=0.1, correction="fdr_by")
    assert by.correction == "fdr_by"
    np.testing.assert_allclose(by.pairs["p_adjusted"], multipletests(
        pa["p_value"], alpha=0.1, method="fdr_by")[1])


def test_p_value_agrees_with_the_interval() -> None:
    rng = np.random.default_rng(11)
    for _ in range(5):
        scores = _world(rng, 40, rng.normal(0, 0.3, 6))
        pa = leaderboard(scores, n_resamples=1000, rng=int(rng.integers(99))).pairs
        excludes = (pa["low"] > 0) | (pa["high"] < 0)
        # away from the boundary (one resample of resolution either side)
        clear = (pa["p_value"] - 0.05).abs() > 0.004
        assert (excludes[clear] == (pa["p_value"][clear] < 0.05)).all()


def test_constant_differences() -> None:
    base = np.random.default_rng(2).normal(size=30)
    # b = a - 1 on every item (no spread): the smallest p; c = a + rounding noise only
    scores = np.column_stack([base, base - 1.0, base + 0.0])
    scores[:, 2] = (scores[:, 2] + 0.1) - 0.1
    pa = leaderboard(scores, n_resamples=999).pairs.set_index(["system_a", "system_b"])
    ab = pa.loc[("system_0", "system_1")]
    assert ab["difference"] == pytest.approx(1.0)
    assert ab["low"] == pytest.approx(1.0) and ab["high"] == pytest.approx(1.0)
    assert ab["p_value"] == pytest.approx(1 / 1000) and ab["significant"]
    ac = pa.loc[("system_0", "system_2")]
    assert ac["difference"] == 0 and ac["p_value"] == 1 and not ac["significant"]


def test_few_one_sided_differences_are_not_significant() -> None:
    # b is one point better on 3 of 30 items and equal on the rest (a sign test gives
    # p = 0.25): the equal-tailed bootstrap-t calls it significant (p ~ 0.02), the
    # symmetric one that the leaderboard uses does not
    base = np.random.default_rng(0).integers(1, 6, 30).astype(float)
    better = base.copy()
    better[:3] += 1
    lb = leaderboard(np.column_stack([base, better]))
    pair = lb.pairs.iloc[0]
    assert pair["difference"] == pytest.approx(-0.1)
    assert pair["p_value"] > 0.1 and pair["low"] < 0 < pair["high"]
    assert ranking.studentized_p(lb.resampled, symmetric=False)[2] < 0.05


def test_deterministic_given_a_seed() -> None:
    scores = _world(np.random.default_rng(1), 50, np.arange(4) * 0.2)
    one = leaderboard(scores, n_resamples=300, rng=7)
    two = leaderboard(scores, n_resamples=300, rng=np.random.default_rng(7))
    pd.testing.assert_frame_equal(one.systems, two.systems)
    pd.testing.assert_frame_equal(one.pairs, two.pairs)
    other = leaderboard(scores, n_resamples=300, rng=8)
    assert not np.allclose(one.systems["low"], other.systems["low"])


def test_chunks_do_not_change_the_draw(monkeypatch: pytest.MonkeyPatch) -> None:
    whole = np.vstack(draw_counts(20, 50, np.random.default_rng(4)))
    monkeypatch.setattr(ranking, "CHUNK", 60)  # 3 resamples per chunk
    pieces = draw_counts(20, 50, np.random.default_rng(4))
    assert len(pieces) > 1
    np.testing.assert_array_equal(np.vstack(pieces), whole)
    np.testing.assert_array_equal(whole.sum(axis=1), np.full(50, 20.0))


def test_input_errors() -> None:
    with pytest.raises(ValueError, match="at least 2 systems"):
        leaderboard(np.ones((5, 1)))
    with pytest.raises(ValueError, match="n_items, n_systems"):
        leaderboard(np.ones(5))
    with pytest.raises(ValueError, match="infinite"):
        leaderboard(np.array([[1.0, np.inf], [2.0, 3.0]]))
    with pytest.raises(ValueError, match="distinct system names"):
        leaderboard(TINY, ["a", "a", "b"])
    with pytest.raises(ValueError, match="fdr"):
        leaderboard(TINY, fdr=0.0)
    with pytest.raises(ValueError, match="correction"):
        leaderboard(TINY, correction="bonferroni")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        item_win_rates(np.full((2, 3, 3), 2.0))


def test_an_all_nan_system_is_a_nan_row_left_out_of_ranks_and_fdr() -> None:
    scores = np.column_stack([TINY, np.full(4, np.nan)])
    lb = leaderboard(scores, ["a", "b", "c", "gone"], n_resamples=300)
    gone = lb.systems.iloc[3]
    assert gone["n"] == 0 and gone["n_missing"] == 4
    assert gone[["mean", "low", "high", "se", "rank", "rank_low", "rank_high"]].isna().all()
    assert lb.systems["rank"].tolist()[:3] == [1, 3, 2]
    assert lb.systems["rank_high"][:3].max() <= 3
    with_gone = lb.pairs["system_b"] == "gone"
    assert lb.pairs.loc[with_gone, "p_value"].isna().all()
    assert not lb.pairs.loc[with_gone, "significant"].any()
    # the BH family is the 3 pairs with a p-value
    plain = leaderboard(TINY, ["a", "b", "c"], n_resamples=300).pairs
    np.testing.assert_allclose(lb.pairs.loc[~with_gone, "p_adjusted"], plain["p_adjusted"])


def test_dataframe_input_names_the_systems() -> None:
    frame = pd.DataFrame(TINY, columns=["x", "y", "z"])
    assert leaderboard(frame, n_resamples=100).systems["system"].tolist() == ["x", "y", "z"]


def test_planted_order_is_recovered_and_rank_intervals_hold_the_true_rank() -> None:
    rng = np.random.default_rng(0)
    mu = np.array([0.0, 0.8, 0.4, 1.2, 0.1])  # true ranks 5, 2, 3, 1, 4
    lb = leaderboard(_world(rng, 300, mu), n_resamples=1000)
    sy = lb.systems
    true_rank = np.array([5, 2, 3, 1, 4])
    assert sy["rank"].tolist() == true_rank.tolist()
    assert ((sy["rank_low"] <= true_rank) & (true_rank <= sy["rank_high"])).all()
    # the well-separated pairs are found (0 vs 0.1 need not be)
    pa = lb.pairs.set_index(["system_a", "system_b"])
    assert pa.loc[("system_0", "system_3"), "significant"]
    assert pa.loc[("system_1", "system_3"), "significant"]


def test_null_world_finds_few_pairs() -> None:
    rng = np.random.default_rng(1)
    found = [leaderboard(_world(rng, 50, np.zeros(5)), n_resamples=400,
                         rng=seed).pairs["significant"].sum() for seed in range(20)]
    assert sum(found) <= 4  # 200 null pairs; BH at 0.05 keeps the FWER near 0.05


def test_warns_when_resamples_cannot_reach_bh_thresholds() -> None:
    with pytest.warns(UserWarning, match="raise n_resamples"):
        leaderboard(_world(np.random.default_rng(0), 20, np.zeros(5)), n_resamples=99)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        leaderboard(_world(np.random.default_rng(0), 20, np.zeros(5)), n_resamples=199)


def test_item_win_rates_by_hand() -> None:
    nan = np.nan
    # one item, systems a b c; [i, x, y]: x preferred to y, x shown first
    prefs = np.array([[[nan, 1.0, 0.5],
                       [nan, nan, 0.0],
                       [nan, nan, nan]]])
    # a: 1 vs b, 0.5 vs c; b: 0 vs a, 0 vs c; c: 0.5 vs a, 1 vs b
    np.testing.assert_allclose(item_win_rates(prefs), [[0.75, 0.0, 0.75]])
    # both orders judged: a first says 1, b first says 0.5 -> a's score (1 + 0.5) / 2
    both = prefs.copy()
    both[0, 1, 0] = 0.5
    np.testing.assert_allclose(item_win_rates(both)[0, :2], [(0.75 + 0.5) / 2, 0.125])
    # a system never compared on an item has no win rate there
    alone = np.full((1, 3, 3), nan)
    alone[0, 0, 1] = 1.0
    np.testing.assert_allclose(item_win_rates(alone), [[1.0, 0.0, nan]])


def test_win_rate_leaderboard_ranks_a_pairwise_judges_systems() -> None:
    rng = np.random.default_rng(2)
    quality = np.array([0.0, 1.0, 2.0])
    q = quality + rng.standard_normal((80, 3))
    d = q[:, :, None] - q[:, None, :]
    prefs = np.where(d > 0.3, 1.0, np.where(d < -0.3, 0.0, 0.5))
    lb = win_rate_leaderboard(prefs, ["low", "mid", "high"], n_resamples=500)
    sy = lb.systems
    assert sy["rank"].tolist() == [3, 2, 1]
    # every pair judged: the win rates average 0.5 and are in [0, 1]
    assert sy["mean"].mean() == pytest.approx(0.5)
    assert ((sy["low"] >= -0.05) & (sy["high"] <= 1.05)).all()
    assert lb.pairs["significant"].all()


def test_ten_systems_two_thousand_items_runs_in_seconds() -> None:
    scores = _world(np.random.default_rng(0), 2000, np.linspace(0, 0.3, 10))
    lb = leaderboard(scores, n_resamples=2000)
    assert len(lb.pairs) == 45 and lb.resampled.t.shape == (2000, 55)
