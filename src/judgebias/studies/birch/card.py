"""BIRCH's rows of the judge card (judgebias.card): VQA judging and position bias.

Per judge and dataset (``setting`` = the dataset's name under ``birch.datasets``):

* from the analysis' paired-bootstrap table (``intervals.parquet``,
  measures/inference.py: pairs resampled with every variant, percentile or BCa): Base's
  accuracy over D_IDS ∪ D_CDS (Tables 4/8's Acc), IRS (§3.2), IB (§3.4), LB (§3.5),
  balanced accuracy, and BIRCH's accuracy gain over Base on the same pairs;
* with the study's McNemar tests where it has them (``tests.parquet``): IRS (no image vs
  Base, all pairs; IRS = -gain of no image) and BIRCH's gain (BIRCH vs Base, D_IDS ∪
  D_CDS). The card takes the raw p-values (it adjusts over the whole card itself);
* IB and LB have no test in BIRCH's tables: each compares two disjoint pair sets (D_IDS
  vs D_CDS, y^c longer vs shorter), so McNemar does not apply; the study reports the
  bootstrap interval (and, in ``bias.parquet``, Appendix C.3's down-sampling spread, which
  is not an interval). The card tests IB = 0 and LB = 0 as the spec recommends for a
  difference of two independent accuracies (specs/judge-card.md §3: "IB, LB: Newcombe
  (Wilson) difference"): the two-proportion score test on bias.parquet's counts
  (Acc+ x n+ right of n+, Acc- x n- of n-; judgebias.stats.position.gold_gap_test, statsmodels'
  ``test_proportions_2indep``, whose size benchmarks/position_bias.py measures at
  0.041-0.053 under skewed, discrete and clustered nulls); accuracy and balanced accuracy
  are levels, read beside chance (0.5), without a test;
* position bias of the Base verdicts (the judge as the paper runs it, with the image):
  ``verdicts/<judge>/base.parquet`` mapped onto :func:`judgebias.stats.position.position_bias`
  (item = pair, order = the order shown, slot = the *shown* slot, gold = the human
  preference in the order shown). BIRCH's verdicts are stored by the pair's own A / B
  (tables.VERDICTS, jobs.to_pair_side), so an ``ba`` row's verdict is flipped back to its
  slot here. With ``birch.swap_order`` both orders are judged and PC, PF and the
  (balanced) first-slot rate follow; without it (the default) only order ``ab`` is, PC and
  PF are not identifiable (their rows say so) and the first-slot rate and the gold-slot
  gap take their place, tested only when the shown order was randomised with a recorded
  seed (:func:`randomised`). RS needs the same question asked again: with
  ``birch.repeats`` R > 1 the Base judgement of every (pair, order) is asked R times
  (repeat r with the judge's sampling seed + r; ``repeats/<judge>.parquet`` holds repeats
  1..R-1, the verdicts file repeat 0), and RS is the modal verdict's share over them,
  with its bootstrap interval and chance floor (judgebias.stats.position); PC, PF and the
  slot measures use repeat 0 only. With R = 1 (the default) its row says how to get it.

Headline (the first dataset only): IB, IRS, and PF (both orders) or the first-slot rate
(one order). BIRCH's gain is a ``recommendation`` where it is positive; the card shows it
only where the McNemar test is significant after the card's FDR adjustment.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from judgebias.card.schema import ROW_FIELDS, card_row
from judgebias.card.text import estimate_text, signed_phrase
from judgebias.io.artifacts import read_columns
from judgebias.studies.birch.tables import (
    PAIRS,
    REPEATS,
    VERDICTS,
    pairs_path,
    repeats_path,
    table_path,
    verdicts_path,
)

# The measures (scipy, statsmodels) are imported where they are used: the card rule calls
# `inputs` whenever Snakemake reads the workflow, which must not pay for them
# (tests/core/test_workflow_imports.py).
STUDY = "birch"
POSITION_VARIANT = "base"
FLIP = {"A": "B", "B": "A"}
NAN = math.nan

# measure -> (variant, statistic, versus, label, unit, chance, null value)
LEVELS: dict[str, tuple[str, str, str, str, str, float, float]] = {
    "accuracy": ("base", "acc", "", "VQA accuracy (Base)", "proportion", 0.5, NAN),
    "irs": ("base", "irs", "", "Image reliance score (IRS)", "accuracy difference", NAN,
            0.0),
    "ib": ("base", "ib", "", "Informativeness bias (IB)", "accuracy difference", NAN, 0.0),
    "lb": ("base", "lb", "", "Length bias (LB)", "accuracy difference", NAN, 0.0),
    "balanced_accuracy": ("base", "balanced", "", "Balanced accuracy (Base)",
                          "proportion", 0.5, NAN),
    "birch_gain": ("birch", "acc", "base", "BIRCH's accuracy gain over Base",
                   "accuracy difference", NAN, 0.0),
}
# measure -> the McNemar row of tests.parquet behind it: (variant, pair set)
TESTED = {"irs": ("no_image", "all"), "birch_gain": ("birch", "labelled")}
UNTESTED = {
    "accuracy": "an accuracy level (read beside chance 0.5): no test",
    "balanced_accuracy": "(Acc_IDS + Acc_CDS) / 2, a level (read beside chance 0.5): "
                         "no test",
}
# IB and LB: two independent accuracies, tested on bias.parquet's counts (module docstring)
DIFFERENCE_TEST = "two-proportion score test (disjoint pair sets)"
WHAT = {
    "accuracy": "over D_IDS ∪ D_CDS (Tables 4/8's Acc); a judge's tie counts wrong",
    "irs": "Acc(image) - Acc(no image) on the pairs both answered (§3.2)",
    "ib": "Acc_IDS - Acc_CDS (§3.4): > 0 prefers the more informative answer even when "
          "it is wrong",
    "lb": "Acc(y^c longer) - Acc(y^c shorter) (§3.5), equal lengths dropped",
    "balanced_accuracy": "(Acc_IDS + Acc_CDS) / 2",
    "birch_gain": "Acc(BIRCH) - Acc(Base) over D_IDS ∪ D_CDS, paired (Tables 4/8)",
}
PHRASES = {  # measure -> (reading when the estimate is >= 0, when < 0), "{}" = size
    "irs": ("uses the image: {} more accurate with it than without (IRS)",
            "does worse with the image than without, by {} (IRS)"),
    "ib": ("prefers the more informative answer even when wrong, IB {}",
           "prefers the less informative answer, by {} (IB)"),
    "lb": ("favours the longer answer, LB {}", "favours the shorter answer, by {} (LB)"),
}
# position measure -> (label, unit, null value)
POSITION = {
    "pc": ("Position consistency (PC)", "proportion of pairs", 1.0),
    "pf": ("Preference fairness (PF)", "PF, -1 (first) to 1 (second)", 0.0),
    "rs": ("Repetition stability (RS)", "proportion", NAN),
    "first_slot_rate": ("First-slot pick rate", "proportion of verdicts", 0.5),
    "gold_slot_gap": ("Accuracy, gold shown first minus second", "accuracy difference",
                      0.0),
    "extraction_rate": ("Verdict extraction rate", "proportion", NAN),
}
NO_REPEATS = ("each (pair, order) is judged once (birch.repeats: 1): RS needs at least 2 "
              "repeats (Shi et al.); set birch.repeats to 3, with a sampling judge")


def inputs(params: Mapping[str, Any]) -> dict[str, str]:
    """Every file :func:`rows` reads, per dataset: the analysis' intervals, tests and bias
    tables, the pairs (human preference) and each judge's Base verdicts."""
    from judgebias.study import study_models

    out: dict[str, str] = {}
    for dataset in params[STUDY]["datasets"]:
        for table in ("intervals", "tests", "bias"):
            out[f"{dataset}.{table}"] = table_path(dataset, table)
        out[f"{dataset}.pairs"] = pairs_path(dataset)
        for judge in study_models(params, STUDY):
            out[f"{dataset}.verdicts.{judge}"] = verdicts_path(dataset, judge,
                                                               POSITION_VARIANT)
            if params[STUDY].get("repeats", 1) > 1:
                out[f"{dataset}.repeats.{judge}"] = repeats_path(dataset, judge)
    return out


