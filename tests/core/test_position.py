"""Tests for judgebias.stats.position: pair codes, PC, PF, RS, the one-order fallbacks, input
errors (specs/judge-card.md §1, §3; Shi et al. arXiv 2406.07791)."""

from __future__ import annotations

import ast
import inspect
import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import special
from statsmodels.stats.proportion import confint_proportions_2indep

from judgebias.stats import position as position
from judgebias.stats.position import (
    COLUMNS,
    NOT_RANDOMISED,
    ONE_ORDER,
    classify_pairs,
    cluster_bootstrap_ratio,
    expected_modal_share,
    first_slot_pair_test,
    pf_test,
    position_bias,
    rs_chance,
)

SLOT = {"A": "A", "B": "B", "C": "tie", "N": None}


def pairs_table(codes: list[str]) -> pd.DataFrame:
    """One pair per code: order-1 letter, order-2 letter (C tie, N unparsed)."""
    rows = []
    for i, code in enumerate(codes):
        rows.append({"item": f"p{i}", "order": "ab", "slot": SLOT[code[0]]})
        rows.append({"item": f"p{i}", "order": "ba", "slot": SLOT[code[1]]})
    return pd.DataFrame(rows)


def by_measure(result: pd.DataFrame) -> pd.DataFrame:
    return result.set_index("measure")


EXAMPLE = ["AB"] * 4 + ["BA"] * 2 + ["CC", "AA", "AA", "BC"]


# ------------------------------------------------------------------ worked example


def test_worked_example_pc_pf_and_counts() -> None:
    result = position_bias(pairs_table(EXAMPLE))
    assert list(result.columns) == list(COLUMNS)
    r = by_measure(result)
    assert r.loc["pc", "estimate"] == pytest.approx(0.70)
    assert round(r.loc["pc", "ci_low"], 2) == 0.40
    assert round(r.loc["pc", "ci_high"], 2) == 0.89
    assert r.loc["pc", "interval"] == "wilson"
    assert r.loc["pf", "estimate"] == pytest.approx(-0.10)
    assert r.loc["pf", "n"] == 10
    # exact McNemar: 1 recency of 3 discordant pairs, two-sided binomial p = 1
    assert r.loc["pf", "p_value"] == pytest.approx(1.0)
    assert r.loc["pf", "ci_low"] <= -0.10 <= r.loc["pf", "ci_high"]
    assert "seed=0" in r.loc["pf", "interval"]
    counts = result[["n_consistent", "n_primacy", "n_recency", "n_unparsed"]]
    assert (counts.to_numpy() == [7, 2, 1, 0]).all()
    assert r.loc["extraction_rate", "estimate"] == 1.0
    # both orders: A = 4 (AB) + 2 (BA) + 4 (AA), B = 4 + 2 + 1 (BC), ties left out
    assert r.loc["first_slot_rate", "estimate"] == pytest.approx(10 / 17)
    assert r.loc["first_slot_rate", "n"] == 17
    # pairs' two verdicts are clustered: bootstrap and a sign-flip over pairs (AA x2 +2,
    # BC -1: total +3 of sizes 2, 2, 1)
    assert r.loc["first_slot_rate", "interval"].startswith("percentile cluster bootstrap")
    assert r.loc["first_slot_rate", "p_value"] == pytest.approx(first_slot_pair_test(2, 0, 0, 1))
    assert "rs" not in r.index  # one judgement per instance


def test_worked_example_codes() -> None:
    pairs = classify_pairs(pairs_table(EXAMPLE))
    assert pairs["code"].tolist() == EXAMPLE  # items in order of appearance
    assert pairs["class"].value_counts().to_dict() == {
        "consistent": 7, "primacy": 2, "recency": 1}


