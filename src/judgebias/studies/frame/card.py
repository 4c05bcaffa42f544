"""FRAME's rows of the judge card (judgebias.card; seed 004, spec frame.md; issue 22 item 1,
"visual manipulations"): how far each judge's 0-5 scores are inflated by the manipulations
of Table 1, and, for the analysis judge, what the mitigation prompts and the pairwise step
show.

Per judge of ``frame.models``, from the analysis step's tables (measures.effects,
measures.summary, measures.humans):

- ``inflated_cells`` (headline): the (domain, manipulation) cells whose best setting's gain
  beats its exact permutation null after Benjamini-Hochberg FDR over the judge's cells
  (``table3_cross_fitted``: ``in_sample_q`` < ``frame.analysis.alpha``, the count the study's
  metrics call ``cells_significant``), out of the cells tested. Its p-value is the smallest
  q-value, which is the Simes global test of "no cell inflates" (min over i of
  p_(i) m / i); a count has no interval.
- ``max_gain`` (headline): the largest cross-fitted gain over the cells, in % of the cell's
  original mean: the gain of a setting chosen on half the items and scored on the other
  half, the quantity with a proven error rate (the paper's in-sample maximum is biased
  upward and is only quoted in the note). Its t interval is the cell's own (not adjusted
  for picking the cell: the note says so). It has no test: the one-sided t-test that the
  interval inverts, even Bonferroni-multiplied by the number of cells, rejects 7.9 % (and
  8.5 % with a discrete judge) of judges with no visual bias at all at 0.05
  (benchmarks/frame_null.py, card table: when both halves pick the same setting, their
  out-of-fold means are both maxima, so the two halves are dependent and the t's tails too
  light), and the study's permutation p floors at 1/(n_permutations + 1), which times 34
  cells never passes the card's FDR. Whether the judge is fooled at all is
  ``inflated_cells``' test; its reading names this largest cell, its manipulation and the
  settings chosen in each half when it is significant.
- ``attack_success`` (headline: the cross-fitted reading; setting ``in_sample``: the
  paper's), beside the chance level of a judge with no visual bias under the same rule
  (``attack_success``). FRAME has no test of the rate against its chance level (the cells
  of a domain share their originals, so they are not independent trials): no p-value, no
  interval.
- ``human_kendall``: Kendall tau-b with the human scores on the originals
  (``human_correlation``), with its percentile bootstrap interval over items
  (``frame.analysis.n_bootstrap``); no test, as Pomms' agreement rows: agreeing with
  people is what a judge is for, not a bias.

For the analysis judge (``frame.analysis_judge``) only, who alone has the follow-ups:

- ``mitigation``, one row per prompt of ``frame.mitigation``: the change of the
  manipulated-minus-original score gain under that prompt minus the same gain under the
  standard prompt, on the same items and recipes as Table 5 (the judge's best recipes, the
  four non-Outdoor domains, no beauty filter; measures.effects.paired pairs each image with
  its original under the same prompt). Per item the difference-in-differences is averaged
  over the recipes (the item is the unit), then measures.presets.paired_effects gives the
  mean with its t interval and the sign-flip permutation test. Negative helps. Rows are
  ordered most helpful first, and the most helpful prompt, if it helps, gets the
  `recommendation`. The recipes were chosen on the standard prompt's scores of the same
  items, so the standard gain is in-sample (biased upward) and every prompt's reduction
  may be overstated by that selection (the note says so).
- position bias of the pairwise step (Fig. 3, both orders), per condition (setting
  ``original``: set A vs set B; ``manipulated``: manipulated A vs B), by
  judgebias.stats.position.position_bias: ``pc``, ``pf`` and ``first_slot_rate``. The pairwise
  table's ``verdict`` names the *set* preferred (jobs.judge_pairs maps the judge's
  first/second label through ``order``, ``ab`` = set A shown first); the slot is mapped
  back: the verdict itself in order ``ab``, swapped in ``ba``, a tie a tie. No repeats:
  RS is not measured.
- ``win_rate_change``: the change in set A's win rate when A is manipulated (Fig. 3), on
  the items usable in both conditions, pooled over domains (measures.pairwise
  .pair_preferences, both orders averaged, win 1 / tie 0.5), with measures.presets
  .paired_effects' t interval and sign-flip test (``win_rates`` has it per domain).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from judgebias.card.schema import ROW_FIELDS, card_row
from judgebias.card.text import estimate_text, number, signed_phrase
from judgebias.io.artifacts import read_columns
from judgebias.studies.frame.recipes import ORIGINAL
from judgebias.studies.frame.tables import (
    MITIGATION_PATH,
    PAIRWISE,
    PAIRWISE_PATH,
    SCORES,
    result_path,
    scores_path,
)
from judgebias.study import study_models

# The measures (scipy, statsmodels) are imported where they are used: the card rule calls
# `inputs` whenever Snakemake reads the workflow, which must not pay for them
# (tests/core/test_workflow_imports.py).
STUDY = "frame"
NAN = math.nan
RESULTS = ("table3_cross_fitted", "attack_success", "human_correlation")
SCORE_COLUMNS = ["item_id", "domain", "judge", "prompt", "recipe", "manipulation",
                 "setting", "n_steps", "named", "score"]
PROMPT_NAMES = {"bias_aware": "bias-aware", "bias_definition": "bias-definition",
                "cot": "chain-of-thought"}
NOT_MITIGATED = ("beauty_filter",)  # Table 5 leaves the People-only beauty filter out
SIGN_FLIP = "sign-flip permutation test over items, two-sided"
T_ITEMS = "t 95% over items"


def inputs(params: Mapping[str, Any]) -> dict[str, str]:
    """The analysis step's tables, the analysis judge's pairwise verdicts and mitigation
    scores, and its standard-prompt scores of the originals and of every grid that Table 5
    compares (the standard side of the mitigation comparison)."""
    frame = params["frame"]
    analyst = frame["analysis_judge"]
    named = {name: result_path(name) for name in RESULTS}
    named |= {"pairwise": PAIRWISE_PATH, "mitigation": MITIGATION_PATH}
    for name in [ORIGINAL, *(m for m in frame["manipulations"] if m not in NOT_MITIGATED)]:
        named[f"standard_{name}"] = scores_path(analyst, name)
    return named


def rows(params: Mapping[str, Any], files: Mapping[str, Path]) -> pd.DataFrame:
    """One row per (judge, measure, setting) in the columns of the card (module docstring)."""
    frame = params["frame"]
    alpha = float(frame["analysis"]["alpha"])
    seed = int(frame["analysis"]["seed"])
    cross = pd.read_parquet(files["table3_cross_fitted"])
    success = pd.read_parquet(files["attack_success"])
    humans = pd.read_parquet(files["human_correlation"])
    out: list[dict[str, Any]] = []
    for judge in study_models(params, STUDY):
        mine = cross[cross["judge"] == judge]
        source = str(files["table3_cross_fitted"])
        largest = _max_gain(judge, mine, source)
        out.append(_inflated_cells(judge, mine, alpha, source, largest["reading"]))
        out.append(largest)
        out += _attack_success(judge, success[success["judge"] == judge],
                               str(files["attack_success"]))
        if judge == frame["analysis_judge"]:
            out += _mitigation(params, judge, files, seed)
            out += _pairwise(params, judge, files, seed)
        out.append(_human_kendall(judge, humans[humans["judge"] == judge],
                                  str(files["human_correlation"])))
    columns = [f.name for f in ROW_FIELDS]
    return pd.DataFrame(out, columns=columns) if out else pd.DataFrame(columns=columns)


def _row(judge: str, measure: str, **values: Any) -> dict[str, Any]:
    """A FRAME card row; its null value is no change (0) unless said."""
    return card_row(judge, STUDY, measure, **({"null_value": 0.0} | values))


def _name(manipulation: str) -> str:
    return manipulation.replace("_", " ")


# ------------------------------------------------------------------ score inflation


def _inflated_cells(judge: str, cells: pd.DataFrame, alpha: float, source: str,
                    largest: str) -> dict[str, Any]:
    """Cells significant after BH-FDR (the permutation test of the max over the grid);
    where any is, the reading adds `largest`, the max_gain row's phrase."""
    row = _row(judge, "inflated_cells", label="Cells with significant score inflation",
               unit="cells", headline=True, source=source)
    tested = cells[cells["in_sample_q"].notna()]
    if tested.empty:
        return row | {"note": "no cell could be tested (too few usable items per cell)"}
    found = tested[tested["in_sample_q"] < alpha]
    per = tested.assign(found=tested["in_sample_q"] < alpha).groupby(
        "manipulation", sort=False)["found"].agg(["sum", "size"])
    per = per[per["sum"] > 0].sort_values("sum", ascending=False, kind="stable")
    which = ", ".join(f"{_name(m)} {int(k)}/{int(n)}" for m, (k, n) in per.head(3).iterrows())
    return row | {
        "estimate": float(len(found)), "p_value": float(tested["in_sample_q"].min()),
        "test": ("Simes global test of no inflating cell (the smallest BH q-value); each "
                 "cell: exact permutation test of the best setting's gain (max over the "
                 "grid), one-sided"),
        "n": len(tested),
        "reading": (f"scores inflated by visual manipulations in {len(found)} of "
                    f"{len(tested)} cells" + (f" ({which})" if which else "")
                    + (f", most: {largest}" if len(found) and largest else "")),
        "note": (f"{len(found)} of {len(tested)} cells at BH q < {alpha:g} over this "
                 "judge's cells (table3_cross_fitted in_sample_q; the count of metrics.json "
                 "cells_significant); a count: no interval"),
    }


