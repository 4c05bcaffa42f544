"""MMB's rows of the judge card (studies/mmb/card.py) on small hand-made tables written
with the study's own code and schemas: the calibration numbers are copied from the report
cell, the position-bias measures are judgebias.stats.position's on the mapped judgements (one
order and both), and a judge left out by its factorial keeps rows that say why."""

from __future__ import annotations

import copy
import math

import numpy as np
import pandas as pd
import pytest
from helpers.mmb import random_split

from judgebias.card.build import _checked, adjust
from judgebias.card.schema import ROW_FIELDS
from judgebias.config import validate_params
from judgebias.io.artifacts import write_table
from judgebias.stats.position import position_bias, wilson
from judgebias.studies.mmb import card
from judgebias.studies.mmb.measures.comparison import judge_comparisons, verdicts
from judgebias.studies.mmb.measures.factorial import Design
from judgebias.studies.mmb.measures.significance import compare_to_best
from judgebias.studies.mmb.tables import JUDGEMENTS, PAIRS

JUDGE, LEFT_OUT = "corvid-pro", "corvid-flash"
CELL = (10, 20)
UNITS = [(t, s) for t in range(2) for s in range(3)]
ECE = {"STD": 0.18, "AVG": 0.12, "BEST": 0.13, "BPE": 0.07, "MMB": 0.09}  # BPE best here
MCE = {"STD": 0.50, "AVG": 0.20, "BEST": 0.30, "BPE": 0.25, "MMB": 0.22}
CONFIDENCE = {"STD": 0.81, "AVG": 0.69, "BEST": 0.86, "BPE": 0.79, "MMB": 0.74}
COMPARISONS = [  # MMB - AVG helps (tested), MMB - BPE does not
    {"comparison": "MMB - AVG", "brier_mmb": 0.15, "brier_baseline": 0.17,
     "difference": -0.02, "low": -0.03, "high": -0.01, "p_value": 0.004,
     "p_sign_flip": 0.005, "n_groups": 30, "ece_mmb": 0.09, "ece_baseline": 0.12,
     "ece_difference": -0.03, "ece_low": -0.05, "ece_high": 0.01, "n_runs": 6,
     "n_pairs": 300},
    {"comparison": "MMB - BPE", "brier_mmb": 0.15, "brier_baseline": 0.149,
     "difference": 0.001, "low": -0.004, "high": 0.006, "p_value": 0.6,
     "p_sign_flip": 0.61, "n_groups": 30, "ece_mmb": 0.09, "ece_baseline": 0.07,
     "ece_difference": 0.02, "ece_low": 0.0, "ece_high": 0.04, "n_runs": 6,
     "n_pairs": 300}]


def _params(default_params: dict, order: str) -> dict:
    params = copy.deepcopy(default_params)
    params["panel"][LEFT_OUT]["sim"]["mmb"] = copy.deepcopy(
        params["panel"][JUDGE]["sim"]["mmb"])
    params["mmb"].update(models=[JUDGE, LEFT_OUT], order=order)
    params["mmb"]["report"].update(n_prompts=CELL[0], n_val=CELL[1], n_boot=200)
    return validate_params(params)


def _significance(means: dict[str, float], metric: str, table: str) -> pd.DataFrame:
    """A Table 2 / 4 block as the study writes it (compare_to_best), at the report cell and
    at another cell with other numbers, for JUDGE only (LEFT_OUT has no factorial)."""
    runs = pd.DataFrame([{"n_prompts": n_prompts, "n_val": n_val, "train_seed": t,
                          "sampling_seed": s, "method": method,
                          metric: value + shift + 0.001 * (t + s)}
                         for (n_prompts, n_val), shift in ((CELL, 0.0), ((5, 5), 0.1))
                         for t, s in UNITS for method, value in means.items()])
    out = compare_to_best(runs, metric=metric, higher_is_better=False,
                          cell=["n_prompts", "n_val"], method="method",
                          unit=["train_seed", "sampling_seed"], n_resamples=200)
    return out.assign(metric=metric, table=table, judge=JUDGE)


def _judgements(rows: list[tuple[str, str, str, float | None]], judge: str) -> pd.DataFrame:
    """JUDGEMENTS rows from (pair, instruction, order, p_a); None: a failed answer."""
    return pd.DataFrame([{
        "pair_id": pair, "instruction": instruction, "judge": judge, "order": order,
        "sample": 0, "p_a": p_a, "p_source": "none" if p_a is None else "logprobs", "value": None,
        "label": None, "expected": None, "mass": None, "probs": "",
        "logprobs_available": p_a is not None, "model_id": f"sim/{judge}", "revision": "1",
        "backend": "sim", "prompt_id": "mmb_pairwise", "sampling": "{}",
        "request_key": None, "status": "failed" if p_a is None else "ok", "error": "",
        "raw_text": "", "logprobs": "", "finish_reason": ""}
        for pair, instruction, order, p_a in rows])