def test_worked_example_rs_and_chance_floors() -> None:
    # instances (p0, ab) AAA, (p0, ba) BBA, (p1, ab) ACA, (p1, ba) BBB
    verdicts = {("p0", "ab"): "AAA", ("p0", "ba"): "BBA", ("p1", "ab"): "ACA",
                ("p1", "ba"): "BBB"}
    rows = [{"item": item, "order": order, "repeat": t, "slot": SLOT[letter]}
            for (item, order), letters in verdicts.items()
            for t, letter in enumerate(letters)]
    r = by_measure(position_bias(pd.DataFrame(rows)))
    assert r.loc["rs", "estimate"] == pytest.approx((1 + 2 / 3 + 2 / 3 + 1) / 4)
    assert round(r.loc["rs", "estimate"], 2) == 0.83
    assert r.loc["rs", "n"] == 4
    assert r.loc["rs", "chance"] == pytest.approx(17 / 27)  # a tie was seen: k = 3
    assert r.loc["rs", "ci_low"] <= r.loc["rs", "estimate"] <= r.loc["rs", "ci_high"]
    assert rs_chance(2, 3) == pytest.approx(0.75)
    assert rs_chance(3, 3) == pytest.approx(17 / 27)
    assert rs_chance(2, 2) == pytest.approx(0.75)  # AA, BB: 1; AB, BA: 1/2


def test_rs_keeps_unparsed_repeats_in_the_denominator() -> None:
    rows = [{"item": "p0", "order": "ab", "repeat": t, "slot": s}
            for t, s in enumerate(["A", None, None])]
    rows += [{"item": "p1", "order": "ab", "repeat": t, "slot": s}
             for t, s in enumerate([None, None, None])]
    r = by_measure(position_bias(pd.DataFrame(rows)))
    assert r.loc["rs", "estimate"] == pytest.approx((1 / 3 + 0) / 2)
    assert r.loc["rs", "chance"] == pytest.approx(0.75)  # no tie seen: k = 2


def test_expected_modal_share_by_hand() -> None:
    # a judge that always answers A; one that fails half the time (t = 2: shares 1, 1/2, 0)
    assert expected_modal_share(np.array([1.0, 0.0]), 3) == pytest.approx(1.0)
    assert expected_modal_share(np.array([0.5, 0.0]), 2) == pytest.approx(
        0.25 * 1 + 0.5 * 0.5 + 0.25 * 0)
    rows = expected_modal_share(np.array([[0.5, 0.5], [1 / 3, 1 / 3]]), 3)
    assert rows.shape == (2,)
    assert rows[0] == pytest.approx(0.75)
    # row 2: 2 options and a third outcome (unparsed, never the mode), t = 3, brute force
    probs = np.array([1 / 3, 1 / 3, 1 / 3])
    brute = 0.0
    for a in range(3):
        for b in range(3):
            for c in range(3):
                votes = [a, b, c]
                brute += probs[a] * probs[b] * probs[c] * max(votes.count(0),
                                                              votes.count(1)) / 3
    assert rows[1] == pytest.approx(brute)


@pytest.mark.parametrize("counts", [(3, 1, 2, 0), (0, 0, 3, 1), (5, 2, 0, 0), (2, 0, 1, 2),
                                    (1, 0, 0, 0), (4, 0, 3, 0)])
def test_first_slot_pair_test_is_the_exact_sign_flip(counts: tuple[int, ...]) -> None:
    aa, bb, a_tie, b_tie = counts
    sizes = [2] * (aa + bb) + [1] * (a_tie + b_tie)
    observed = abs(2 * (aa - bb) + a_tie - b_tie)
    flips = [abs(sum(sign * size for sign, size in zip(signs, sizes, strict=True)))
             for signs in itertools.product([-1, 1], repeat=len(sizes))]
    exact = np.mean(np.array(flips) >= observed)
    assert first_slot_pair_test(*counts) == pytest.approx(exact)
    if a_tie + b_tie == 0:  # no ties: PF's exact binomial
        assert first_slot_pair_test(*counts) == pytest.approx(pf_test(aa, bb))