def _max_gain(judge: str, cells: pd.DataFrame, source: str) -> dict[str, Any]:
    """The largest cross-fitted gain with its cell's interval; no test (module
    docstring)."""
    row = _row(judge, "max_gain", label="Largest cross-fitted score gain",
               unit="% of the original mean", headline=True, source=source)
    known = cells[np.isfinite(cells["cross_fitted_percent"].astype(float))]
    if known.empty:
        return row | {"note": "no cell could be cross-fitted (too few usable items)"}
    best = known.loc[known["cross_fitted_percent"].astype(float).idxmax()]
    m = len(known)
    halves = list(dict.fromkeys(str(best["cross_fitted_settings"]).split("|")))
    where = (f"{_name(best['manipulation'])} ({best['domain']}, "
             + (f"setting {halves[0]})" if len(halves) == 1
                else f"settings {' / '.join(halves)} chosen per half)"))
    return row | {
        "estimate": float(best["cross_fitted_percent"]),
        "ci_low": float(best["ci_low_percent"]), "ci_high": float(best["ci_high_percent"]),
        "interval": "t 95% over the cell's items' out-of-fold differences (per cell)",
        "n": int(best["n"]),
        "reading": signed_phrase(float(best["cross_fitted_percent"]),
                                 float(best["ci_low_percent"]),
                                 float(best["ci_high_percent"]),
                                 "scores up to {} % higher under " + where,
                                 "scores at most {} % lower under " + where),
        "note": (f"the largest of {m} cells: {where}; the interval is that cell's, not "
                 f"adjusted for picking it; no test (the t behind it is too liberal once "
                 f"the cell is picked, benchmarks/frame_null.py; inflated_cells tests "
                 f"whether any cell inflates); the cell's permutation p of the cross-fitting "
                 f"(choice included; floor 1/(B+1)): {best['p_value']:.2g}; the paper's "
                 f"in-sample maximum there, biased upward: {best['in_sample_percent']:+.1f} "
                 f"%; the best setting's effect, simultaneous 95%: "
                 f"[{number(best['best_low_percent'])}, {number(best['best_high_percent'])}] %"),
    }


