"""MMB's rows of the judge card (judgebias.card): each judge's calibration and position bias.

Calibration (issue 22, item 1), at the report cell (``mmb.report``: n_prompts, n_val, K):

* ``ece_std``, ``ece_avg``, ``ece_best`` and ``mce_*``: ECE and MCE (15 bins, metrics.py)
  of the standard prompt (STD: one random instruction), of AVG and of the better calibrated
  of MMB and BPE (the lower mean ECE), from the Table 2 analogue (results/mmb/table2): the
  mean over the cell's replicate runs (training x sampling seeds; MMB also averaged over
  clustering seeds), ``n`` = those runs (table2's ``n_units``). The study has no interval
  and no test of an ECE level: table2's ``p_value`` is the paired sign-flip test of the
  method against the cell's *best method* over runs on the same test pairs (and
  ``p_adjusted`` its BY adjustment within the metric), a comparison of methods that
  conditions on the test pairs (measures/comparison.py). It is quoted in the note, not
  carried as the row's test, which stays empty.
* ``mmb_vs_avg_brier``, ``mmb_vs_bpe_brier``: whether calibration helps, the study's
  verdict test (results/mmb/comparisons): D = Brier(MMB) - Brier(baseline) per test pair,
  averaged over test groups, with its t-interval and one-sample t p over test groups
  (the card adjusts the raw p with every other test). Where MMB lowers the Brier score,
  the row recommends MMB weights.
* ``mmb_vs_avg_ece``, ``mmb_vs_bpe_ece``: the ECE difference with the study's approximate
  percentile bootstrap over test groups; the study does not test it (comparison.py), so
  neither does the card.
* ``nopref_confidence_std``, ``nopref_confidence_best``: the Table 4 analogue's mean
  top-label confidence on no-preference pairs (MJ-Bench protocol; 0.5 is ideal) of STD and
  of the method of ``ece_best``; like the ECE levels, no interval or test of its own.

Position bias (specs/judge-card.md §1, §3; judgebias.stats.position), from the judge's
judgements (data/mmb/judgements/<judge>): item = (pair, instruction) over every judged
pair, order = the order shown, slot = the shown image the judge prefers: "A" where
p(first shown preferred) > 0.5, "B" below, "tie" at exactly 0.5, missing for an answer
without a number (failed, unparsed). p(first shown) is ``p_a`` for order "ab" and
``1 - p_a`` for "ba" (``p_a`` is mapped back to the pair's own image A, jobs.py). With
``mmb.order: both`` PC, PF, the extraction rate and the balanced first-slot rate; with
``random`` (each (pair, instruction) shown in one order drawn with ``order_seed``) the
one-order measures, randomised, with the human preference as gold (the first-slot rate
and the gold-slot gap then treat the (pair, instruction) verdicts as independent: under
the null each is a fair coin of its own drawn order). PF's bootstrap uses the study's
``mmb.report.n_boot`` and ``seed``. Read from log-probs, each judgement is asked once, so
RS has a row saying it is not identifiable. Read from samples (``mmb.probability``), each
sample is a verdict of its own: slot = the image its answer picked, repeat = the sample;
the slot measures use sample 0 (one verdict, as a judge asked once gives it) and RS is
the modal verdict's share over the samples (judgebias.stats.position), as BIRCH's repeats.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from judgebias.card.schema import card_row
from judgebias.card.text import estimate_text, number, signed_phrase
from judgebias.studies.mmb.params import MmbParams
from judgebias.studies.mmb.tables import (
    JUDGEMENTS,
    PAIRS,
    PAIRS_PATH,
    judgements_path,
    table_path,
)

STUDY = "mmb"
CONFIDENCE = 0.95
NAN = math.nan
METHODS = {"std": "STD", "avg": "AVG"}
LABELS = {"std": "standard prompt (STD)", "avg": "AVG", "best": "best of MMB and BPE"}
POSITION = {  # measure -> (label, unit, null value, headline with both orders / one order)
    "pc": ("Position consistency (PC)", "proportion of pairs", 1.0, (False, False)),
    "pf": ("Preference fairness (PF)", "PF in [-1, 1], < 0 first shown", 0.0,
           (True, False)),
    "rs": ("Repetition stability (RS)", "proportion", 1.0, (False, False)),
    "extraction_rate": ("Answers with a verdict", "proportion", NAN, (False, False)),
    "first_slot_rate": ("First-shown image preferred", "proportion of verdicts", 0.5,
                        (False, True)),
    "gold_slot_gap": ("Accuracy, preferred image shown first - second", "accuracy",
                      0.0, (False, False)),
}
INTERVALS = {"wilson": "Wilson score 95%", "newcombe": "Newcombe hybrid score 95%"}


def inputs(params: Mapping[str, Any]) -> dict[str, str]:
    """Every file `rows` reads: the calibration tables, the pair table (the gold
    preference) and each judge's judgements."""
    from judgebias.study import study_models

    return {"table2": table_path("table2"), "table4": table_path("table4"),
            "comparisons": table_path("comparisons"), "pairs": PAIRS_PATH,
            **{f"judgements.{judge}": judgements_path(judge)
               for judge in study_models(params, STUDY)}}