def _pairs(preferences: dict[str, float]) -> pd.DataFrame:
    return pd.DataFrame([{"pair_id": pair, "group": "g", "prompt": "p", "image_a": "a.png",
                          "image_b": "b.png", "preference": preference, "split": "test",
                          "fold": None, "source": "synthetic", "style_a": None,
                          "style_b": None, "image_a_sha256": "sha-a",
                          "image_b_sha256": "sha-b"} for pair, preference in preferences.items()])


def _write(tmp_path, params: dict, judged: dict[str, pd.DataFrame],
           preferences: dict[str, float]) -> dict:
    files = {name: tmp_path / path for name, path in card.inputs(params).items()}
    for path in files.values():
        path.parent.mkdir(parents=True, exist_ok=True)
    pd.concat([_significance(ECE, "ece", "table2"), _significance(MCE, "mce", "table2")],
              ignore_index=True).to_parquet(files["table2"])
    _significance(CONFIDENCE, "confidence", "table4").to_parquet(files["table4"])
    verdicts(pd.DataFrame(COMPARISONS).assign(judge=JUDGE), 0.05).to_parquet(
        files["comparisons"])
    write_table(_pairs(preferences), files["pairs"], PAIRS)
    for judge, frame in judged.items():
        write_table(frame, files[f"judgements.{judge}"], JUDGEMENTS)
    return files


# One order: pair p1 (A preferred) and p2 (B preferred) under instructions i1-i3, and a
# no-preference pair p3. p(first shown) = p_a for "ab", 1 - p_a for "ba".
ONE_ORDER = [("p1", "i1", "ab", 0.8), ("p1", "i2", "ba", 0.7), ("p1", "i3", "ab", 0.5),
             ("p2", "i1", "ba", 0.4), ("p2", "i2", "ab", 0.3), ("p2", "i3", "ab", None),
             ("p3", "i1", "ab", 0.9), ("p3", "i2", "ba", 0.1), ("p3", "i3", "ba", 0.2)]
PREFERENCES = {"p1": 1.0, "p2": 0.0, "p3": 0.5}


def _values(column: pd.Series) -> list:
    return [None if pd.isna(value) else value for value in column]


def test_judgements_map_onto_position_verdicts():
    frame = _judgements(ONE_ORDER, JUDGE)
    mapped = card.verdicts(frame, _pairs(PREFERENCES))
    assert list(mapped["item"][:2]) == ["p1|i1", "p1|i2"]
    assert list(mapped["order"]) == [o for _, _, o, _ in ONE_ORDER]
    # first shown preferred where p(first) > 0.5: .8 A; 1-.7 B; .5 tie; 1-.4 A; .3 B;
    # failed; .9 A; 1-.1 A; 1-.2 A
    assert _values(mapped["slot"]) == ["A", "B", "tie", "A", "B", None, "A", "A", "A"]
    # the preferred image's slot: p1 (A) shown ab -> A, ba -> B; p2 (B) the reverse
    assert _values(mapped["gold"]) == ["A", "B", "A", "A", "B", "B", None, None, None]


