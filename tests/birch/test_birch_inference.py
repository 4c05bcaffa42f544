"""BIRCH's intervals and tests (studies/birch/measures/inference.py) and the one-pair-set
tables (measures/results.py: method_row, table2_row) on hand-computed cases; the paper's
Table 8 identity from its printed numbers. Calibration by simulation: benchmarks/birch_null.py."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from judgebias.studies.birch.measures import formulas as m
from judgebias.studies.birch.measures import inference
from judgebias.studies.birch.measures.results import method_row, table2_row

NA = pd.NA
INDEX = pd.Index([f"p{i}" for i in range(8)])


def flags(values) -> pd.Series:
    return pd.Series(pd.array(values, dtype="boolean"), index=INDEX)


def hand_case() -> tuple[dict[str, pd.Series], dict[str, pd.Series]]:
    """8 pairs: 3 IDS, 3 CDS, 2 unlabelled; Base and BIRCH verdicts, one missing."""
    correct = {"base": flags([True, True, False, False, False, True, True, NA]),
               "birch": flags([True, True, True, True, True, False, False, True]),
               "no_image": flags([True, False, False, False, False, True, False, True])}
    subsets = {"ib": pd.Series(["IDS", "IDS", "IDS", "CDS", "CDS", "CDS", None, None],
                               index=INDEX, dtype=object),
               "lb": pd.Series(["longer", "shorter"] * 4, index=INDEX, dtype=object)}
    return correct, subsets


def test_table8_identity_holds_for_the_papers_printed_numbers():
    """Seed 003 Table 8: every row satisfies Acc = (1 - r) Acc_IDS + r Acc_CDS with one r
    (the CDS share, 32% in §4.2), within the rounding of one decimal (|error| <= 0.1),
    so its Acc is over D_IDS ∪ D_CDS; and IB = Acc_IDS - Acc_CDS."""
    rows = [  # Acc, Acc_IDS, Acc_CDS, IB (Base and + BIRCH per model)
        (66.5, 85.3, 26.3, 59.0), (75.8, 90.1, 45.3, 44.8),  # GPT-4o
        (66.9, 79.9, 39.3, 40.6), (73.4, 83.4, 52.0, 31.4),  # Gemini-2.5-Flash
        (65.3, 82.2, 29.3, 52.9), (75.1, 86.6, 50.7, 35.9),  # Llama-3.2-90B
        (65.4, 80.4, 33.3, 47.1), (71.2, 82.9, 46.2, 36.7),  # LLaVA-OV-1.5-8B
        (59.2, 68.6, 39.1, 29.5), (63.1, 71.9, 44.4, 27.5)]  # Phi-4-multimodal
    acc, ids, cds, ib = (np.array(c) for c in zip(*rows, strict=True))
    r = np.linalg.lstsq((cds - ids)[:, None], acc - ids, rcond=None)[0][0]
    assert 0.31 < r < 0.33
    assert np.abs((1 - r) * ids + r * cds - acc).max() <= 0.1
    assert np.abs(ids - cds - ib).max() <= 0.1 + 1e-9


def test_method_row_acc_is_over_the_ib_pairs_and_the_identity_is_exact():
    correct, subsets = hand_case()
    row = method_row("j", "base", correct["base"], subsets)
    # IDS: T T F -> 2/3; CDS: F F T -> 1/3; unlabelled pairs: T, NA
    assert row["acc_ids"] == pytest.approx(2 / 3) and row["acc_cds"] == pytest.approx(1 / 3)
    assert row["acc"] == pytest.approx(3 / 6)
    assert row["acc_all"] == pytest.approx(4 / 7)  # every pair with a verdict
    assert row["balanced"] == pytest.approx(0.5)
    r = row["n_cds"] / (row["n_ids"] + row["n_cds"])
    assert row["acc"] == pytest.approx((1 - r) * row["acc_ids"] + r * row["acc_cds"])
    assert row["ib"] == pytest.approx(1 / 3)


def test_balanced_accuracy_is_the_mean_of_the_two_subsets():
    correct, subsets = hand_case()
    ib = m.bias(correct["birch"], subsets["ib"])  # IDS 3/3, CDS 2/3
    assert m.balanced_accuracy(ib) == pytest.approx(5 / 6)
    empty = m.bias(correct["birch"], pd.Series(None, index=INDEX, dtype=object))
    assert math.isnan(m.balanced_accuracy(empty))


def test_table2_before_is_on_the_pairs_that_survived():
    correct, subsets = hand_case()
    kept = pd.Series(["IDS", "CDS"], index=["p0", "p3"], dtype=object)  # 2 survive
    after = pd.Series(pd.array([False, True], dtype="boolean"), index=["p0", "p3"])
    row = table2_row("j", correct["base"], after, subsets["ib"], kept)
    assert row["ib_before"] == pytest.approx(1.0 - 0.0)  # base on p0 (T) and p3 (F)
    assert row["ib_after"] == pytest.approx(0.0 - 1.0)
    assert row["change"] == pytest.approx(-2.0)
    assert (row["n_before"], row["n_after"]) == (2, 2)
    assert row["ib_before_all"] == pytest.approx(1 / 3) and row["n_before_all"] == 6


def test_correctness_table_columns_hold_each_pair_set():
    correct, subsets = hand_case()
    table = inference.correctness_table(correct, subsets, INDEX)
    ids = table["base", "IDS"]
    assert ids.tolist()[:3] == [1.0, 1.0, 0.0] and ids.iloc[3:].isna().all()
    assert table["base", "labelled"].notna().sum() == 6
    assert table["base", "all"].notna().sum() == 7  # p7's verdict is missing
    # IRS columns: only the pairs both variants answered (p7 is out for both)
    assert table["no_image", "irs_all"].notna().sum() == 7
    assert np.isnan(table.loc["p7", ("no_image", "irs_all")])


def test_bootstrap_estimates_equal_the_tables_and_an_all_right_column_is_certain():
    correct, subsets = hand_case()
    table = inference.correctness_table(correct, subsets, INDEX)
    out = inference.bootstrap_table(table, resamples=200, method="percentile", level=0.95,
                                    seed=0).set_index(["variant", "statistic", "versus"])
    row = method_row("j", "birch", correct["birch"], subsets)
    for statistic in ("acc", "acc_ids", "acc_cds", "ib", "lb", "balanced", "acc_all"):
        assert out.loc[("birch", statistic, ""), "estimate"] == pytest.approx(row[statistic])
    base = method_row("j", "base", correct["base"], subsets)
    gain = out.loc[("birch", "acc_cds", "base")]
    assert gain["estimate"] == pytest.approx(row["acc_cds"] - base["acc_cds"])
    irs = m.image_reliance(correct["base"], correct["no_image"])
    assert out.loc[("base", "irs", ""), "estimate"] == pytest.approx(irs.value)
    assert out.loc[("birch", "acc_cds", ""), "n_pairs"] == 3
    # 3 IDS pairs of 8: some resamples draw none, so Acc_IDS has no interval (NaN), never
    # one made up from the resamples that happened to have them
    sparse = out.loc[("birch", "acc_ids", "")]
    assert np.isnan(sparse["low"]) and np.isnan(sparse["high"])


def test_an_always_right_variant_has_a_certain_interval():
    index = pd.Index([f"q{i}" for i in range(40)])
    correct = {"base": pd.Series(pd.array([True] * 40, dtype="boolean"), index=index)}
    subsets = {"ib": pd.Series("IDS", index=index, dtype=object),
               "lb": pd.Series("longer", index=index, dtype=object)}
    table = inference.correctness_table(correct, subsets, index)
    out = inference.bootstrap_table(table, resamples=100, method="percentile", level=0.95,
                                    seed=0).set_index(["variant", "statistic"])
    certain = out.loc[("base", "acc_ids")]
    assert certain["low"] == certain["high"] == 1.0 and certain["se"] == 0.0
    assert ("base", "acc_cds") not in out.index  # no CDS pair: no estimand at all


def test_combine_keeps_nan_where_a_term_is_missing():
    matrix = np.array([[1.0, 1.0], [-1.0, 0.0], [0.0, 0.5]])
    means = np.array([[0.8, 0.3, np.nan], [0.8, 0.3, 0.4]])
    out = inference.combine(means, matrix)
    assert out[0, 0] == pytest.approx(0.5) and np.isnan(out[0, 1])
    assert out[1].tolist() == pytest.approx([0.5, 1.0])


def test_mcnemar_hand_values():
    # exact: 2 * P(Bin(6, 1/2) <= 1) = 2 * 7/64
    statistic, p_value, test = inference.mcnemar_p(1, 5)
    assert p_value == pytest.approx(14 / 64) and test == "exact binomial"
    # chi-square: (10 - 30)^2 / 40 = 10, 1 df
    statistic, p_value, test = inference.mcnemar_p(10, 30)
    assert statistic == pytest.approx(10.0) and test == "chi-square"
    assert p_value == pytest.approx(0.0015654, rel=1e-4)
    assert inference.mcnemar_p(0, 0) == (0.0, 1.0, "none")


def test_mcnemar_rows_count_the_discordant_pairs_on_shared_pairs():
    correct, subsets = hand_case()
    rows = pd.DataFrame(inference.mcnemar_rows("j", correct, subsets, INDEX))
    birch = rows[rows["variant"] == "birch"].set_index("pair_set")
    # labelled pairs both answered: p0..p5; base-only right: p5; birch-only: p2, p3, p4
    assert birch.loc["labelled", ["n_pairs", "base_only", "method_only"]].tolist() == [6, 1, 3]
    assert birch.loc["labelled", "gain"] == pytest.approx(2 / 6)
    assert birch.loc["CDS", ["base_only", "method_only"]].tolist() == [1, 2]
    blind = rows[rows["variant"] == "no_image"].set_index("pair_set")
    assert blind.loc["all", "n_pairs"] == 7  # p7: Base's verdict is missing
    assert blind.loc["all", ["base_only", "method_only"]].tolist() == [2, 0]


def test_with_fdr_is_benjamini_hochberg():
    tests = pd.DataFrame({"p_value": [0.01, 0.04, 0.03, 0.5]})
    out = inference.with_fdr(tests, 0.05)
    # sorted p 0.01, 0.03, 0.04, 0.5 -> q = min over later of p * 4 / rank
    assert out["q_value"].tolist() == pytest.approx([0.04, 0.16 / 3, 0.16 / 3, 0.5])
    assert out["significant"].tolist() == [True, False, False, False]


def test_judge_seed_does_not_depend_on_the_panel():
    assert inference.judge_seed(0, "lumen-large") == inference.judge_seed(0, "lumen-large")
    assert inference.judge_seed(0, "lumen-large") != inference.judge_seed(0, "lumen-mini")
