"""BIRCH's rows of the judge card (studies/birch/card.py) on small hand-made result
tables, written into tmp_path with the study's own functions and schemas: every number is
copied from the study's tables with its interval and test, IB and LB keep no test, the
verdicts map onto judgebias.stats.position by the slot shown, and one order says so."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.proportion import test_proportions_2indep as score_test

from judgebias.card.build import _checked
from judgebias.card.schema import KEY, ROW_FIELDS
from judgebias.io.artifacts import write_frame, write_table
from judgebias.studies.birch import card
from judgebias.studies.birch.measures import inference
from judgebias.studies.birch.measures.results import ROW_COLUMNS, bias_rows
from judgebias.studies.birch.params import Downsampling
from judgebias.studies.birch.tables import PAIRS, VERDICTS, pairs_path, table_path, verdicts_path

INDEX = pd.Index([f"p{i}" for i in range(8)])
PREFERENCE = ["A", "B", "A", "B", "A", "B", "tie", "A"]
SUBSETS = {"ib": pd.Series(["IDS", "IDS", "IDS", "CDS", "CDS", "CDS", None, None],
                           index=INDEX, dtype=object),
           "lb": pd.Series(["longer", "shorter"] * 4, index=INDEX, dtype=object)}
CORRECT = {"base": [True, True, False, False, False, True, None, True],
           "birch": [True, True, True, True, True, False, None, True],
           "no_image": [True, False, False, False, False, True, None, False]}


def params(swap: bool = False, fmt: str = "synthetic", order_seed: int | None = 0,
           judges: tuple[str, ...] = ("j1",)) -> dict:
    dataset = {"format": fmt} | ({} if fmt == "synthetic" else {"order_seed": order_seed})
    return {"panel": {j: {"backend": "sim"} for j in (*judges, "unjudged")},
            "birch": {"models": list(judges), "swap_order": swap,
                      "datasets": {"ds": dataset},
                      "inference": {"resamples": 200, "level": 0.95, "seed": 0,
                                    "interval": "percentile", "alpha": 0.05}}}


def verdict_rows(judge: str, variant: str, picks: dict[str, list[str | None]]
                 ) -> pd.DataFrame:
    """A VERDICTS table: `picks` order -> the pair's A / B chosen per pair (or None)."""
    frames = []
    for order, chosen in picks.items():
        frames.append(pd.DataFrame({
            "pair_id": list(INDEX), "judge": judge, "variant": variant, "order": order,
            "verdict": chosen, "value": np.nan, "label": None, "expected": np.nan,
            "mass": np.nan, "probs": "", "logprobs_available": False, "model_id": "sim/x",
            "revision": "1", "backend": "sim", "prompt_id": "p", "sampling": "{}",
            "request_key": None,
            "status": ["ok" if c is not None else "failed" for c in chosen],
            "error": "", "raw_text": "", "logprobs": "", "finish_reason": ""}))
    return pd.concat(frames, ignore_index=True)


def correct_picks(correct: list[bool | None]) -> list[str | None]:
    """The pair side a judge picks to be right / wrong as `correct` says (tie pair: A)."""
    out: list[str | None] = []
    for pref, right in zip(PREFERENCE, correct, strict=True):
        if pref == "tie":
            out.append("A")
        else:
            out.append(pref if right else {"A": "B", "B": "A"}[pref])
    return out


def write_study(root, p: dict, verdicts: dict[str, pd.DataFrame]) -> dict:
    """The analysis' intervals, tests and bias tables of the hand case (measures'
    own functions), the pairs and the Base verdicts, at the study's paths under `root`."""
    correct = {v: pd.Series(pd.array(c, dtype="boolean"), index=INDEX)
               for v, c in CORRECT.items()}
    intervals, tests, bias = [], [], []
    for judge in p["birch"]["models"]:
        table = inference.correctness_table(correct, SUBSETS, INDEX)
        intervals.append(inference.bootstrap_table(table, resamples=200,
                                                   method="percentile", level=0.95,
                                                   seed=0).assign(judge=judge))
        tests += inference.mcnemar_rows(judge, correct, SUBSETS, INDEX)
        rows, _ = bias_rows(judge, "base", correct["base"], SUBSETS,
                            Downsampling(ratios=(1.0,), draws=2, cds_ratios=(0.5,), seed=0))
        bias += rows
    write_frame(pd.concat(intervals, ignore_index=True)
                .reindex(columns=ROW_COLUMNS["intervals"]), root / table_path("ds", "intervals"))
    write_frame(inference.with_fdr(pd.DataFrame(tests), 0.05),
                root / table_path("ds", "tests"))
    write_frame(pd.DataFrame(bias).reindex(columns=ROW_COLUMNS["bias"]),
                root / table_path("ds", "bias"))
    pairs = pd.DataFrame({
        "pair_id": list(INDEX), "source": "synthetic", "domain": "color", "query": "q",
        "image": "i.png", "image_sha256": "sha-i", "answer_a": "a", "answer_b": "b",
        "preference": PREFERENCE,
        "file_order": "ab", "overridden": False, "model_a": None, "model_b": None,
        "correct_a": None, "correct_b": None, "details_a": None, "details_b": None,
        "padding_a": None, "padding_b": None, "scene": None})
    write_table(pairs, root / pairs_path("ds"), PAIRS)
    for judge, frame in verdicts.items():
        write_table(frame, root / verdicts_path("ds", judge, "base"), VERDICTS)
    return {name: root / path for name, path in card.inputs(p).items()}