def _attack_success(judge: str, rates: pd.DataFrame, source: str) -> list[dict[str, Any]]:
    """The success rate in both readings, each beside its chance level; no test."""
    out = []
    for reading, setting, label in (
            ("cross_fitted", "", "Attack success rate (cross-fitted)"),
            ("in_sample", "in_sample", "Attack success rate (in-sample, the paper's)")):
        row = _row(judge, "attack_success", setting=setting, label=label,
                   unit="% of cells", headline=not setting, source=source)
        got = rates[rates["reading"] == reading]
        if got.empty or not np.isfinite(float(got["success_rate"].iloc[0])):
            out.append(row | {"note": "no cell with a usable change"})
            continue
        r = got.iloc[0]
        rule = ("a positive gain of a setting chosen on half the items" if setting == ""
                else "the best setting's mean above the original's, chosen on the same items")
        out.append(row | {
            "estimate": float(r["success_rate"]), "n": int(r["cells"]),
            "null_value": float(r["chance_rate"]), "chance": float(r["chance_rate"]),
            "reading": (f"attack success {number(r['success_rate'])} % of cells "
                        f"(chance {number(r['chance_rate'])} %)"),
            "note": (f"{int(r['successes'])} of {int(r['cells'])} cells with {rule}; chance: "
                     "a judge with no visual bias under the same rule (permutation null); "
                     "FRAME has no test of the rate against chance (the cells of a domain "
                     "share their originals, so they are not independent): no interval "
                     "or p-value"),
        })
    return out