# ------------------------------------------------------------- unparsed and ties


def test_unparsed_pairs_leave_pc_and_pf_and_count_in_extraction() -> None:
    r = by_measure(position_bias(pairs_table([*EXAMPLE, "AN", "NB", "NN"])))
    assert r.loc["pc", "estimate"] == pytest.approx(0.70)
    assert r.loc["pc", "n"] == 10
    assert r.loc["pf", "estimate"] == pytest.approx(-0.10)
    assert r.loc["extraction_rate", "estimate"] == pytest.approx(10 / 13)
    assert r.loc["extraction_rate", "n"] == 13
    assert int(r.loc["pc", "n_unparsed"]) == 3


@pytest.mark.parametrize(("code", "klass"), [
    ("AB", "consistent"), ("BA", "consistent"), ("CC", "consistent"),
    ("AA", "primacy"), ("AC", "primacy"), ("CA", "primacy"),
    ("BB", "recency"), ("BC", "recency"), ("CB", "recency"),
    ("AN", "unparsed"), ("NA", "unparsed"), ("CN", "unparsed"), ("NN", "unparsed"),
])
def test_classes_of_codes(code: str, klass: str) -> None:
    pairs = classify_pairs(pairs_table([code]))
    assert pairs.loc[0, "code"] == code
    assert pairs.loc[0, "class"] == klass


def test_ties_count_for_the_slot_they_join() -> None:
    # AC and CA lean primacy, BC and CB recency: PF = (2 - 2) / 5 = 0 and PC = 1 / 5
    r = by_measure(position_bias(pairs_table(["AC", "CA", "BC", "CB", "CC"])))
    assert r.loc["pc", "estimate"] == pytest.approx(0.2)
    assert r.loc["pf", "estimate"] == pytest.approx(0.0)
    assert r.loc["pc", "chance"] == pytest.approx(1 / 3)  # ties seen: 3 of 9 codes


def test_pc_and_pf_use_repeat_zero_and_rs_all_repeats() -> None:
    # item q (first seen) AB then AA, AA; item p BA, BA, BA
    rows = [("q", "ab", 0, "A"), ("q", "ba", 0, "B"), ("q", "ab", 1, "A"),
            ("q", "ba", 1, "A"), ("q", "ab", 2, "A"), ("q", "ba", 2, "A"),
            ("p", "ab", 0, "B"), ("p", "ba", 0, "A"), ("p", "ab", 1, "B"),
            ("p", "ba", 1, "A"), ("p", "ab", 2, "B"), ("p", "ba", 2, "A")]
    table = pd.DataFrame(rows, columns=["item", "order", "repeat", "slot"])
    pairs = classify_pairs(table)
    assert pairs["item"].tolist() == ["q"] * 3 + ["p"] * 3  # order of first appearance
    assert pairs["code"].tolist() == ["AB", "AA", "AA", "BA", "BA", "BA"]
    r = by_measure(position_bias(table))
    assert r.loc["pc", "estimate"] == 1.0 and r.loc["pc", "n"] == 2
    assert r.loc["pf", "estimate"] == 0.0
    # instances: (q, ab) AAA 1, (q, ba) BAA 2/3, (p, ab) BBB 1, (p, ba) AAA 1
    assert r.loc["rs", "estimate"] == pytest.approx((1 + 2 / 3 + 1 + 1) / 4)
    assert r.loc["rs", "chance"] == pytest.approx(0.75)


def test_half_pairs_are_left_out_and_noted() -> None:
    table = pairs_table(EXAMPLE)
    extra = pd.DataFrame([{"item": "lonely", "order": "ab", "slot": "A"}])
    r = by_measure(position_bias(pd.concat([table, extra], ignore_index=True)))
    assert r.loc["pc", "n"] == 10
    assert "1 item(s) judged in one order only" in r.loc["pc", "note"]


# -------------------------------------------------------------- simulated judges