def rows(params: Mapping[str, Any], files: Mapping[str, Path]) -> pd.DataFrame:
    """One row per (judge, measure): calibration, then position bias (module docstring)."""
    from judgebias.io.artifacts import read_columns

    mmb = MmbParams.from_params(params)
    table2, table4 = _at_cell(files["table2"], mmb), _at_cell(files["table4"], mmb)
    comparisons = _by_judge(pd.read_parquet(files["comparisons"]))
    gold = read_columns(files["pairs"], PAIRS, ["pair_id", "preference"])
    out: list[dict[str, Any]] = []
    for judge in mmb.models:
        out += calibration_rows(judge, mmb, table2, table4, comparisons, files)
        path = files[f"judgements.{judge}"]
        judgements = read_columns(path, JUDGEMENTS, ["pair_id", "instruction", "order",
                                                     "sample", "p_a", "p_source", "label"])
        out += position_rows(judge, mmb, verdicts(judgements, gold), str(path))
    return pd.DataFrame(out)


# ----------------------------------------------------------------------- calibration


def _by_judge(table: pd.DataFrame) -> pd.DataFrame:
    """A results table, empty with a `judge` column where the study wrote none (a
    dataset without no-preference pairs leaves Table 4 empty)."""
    return table if "judge" in table.columns else pd.DataFrame({"judge": []})


def _at_cell(path: Path, mmb: MmbParams) -> pd.DataFrame:
    """The rows of a significance table at the report cell."""
    table = _by_judge(pd.read_parquet(path))
    if table.empty:
        return table
    return table[(table["n_prompts"] == mmb.report.n_prompts)
                 & (table["n_val"] == mmb.report.n_val)]


def _row(judge: str, measure: str, label: str, unit: str, source: str, **values: Any
         ) -> dict[str, Any]:
    """A card row of MMB (card_row: the fields not given at ROW_DEFAULTS)."""
    return card_row(judge, STUDY, measure, label=label, unit=unit, source=source, **values)


def _p(value: Any) -> str:
    """A p-value as text: two significant digits (card numbers round 1e-4 to 0)."""
    return "n/a" if pd.isna(value) else f"{float(value):.2g}"


def _cell_text(mmb: MmbParams) -> str:
    report = mmb.report
    return (f"{report.n_prompts} prompts, {report.n_val} validation pairs, "
            f"K = {report.k}")