def rows(params: Mapping[str, Any], files: Mapping[str, Path]) -> pd.DataFrame:
    """The card rows of every judge x dataset (module docstring), columns ROW_FIELDS."""
    from judgebias.study import study_models

    block = params[STUDY]
    inference = block.get("inference", {})
    settings = {"resamples": int(inference.get("resamples", 2000)),
                "level": float(inference.get("level", 0.95)),
                "seed": int(inference.get("seed", 0))}
    swap = bool(block.get("swap_order", False))
    out: list[dict[str, Any]] = []
    for k, (dataset, spec) in enumerate(block["datasets"].items()):
        tables = {name: pd.read_parquet(files[f"{dataset}.{name}"])
                  for name in ("intervals", "tests", "bias")}
        sources = {name: str(files[f"{dataset}.{name}"])
                   for name in ("intervals", "tests", "bias")}
        pairs = read_columns(files[f"{dataset}.pairs"], PAIRS, ["pair_id", "preference"])
        preference = pairs.set_index("pair_id")["preference"]
        for judge in study_models(params, STUDY):
            for measure in LEVELS:
                out.append(_level_row(measure, judge, dataset, tables, sources, settings,
                                      headline=k == 0))
            path = files[f"{dataset}.verdicts.{judge}"]
            verdicts = read_columns(path, VERDICTS, ["pair_id", "order", "verdict"])
            if f"{dataset}.repeats.{judge}" in files:
                verdicts = pd.concat([verdicts.assign(repeat=0), read_columns(
                    files[f"{dataset}.repeats.{judge}"], REPEATS,
                    ["pair_id", "order", "repeat", "verdict"])], ignore_index=True)
            out += _position_rows(judge, dataset, verdicts, preference, spec, swap,
                                  settings, str(path), headline=k == 0)
    frame = pd.DataFrame(out, columns=[f.name for f in ROW_FIELDS])
    return frame.astype({"n": "int64", "headline": bool})


