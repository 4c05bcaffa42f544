"""FRAME's rows of the judge card (judgebias.studies.frame.card) on small hand-made result
tables, written with the study's own schemas: which numbers each row copies, the
slot mapping of the pairwise verdicts, the mitigation and win-rate comparisons by hand,
and rows only for the judges FRAME judged. The default panel's card is checked end to end
in test_frame_pipeline.py."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from judgebias.card.build import adjust, study_rows
from judgebias.card.schema import CARD, ROW_FIELDS
from judgebias.io.artifacts import write_frame, write_table
from judgebias.studies.frame import card
from judgebias.studies.frame.measures.effects import CROSS_FITTED_COLUMNS
from judgebias.studies.frame.tables import PAIRWISE, SCORES, result_path, scores_path

JUDGES = ["fooled", "steady"]
ANALYST = "fooled"
MANIPULATIONS = {"brightness": [1.1, 1.5], "padding": [10, 40], "beauty_filter": ["smoothing"]}


def _params() -> dict:
    return {"panel": {j: {"backend": "sim"} for j in [*JUDGES, "unjudged"]},
            "frame": {"models": list(JUDGES), "analysis_judge": ANALYST,
                      "manipulations": MANIPULATIONS,
                      "mitigation": ["bias_aware", "bias_definition"],
                      "pairwise": {"manipulation": "instruction_overlay"},
                      "analysis": {"n_permutations": 200, "seed": 0, "alpha": 0.05}}}


def _filled(rows: list[dict], schema: pa.Schema) -> pd.DataFrame:
    """`rows` with every other column of `schema` at a neutral value."""
    blank = {pa.string(): "", pa.float64(): math.nan, pa.bool_(): False, pa.int64(): 0}
    frame = pd.DataFrame(rows)
    for field in schema:
        if field.name not in frame:
            frame[field.name] = "ok" if field.name == "status" else blank[field.type]
    return frame


def _cell(judge, domain, manipulation, gain, low, high, q, n=12, original=2.0,
          settings="1.5|1.5", p=0.01):
    row = dict.fromkeys(CROSS_FITTED_COLUMNS, math.nan)
    return row | {
        "judge": judge, "prompt": "standard", "domain": domain, "manipulation": manipulation,
        "n": n, "n_settings": 2, "original_mean": original, "in_sample_setting": "1.5",
        "in_sample_gain": gain + 0.02, "in_sample_percent": (gain + 0.02) / original * 100,
        "in_sample_p": q / 2, "in_sample_q": q, "cross_fitted_settings": settings,
        "cross_fitted_gain": gain, "cross_fitted_percent": gain / original * 100,
        "ci_low": low, "ci_high": high, "ci_low_percent": low / original * 100,
        "ci_high_percent": high / original * 100, "p_value": p,
        "best_low_percent": 1.0, "best_high_percent": 9.0}


CELLS = [
    _cell("fooled", "people", "brightness", 0.20, 0.10, 0.30, 0.001),
    _cell("fooled", "animal", "brightness", 0.05, -0.05, 0.15, 0.20),
    _cell("fooled", "people", "padding", 0.30, 0.20, 0.40, 0.004, settings="40|25"),
    _cell("steady", "people", "brightness", 0.01, -0.09, 0.11, 0.90),
    _cell("steady", "people", "padding", -0.02, -0.12, 0.08, 0.95),
    _cell("unjudged", "people", "padding", 0.90, 0.80, 1.00, 0.001),  # not in frame.models
]


def _score(judge, prompt, item, recipe, score, domain="people", named=""):
    manipulation, _, setting = recipe.partition(":")
    return {"item_id": item, "domain": domain, "judge": judge, "prompt": prompt,
            "recipe": recipe, "manipulation": manipulation, "setting": setting,
            "n_steps": int(recipe != "original"), "named": named, "score": score}


ITEMS = [f"p{i}" for i in range(6)]


def _scores() -> tuple[list[dict], list[dict]]:
    """Standard and follow-up scores of the analysis judge: under the standard prompt the
    best recipes gain 0.4 (brightness) and 0.2 (padding), under bias-definition 0.1 and 0.1,
    under bias-aware as much as under the standard prompt. Per item the difference in
    differences is then (-0.3 - 0.1) / 2 = -0.2 (bias-definition) and 0 (bias-aware). An
    Outdoor item, a beauty-filter image and a setting that is not the best recipe must not
    count."""
    standard, followup = [], []
    for k, item in enumerate(ITEMS):
        base = 1.0 + 0.1 * k
        standard += [_score(ANALYST, "standard", item, "original", base),
                     _score(ANALYST, "standard", item, "brightness:1.5", base + 0.4),
                     _score(ANALYST, "standard", item, "brightness:1.1", base + 3.0),  # not best
                     _score(ANALYST, "standard", item, "padding:40", base + 0.2),
                     _score(ANALYST, "standard", item, "beauty_filter:smoothing", base + 2)]
        followup += [_score(ANALYST, "bias_aware", item, "original", base + 0.5),
                     _score(ANALYST, "bias_aware", item, "brightness:1.5", base + 0.9),
                     _score(ANALYST, "bias_aware", item, "padding:40", base + 0.7)]
        for named, gain in (("brightness", 0.1), ("padding", 0.1)):
            recipe = "brightness:1.5" if named == "brightness" else "padding:40"
            followup += [_score(ANALYST, "bias_definition", item, "original", base, named=named),
                         _score(ANALYST, "bias_definition", item, recipe, base + gain,
                                named=named)]
        followup.append(_score(ANALYST, "bias_definition", item, "beauty_filter:smoothing",
                               base + 3, named="beauty_filter"))
    standard += [_score(ANALYST, "standard", "o1", "original", 1.0, domain="outdoor"),
                 _score(ANALYST, "standard", "o1", "padding:40", 1.0, domain="outdoor")]
    followup += [_score(ANALYST, "bias_definition", "o1", "original", 1.0, "outdoor",
                        "padding"),
                 _score(ANALYST, "bias_definition", "o1", "padding:40", 5.0, "outdoor",
                        "padding")]
    return standard, followup


def _pairwise() -> list[dict]:
    """The analysis judge picks whatever is shown first on the originals (so `verdict`,
    which names the set, is A in order ab and B in order ba), and set A once manipulated."""
    rows = []
    for item in ITEMS:
        for order in ("ab", "ba"):
            rows.append({"condition": "original", "order": order,
                         "verdict": "A" if order == "ab" else "B", "item_id": item})
            rows.append({"condition": "manipulated", "order": order, "verdict": "A",
                         "item_id": item})
    return [r | {"domain": "people", "judge": ANALYST, "recipe": "original"} for r in rows]


def _write(root: Path, params: dict) -> dict[str, Path]:
    """Every input of card.inputs under `root`, by hand."""
    files = {name: root / path for name, path in card.inputs(params).items()}
    write_frame(pd.DataFrame(CELLS), files["table3_cross_fitted"])
    write_frame(pd.DataFrame([
        {"judge": j, "cells": 34, "successes": s, "success_rate": 100 * s / 34,
         "chance_rate": c, "mean_gain": 5.0, "cells_missing": 0, "reading": r}
        for j, r, s, c in [("fooled", "in_sample", 30, 80.0), ("fooled", "cross_fitted", 25, 45.0),
                           ("steady", "in_sample", 26, 81.0), ("steady", "cross_fitted", 12, 47.0)]
    ]), files["attack_success"])
    write_frame(pd.DataFrame([
        {"judge": j, "n": 60, "pearson": 0.6, "spearman": 0.55, "kendall": k,
         "kendall_low": low, "kendall_high": high,
         "slope_on_human": 0.3, "slope_on_human_se": 0.05, "n_alignment": 60,
         "slope_on_alignment": 2.0, "slope_on_alignment_se": 0.2}
        for j, k, low, high in [("fooled", 0.45, 0.3, 0.6), ("steady", 0.5, np.nan, np.nan)]
    ]), files["human_correlation"])
    standard, followup = _scores()
    for name, path in files.items():
        if name.startswith("standard_"):
            kind = name.removeprefix("standard_")
            mine = [r for r in standard if r["manipulation"] in (kind, "original")
                    and (kind == "original") == (r["recipe"] == "original")]
            write_table(_filled(mine, SCORES), path, SCORES)
    write_table(_filled(followup, SCORES), files["mitigation"], SCORES)
    write_table(_filled(_pairwise(), PAIRWISE), files["pairwise"], PAIRWISE)
    return files


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    params = _params()
    files = _write(tmp_path_factory.mktemp("frame_card"), params)
    return params, files, card.rows(params, files).set_index(["model", "measure", "setting"])


def test_inputs_come_from_the_study_tables():
    params = _params()
    named = card.inputs(params)
    assert named["table3_cross_fitted"] == result_path("table3_cross_fitted")
    assert named["standard_original"] == scores_path(ANALYST, "original")
    assert named["standard_padding"] == scores_path(ANALYST, "padding")
    assert "standard_beauty_filter" not in named  # Table 5 leaves the beauty filter out
    with pytest.raises(ValueError, match="not a FRAME results table"):
        result_path("judges")


def test_rows_have_the_card_columns_and_only_judged_models(built):
    params, files, rows = built
    assert list(card.rows(params, files).columns) == [f.name for f in ROW_FIELDS]
    assert set(rows.index.get_level_values("model")) == set(JUDGES)  # not "unjudged"
    steady = rows.loc["steady"]
    assert set(steady.index.get_level_values("measure")) == {
        "inflated_cells", "max_gain", "attack_success", "human_kendall"}  # no follow-ups
    heads = rows[rows["headline"]].reset_index()
    assert set(heads["measure"]) == {"inflated_cells", "max_gain", "attack_success"}
    # the core accepts them (columns, judged models, unique keys, notes) and writes them
    card_rows = adjust(study_rows(params, {"frame": {k: str(v) for k, v in files.items()}}))
    write_table(card_rows, files["pairwise"].parent / "judges.parquet", CARD)
    assert len(card_rows) == len(rows)


def test_inflated_cells_and_the_largest_cross_fitted_gain(built):
    rows = built[2]
    cells = rows.loc[("fooled", "inflated_cells", "")]
    assert cells["estimate"] == 2 and cells["n"] == 3  # q 0.001 and 0.004 < 0.05
    assert cells["p_value"] == 0.001  # Simes: the smallest BH q-value
    assert "in 2 of 3 cells (brightness 1/2, padding 1/1)" in cells["reading"]
    assert rows.loc[("steady", "inflated_cells", ""), "estimate"] == 0
    gain = rows.loc[("fooled", "max_gain", "")]
    assert gain["estimate"] == pytest.approx(15.0)  # padding: 0.3 of an original mean 2
    assert (gain["ci_low"], gain["ci_high"]) == pytest.approx((10.0, 20.0))
    assert math.isnan(gain["p_value"]) and "no test" in gain["note"]  # frame_null.py
    assert "padding (people, settings 40 / 25 chosen per half)" in gain["reading"]
    assert cells["reading"].endswith("most: " + gain["reading"])  # named where it shows
    assert "biased upward: +16.0 %" in gain["note"]  # the paper's in-sample number, noted
    steady = rows.loc[("steady", "max_gain", "")]
    assert steady["estimate"] == pytest.approx(0.5) and math.isnan(steady["p_value"])
    assert "most:" not in rows.loc[("steady", "inflated_cells", ""), "reading"]


def test_attack_success_sits_beside_its_chance_level_without_a_test(built):
    rows = built[2]
    cross = rows.loc[("fooled", "attack_success", "")]
    assert cross["headline"] and cross["estimate"] == pytest.approx(100 * 25 / 34)
    assert cross["chance"] == 45.0 == cross["null_value"]
    assert math.isnan(cross["p_value"]) and "no test" in cross["note"]
    paper = rows.loc[("fooled", "attack_success", "in_sample")]
    assert not paper["headline"] and paper["chance"] == 80.0
    human = rows.loc[("steady", "human_kendall", "")]
    assert human["estimate"] == 0.5 and math.isnan(human["ci_low"])
    assert "no test" in human["note"] and "no interval" in human["note"]
    human = rows.loc[("fooled", "human_kendall", "")]
    assert (human["ci_low"], human["ci_high"]) == (0.3, 0.6)
    assert human["interval"].startswith("percentile bootstrap") and math.isnan(
        human["p_value"])


def test_mitigation_is_the_difference_in_differences_over_items(built):
    rows = built[2]
    told = rows.loc[("fooled", "mitigation", "bias_definition")]
    assert told["estimate"] == pytest.approx(-0.2) and told["n"] == 6  # no Outdoor item
    assert (told["ci_low"], told["ci_high"]) == pytest.approx((-0.2, -0.2))
    assert told["p_value"] == pytest.approx(2 / 2**6)  # exact sign flip: 2 of 64 patterns
    assert told["recommendation"].startswith("FRAME's bias-definition prompt: manipulation "
                                             "gain 0.2")
    aware = rows.loc[("fooled", "mitigation", "bias_aware")]
    assert aware["estimate"] == pytest.approx(0) and aware["p_value"] == 1
    assert aware["recommendation"] == "" and aware["reading"] == ""
    order = list(rows.loc["fooled"].xs("mitigation", level="measure").index)
    assert order == ["bias_definition", "bias_aware"]  # most helpful first


def test_slots_map_the_set_back_to_the_position_shown():
    verdicts = pd.DataFrame({"item_id": ["a", "a", "b", "b", "c", "c"],
                             "order": ["ab", "ba"] * 3,
                             "verdict": ["A", "A", "B", "tie", None, "B"]})
    slots = card.slots(verdicts)
    assert [s if isinstance(s, str) else None for s in slots["slot"]] == [
        "A", "B", "B", "tie", None, "A"]  # missing stays missing
    assert slots["item"].tolist() == ["a", "a", "b", "b", "c", "c"]


def test_position_bias_and_the_win_rate_flip(built):
    rows = built[2]
    pf = rows.loc[("fooled", "pf", "original")]
    assert pf["estimate"] == -1 and pf["p_value"] == pytest.approx(2 / 2**6)  # 6 AA pairs
    assert "favours the first image shown" in pf["reading"]
    assert rows.loc[("fooled", "pc", "original"), "estimate"] == 0
    assert "RS (repetition stability) not measured" in rows.loc[("fooled", "pc", "original"),
                                                                "note"]
    assert rows.loc[("fooled", "first_slot_rate", "original"), "estimate"] == 1
    # manipulated: set A in both orders, consistent pairs, no position bias
    assert rows.loc[("fooled", "pc", "manipulated"), "estimate"] == 1
    flip = rows.loc[("fooled", "win_rate_change", "")]
    assert flip["estimate"] == pytest.approx(0.5) and flip["n"] == 6  # 0.5 -> 1 per item
    assert flip["p_value"] == pytest.approx(2 / 2**6)
    assert "raises an image's pairwise win rate by 0.5" in flip["reading"]
    assert np.isfinite(rows.loc[("fooled", "pf", "manipulated"), "estimate"])