def calibration_rows(judge: str, mmb: MmbParams, table2: pd.DataFrame, table4: pd.DataFrame,
                     comparisons: pd.DataFrame, files: Mapping[str, Path]
                     ) -> list[dict[str, Any]]:
    """ECE and MCE levels, MMB vs AVG and BPE, and the no-preference confidence."""
    mine = table2[table2["judge"] == judge] if not table2.empty else table2
    levels = {metric: mine[mine["metric"] == metric].set_index("method")
              for metric in ("ece", "mce")} if not mine.empty else {}
    ece = levels.get("ece")
    best = None
    if ece is not None and {"MMB", "BPE"} <= set(ece.index):
        best = "MMB" if ece.loc["MMB", "mean"] <= ece.loc["BPE", "mean"] else "BPE"
    methods = {**METHODS, "best": best}
    left_out = ("no Table 2 row for this judge at the report cell: left out of MMB's "
                "factorial (no pair with a usable answer for every instruction; "
                "results/mmb/metrics.json)")
    out = []
    for metric in ("ece", "mce"):
        for key, method in methods.items():
            table = levels.get(metric)
            out.append(_level_row(judge, metric, key, method, table, mmb,
                                  str(files["table2"]), left_out))
    out += _comparison_rows(judge, comparisons, mmb, str(files["comparisons"]), left_out)
    if not table4.empty:
        confidence = table4[(table4["judge"] == judge)
                            & (table4["metric"] == "confidence")].set_index("method")
        for key in ("std", "best"):
            out.append(_confidence_row(judge, key, methods[key], confidence, mmb,
                                       str(files["table4"]), left_out))
    return out


def _level_row(judge: str, metric: str, key: str, method: str | None,
               table: pd.DataFrame | None, mmb: MmbParams, source: str, missing: str
               ) -> dict[str, Any]:
    name = metric.upper()
    row = _row(judge, f"{metric}_{key}", f"{name}, {LABELS[key]}", "probability", source,
               null_value=0.0, headline=(metric, key) == ("ece", "std"))
    if table is None or method is None or method not in table.index:
        return {**row, "note": missing}
    record = table.loc[method]
    best = str(table.index[table["is_best"]][0]) if table["is_best"].any() else "?"
    compared = (f"table2 compares it with the cell's best method ({best}) by a paired "
                f"sign-flip test over the runs on the same test pairs: p = "
                f"{_p(record['p_value'])}, BY p = {_p(record['p_adjusted'])}; "
                f"a comparison of methods, not a test of this {name}, so not carried"
                if method != best else f"the cell's best method by {name} in table2")
    which = ""
    if key == "best":
        others = table.loc[["MMB", "BPE"], "mean"] if metric == "ece" else None
        which = (f"{method} (ECE {number(others['MMB'])} MMB, {number(others['BPE'])} "
                 f"BPE); " if others is not None else f"{method}, the method of ece_best; ")
    return {**row, "estimate": float(record["mean"]), "n": int(record["n_units"]),
            "note": (f"{which}mean over {int(record['n_units'])} replicate runs "
                     f"(training x sampling seeds; MMB also over clustering seeds) at "
                     f"{_cell_text(mmb)}; no interval or test of the level in the study "
                     f"({compared}); whether calibration helps: mmb_vs_avg_brier, "
                     f"mmb_vs_bpe_brier")}