# ------------------------------------------------------------------------ VQA judging


def _lookup(table: pd.DataFrame, **where: str) -> dict[str, Any] | None:
    """The one row of `table` with these column values, or None."""
    if table.empty or any(column not in table for column in where):
        return None
    mask = np.ones(len(table), dtype=bool)
    for column, value in where.items():
        mask &= (table[column] == value).to_numpy()
    found = table[mask]
    return None if found.empty else found.iloc[0].to_dict()


def _level_row(measure: str, judge: str, dataset: str, tables: Mapping[str, pd.DataFrame],
               sources: Mapping[str, str], settings: Mapping[str, Any], *,
               headline: bool) -> dict[str, Any]:
    variant, statistic, versus, label, unit, chance, null = LEVELS[measure]
    found = _lookup(tables["intervals"], judge=judge, variant=variant,
                    statistic=statistic, versus=versus)
    notes = [WHAT[measure]]
    row = card_row(judge, STUDY, measure, setting=dataset, label=label, unit=unit,
                   null_value=null, chance=chance,
                   headline=headline and measure in ("ib", "irs"),
                   source=sources["intervals"])
    if found is None or not np.isfinite(found["estimate"]):
        row["note"] = (f"not measured: no {variant}"
                       f"{' vs ' + versus if versus else ''} {statistic} for this judge in "
                       f"intervals.parquet (variant not run, or no usable verdict)")
        return row
    row |= {"estimate": float(found["estimate"]), "ci_low": float(found["low"]),
            "ci_high": float(found["high"]), "n": int(found["n_pairs"]),
            "interval": (f"{found['interval']} paired bootstrap "
                         f"{float(found['level']):.0%} over pairs "
                         f"(B={settings['resamples']})")}
    if not (np.isfinite(row["ci_low"]) and np.isfinite(row["ci_high"])):
        notes.append("interval undefined: some bootstrap resample drew no pair of a "
                     "subset it needs (inference.bootstrap_table)")
    if measure in TESTED:
        method, pair_set = TESTED[measure]
        test = _lookup(tables["tests"], judge=judge, variant=method, versus="base",
                       pair_set=pair_set)
        if test is None:
            notes.append(f"no McNemar row ({method} vs base, {pair_set}) in tests.parquet: "
                         "no test")
        else:
            row["p_value"] = float(test["p_value"])
            row["test"] = (f"McNemar {method} vs Base, {pair_set} pairs "
                           f"({test['test']})")
            notes.append(f"McNemar on {int(test['n_pairs'])} pairs: "
                         f"{int(test['base_only'])} Base only right, "
                         f"{int(test['method_only'])} {method} only right")
    elif measure in UNTESTED:
        notes.append(UNTESTED[measure])
    if measure in ("ib", "lb"):
        row["p_value"], counts = _difference_test(tables["bias"], judge, statistic.upper())
        row["test"] = DIFFERENCE_TEST if np.isfinite(row["p_value"]) else ""
        notes += [counts, _spread(tables["bias"], judge, statistic.upper())]
    if measure in PHRASES:
        up, down = PHRASES[measure]
        row["reading"] = signed_phrase(row["estimate"], row["ci_low"], row["ci_high"],
                                       up, down)
    if measure == "birch_gain":
        if row["estimate"] > 0:
            row["recommendation"] = "BIRCH's truthful anchor: " + _points(row)
        elif row["estimate"] < 0:
            row["reading"] = "loses accuracy under BIRCH's anchor: " + _points(row)
    row["note"] = "; ".join(n for n in notes if n)
    return row