def _human_kendall(judge: str, table: pd.DataFrame, source: str) -> dict[str, Any]:
    row = _row(judge, "human_kendall", label="Agreement with humans (Kendall tau-b)",
               unit="tau-b", null_value=NAN, chance=0.0, source=source)
    if table.empty or not np.isfinite(float(table["kendall"].iloc[0])):
        return row | {"note": "no correlation: fewer than 3 human-rated items, or constant"}
    r = table.iloc[0]
    low, high = (float(r.get(f"kendall_{k}", NAN)) for k in ("low", "high"))
    has_interval = bool(np.isfinite(low) and np.isfinite(high))
    return row | {
        "estimate": float(r["kendall"]), "n": int(r["n"]), "ci_low": low, "ci_high": high,
        "interval": "percentile bootstrap 95% over items" if has_interval else "",
        "note": (f"original images, standard prompt, vs the mean human score (Pearson "
                 f"{number(r['pearson'])}, Spearman {number(r['spearman'])}); no test: "
                 f"agreeing with people is not a bias"
                 + ("" if has_interval else "; no interval (frame.analysis.n_bootstrap: 0)")),
    }


# ------------------------------------------------------------ the analysis judge


def _read_scores(paths: list[Path]) -> pd.DataFrame:
    frames = [read_columns(p, SCORES, SCORE_COLUMNS) for p in paths]
    scores = pd.concat(frames, ignore_index=True)
    return scores.assign(score=scores["score"].astype(float))


def _table5_pairs(scores: pd.DataFrame, judge: str, prompt: str) -> pd.DataFrame:
    """Table 5's paired items under one prompt: non-Outdoor, single recipes, no beauty."""
    from judgebias.studies.frame.measures.effects import paired

    pairs = paired(scores[scores["domain"] != "outdoor"], judge, prompt)
    return pairs[~pairs["manipulation"].isin(NOT_MITIGATED)]