def _comparison_rows(judge: str, comparisons: pd.DataFrame, mmb: MmbParams, source: str,
                     missing: str) -> list[dict[str, Any]]:
    mine = comparisons[comparisons["judge"] == judge].set_index("comparison") \
        if not comparisons.empty else comparisons
    out = []
    for base in ("AVG", "BPE"):
        lower = base.lower()
        brier = _row(judge, f"mmb_vs_{lower}_brier", f"Brier, MMB - {base}",
                     "Brier score", source, null_value=0.0, headline=base == "AVG")
        ece = _row(judge, f"mmb_vs_{lower}_ece", f"ECE, MMB - {base}", "probability",
                   source, null_value=0.0)
        name = f"MMB - {base}"
        if name not in mine.index:
            out += [{**brier, "note": missing}, {**ece, "note": missing}]
            continue
        record = mine.loc[name]
        difference, low, high = (float(record[c]) for c in ("difference", "low", "high"))
        recommendation = "" if not difference < 0 else signed_phrase(
            difference, low, high, "",
            f"MMB weights (K = {mmb.report.k}) lower its Brier score by {{}} vs {base}")
        out.append({**brier, "estimate": difference, "ci_low": low, "ci_high": high,
                    "interval": "t 95% over test groups", "p_value": float(record["p_value"]),
                    "test": "one-sample t over test-group differences (Student)",
                    "n": int(record["n_groups"]), "recommendation": recommendation,
                    "note": (f"per test pair Brier(MMB) - Brier({base}), each averaged over "
                             f"{int(record['n_runs'])} replicate runs, mean over "
                             f"{int(record['n_groups'])} test groups ({int(record['n_pairs'])}"
                             f" pairs) at {_cell_text(mmb)}; Brier {number(record['brier_mmb'])}"
                             f" vs {number(record['brier_baseline'])}; sign-flip check p = "
                             f"{_p(record['p_sign_flip'])}; the study's verdict (BY over "
                             f"judges x baselines): {record['verdict']}")})
        out.append({**ece, "estimate": float(record["ece_difference"]),
                    "ci_low": float(record["ece_low"]), "ci_high": float(record["ece_high"]),
                    "interval": "percentile bootstrap 95% over test groups (approximate)",
                    "n": int(record["n_groups"]),
                    "note": (f"mean ECE of MMB's runs - {base}'s ({number(record['ece_mmb'])}"
                             f" vs {number(record['ece_baseline'])}) at {_cell_text(mmb)}; "
                             "not tested by the study: binned ECE is no mean of per-pair "
                             "terms and the bootstrap of its difference is approximate "
                             "(measures/comparison.py), so read the interval as a rough "
                             "range; the test of calibration is the Brier row")})
    return out


def _confidence_row(judge: str, key: str, method: str | None, table: pd.DataFrame,
                    mmb: MmbParams, source: str, missing: str) -> dict[str, Any]:
    row = _row(judge, f"nopref_confidence_{key}",
               f"Mean confidence on no-preference pairs, {LABELS[key]}", "probability",
               source, null_value=0.5)
    if method is None or method not in table.index:
        return {**row, "note": missing}
    record = table.loc[method]
    return {**row, "estimate": float(record["mean"]), "n": int(record["n_units"]),
            "note": (f"{method}; MJ-Bench protocol (an original against a degraded image "
                     f"of the same prompt, leave-one-group-out folds): mean top-label "
                     f"confidence, 0.5 is ideal, mean over {int(record['n_units'])} "
                     f"replicate runs at {_cell_text(mmb)}; no interval or test against "
                     f"0.5 in the study (table4 compares methods with the cell's best)")}


# --------------------------------------------------------------------- position bias


def verdicts(judgements: pd.DataFrame, pairs: pd.DataFrame) -> pd.DataFrame:
    """The judgements as judgebias.stats.position's verdict table (module docstring): item,
    order, repeat (the sample), slot, and gold (the slot of the image people preferred;
    missing for a no-preference pair)."""
    p_a = pd.to_numeric(judgements["p_a"], errors="coerce").astype(float).to_numpy()
    ab = (judgements["order"] == "ab").to_numpy()
    first = np.where(ab, p_a, 1 - p_a)
    slot = np.select([first > 0.5, first < 0.5, first == 0.5], ["A", "B", "tie"], "")
    sampled = (judgements["p_source"] == "samples").to_numpy()
    slot = np.where(sampled, judgements["label"].fillna("").to_numpy(), slot)
    preference = judgements["pair_id"].map(pairs.set_index("pair_id")["preference"])
    preferred_first = np.where(ab, preference == 1.0, preference == 0.0)
    gold = np.where(preference.isin([0.0, 1.0]), np.where(preferred_first, "A", "B"), "")
    return pd.DataFrame({
        "item": (judgements["pair_id"] + "|" + judgements["instruction"]).to_numpy(),
        "order": judgements["order"].to_numpy(),
        "repeat": judgements["sample"].to_numpy(),
        "slot": _missing_where_empty(slot),
        "gold": _missing_where_empty(gold),
    })


