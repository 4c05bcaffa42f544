"""BIRCH's measures (seed 003 §3.1-3.5, Appendix C.1, C.3; spec birch.md) on hand cases."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from judgebias.studies.birch.measures.formulas import (
    DRAWS,
    RATIOS,
    Accuracy,
    accuracy,
    bias,
    cds_ratio_curve,
    consistent_label,
    correctness,
    downsample,
    image_reliance,
    informativeness_subsets,
    label_counts,
    labeller_agreement,
    length_subsets,
    observed_cds_ratio,
    per_domain,
    summarise_draws,
    word_count,
)

NA = pd.NA


def ids(n: int, prefix: str = "p") -> list[str]:
    return [f"{prefix}{i}" for i in range(n)]


def bool_series(values, index=None) -> pd.Series:
    return pd.Series(pd.array(values, dtype="boolean"), index=index)


def ib_case() -> tuple[pd.Series, pd.Series]:
    """5 IDS pairs with 4 correct, 4 CDS pairs with 1 correct, 1 unlabelled pair."""
    correct = bool_series(
        [True, True, True, True, False,  # IDS: 4/5 = 0.8
         True, False, False, False,      # CDS: 1/4 = 0.25
         True],                          # subset <NA>: ignored
        index=ids(10),
    )
    subsets = pd.Series(["IDS"] * 5 + ["CDS"] * 4 + [NA], index=ids(10), dtype=object)
    return correct, subsets


# --------------------------------------------------------------------------- constants


def test_constants_match_appendix_c3():
    # 4 ratios x 4 ratios x 10 draws = 160 draws per IB or LB
    assert RATIOS == (0.4, 0.6, 0.8, 1.0)
    assert DRAWS == 10
    assert len(RATIOS) ** 2 * DRAWS == 160


# --------------------------------------------------------------------------- correctness


def test_correctness_ties_and_missing():
    verdict = pd.Series(["A", "B", "tie", None, "A", "B", "tie", "A"], index=ids(8))
    preference = pd.Series(["A", "A", "A", "A", "tie", "B", "B", "B"], index=ids(8))
    got = correctness(verdict, preference)
    assert str(got.dtype) == "boolean"
    # p0 A=A right; p1 B vs A wrong; p2 judge tie -> wrong (not y^c, never guessed);
    # p3 verdict missing -> NA; p4 human tie -> NA; p5 right; p6 tie -> wrong; p7 wrong
    expected = [True, False, False, NA, NA, True, False, False]
    assert got.tolist() == expected
    assert list(got.index) == ids(8)


def test_correctness_aligns_by_index_not_position():
    verdict = pd.Series(["A", "A"], index=["x", "y"])
    preference = pd.Series(["B", "A"], index=["y", "x"])  # x prefers A, y prefers B
    got = correctness(verdict, preference)
    # by label: x A=A right, y A vs B wrong (by position it would be the other way)
    assert got.tolist() == [True, False]
    assert list(got.index) == ["x", "y"]


def test_correctness_missing_pair_in_verdict_is_na():
    verdict = pd.Series(["A"], index=["x"])
    preference = pd.Series(["A", "B"], index=["x", "y"])
    got = correctness(verdict, preference)
    assert bool(got["x"]) is True
    assert got["y"] is NA


def test_correctness_rejects_unknown_values_and_bad_index():
    with pytest.raises(ValueError, match="verdict"):
        correctness(pd.Series(["C"]), pd.Series(["A"]))
    with pytest.raises(ValueError, match="unique"):
        correctness(pd.Series(["A", "B"], index=["x", "x"]), pd.Series(["A"], index=["x"]))
    with pytest.raises(ValueError, match="share no index"):
        correctness(pd.Series(["A"], index=[0]), pd.Series(["A"], index=["p0"]))


# --------------------------------------------------------------------------- accuracy


def test_accuracy_counts_missing():
    # usable: T, T, F -> 2/3; two missing
    got = accuracy(bool_series([True, NA, True, False, NA]))
    assert got.value == pytest.approx(2 / 3)
    assert (got.n, got.n_missing) == (3, 2)


def test_accuracy_empty_and_all_missing_is_nan():
    got = accuracy(bool_series([NA, NA]))
    assert math.isnan(got.value)
    assert (got.n, got.n_missing) == (0, 2)
    assert math.isnan(accuracy(bool_series([])).value)


def test_accuracy_accepts_plain_bool_and_object():
    assert accuracy(pd.Series([True, False, False, True])).value == 0.5
    got = accuracy(pd.Series([True, None, np.nan, False], dtype=object))
    assert (got.value, got.n, got.n_missing) == (0.5, 2, 2)


def test_accuracy_is_frozen():
    acc = Accuracy(value=1.0, n=1, n_missing=0)
    with pytest.raises(AttributeError):
        acc.value = 0.0  # type: ignore[misc]


# --------------------------------------------------------------------------- subsets


def test_informativeness_subsets():
    preference = pd.Series(["A", "B", "A", "B", "tie", "A"], index=ids(6))
    more_inf = pd.Series(["A", "B", "B", "A", "A", None], index=ids(6))
    got = informativeness_subsets(preference, more_inf)
    # y^c = y^i -> IDS; y^r = y^i -> CDS; human tie / missing y^i -> NA
    assert got.tolist() == ["IDS", "IDS", "CDS", "CDS", NA, NA]


def test_observed_cds_ratio():
    subsets = pd.Series(["IDS", "IDS", "IDS", "CDS", NA, "CDS"], dtype=object)
    # 2 CDS / (3 IDS + 2 CDS) = 0.4; NA ignored
    assert observed_cds_ratio(subsets) == pytest.approx(0.4)
    assert math.isnan(observed_cds_ratio(pd.Series([NA], dtype=object)))


def test_word_count():
    assert word_count("a red  car\n parked") == 4
    assert word_count("") == 0


def test_length_subsets():
    preference = pd.Series(["A", "B", "A", "B", "tie", "A"], index=ids(6))
    answer_a = pd.Series(
        ["one two three", "one two three", "one", "a b", "x y z", "a"], index=ids(6)
    )
    answer_b = pd.Series(["one", "one", "one two", "c d", "x", "b c"], index=ids(6))
    got = length_subsets(preference, answer_a, answer_b)
    # p0: preferred A 3 words vs 1 -> longer; p1: preferred B 1 vs 3 -> shorter;
    # p2: preferred A 1 vs 2 -> shorter; p3: 2 vs 2 -> NA (equal); p4: tie -> NA;
    # p5: preferred A 1 vs 2 -> shorter
    assert got.tolist() == ["longer", "shorter", "shorter", NA, NA, "shorter"]


# --------------------------------------------------------------------------- IB / LB


def test_bias_ib_hand_case():
    correct, subsets = ib_case()
    got = bias(correct, subsets)
    # Acc_IDS = 4/5 = 0.8, Acc_CDS = 1/4 = 0.25 -> IB = 0.8 - 0.25 = 0.55
    assert got.plus == Accuracy(value=0.8, n=5, n_missing=0)
    assert got.minus == Accuracy(value=0.25, n=4, n_missing=0)
    assert got.value == pytest.approx(0.55)


def test_bias_missing_correctness_counted_per_subset():
    correct, subsets = ib_case()
    correct = correct.copy()
    correct["p4"] = NA  # the wrong IDS pair becomes missing: IDS 4/4 = 1.0
    correct["p5"] = NA  # the right CDS pair becomes missing: CDS 0/3 = 0.0
    got = bias(correct, subsets)
    assert (got.plus.value, got.plus.n, got.plus.n_missing) == (1.0, 4, 1)
    assert (got.minus.value, got.minus.n, got.minus.n_missing) == (0.0, 3, 1)
    assert got.value == pytest.approx(1.0)


def test_bias_lb_labels_and_empty_subset():
    correct = bool_series([True, True, False, True], index=ids(4))
    subsets = pd.Series(["longer", "longer", "shorter", "shorter"], index=ids(4), dtype=object)
    got = bias(correct, subsets, plus="longer", minus="shorter")
    # Acc_longer = 2/2 = 1.0, Acc_shorter = 1/2 = 0.5 -> LB = 0.5
    assert got.value == pytest.approx(0.5)
    empty = bias(correct, pd.Series(["longer"] * 4, index=ids(4), dtype=object),
                 plus="longer", minus="shorter")
    assert empty.minus.n == 0 and math.isnan(empty.value)


# --------------------------------------------------------------------------- IRS


def test_image_reliance_paired_dropping():
    with_img = bool_series([True, True, True, False, NA, True], index=ids(6))
    no_img = bool_series([True, False, False, False, True, NA], index=ids(6))
    got = image_reliance(with_img, no_img)
    # p4 and p5 are missing in one variant each -> both dropped from both sides.
    # with image over p0..p3: 3/4 = 0.75; without: 1/4 = 0.25 -> IRS = 0.5
    assert got.n_pairs == 4
    assert got.with_image == Accuracy(value=0.75, n=4, n_missing=2)
    assert got.without_image == Accuracy(value=0.25, n=4, n_missing=2)
    assert got.value == pytest.approx(0.5)
    # unpaired accuracy would have been 4/5 vs 2/5: pairing matters
    assert accuracy(with_img).value == pytest.approx(0.8)


def test_image_reliance_per_subset():
    with_img = bool_series([True, True, False, True, True], index=ids(5))
    no_img = bool_series([True, True, False, False, NA], index=ids(5))
    subsets = pd.Series(["IDS", "IDS", "CDS", "CDS", "CDS"], index=ids(5), dtype=object)
    ids_irs = image_reliance(with_img, no_img, subsets, "IDS")
    # IDS: p0, p1 -> 2/2 - 2/2 = 0
    assert (ids_irs.value, ids_irs.n_pairs) == (0.0, 2)
    cds_irs = image_reliance(with_img, no_img, subsets, "CDS")
    # CDS: p2, p3 usable (p4 dropped) -> 1/2 - 0/2 = 0.5
    assert cds_irs.value == pytest.approx(0.5)
    assert (cds_irs.n_pairs, cds_irs.with_image.n_missing) == (2, 1)
    with pytest.raises(ValueError, match="subsets"):
        image_reliance(with_img, no_img, subset="IDS")


# --------------------------------------------------------------------------- down-sampling


def sized_case(n_plus: int, n_minus: int) -> tuple[pd.Series, pd.Series]:
    """``n_plus`` IDS pairs alternating right/wrong, ``n_minus`` CDS pairs likewise."""
    values = [i % 2 == 0 for i in range(n_plus)] + [i % 3 == 0 for i in range(n_minus)]
    index = ids(n_plus + n_minus)
    subsets = pd.Series(["IDS"] * n_plus + ["CDS"] * n_minus, index=index, dtype=object)
    return bool_series(values, index=index), subsets


def test_downsample_shape_and_full_cell():
    correct, subsets = ib_case()
    draws = downsample(correct, subsets, seed=3)
    assert len(draws) == 160
    assert list(draws.columns) == [
        "ratio_plus", "ratio_minus", "draw", "n_plus", "n_minus", "acc_plus", "acc_minus",
        "bias",
    ]
    full = draws[(draws.ratio_plus == 1.0) & (draws.ratio_minus == 1.0)]
    assert len(full) == 10
    # the (1.0, 1.0) cell is the whole data every time: IB = 0.55
    assert np.allclose(full.bias, bias(correct, subsets).value)
    assert (full.n_plus == 5).all() and (full.n_minus == 4).all()
    assert np.allclose(draws.bias, draws.acc_plus - draws.acc_minus)


def test_downsample_sizes_exact():
    correct, subsets = sized_case(10, 5)
    draws = downsample(correct, subsets)
    sizes_plus = draws.groupby("ratio_plus").n_plus.unique().to_dict()
    sizes_minus = draws.groupby("ratio_minus").n_minus.unique().to_dict()
    # n=10: 0.4 -> floor(4.5)=4, 0.6 -> floor(6.5)=6, 0.8 -> 8, 1.0 -> 10
    assert {r: list(v) for r, v in sizes_plus.items()} == {
        0.4: [4], 0.6: [6], 0.8: [8], 1.0: [10]}
    # n=5: 0.4 -> floor(2.0+0.5)=2, 0.6 -> floor(3.0+0.5)=3, 0.8 -> floor(4.5)=4, 1.0 -> 5
    assert {r: list(v) for r, v in sizes_minus.items()} == {
        0.4: [2], 0.6: [3], 0.8: [4], 1.0: [5]}
    # n=3: 0.4 -> floor(1.2+0.5)=1; n=1: 0.4 -> max(1, floor(0.9)) = 1
    tiny = downsample(*sized_case(3, 1), ratios=(0.4,), draws=2)
    assert tiny.n_plus.tolist() == [1, 1] and tiny.n_minus.tolist() == [1, 1]


def test_downsample_without_replacement_accuracies_are_possible_means():
    correct, subsets = sized_case(10, 5)
    draws = downsample(correct, subsets, seed=1)
    # a k-sample mean is a multiple of 1/k
    for col_n, col_acc in (("n_plus", "acc_plus"), ("n_minus", "acc_minus")):
        hits = draws[col_acc] * draws[col_n]
        assert np.allclose(hits, hits.round())
    # IDS: 5 of 10 right; a 4-sample without replacement has 0..4 hits, mean in [0, 1]
    assert draws.acc_plus.between(0, 1).all()


def test_downsample_deterministic_and_seed_dependent():
    correct, subsets = sized_case(40, 30)
    a = downsample(correct, subsets, seed=7)
    b = downsample(correct, subsets, seed=7)
    c = downsample(correct, subsets, seed=8)
    pd.testing.assert_frame_equal(a, b)
    assert not np.allclose(a.bias, c.bias)


def test_downsample_all_right_vs_all_wrong_has_no_spread():
    index = ids(12)
    correct = bool_series([True] * 7 + [False] * 5, index=index)
    subsets = pd.Series(["IDS"] * 7 + ["CDS"] * 5, index=index, dtype=object)
    summary = summarise_draws(downsample(correct, subsets, seed=11))
    # every draw: 1.0 - 0.0 = 1.0, so sd = 0
    assert summary == {"mean": 1.0, "sd": 0.0, "min": 1.0, "max": 1.0, "n_draws": 160}


def test_downsample_ignores_missing_and_rejects_empty_subset():
    correct, subsets = ib_case()
    correct = correct.copy()
    correct["p0"] = NA
    draws = downsample(correct, subsets, ratios=(1.0,), draws=1)
    # IDS population is the 4 usable pairs (3 right): 0.75 - 0.25 = 0.5
    assert draws.n_plus.tolist() == [4]
    assert draws.bias.tolist() == [pytest.approx(0.5)]
    only_ids = pd.Series(["IDS"] * 10, index=ids(10), dtype=object)
    with pytest.raises(ValueError, match="'CDS'"):
        downsample(correct, only_ids)
    with pytest.raises(ValueError, match="ratio"):
        downsample(*ib_case(), ratios=(0.0, 1.0))


def test_downsample_mean_close_to_full_bias():
    # 200 pairs: 120 IDS with 96 right (0.8), 80 CDS with 24 right (0.3): IB = 0.5
    index = ids(200)
    values = [i < 96 for i in range(120)] + [i < 24 for i in range(80)]
    correct = bool_series(values, index=index)
    subsets = pd.Series(["IDS"] * 120 + ["CDS"] * 80, index=index, dtype=object)
    full = bias(correct, subsets).value
    assert full == pytest.approx(0.5)
    for seed in range(5):
        summary = summarise_draws(downsample(correct, subsets, seed=seed))
        # sample means without replacement are unbiased; 160 draws -> close to 0.5
        assert abs(summary["mean"] - full) < 0.02
        assert 0 < summary["sd"] < 0.1


def test_summarise_draws_hand_case():
    frame = pd.DataFrame({"bias": [0.1, 0.3, 0.5], "acc_plus": [1.0, 1.0, 1.0]})
    got = summarise_draws(frame)
    # mean 0.3; sd = sqrt(((-0.2)^2 + 0 + 0.2^2) / (3 - 1)) = sqrt(0.04) = 0.2
    assert got["mean"] == pytest.approx(0.3)
    assert got["sd"] == pytest.approx(0.2)
    assert (got["min"], got["max"], got["n_draws"]) == (0.1, 0.5, 3)
    assert summarise_draws(frame, "acc_plus")["sd"] == 0.0
    assert math.isnan(summarise_draws(frame.iloc[:1])["sd"])


# --------------------------------------------------------------------------- Fig. 4 curve


def curve_case() -> tuple[pd.Series, pd.Series]:
    """N_I = 30 (24 right: 0.8), N_C = 10 (2 right: 0.2), plus 2 unusable pairs."""
    values = [i < 24 for i in range(30)] + [i < 2 for i in range(10)] + [NA, True]
    index = ids(42)
    subsets = pd.Series(["IDS"] * 30 + ["CDS"] * 10 + ["CDS", NA], index=index, dtype=object)
    return bool_series(values, index=index), subsets


def test_cds_ratio_curve_feasible_options():
    correct, subsets = curve_case()
    curve = cds_ratio_curve(correct, subsets, ratios=(0.1, 0.25, 0.5, 0.9), draws=3, seed=0)
    plan = curve.groupby("target_ratio")[["kept", "n_ids", "n_cds"]].first()
    # r=0.1: keep CDS -> n_ids = floor(10*0.9/0.1+0.5) = 90 > 30 infeasible;
    #        keep IDS -> n_cds = floor(30*0.1/0.9+0.5) = floor(3.83) = 3 -> total 33
    assert tuple(plan.loc[0.1]) == ("IDS", 30, 3)
    # r=0.25: keep CDS -> n_ids = floor(10*3+0.5) = 30 <= 30, total 40;
    #         keep IDS -> n_cds = floor(30/3+0.5) = 10 <= 10, total 40: tie -> keep CDS
    assert tuple(plan.loc[0.25]) == ("CDS", 30, 10)
    # r=0.5: keep CDS -> n_ids = 10 (total 20); keep IDS -> n_cds = 30 > 10 infeasible
    assert tuple(plan.loc[0.5]) == ("CDS", 10, 10)
    # r=0.9: keep CDS -> n_ids = floor(10*0.1/0.9+0.5) = floor(1.61) = 1 (total 11);
    #        keep IDS -> n_cds = floor(30*9+0.5) = 270 > 10 infeasible
    assert tuple(plan.loc[0.9]) == ("CDS", 1, 10)
    assert len(curve) == 4 * 3
    assert list(curve.columns) == [
        "target_ratio", "draw", "kept", "n_ids", "n_cds", "ratio", "accuracy", "analytic",
    ]
    # actual ratio n_cds / (n_ids + n_cds): r=0.1 -> 3/33
    assert curve[curve.target_ratio == 0.1].ratio.iloc[0] == pytest.approx(3 / 33)


def test_cds_ratio_curve_accuracy_and_analytic():
    correct, subsets = curve_case()
    curve = cds_ratio_curve(correct, subsets, ratios=(0.1, 0.25, 0.5, 0.9), draws=5, seed=2)
    # analytic = r * 0.2 + (1 - r) * 0.8; r=0.5 -> 0.5
    assert np.allclose(curve.analytic, curve.target_ratio * 0.2 + (1 - curve.target_ratio) * 0.8)
    # pooled accuracy = (hits_ids + hits_cds) / (n_ids + n_cds); the hits are integers
    hits = curve.accuracy * (curve.n_ids + curve.n_cds)
    assert np.allclose(hits, hits.round())
    # r=0.25 takes both subsets whole: (24 + 2) / 40 = 0.65 in every draw
    assert np.allclose(curve[curve.target_ratio == 0.25].accuracy, 26 / 40)
    # r=0.1 keeps IDS whole (24 right) and draws 3 CDS pairs (0..2 right of 2)
    hits_01 = hits[curve.target_ratio == 0.1].round()
    assert hits_01.between(24, 26).all()
    # r=0.9 keeps CDS whole (2 right) and draws 1 IDS pair (0 or 1 right)
    hits_09 = hits[curve.target_ratio == 0.9].round()
    assert hits_09.between(2, 3).all()


def test_cds_ratio_curve_pooled_accuracy_matches_a_replay_of_the_draws():
    correct, subsets = curve_case()
    curve = cds_ratio_curve(correct, subsets, ratios=(0.5,), draws=4, seed=5)
    # replay: the same generator draws the 10 IDS pairs out of 30 for each draw
    ids_pop = np.array([i < 24 for i in range(30)])
    rng = np.random.default_rng(5)
    for _, row in curve.iterrows():
        take = rng.choice(30, size=10, replace=False)
        assert row.accuracy == pytest.approx((ids_pop[take].sum() + 2) / 20)


def test_cds_ratio_curve_deterministic_skips_and_errors():
    correct, subsets = curve_case()
    a = cds_ratio_curve(correct, subsets, seed=1)
    pd.testing.assert_frame_equal(a, cds_ratio_curve(correct, subsets, seed=1))
    assert len(a) == 9 * DRAWS
    # N_I = 1, N_C = 1: r=0.1 -> keep CDS needs 9 IDS, keep IDS needs floor(0.61)=0 CDS:
    # neither feasible, skipped; r=0.5 -> both 1+1, tie -> keep CDS
    tiny = cds_ratio_curve(
        bool_series([True, False], index=["a", "b"]),
        pd.Series(["IDS", "CDS"], index=["a", "b"], dtype=object),
        ratios=(0.1, 0.5), draws=2,
    )
    assert tiny.target_ratio.tolist() == [0.5, 0.5]
    assert tiny.kept.tolist() == ["CDS", "CDS"]
    with pytest.raises(ValueError, match="'CDS'"):
        cds_ratio_curve(correct, pd.Series(["IDS"] * 42, index=ids(42), dtype=object))
    with pytest.raises(ValueError, match="ratio"):
        cds_ratio_curve(correct, subsets, ratios=(1.0,))


# --------------------------------------------------------------------------- labeller


def test_consistent_label_and_counts():
    ab = pd.Series(["A", "B", "A", None, "B", "A"], index=ids(6))
    ba = pd.Series(["A", "B", "B", "A", None, None], index=ids(6))
    got = consistent_label(ab, ba)
    # agree: p0 A, p1 B; p2 disagrees -> inconsistent NA; p3..p5 a label missing -> NA
    assert got.tolist() == ["A", "B", NA, NA, NA, NA]
    assert label_counts(ab, ba) == {
        "n_pairs": 6, "n_consistent": 2, "n_inconsistent": 1, "n_missing": 3}


def test_labeller_agreement_hand_kappa():
    truth = pd.Series(["A"] * 6 + ["B"] * 4 + ["A", None], index=ids(12))
    labels = pd.Series(["A"] * 5 + ["B"] + ["B"] * 3 + ["A"] + [None, "B"], index=ids(12))
    got = labeller_agreement(labels, truth)
    # usable: p0..p9 (p10, p11 have a missing label) -> n = 10
    # matches: p0..p4 (A=A) and p6..p8 (B=B) = 8 -> p_o = 0.8
    # marginals: truth A 6 / B 4; labels A 6 (p0..p4, p9) / B 4
    # p_e = 0.6*0.6 + 0.4*0.4 = 0.52 -> kappa = (0.8 - 0.52) / (1 - 0.52) = 0.28/0.48
    assert got["n"] == 10
    assert got["match_rate"] == pytest.approx(0.8)
    assert got["kappa"] == pytest.approx(0.28 / 0.48)


def test_labeller_agreement_degenerate():
    one_class = pd.Series(["A", "A", "A"])
    got = labeller_agreement(one_class, one_class)
    # p_e = 1: kappa undefined -> nan, match rate still 1
    assert got["match_rate"] == 1.0 and math.isnan(got["kappa"]) and got["n"] == 3
    # all A against all B: p_o = 0, p_e = 1*0 + 0*1 = 0 -> kappa = 0
    opposite = labeller_agreement(pd.Series(["A", "A"]), pd.Series(["B", "B"]))
    assert opposite["match_rate"] == 0.0 and opposite["kappa"] == pytest.approx(0.0)
    empty = labeller_agreement(pd.Series([None, "A"]), pd.Series(["A", None]))
    assert empty["n"] == 0 and math.isnan(empty["match_rate"]) and math.isnan(empty["kappa"])


# --------------------------------------------------------------------------- domains


def test_per_domain():
    index = ids(8)
    correct = bool_series([True, False, True, True, True, False, NA, False], index=index)
    ib = pd.Series(["IDS", "CDS", "IDS", "CDS", "IDS", "IDS", "CDS", NA],
                   index=index, dtype=object)
    lb = pd.Series(["longer", "shorter", "longer", NA, "shorter", "shorter", "longer",
                    "longer"], index=index, dtype=object)
    domain = pd.Series(["ocr", "ocr", "ocr", "ocr", "chart", "chart", "chart", None],
                       index=index)
    got = per_domain(correct, ib, lb, domain).set_index("domain")
    assert list(got.index) == ["chart", "ocr"]  # sorted; p7 (no domain) left out
    assert list(got.columns) == [
        "n", "accuracy", "acc_ids", "acc_cds", "ib", "acc_longer", "acc_shorter", "lb"]
    ocr = got.loc["ocr"]
    # ocr: p0 T IDS longer, p1 F CDS shorter, p2 T IDS longer, p3 T CDS NA
    # n = 4, acc = 3/4; IDS 2/2 = 1.0; CDS 1/2 = 0.5 -> IB 0.5;
    # longer 2/2 = 1.0; shorter 0/1 = 0.0 -> LB 1.0
    assert ocr.n == 4 and ocr.accuracy == pytest.approx(0.75)
    assert (ocr.acc_ids, ocr.acc_cds, ocr.ib) == pytest.approx((1.0, 0.5, 0.5))
    assert (ocr.acc_longer, ocr.acc_shorter, ocr.lb) == pytest.approx((1.0, 0.0, 1.0))
    chart = got.loc["chart"]
    # chart: p4 T IDS shorter, p5 F IDS shorter, p6 NA (missing) -> n = 2, acc 1/2;
    # IDS 1/2; CDS has only the missing p6 -> nan, IB nan; longer empty -> LB nan
    assert chart.n == 2 and chart.accuracy == pytest.approx(0.5)
    assert chart.acc_ids == pytest.approx(0.5)
    assert math.isnan(chart.acc_cds) and math.isnan(chart.ib)
    assert chart.acc_shorter == pytest.approx(0.5)
    assert math.isnan(chart.acc_longer) and math.isnan(chart.lb)