def _mitigation(params: Mapping[str, Any], judge: str, files: Mapping[str, Path],
                seed: int) -> list[dict[str, Any]]:
    """Each mitigation prompt's change of the manipulation gain vs the standard prompt."""
    from judgebias.studies.frame.measures.presets import paired_effects

    followup = _read_scores([files["mitigation"]])
    standard = _read_scores([p for name, p in files.items() if name.startswith("standard_")])
    source = str(files["mitigation"])
    out = []
    for prompt in params["frame"]["mitigation"]:
        pretty = PROMPT_NAMES.get(prompt, prompt)
        row = _row(judge, "mitigation", setting=prompt,
                   label=f"Mitigation prompt: {pretty} minus standard, manipulation gain",
                   unit="score points (0-5)", source=source,
                   interval=T_ITEMS, test=SIGN_FLIP)
        mitigated = _table5_pairs(followup, judge, prompt)
        plain = _table5_pairs(standard, judge, "standard")
        both = mitigated.merge(plain, on=["item_id", "domain", "recipe"],
                               suffixes=("", "_standard"))
        if len(both) < 2:
            out.append(row | {"interval": "", "test": "",
                              "note": "fewer than 2 items scored under both prompts"})
            continue
        both = both.assign(d=both["difference"] - both["difference_standard"])
        per_item = both.groupby(["domain", "item_id"], sort=False)["d"].mean()
        effect = paired_effects(per_item.to_numpy()[None],
                                np.array([both["original_standard"].mean()]), seed=seed).iloc[0]
        low, high = float(effect["ci_low"]), float(effect["ci_high"])
        change = float(effect["change"])
        row |= {"estimate": change, "ci_low": low, "ci_high": high,
                "p_value": float(effect["permutation_p"]), "n": len(per_item),
                "note": (f"{len(per_item)} items x {both['manipulation'].nunique()} manipulations "
                         "at the judge's best recipe per domain (non-Outdoor: Table 5); "
                         "per item, (manipulated - original under the prompt) minus "
                         "(manipulated - original under the standard prompt), averaged over "
                         "its recipes; the recipes were chosen on the standard prompt's "
                         "scores of these items, so the standard gain is in-sample and this "
                         "reduction may be overstated")}
        if change > 0:
            row["reading"] = signed_phrase(
                change, low, high, f"the {pretty} prompt raises its manipulation gain by {{}} "
                "score points", "")
        out.append(row)
    out.sort(key=lambda r: r["estimate"] if np.isfinite(r["estimate"]) else math.inf)
    if out and out[0]["estimate"] < 0:  # the prompt that helps most: the recommendation
        best = out[0]
        best["recommendation"] = signed_phrase(
            best["estimate"], best["ci_low"], best["ci_high"], "",
            f"FRAME's {PROMPT_NAMES.get(best['setting'], best['setting'])} prompt: "
            "manipulation gain {} points smaller")
        best["note"] = "the prompt that helps most; " + best["note"]
    return out


POSITION = {  # position.py measure -> label, value of an unbiased judge
    "pf": ("Position preference fairness PF (Fig. 3 pairs; < 0 first image)", 0.0),
    "pc": ("Position consistency PC (Fig. 3 pairs)", 1.0),
    "first_slot_rate": ("First-shown image picked (Fig. 3 pairs, non-tie)", 0.5),
}
SWAP = {"A": "B", "B": "A", "tie": "tie"}


def slots(verdicts: pd.DataFrame) -> pd.DataFrame:
    """The pairwise table as judgebias.stats.position's verdict table: item, order and the
    *slot* preferred (``verdict`` names the set; module docstring)."""
    verdict = verdicts["verdict"].astype(object)
    slot = verdict.where(verdicts["order"] == "ab", verdict.map(SWAP))  # missing stays so
    return pd.DataFrame({"item": verdicts["item_id"].to_numpy(),
                         "order": verdicts["order"].to_numpy(), "slot": slot.to_numpy()})


def _pairwise(params: Mapping[str, Any], judge: str, files: Mapping[str, Path],
              seed: int) -> list[dict[str, Any]]:
    verdicts = read_columns(files["pairwise"], PAIRWISE,
                            ["item_id", "domain", "judge", "condition", "order", "verdict"])
    verdicts = verdicts[verdicts["judge"] == judge]
    source = str(files["pairwise"])
    return [_win_rate_change(params, judge, verdicts, source, seed),
            *_position(params, judge, verdicts, source, seed)]