def _missing_where_empty(values: np.ndarray) -> np.ndarray:
    """An object array with None (a missing slot or gold) where `values` is ""."""
    out = values.astype(object)
    out[values == ""] = None
    return out


def _interval(text: str) -> str:
    if text in INTERVALS:
        return INTERVALS[text]
    return text.replace("percentile cluster bootstrap over items",
                        "percentile cluster bootstrap 95% over (pair, instruction) items")


def _position_reading(record: Mapping[str, Any], both: bool) -> str:
    """The phrase of a position row for the judge's line (shown when significant). With
    both orders PF says it; the balanced first-slot rate would repeat it."""
    measure, estimate = record["measure"], float(record["estimate"])
    if not np.isfinite(estimate) or (both and measure == "first_slot_rate"):
        return ""
    if measure == "pf":
        side = "first" if estimate < 0 else "second"
        return f"prefers the {side}-shown image, PF {estimate_text(pd.Series(record))}"
    if measure == "first_slot_rate":
        side = "first" if estimate > 0.5 else "second"
        return (f"leans to the {side}-shown image: the first picked in "
                f"{estimate_text(pd.Series(record))} of verdicts")
    if measure == "gold_slot_gap":
        return signed_phrase(estimate, record["ci_low"], record["ci_high"],
                             "more accurate by {} when the preferred image is shown first",
                             "more accurate by {} when the preferred image is shown second")
    return ""


def position_rows(judge: str, mmb: MmbParams, table: pd.DataFrame, source: str
                  ) -> list[dict[str, Any]]:
    """judgebias.stats.position.position_bias of the judge's verdicts, as card rows."""
    from judgebias.stats.position import position_bias

    both = mmb.order == "both"
    measures = position_bias(table, randomised=not both, n_resamples=mmb.report.n_boot,
                             confidence_level=CONFIDENCE, seed=mmb.report.seed)
    design = ("mmb.order: both (every (pair, instruction) in both orders)" if both else
              f"mmb.order: random (one order per (pair, instruction), drawn with "
              f"order_seed {mmb.order_seed})")
    mapping = ("item = (pair, instruction); slot = the shown image with p > 0.5, tie at "
               "0.5, no verdict where the answer has no number" if judge not in mmb.sampled
               else "item = (pair, instruction); slot = the shown image a sampled verdict "
                    "picked (sample 0; RS over the samples), none where it was not usable")
    counts = measures.iloc[0][["n_consistent", "n_primacy", "n_recency", "n_unparsed"]] \
        if len(measures) else None
    pair_counts = ("" if counts is None or pd.isna(counts["n_consistent"]) else
                   "; pairs: " + ", ".join(f"{name[2:]} {int(value)}"
                                           for name, value in counts.items()))
    out = []
    for record in measures.to_dict("records"):
        label, unit, null, headline = POSITION[record["measure"]]
        out.append(_row(
            judge, record["measure"], label, unit, source,
            estimate=float(record["estimate"]), ci_low=float(record["ci_low"]),
            ci_high=float(record["ci_high"]), interval=_interval(record["interval"]),
            p_value=float(record["p_value"]), test=record["test"], n=int(record["n"]),
            null_value=null, chance=float(record["chance"]),
            headline=headline[0] if both else headline[1],
            reading=_position_reading(record, both),
            note=f"{record['note']}; {design}; {mapping}{pair_counts}"))
    if "rs" not in set(measures["measure"]):
        label, unit, null, _ = POSITION["rs"]
        out.append(_row(judge, "rs", label, unit, source, null_value=null,
                        note=(f"not identifiable: each (pair, instruction, order) is judged "
                              f"once (journaled), and RS needs repeats; {design}")))
    return out