def _points(row: Mapping[str, Any]) -> str:
    """"+7.7 accuracy points [0.5, 14.9]" from an accuracy difference."""
    return (f"{100 * row['estimate']:+.1f} accuracy points "
            f"[{100 * row['ci_low']:.1f}, {100 * row['ci_high']:.1f}]")


def _difference_test(bias: pd.DataFrame, judge: str, statistic: str) -> tuple[float, str]:
    """Base's IB or LB tested against 0 from bias.parquet's accuracies and counts of the
    two pair sets (module docstring), and the counts as a note."""
    from judgebias.stats.position import gold_gap_test

    found = _lookup(bias, judge=judge, variant="base", statistic=statistic)
    if found is None:
        return NAN, f"no {statistic} row in bias.parquet: no test"
    n_plus, n_minus = int(found["n_plus"]), int(found["n_minus"])
    right_plus = float(found["acc_plus"]) * n_plus
    right_minus = float(found["acc_minus"]) * n_minus
    if not (n_plus and n_minus) or max(abs(right_plus - round(right_plus)),
                                       abs(right_minus - round(right_minus))) > 1e-6:
        return NAN, f"{statistic}: no whole counts in bias.parquet: no test"
    p = gold_gap_test(round(right_plus), n_plus, round(right_minus), n_minus)
    return p, (f"{statistic} test: {round(right_plus)} of {n_plus} right vs "
               f"{round(right_minus)} of {n_minus}")


def _spread(bias: pd.DataFrame, judge: str, statistic: str) -> str:
    """Appendix C.3's down-sampling spread of Base's IB or LB, as a note (not a CI)."""
    found = _lookup(bias, judge=judge, variant="base", statistic=statistic)
    if found is None or not int(found.get("ds_n_draws", 0) or 0):
        return ""
    return (f"Appendix C.3 down-sampling: mean {found['ds_mean']:.3f}, sd "
            f"{found['ds_sd']:.3f} over {int(found['ds_n_draws'])} draws (bias.parquet; a "
            "spread over subsamples, not an interval)")


# ---------------------------------------------------------------------- position bias


def randomised(spec: Mapping[str, Any]) -> tuple[bool, str]:
    """Whether a dataset's shown order was drawn with a recorded seed, and why.

    Synthetic pairs: both answers are drawn independently from the same distribution by
    a generator seeded with the dataset's (or the top-level) seed (data/synthetic.py), so
    which answer is shown first is a seeded random draw. Imported benchmarks: randomised
    exactly when ``order_seed`` is an integer (data/importers.py: a draw per pair seeded
    by (order_seed, pair id)); ``null`` keeps the file's order.
    """
    if spec["format"] == "synthetic":
        return True, ("synthetic pairs: both answers drawn i.i.d. by the seeded generator, "
                      "so the answer shown first is a seeded random draw")
    seed = spec.get("order_seed", 0)
    if seed is None:
        return False, "order_seed null: the benchmark file's own order is shown"
    return True, f"shown order drawn per pair with order_seed {seed}"