def simulated(n: int, pull: float, rng: np.random.Generator) -> pd.DataFrame:
    """A judge with P(first) = sigmoid(shown preference + pull), one pair per item."""
    d = rng.normal(0.0, 1.0, n)
    first = rng.random((2, n)) < special.expit(np.stack([d, -d]) + pull)
    slot = np.where(first, "A", "B")
    return pd.DataFrame({"item": np.tile(np.arange(n), 2),
                         "order": np.repeat(["ab", "ba"], n), "slot": slot.ravel()})


def population_pf(pull: float) -> float:
    """E[P(BB) - P(AA)] over d ~ N(0, 1), by Gauss-Hermite quadrature."""
    x, w = np.polynomial.hermite_e.hermegauss(101)
    w = w / w.sum()
    p1, p2 = special.expit(x + pull), special.expit(-x + pull)
    return float(w @ ((1 - p1) * (1 - p2) - p1 * p2))


def test_population_pf_matches_a_large_simulation() -> None:
    rng = np.random.default_rng(0)
    d = rng.normal(0.0, 1.0, 1_000_000)
    first = rng.random((2, d.size)) < special.expit(np.stack([d, -d]) + 0.6)
    simulated_pf = ((~first).all(axis=0).mean() - first.all(axis=0).mean())
    assert simulated_pf == pytest.approx(population_pf(0.6), abs=0.003)


def test_planted_primacy_pull_is_recovered() -> None:
    truth = population_pf(0.6)
    assert truth < -0.1
    r = by_measure(position_bias(simulated(3000, 0.6, np.random.default_rng(0))))
    pf = r.loc["pf"]
    assert pf["estimate"] < 0
    assert pf["ci_low"] <= truth <= pf["ci_high"]
    assert pf["ci_high"] < 0
    assert pf["p_value"] < 1e-6
    first = r.loc["first_slot_rate"]
    assert first["estimate"] > 0.5 and first["p_value"] < 1e-6


def test_fair_judge_interval_covers_zero() -> None:
    assert population_pf(0.0) == pytest.approx(0.0, abs=1e-12)
    r = by_measure(position_bias(simulated(1000, 0.0, np.random.default_rng(2))))
    assert r.loc["pf", "ci_low"] <= 0.0 <= r.loc["pf", "ci_high"]
    assert r.loc["pf", "p_value"] > 0.05


def test_bootstrap_is_seeded_and_matches_item_resampling() -> None:
    table = simulated(200, 0.3, np.random.default_rng(3))
    a = position_bias(table, seed=7)
    b = position_bias(table, seed=7)
    pd.testing.assert_frame_equal(a, b)
    assert "seed=7" in a.loc[1, "interval"]
    # the multinomial-over-distinct-values draw against a plain resampling of items
    rng = np.random.default_rng(4)
    lean = rng.choice([-1.0, 0.0, 0.0, 1.0], size=150)
    valid = (rng.random(150) < 0.9).astype(float)
    lean *= valid
    low, high = cluster_bootstrap_ratio(lean, valid, n_resamples=20000, confidence_level=0.95,
                                        rng=np.random.default_rng(5))
    idx = np.random.default_rng(6).integers(0, 150, size=(20000, 150))
    naive = lean[idx].sum(axis=1) / valid[idx].sum(axis=1)
    np.testing.assert_allclose([low, high], np.quantile(naive, [0.025, 0.975]), atol=0.01)


# -------------------------------------------------------------------- one order


def one_order_table() -> pd.DataFrame:
    # gold in A: A, A, A, tie (3/4 right); gold in B: B, A, A, unparsed (1/3 right)
    slots = ["A", "A", "A", "tie", "B", "A", "A", None]
    gold = ["A"] * 4 + ["B"] * 4
    return pd.DataFrame({"item": [f"p{i}" for i in range(8)], "order": "ab",
                         "slot": slots, "gold": gold})