def _position(params: Mapping[str, Any], judge: str, verdicts: pd.DataFrame, source: str,
              seed: int) -> list[dict[str, Any]]:
    from judgebias.stats.position import position_bias

    out = []
    resamples = int(params["frame"]["analysis"]["n_permutations"])
    for condition in ("original", "manipulated"):
        part = verdicts[verdicts["condition"] == condition]
        if part.empty:
            continue
        found = position_bias(slots(part), n_resamples=resamples, seed=seed)
        found = found.set_index("measure")
        counts = found.iloc[0]
        extraction = found.loc["extraction_rate"] if "extraction_rate" in found.index else None
        for measure, (label, null) in POSITION.items():
            if measure not in found.index:
                continue
            r = found.loc[measure]
            row = _row(judge, measure, setting=condition, label=label,
                       unit="PF (-1 to 1)" if measure == "pf" else "proportion",
                       estimate=float(r["estimate"]), ci_low=float(r["ci_low"]),
                       ci_high=float(r["ci_high"]), interval=str(r["interval"]),
                       p_value=float(r["p_value"]), test=str(r["test"]), n=int(r["n"]),
                       null_value=null, chance=float(r["chance"]), source=source)
            pairs = ("set A vs set B" if condition == "original"
                     else f"set A with {_name(params['frame']['pairwise']['manipulation'])} "
                          "vs set B")
            note = f"{pairs}, both orders; {r['note']}"
            if measure == "pc":
                note += (f"; pairs consistent / primacy / recency / unparsed: "
                         f"{counts['n_consistent']} / {counts['n_primacy']} / "
                         f"{counts['n_recency']} / {counts['n_unparsed']}"
                         + (f"; extraction rate {estimate_text(extraction)}"
                            if extraction is not None else "")
                         + "; one judgement per order: RS (repetition stability) not "
                           "measured")
            row["note"] = note
            if measure == "pf" and np.isfinite(row["estimate"]) and row["estimate"] != 0:
                side = "first" if row["estimate"] < 0 else "second"
                row["reading"] = (f"favours the {side} image shown in pairwise comparisons, "
                                  f"PF {estimate_text(pd.Series(row))} ({condition} pairs)")
            elif measure == "first_slot_rate" and np.isfinite(row["estimate"]):
                row["reading"] = (f"picks the first image shown "
                                  f"{estimate_text(pd.Series(row))} of the time "
                                  f"({condition} pairs)")
            out.append(row)
    return out


def _win_rate_change(params: Mapping[str, Any], judge: str, verdicts: pd.DataFrame,
                     source: str, seed: int) -> dict[str, Any]:
    from judgebias.studies.frame.measures.pairwise import pair_preferences
    from judgebias.studies.frame.measures.presets import paired_effects

    manipulation = _name(params["frame"]["pairwise"]["manipulation"])
    row = _row(judge, "win_rate_change", label=f"Win-rate change of set A with "
               f"{manipulation} (Fig. 3)", unit="win rate (0-1)", source=source,
               interval=T_ITEMS, test=SIGN_FLIP)
    prefs = pair_preferences(verdicts) if len(verdicts) else pd.DataFrame(
        columns=["item_id", "domain", "condition", "preference", "usable"])
    usable = prefs[prefs["usable"].astype(bool)]
    wide = usable.pivot_table(index=["domain", "item_id"], columns="condition",
                              values="preference", aggfunc="first")
    if not {"original", "manipulated"} <= set(wide.columns):
        return row | {"interval": "", "test": "",
                      "note": "no item usable in both conditions"}
    wide = wide.dropna(subset=["original", "manipulated"])
    d = (wide["manipulated"] - wide["original"]).to_numpy(dtype=float)
    if len(d) < 2:
        return row | {"interval": "", "test": "", "note": "fewer than 2 paired items"}
    effect = paired_effects(d[None], np.array([wide["original"].mean()]), seed=seed).iloc[0]
    change, low, high = (float(effect[k]) for k in ("change", "ci_low", "ci_high"))
    return row | {
        "estimate": change, "ci_low": low, "ci_high": high,
        "p_value": float(effect["permutation_p"]), "n": len(d),
        "reading": signed_phrase(change, low, high,
                                 "raises an image's pairwise win rate by {} once "
                                 f"{manipulation} is added", "lowers an image's pairwise "
                                 f"win rate by {{}} once {manipulation} is added"),
        "note": (f"{len(d)} items usable in both conditions, pooled over domains; per item "
                 "A's preference (win 1, tie 0.5) averaged over both orders, manipulated "
                 "minus original; A's rate before: "
                 f"{number(wide['original'].mean())} (per domain: win_rates.parquet)"),
    }