def one_order(judge: str = "j1") -> pd.DataFrame:
    return verdict_rows(judge, "base", {"ab": correct_picks(CORRECT["base"])})


def test_inputs_name_every_table_pairs_and_base_verdicts_from_tables():
    p = params(judges=("j1", "j2"))
    assert card.inputs(p) == {
        "ds.intervals": table_path("ds", "intervals"), "ds.tests": table_path("ds", "tests"),
        "ds.bias": table_path("ds", "bias"), "ds.pairs": pairs_path("ds"),
        "ds.verdicts.j1": verdicts_path("ds", "j1", "base"),
        "ds.verdicts.j2": verdicts_path("ds", "j2", "base")}


def test_rows_copy_the_studys_numbers_intervals_and_tests(tmp_path):
    p = params(judges=("j1", "j2"))
    files = write_study(tmp_path, p, {"j1": one_order("j1"), "j2": one_order("j2")})
    rows = card.rows(p, files)
    assert list(rows.columns) == [f.name for f in ROW_FIELDS]
    checked = _checked(rows, "birch", {"j1", "j2"})  # the card builder's own checks
    assert not checked.duplicated(KEY).any() and set(rows["model"]) == {"j1", "j2"}
    assert (rows["setting"] == "ds").all() and (rows["study"] == "birch").all()
    one = rows[rows["model"] == "j1"].set_index("measure")
    intervals = pd.read_parquet(files["ds.intervals"]).query("judge == 'j1'")
    tests = pd.read_parquet(files["ds.tests"]).query("judge == 'j1'")
    for measure, (variant, statistic, versus) in {
            "accuracy": ("base", "acc", ""), "irs": ("base", "irs", ""),
            "ib": ("base", "ib", ""), "lb": ("base", "lb", ""),
            "balanced_accuracy": ("base", "balanced", ""),
            "birch_gain": ("birch", "acc", "base")}.items():
        source = intervals[(intervals["variant"] == variant)
                           & (intervals["statistic"] == statistic)
                           & (intervals["versus"] == versus)].iloc[0]
        row = one.loc[measure]
        assert np.array_equal(
            np.array([row["estimate"], row["ci_low"], row["ci_high"], row["n"]], float),
            np.array([source["estimate"], source["low"], source["high"],
                      source["n_pairs"]], float), equal_nan=True), measure
        assert row["interval"].startswith("percentile paired bootstrap 95%")
        assert row["source"] == str(files["ds.intervals"])
    # hand values: base IDS T T F, CDS F F T -> IB 2/3 - 1/3; BIRCH on the 6 labelled
    # pairs 5/6 vs Base 3/6
    assert one.loc["ib", "estimate"] == pytest.approx(1 / 3)
    assert one.loc["birch_gain", "estimate"] == pytest.approx(2 / 6)
    mcnemar = tests.set_index(["variant", "pair_set"])
    assert one.loc["irs", "p_value"] == mcnemar.loc[("no_image", "all"), "p_value"]
    assert one.loc["birch_gain", "p_value"] == mcnemar.loc[("birch", "labelled"), "p_value"]
    assert one.loc["irs", "test"].startswith("McNemar no_image vs Base")
    # accuracy levels: no test; IB, LB: the two-proportion score test on bias.parquet's
    # counts (2 of 3 right vs 1 of 3: statsmodels' score test by hand), with the spread
    for measure in ("accuracy", "balanced_accuracy"):
        assert math.isnan(one.loc[measure, "p_value"]) and one.loc[measure, "test"] == ""
        assert "no test" in one.loc[measure, "note"]
    expected = score_test(2, 3, 1, 3, method="score", compare="diff").pvalue
    assert one.loc["ib", "p_value"] == pytest.approx(expected)
    assert one.loc["ib", "test"] == "two-proportion score test (disjoint pair sets)"
    assert "IB test: 2 of 3 right vs 1 of 3" in one.loc["ib", "note"]
    assert "down-sampling" in one.loc["ib", "note"] and "not an interval" in one.loc[
        "ib", "note"]
    assert one.loc["ib", "reading"].startswith("prefers the more informative answer")
    assert one.loc["birch_gain", "recommendation"].startswith(
        "BIRCH's truthful anchor: +33.3 accuracy points [")
    assert one.loc["accuracy", "chance"] == 0.5 and one.loc["ib", "null_value"] == 0.0
    assert set(one.index[one["headline"]]) == {"ib", "irs", "first_slot_rate"}