def test_rows_copy_the_study_numbers_at_the_report_cell(default_params, tmp_path):
    params = _params(default_params, "random")
    judged = {JUDGE: _judgements(ONE_ORDER, JUDGE),
              LEFT_OUT: _judgements([(p, i, o, None) for p, i, o, _ in ONE_ORDER],
                                    LEFT_OUT)}
    rows = card.rows(params, _write(tmp_path, params, judged, PREFERENCES))
    assert list(rows.columns) == [f.name for f in ROW_FIELDS]
    checked = _checked(rows, "mmb", {JUDGE, LEFT_OUT})  # what card-build checks
    assert set(checked["model"]) == {JUDGE, LEFT_OUT}
    mine = rows[rows["model"] == JUDGE].set_index("measure")
    assert mine["headline"].sum() <= 3

    mean = 0.001 * np.mean([t + s for t, s in UNITS])  # the report cell, not (5, 5)
    for key, method in (("std", "STD"), ("avg", "AVG"), ("best", "BPE")):
        assert mine.loc[f"ece_{key}", "estimate"] == pytest.approx(ECE[method] + mean)
        assert mine.loc[f"mce_{key}", "estimate"] == pytest.approx(MCE[method] + mean)
        assert mine.loc[f"ece_{key}", "n"] == len(UNITS)
    assert "BPE (ECE" in mine.loc["ece_best", "note"]
    levels = mine.loc[["ece_std", "ece_avg", "ece_best", "mce_std", "nopref_confidence_std"]]
    assert levels["p_value"].isna().all() and levels["ci_low"].isna().all()
    assert (levels["test"] == "").all() and levels["note"].str.contains("no ").all()
    assert mine.loc["nopref_confidence_std", "estimate"] == pytest.approx(
        CONFIDENCE["STD"] + mean)
    assert mine.loc["nopref_confidence_best", "estimate"] == pytest.approx(
        CONFIDENCE["BPE"] + mean)

    helps, not_better = mine.loc["mmb_vs_avg_brier"], mine.loc["mmb_vs_bpe_brier"]
    assert (helps["estimate"], helps["ci_low"], helps["ci_high"], helps["p_value"],
            helps["n"]) == (-0.02, -0.03, -0.01, 0.004, 30)
    assert helps["recommendation"] == ("MMB weights (K = 8) lower its Brier score by 0.02 "
                                       "[0.01, 0.03] vs AVG")
    assert not_better["recommendation"] == "" and not_better["p_value"] == 0.6
    ece = mine.loc["mmb_vs_avg_ece"]
    assert (ece["estimate"], ece["ci_low"], ece["ci_high"]) == (-0.03, -0.05, 0.01)
    assert math.isnan(ece["p_value"]) and "not tested" in ece["note"]

    # position: judgebias.stats.position on the mapped verdicts, one order, randomised
    expected = position_bias(card.verdicts(judged[JUDGE], _pairs(PREFERENCES)),
                             randomised=True, n_resamples=200).set_index("measure")
    first = mine.loc["first_slot_rate"]
    assert (first["estimate"], first["n"]) == (5 / 7, 7)  # 5 A of 7 non-tie verdicts
    assert first["p_value"] == pytest.approx(expected.loc["first_slot_rate", "p_value"])
    assert first["headline"] and first["null_value"] == 0.5
    assert mine.loc["gold_slot_gap", "estimate"] == pytest.approx(
        expected.loc["gold_slot_gap", "estimate"])
    for measure in ("pc", "pf"):
        assert math.isnan(mine.loc[measure, "estimate"])
        assert "one order only" in mine.loc[measure, "note"]
    assert "not identifiable" in mine.loc["rs", "note"]

    left = rows[rows["model"] == LEFT_OUT].set_index("measure")
    assert left.loc["ece_std", "note"].startswith("no Table 2 row")
    assert math.isnan(left.loc["mmb_vs_avg_brier", "estimate"])
    assert left.loc["extraction_rate", "estimate"] == 0.0
    card_rows = adjust(checked)
    assert not card_rows.loc[card_rows["model"] == LEFT_OUT, "significant"].any()


def test_both_orders_give_pc_and_pf(default_params, tmp_path):
    """The spec's worked example (specs/judge-card.md §1): 10 pairs AB x4, BA x2, CC,
    AA x2, BC give PC 0.70 (Wilson 0.40-0.89) and PF -0.10."""
    codes = ["AB"] * 4 + ["BA"] * 2 + ["CC"] + ["AA"] * 2 + ["BC"]
    shown = {"ab": {"A": 0.8, "B": 0.2, "C": 0.5}, "ba": {"A": 0.2, "B": 0.8, "C": 0.5}}
    answers = [(f"p{n}", "i1", order, shown[order][letter]) for n, code in enumerate(codes)
               for order, letter in zip(("ab", "ba"), code, strict=True)]
    params = _params(default_params, "both")
    judged = {JUDGE: _judgements(answers, JUDGE), LEFT_OUT: _judgements(answers, LEFT_OUT)}
    rows = card.rows(params, _write(tmp_path, params, judged,
                                    {f"p{n}": 1.0 for n in range(len(codes))}))
    mine = rows[rows["model"] == JUDGE].set_index("measure")
    pc, pf = mine.loc["pc"], mine.loc["pf"]
    assert pc["estimate"] == pytest.approx(0.7) and pc["n"] == 10
    assert (pc["ci_low"], pc["ci_high"]) == pytest.approx(wilson(7, 10))
    assert round(pc["ci_low"], 2) == 0.40 and round(pc["ci_high"], 2) == 0.89
    assert pf["estimate"] == pytest.approx(-0.1) and pf["headline"]
    assert pf["test"].startswith("exact binomial") and 0 < pf["p_value"] <= 1
    assert pf["reading"].startswith("prefers the first-shown image, PF -0.1")
    assert "consistent 7, primacy 2, recency 1, unparsed 0" in pf["note"]
    assert not mine.loc["first_slot_rate", "headline"]
    assert mine.loc["first_slot_rate", "reading"] == ""  # PF says it
    assert "gold_slot_gap" not in mine.index
    assert mine["headline"].sum() == 3


def test_the_comparison_columns_card_reads_are_the_study_s():
    """card.py reads these columns of results/mmb/comparisons: judge_comparisons and
    verdicts write them."""
    split = random_split(np.random.default_rng(0))
    design = Design(n_prompts=[4], n_val=[12], train_seeds=[0], sampling_seeds=[0, 1])
    groups = np.arange(len(split.y_test)) % 8
    table = verdicts(judge_comparisons(split, design, groups, n_prompts=4, n_val=12, k=3,
                                       n_boot=100, seed=0), 0.05)
    assert set(pd.DataFrame(COMPARISONS).columns) | {"p_adjusted", "verdict"} == set(
        table.columns)