def test_one_order_has_no_pc_or_pf_and_gives_the_fallbacks() -> None:
    result = position_bias(one_order_table())
    r = by_measure(result)
    for measure in ("pc", "pf"):
        assert math.isnan(r.loc[measure, "estimate"])
        assert math.isnan(r.loc[measure, "ci_low"])
        assert r.loc[measure, "note"] == ONE_ORDER
    assert result["n_consistent"].isna().all()
    first = r.loc["first_slot_rate"]
    assert first["estimate"] == pytest.approx(5 / 6)  # ties and unparsed left out
    assert first["n"] == 6
    gap = r.loc["gold_slot_gap"]
    assert gap["estimate"] == pytest.approx(3 / 4 - 1 / 3)
    low, high = confint_proportions_2indep(3, 4, 1, 3, method="newcomb", compare="diff")
    assert (gap["ci_low"], gap["ci_high"]) == pytest.approx((low, high))
    assert r.loc["extraction_rate", "estimate"] == pytest.approx(7 / 8)
    # not randomised: numbers kept, no valid test
    for measure in ("first_slot_rate", "gold_slot_gap"):
        assert NOT_RANDOMISED in r.loc[measure, "note"]
        assert math.isnan(r.loc[measure, "p_value"])


def test_one_order_randomised_gets_p_values() -> None:
    r = by_measure(position_bias(one_order_table(), randomised=True))
    assert 0 < r.loc["first_slot_rate", "p_value"] <= 1
    assert r.loc["first_slot_rate", "p_value"] == pytest.approx(0.21875)  # 5 of 6
    assert 0 < r.loc["gold_slot_gap", "p_value"] <= 1
    assert NOT_RANDOMISED not in r.loc["gold_slot_gap", "note"]


def test_one_order_without_gold_has_no_gap() -> None:
    r = by_measure(position_bias(one_order_table().drop(columns="gold")))
    assert "gold_slot_gap" not in r.index
    assert "first_slot_rate" in r.index


# ------------------------------------------------------------------- bad input


@pytest.mark.parametrize(("change", "message"), [
    (lambda t: t.drop(columns="slot"), "'slot'"),
    (lambda t: t.drop(columns="order"), "'order'"),
    (lambda t: t.assign(slot=["A", "B", "A", "C"]), r"column 'slot': row 3 .*'C'"),
    (lambda t: t.assign(order=["ab", "ba", "ab", "xy"]), r"column 'order': row 3 .*'xy'"),
    (lambda t: t.assign(item=["p0", "p0", None, "p1"]), r"column 'item': row 2"),
    (lambda t: t.assign(repeat=[0, 0, -1, 0]), r"column 'repeat': row 2"),
    (lambda t: t.assign(repeat=[0, 0, 0.5, 0]), r"column 'repeat': row 2"),
    (lambda t: t.assign(gold=["A", "B", "X", None]), r"column 'gold': row 2 .*'X'"),
    (lambda t: t.assign(order=["ab", "ba", "ab", "ab"]),
     r"\('item', 'order', 'repeat'\): row 3 .*\('p1', 'ab', 0\)"),
])
def test_bad_input_names_the_column_and_row(change, message) -> None:
    table = pairs_table(["AB", "BA"])
    with pytest.raises(ValueError, match=message):
        position_bias(change(table))
    with pytest.raises(ValueError, match=message):
        classify_pairs(change(table))


def test_bad_row_reports_the_index_label() -> None:
    table = pairs_table(["AB", "BA"]).set_axis([10, 11, 12, 13])
    with pytest.raises(ValueError, match=r"row 1 \(index 11\)"):
        position_bias(table.assign(slot=["A", "b", "B", "A"]))


def test_imports_no_study() -> None:
    tree = ast.parse(inspect.getsource(position))
    names = [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
             for alias in node.names]
    names += [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    assert not [n for n in names if n.startswith("judgebias")]