def test_a_variant_not_run_leaves_its_measure_without_a_number_and_says_why(tmp_path):
    p = params()
    files = write_study(tmp_path, p, {"j1": one_order()})
    intervals = pd.read_parquet(files["ds.intervals"])
    write_frame(intervals[intervals["variant"] != "birch"], files["ds.intervals"])
    one = card.rows(p, files).set_index("measure")
    assert math.isnan(one.loc["birch_gain", "estimate"])
    assert "not measured" in one.loc["birch_gain", "note"]
    assert one.loc["birch_gain", "recommendation"] == ""


def test_one_order_gives_the_one_order_measures_and_says_pc_pf_need_both(tmp_path):
    p = params()
    one = card.rows(p, write_study(tmp_path, p, {"j1": one_order()})).set_index("measure")
    for measure in ("pc", "pf", "rs"):
        assert math.isnan(one.loc[measure, "estimate"]), measure
    assert "one order only" in one.loc["pc", "note"]
    assert "swap_order false" in one.loc["pf", "note"]
    assert "at least 2 repeats" in one.loc["rs", "note"]
    # picks (order ab = slots): A B B A B B A A on pairs p0..p7 -> 4 of 8 first
    assert one.loc["first_slot_rate", "estimate"] == pytest.approx(4 / 8)
    assert one.loc["first_slot_rate", "test"] == "exact binomial vs 0.5"
    assert np.isfinite(one.loc["first_slot_rate", "p_value"])  # synthetic: randomised
    # gold in slot A: p0 p2 p4 p7 (right: p0 p7); in B: p1 p3 p5 (right: p1 p5); p6 a tie
    assert one.loc["gold_slot_gap", "estimate"] == pytest.approx(2 / 4 - 2 / 3)
    assert one.loc["gold_slot_gap", "n"] == 7


def test_one_order_of_a_file_kept_in_its_own_order_is_not_identifiable(tmp_path):
    p = params(fmt="mllm_judge", order_seed=None)
    one = card.rows(p, write_study(tmp_path, p, {"j1": one_order()})).set_index("measure")
    for measure in ("first_slot_rate", "gold_slot_gap"):
        assert math.isnan(one.loc[measure, "p_value"]) and one.loc[measure, "test"] == ""
        assert "not identifiable" in one.loc[measure, "note"]
    assert "order_seed null" in one.loc["pc", "note"]
    assert card.randomised({"format": "vl_rewardbench", "order_seed": 3})[0]


def test_both_orders_map_verdicts_to_the_slot_shown(tmp_path):
    """A judge that always picks whatever is shown first: BIRCH stores the pair's A in
    order ab and the pair's B in order ba, both slot A: every pair primacy, PF = -1."""
    p = params(swap=True)
    first = verdict_rows("j1", "base", {"ab": ["A"] * 8, "ba": ["B"] * 8})
    one = card.rows(p, write_study(tmp_path, p, {"j1": first})).set_index("measure")
    assert one.loc["pf", "estimate"] == -1.0 and one.loc["pc", "estimate"] == 0.0
    assert one.loc["pf", "p_value"] < 0.01 and one.loc["pf", "headline"]
    assert one.loc["pf", "reading"].startswith("prefers the answer shown first, PF -1")
    assert one.loc["first_slot_rate", "estimate"] == 1.0
    assert "both orders" in one.loc["pf", "note"]
    assert "gold_slot_gap" not in one.index


def test_position_verdicts_flip_order_ba_and_keep_ties_and_failures():
    verdicts = pd.DataFrame({"pair_id": ["p0", "p0", "p1", "p1", "p6"],
                             "order": ["ab", "ba", "ab", "ba", "ba"],
                             "verdict": ["A", "A", "tie", None, "B"]})
    preference = pd.Series(PREFERENCE, index=INDEX)
    out = card.position_verdicts(verdicts, preference)
    out = out.astype(object).where(out.notna(), None)
    assert out["slot"].tolist() == ["A", "B", "tie", None, "A"]
    # gold: p0 prefers A (shown first in ab, second in ba); p6 is a human tie
    assert out["gold"].tolist() == ["A", "B", "B", "A", None]
    assert out["item"].tolist() == verdicts["pair_id"].tolist()
