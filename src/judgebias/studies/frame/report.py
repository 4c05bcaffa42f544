"""FRAME's part of the HTML report (seed 004 Tables 2-7, 9-12, Figs. 2-3), read from the
files `presets.report_inputs` lists (the study's report_inputs hook), which the report
rule declares."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from judgebias.judging.values import PARSED_VERDICTS, failed_note
from judgebias.report.html import Figure, Section, Table
from judgebias.studies.frame import presets
from judgebias.studies.frame.recipes import DOMAIN_TITLES, SHORT_NAMES, TABLE_ORDER
from judgebias.studies.frame.tables import TABLES

PROMPT_TITLES = {"standard": "Standard", "bias_aware": "Bias-aware",
                 "bias_definition": "Bias-def.", "cot": "CoT"}


# Displayed headers (the parquet files keep their column names).
CORRELATION_COLUMNS = {
    "n": "items", "pearson": "Pearson r", "spearman": "Spearman ρ", "kendall": "Kendall τ",
    "kendall_low": "Kendall τ low (95%)", "kendall_high": "Kendall τ high (95%)",
    "slope_on_human": "slope on human", "slope_on_human_se": "slope on human (se)",
    "n_alignment": "items with alignment", "slope_on_alignment": "slope on alignment",
    "slope_on_alignment_se": "slope on alignment (se)"}


# The per-cell statistics table (effects.cross_fitted_table's columns, as displayed).
NULL_COLUMNS = {
    "in_sample_setting": "best setting (in-sample)", "in_sample_gain": "in-sample gain",
    "null_q95": "null 95th pct.", "in_sample_p": "p (max over grid)",
    "in_sample_q": "q (BH-FDR)", "chance_in_sample": "chance (in-sample)",
    "cross_fitted_gain": "gain of a setting chosen on half the items",
    "ci_low": "its 95% CI low", "ci_high": "its 95% CI high", "p_value": "p (cross-fit)",
    "chance_cross_fitted": "chance (half-chosen)",
    "best_low": "best setting's effect: 95% low", "best_high": "best setting's effect: 95% high"}
READINGS = {"in_sample": "in-sample, the paper's",
            "cross_fitted": "a setting chosen on half the items"}
RATES = {"success_rate": "success rate %", "chance_rate": "chance %",
         "mean_gain": "mean gain %"}


def _cell(mean: float | None, change: float | None) -> str:
    """"mean (change %)", or "-" where there is no mean (a judge without usable answers)."""
    if pd.isna(mean) or pd.isna(change):
        return "-"
    return f"{mean:.2f} ({change:+.1f}%)"


def table3(change: pd.DataFrame, mean: str, percent: str) -> pd.DataFrame:
    """Table 3's layout for one judge: rows domains, columns Orig. and each manipulation,
    cells "mean (change %)"."""
    rows = {}
    for domain in DOMAIN_TITLES:
        part = change[change["domain"] == domain].set_index("manipulation")
        if part.empty:
            continue
        row = {"Orig.": f"{part['original_mean'].iloc[0]:.2f}"}
        for m in TABLE_ORDER:
            row[SHORT_NAMES[m]] = (_cell(part.loc[m, mean], part.loc[m, percent])
                                   if m in part.index else "-")
        rows[DOMAIN_TITLES[domain]] = row
    return pd.DataFrame.from_dict(rows, orient="index")


def _cross_means(cross: pd.DataFrame) -> pd.DataFrame:
    return cross.assign(cross_mean=cross["original_mean"] + cross["cross_fitted_gain"])


def report_section(params: Mapping[str, Any], out: Path, data: Mapping[str, Path]) -> Section:
    """FRAME's part of the HTML report, from its results folder `out` and the data summary
    `data` names (presets.report_inputs)."""
    frame = params["frame"]
    metrics = json.loads((out / "metrics.json").read_text())
    summary = json.loads(data["summary"].read_text())
    read = {name: pd.read_parquet(out / f"{name}.parquet") for name in TABLES}
    analyst = frame["analysis_judge"]
    judges = []
    for judge in frame["models"]:
        in_sample = read["table3_in_sample"][read["table3_in_sample"]["judge"] == judge]
        cross = _cross_means(read["table3_cross_fitted"][
            read["table3_cross_fitted"]["judge"] == judge])
        recipes = read["recipes"][read["recipes"]["judge"] == judge].pivot(
            index="domain", columns="manipulation", values="setting")
        recipes = recipes.rename(index=DOMAIN_TITLES, columns=SHORT_NAMES)
        null = cross.assign(Domain=cross["domain"].map(DOMAIN_TITLES),
                            Manipulation=cross["manipulation"].map(SHORT_NAMES))
        null = null.set_index(["Domain", "Manipulation"])[list(NULL_COLUMNS)].rename(
            columns=NULL_COLUMNS)
        judges.append(Section(
            title=f"Judge {judge}",
            tables=[
                Table(table3(in_sample, "manipulated_mean", "percent_change"),
                      f"Table 3 analogue ({judge}), the paper's reading: mean score of the "
                      "best setting chosen on the same items (change vs originals)"),
                Table(table3(cross, "cross_mean", "cross_fitted_percent"),
                      f"Table 3 analogue ({judge}), cross-fitted: the gain of a setting "
                      "chosen on half the items (chosen on one half, scored on the other, "
                      "swapped and averaged); not the best setting's effect, which the "
                      "simultaneous interval below bounds"),
                Table(null, f"Per cell ({judge}; score points): the in-sample maximum vs "
                      "its permutation null (each item's versions exchanged), p and "
                      "Benjamini-Hochberg q; the chance that a judge with no visual bias "
                      "'succeeds' under each rule; the gain of a setting chosen on half the "
                      "items with its t-interval; and a simultaneous 95% interval for the "
                      "best setting's true effect (max-t over the grid)", "{:.3f}"),
                Table(recipes, f"Tables 9-10 analogue ({judge}): the best setting per domain "
                      "and manipulation (greedy search)"),
            ]))
    success = read["attack_success"].pivot(index="judge", columns="reading",
                                           values=list(RATES))
    success.columns = [f"{RATES[a]} ({READINGS[b]})" for a, b in success.columns]
    corr = read["human_correlation"].set_index("judge").rename(columns=CORRELATION_COLUMNS)
    significance = read["significance"]
    alpha = frame["analysis"]["alpha"]
    tests = significance.groupby("judge").agg(
        tests=("q_value", "size"),
        q_below_alpha=("q_value", lambda q: int((q < alpha).sum()))
    ).rename(columns={"q_below_alpha": f"q < {alpha}"})
    tables = [
        Table(success, "Fig. 2 analogue: attack success rate (share of the applicable "
              "domain x manipulation cells with a strictly positive change), beside the "
              "chance level a judge with no visual bias has under the same rule (S/(S+1) "
              "per cell for the best of S settings with continuous scores, less with "
              "ties; about 1/2 for a setting chosen on half the items), and mean % change "
              "of the successful cells", "{:.1f}"),
        Table(tests, "Paired Wilcoxon tests of every (domain, manipulation, setting), "
              "Benjamini-Hochberg q-values (beyond the paper)", "{:.0f}"),
        Table(_win_rates(read["win_rates"]), f"Fig. 3 analogue ({analyst}): win rates of "
              "set A vs set B (both orders averaged; win 1, tie 0.5)", "{:.3f}"),
        Table(read["table2"].set_index("domain"), "Table 2 analogue: human score "
              "distribution (bins [1,2), [2,3), [3,4), [4,5])", "{:.2f}"),
        Table(read["table7"].set_index("domain").rename(columns=CORRELATION_COLUMNS),
              "Table 7 analogue: inter-annotator agreement", "{:.3f}"),
        Table(corr, "Each judge's agreement with the human scores on the originals "
              "(beyond the paper)", "{:.3f}"),
        Table(_table4(read["table4"]), "Table 4 analogue: the beauty filter (People)"),
        Table(_table5(read["table5"]), f"Table 5 analogue ({analyst}): mitigation prompts, "
              "mean over the four non-Outdoor domains"),
        Table(_table6(read["table6"]), f"Table 6 analogue ({analyst}): best single, pair "
              "and triple of the best recipes (the chosen recipes: Table 11)"),
        Table(read["answers"].set_index(["judge", "prompt"]), "Answers per judge and "
              "prompt by status (an unusable answer is never a score)", "{:.0f}"),
    ]
    gallery = Section(
        title="Example images",
        figures=[Figure(out / "figures/examples.png", "Example images: each manipulation "
                        f"at {analyst}'s best setting, with every judge's score (0-5) "
                        "under each image")])
    return Section(
        title="FRAME: visual manipulations that inflate LVLM judges' scores",
        headline=headline(metrics, read["table3_cross_fitted"], alpha),
        intro=(f"Seed 004. {summary['description']} ({summary['items']} items). Every judge "
               "scores every original and every manipulated image (Appendix B.3 grids) "
               "with the Fig. 4 prompt; the paper's Table 3 picks each cell's best setting "
               "on the same items it reports, which gains even for a judge with no "
               "susceptibility (S/(S+1) of the time with S settings), so each number "
               "sits beside its chance level, the in-sample maximum beside its "
               "permutation null, and the gain of a setting chosen on half the items "
               "beside a simultaneous interval for the best setting's effect."),
        figures=[Figure(out / "figures/fig2.png", "Fig. 2 analogue: attack success rate "
                        "and mean gain per judge, in-sample and cross-fitted"),
                 Figure(out / "figures/null.png", "In-sample maximum vs its null and the "
                        "cross-fitted gain, per cell"),
                 Figure(out / "figures/fig3.png", "Fig. 3 analogue: pairwise win rates")],
        tables=tables,
        notes=[PARSED_VERDICTS, *failed_note(metrics.get("failed_calls", {}))],
        subsections=[gallery, *judges, *presets.report_section(params, out)],
    )


def _rate(value: float | None) -> str:
    """A percentage, or a dash where there is none (too few items to cross-fit)."""
    return "–" if value is None or math.isnan(value) else f"{value:.0f}%"


def headline(metrics: Mapping[str, Any], cross: pd.DataFrame, alpha: float) -> str:
    """The result in two sentences: per judge, the cells whose score inflation is
    significant after Benjamini-Hochberg FDR (0 expected for a judge with no visual bias);
    then the attack success rates, each beside its chance level: the paper's in-sample
    reading and the gain of a setting chosen on half the items."""
    cells = cross.groupby("judge").size()
    found = "; ".join(f"{judge} {m['cells_significant']} of {int(cells.get(judge, 0))}"
                      for judge, m in metrics["judges"].items())
    rates = "; ".join(
        f"{judge} {_rate(m.get('attack_success_in_sample'))} "
        f"(chance {_rate(m.get('chance_in_sample'))}) → "
        f"{_rate(m.get('attack_success_cross_fitted'))} "
        f"(chance {_rate(m.get('chance_cross_fitted'))})"
        for judge, m in metrics["judges"].items())
    return (f"Cells significant after BH-FDR at {alpha} (the best setting's gain vs its "
            f"permutation null): {found}. Attack success, the paper's in-sample reading → "
            f"a setting chosen on half the items, each with a no-bias judge's chance: "
            f"{rates}.")


def _table4(table: pd.DataFrame) -> pd.DataFrame:
    return table.set_index("judge")[["original_mean", "manipulated_mean", "percent_change"]
                                    ].rename(columns={"original_mean": "Orig.",
                                                      "manipulated_mean": "Beauty.",
                                                      "percent_change": "change %"})


def _table5(table: pd.DataFrame) -> pd.DataFrame:
    cells = table.assign(cell=[_cell(m, c) for m, c in zip(table["manipulated_mean"],
                                                            table["percent_change"],
                                                            strict=True)])
    wide = cells.pivot(index="manipulation", columns="prompt", values="cell")
    order = ["original", *[m for m in TABLE_ORDER if m in wide.index]]
    wide = wide.reindex(order).rename(index={"original": "Orig.", **SHORT_NAMES})
    return wide[[p for p in PROMPT_TITLES if p in wide.columns]].rename(columns=PROMPT_TITLES)


def _table6(table: pd.DataFrame) -> pd.DataFrame:
    names = {1: "+Single", 2: "+Dual", 3: "+Triple"}
    rows = {}
    for domain, part in table.groupby("domain", sort=False):
        row = {"Orig.": f"{part['original_mean'].iloc[0]:.2f}"}
        for n_steps, name in names.items():
            got = part[part["n_steps"] == n_steps]
            row[name] = (_cell(got["manipulated_mean"].iloc[0], got["percent_change"].iloc[0])
                         if len(got) else "-")
            row[f"{name} recipe"] = got["recipe"].iloc[0] if len(got) else "-"
        rows[DOMAIN_TITLES.get(domain, domain)] = row
    return pd.DataFrame.from_dict(rows, orient="index")


def _win_rates(table: pd.DataFrame) -> pd.DataFrame:
    keep = ["a_win_rate", "b_win_rate", "share_tie", "n_items", "change", "p_change"]
    out = table.assign(Domain=table["domain"].map(DOMAIN_TITLES)).set_index(
        ["Domain", "condition"])[keep]
    return out.rename(columns={"a_win_rate": "A win rate", "b_win_rate": "B win rate",
                               "share_tie": "tie share", "n_items": "items",
                               "change": "change in A's rate", "p_change": "p (sign flip)"})