def position_verdicts(verdicts: pd.DataFrame, preference: pd.Series) -> pd.DataFrame:
    """BIRCH's verdict rows as judgebias.stats.position's canonical table (with ``repeat`` where
    the verdicts carry one).

    ``verdict`` is the pair's own A / B (tables.VERDICTS), so the shown slot is the
    verdict in order ``ab`` and its mirror in ``ba``; a tie stays a tie, a failed answer
    is missing. ``gold``: the human preference (the pair's A / B) in the order shown,
    missing for a human tie.
    """
    order = verdicts["order"].to_numpy(dtype=object)
    swapped = order == "ba"
    verdict = pd.Series(verdicts["verdict"].to_numpy(dtype=object))
    human = pd.Series(preference.reindex(verdicts["pair_id"]).to_numpy(dtype=object))
    human = human.where(human.isin(["A", "B"]))
    slot = verdict.where(~swapped | ~verdict.isin(["A", "B"]), verdict.map(FLIP))
    gold = human.where(~swapped, human.map(FLIP))
    table = pd.DataFrame({"item": verdicts["pair_id"].to_numpy(), "order": order,
                          "slot": slot.to_numpy(dtype=object),
                          "gold": gold.to_numpy(dtype=object)})
    if "repeat" in verdicts.columns:
        table["repeat"] = verdicts["repeat"].to_numpy()
    return table


def _position_rows(judge: str, dataset: str, verdicts: pd.DataFrame, preference: pd.Series,
                   spec: Mapping[str, Any], swap: bool, settings: Mapping[str, Any],
                   source: str, *, headline: bool) -> list[dict[str, Any]]:
    from judgebias.stats.position import position_bias

    is_random, why = randomised(spec)
    measures = position_bias(position_verdicts(verdicts, preference), randomised=is_random,
                             n_resamples=settings["resamples"],
                             confidence_level=settings["level"], seed=settings["seed"])
    both = bool((verdicts["order"] == "ba").any())
    context = ("Base verdicts (with the image), both orders (birch.swap_order)" if both
               else "Base verdicts (with the image), order ab only (birch.swap_order "
                    f"{'true' if swap else 'false'}); {why}")
    out = []
    for record in measures.to_dict("records"):
        measure = str(record["measure"])
        label, unit, null = POSITION[measure]
        estimate, p_value = float(record["estimate"]), float(record["p_value"])
        out.append(card_row(
            judge, STUDY, measure, setting=dataset, label=label, unit=unit,
            estimate=estimate, ci_low=float(record["ci_low"]),
            ci_high=float(record["ci_high"]),
            interval=_interval_text(str(record["interval"]), settings["level"]),
            p_value=p_value, test=str(record["test"]) if np.isfinite(p_value) else "",
            n=int(record["n"]), null_value=null, chance=float(record["chance"]),
            headline=headline and measure == ("pf" if both else "first_slot_rate"),
            reading=_position_reading(measure, record), source=source,
            note=f"{context}; {record['note']}"))
    if "rs" not in set(measures["measure"]):
        label, unit, null = POSITION["rs"]
        out.append(card_row(judge, STUDY, "rs", setting=dataset, label=label, unit=unit,
                            null_value=null, source=source,
                            note=f"{context}; {NO_REPEATS}"))
    return out


def _interval_text(method: str, level: float) -> str:
    names = {"wilson": "Wilson", "newcombe": "Newcombe hybrid score"}
    if not method:
        return ""
    if method in names:
        return f"{names[method]} {level:.0%}"
    return f"{method}, {level:.0%}"


def _position_reading(measure: str, record: Mapping[str, Any]) -> str:
    estimate = float(record["estimate"])
    if not np.isfinite(estimate):
        return ""
    text = estimate_text(pd.Series(record))
    if measure == "pf" and estimate != 0:
        side = "first" if estimate < 0 else "second"
        return f"prefers the answer shown {side}, PF {text}"
    if measure == "pc":
        return f"changes its verdict when the answers swap places, PC {text}"
    if measure == "first_slot_rate" and estimate != 0.5:
        return f"picks the answer shown first in {text} of its non-tie verdicts"
    if measure == "gold_slot_gap" and estimate != 0:
        side = "first" if estimate > 0 else "second"
        return f"is more accurate when the better answer is shown {side}, gap {text}"
    return ""
