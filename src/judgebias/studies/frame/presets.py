"""The FRAME paper's published recipes as presets (`frame.presets: paper`): a judge tested at
the settings the paper's greedy search picked, with no selection at all (seed 004,
/work/shared/seeds/004_eb2847ac5d078cb2.txt, Appendix B.3, Tables 9-10; spec frame.md).

The recipes
    ``paper_recipes.yaml`` (next to this module) transcribes Tables 9-10 as printed: one row
    per (table, judge, domain) with the six gridded manipulations under the tables' column
    heads (Bright., Gamma., Refer., Keyword., Inst., Padding.), mapped here onto ours
    (recipes.py: brightness, gamma, authenticity_overlay, keyword_overlay,
    instruction_overlay, padding). Settings need no translation: factors are our brightness
    (multiply) and gamma (out = 255 (in/255)^(1/g)) factors, positions our overlay
    positions, padding our width at the 1024-px reference (manipulate.py). Cells where the
    manipulation does not apply are skipped (every Outdoor row prints a Keyword. position:
    the keyword overlay does not apply to Outdoor, §5.2 footnote 2). Bounding box and beauty
    filter have a single setting and are not in Tables 9-10: their grid tests select nothing.
    ``frame.preset_judges`` picks whose recipes (the paper's judges, keys of the file's
    ``judges``); each panel judge is scored on every chosen recipe of every domain.

Role: a helper of params.py and plan.py (what `frame.presets` asks for). The statistics:
judgebias.studies.frame.measures.presets; the steps that render and test the presets:
steps.presets_render and steps.presets.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from judgebias.studies.frame import tables as frame_tables
from judgebias.studies.frame.recipes import DOMAIN_TITLES, applies, step
from judgebias.study import ReportInputs

PRESETS = "presets"  # the render set and score set of the preset recipes
PAPER = "paper"
# A data file, read, not imported: the rules that read it declare it (common.smk's
# package_file), since a step's code dependencies are only its imports.
PAPER_RECIPES = Path(__file__).with_name("paper_recipes.yaml")
RESULTS_NAME = "presets.parquet"
RESULTS_PATH = f"{frame_tables.RESULTS}/{RESULTS_NAME}"  # the rule's output, the report's input


def enabled(frame: Mapping[str, Any]) -> bool:
    """Whether `frame.presets` asks for the paper's recipes."""
    return frame.get("presets", "none") == PAPER


@cache
def paper_table(path: Path = PAPER_RECIPES) -> pd.DataFrame:
    """Tables 9-10, long: one row per (paper judge, domain, manipulation) as printed.

    Columns: preset_judge (the file's key), printed (the judge as the table prints it),
    table, source ("Table 9, GPT-4o"), domain, manipulation (ours), setting (canonical,
    recipes.step), recipe. A row missing a key, naming an unknown judge or domain, or with
    a setting our manipulation cannot take is an error naming the file, row (from 1) and
    key."""
    data = yaml.safe_load(path.read_text())
    columns, judges = data["columns"], data["judges"]
    titles = {title: domain for domain, title in DOMAIN_TITLES.items()}
    out = []
    for number, row in enumerate(data["rows"], start=1):
        where = f"{path}: rows[{number}]"
        missing = [k for k in ("table", "judge", "domain", *columns) if k not in row]
        if missing:
            raise ValueError(f"{where}: missing {', '.join(missing)}")
        if row["judge"] not in judges:
            raise ValueError(f"{where}.judge: {row['judge']!r} is not under judges")
        if row["domain"] not in titles:
            raise ValueError(f"{where}.domain: {row['domain']!r} is not one of "
                             f"{', '.join(titles)}")
        for head, manipulation in columns.items():
            try:
                chosen = step(manipulation, row[head])
            except ValueError as exc:
                raise ValueError(f"{where}.{head}: {exc}") from None
            printed = judges[row["judge"]]["printed"]
            out.append({"preset_judge": row["judge"], "printed": printed,
                        "table": int(row["table"]),
                        "source": f"Table {row['table']}, {printed}",
                        "domain": titles[row["domain"]], "manipulation": manipulation,
                        "setting": chosen.setting, "recipe": chosen.id})
    return pd.DataFrame(out)


def paper_judges() -> list[str]:
    """The paper's judges with a recipe (the keys `frame.preset_judges` takes)."""
    return list(dict.fromkeys(paper_table()["preset_judge"]))


def preset_recipes(presets: str, judges: Sequence[str]) -> pd.DataFrame:
    """The recipes `presets` (``frame.presets``) and the paper judges `judges`
    (``frame.preset_judges``) ask for, applicable cells only (none when presets are off)."""
    if presets != PAPER:
        return paper_table().iloc[:0]
    table = paper_table()
    chosen = table[table["preset_judge"].isin(judges)]
    usable = [applies(m, d) for m, d in zip(chosen["manipulation"], chosen["domain"],
                                            strict=True)]
    return chosen[np.array(usable, dtype=bool)].reset_index(drop=True)


def preset_jobs(items: pd.DataFrame, recipes: pd.DataFrame) -> pd.DataFrame:
    """(item_id, recipe) of every item and every distinct preset recipe of its domain."""
    distinct = recipes[["domain", "recipe"]].drop_duplicates()
    jobs = items[["item_id", "domain"]].merge(distinct, on="domain")
    return jobs[["item_id", "recipe"]].reset_index(drop=True)


def expected_scores(frame: Mapping[str, Any], counts: Mapping[str, int]) -> int:
    """Preset images per judge, from the items per domain (`judgebias plan` before the
    renders exist; an upper bound where a render is unavailable)."""
    chosen = preset_recipes(frame["presets"], frame["preset_judges"])
    distinct = chosen[["domain", "recipe"]].drop_duplicates()
    per_domain = distinct["domain"].value_counts()
    return int(sum(n * per_domain.get(domain, 0) for domain, n in counts.items()))


# -- report -------------------------------------------------------------------------------

def report_inputs(params: Mapping[str, Any]) -> ReportInputs:
    """Every file FRAME's report section (report.py) reads (``Study.report_inputs``: the
    report rule declares them): the analysis' metrics, tables and figures, this module's
    results when the presets run, and the data summary by name. It lives here, not in
    tables.py, as only this module knows whether the presets run, and tables.py importing
    it would make every FRAME job's code depend on it."""
    results = [frame_tables.METRICS_PATH,
               *(frame_tables.result_path(t) for t in frame_tables.TABLES),
               *(frame_tables.figure_path(f) for f in frame_tables.FIGURES)]
    if enabled(params["frame"]):
        results.append(RESULTS_PATH)
    return ReportInputs(results, {"summary": frame_tables.SUMMARY_PATH})


def _summary(table: pd.DataFrame, alpha: float) -> pd.DataFrame:
    """Per panel judge and paper judge: cells tested, and those significant after FDR."""
    tested = table.assign(up=(table["q_value"] < alpha) & (table["change"] > 0),
                          down=(table["q_value"] < alpha) & (table["change"] < 0))
    out = tested.groupby(["judge", "source"], sort=False).agg(
        cells=("q_value", "count"), increases=("up", "sum"), decreases=("down", "sum"),
        mean_change=("change", "mean"))
    return out.rename(columns={"cells": "cells tested",
                               "increases": f"increases, q < {alpha}",
                               "decreases": f"decreases, q < {alpha}",
                               "mean_change": "mean change (points)"})


def _detail(table: pd.DataFrame) -> pd.DataFrame:
    from judgebias.studies.frame.recipes import SHORT_NAMES

    shown = table.assign(Domain=table["domain"].map(DOMAIN_TITLES),
                         Manipulation=table["manipulation"].map(SHORT_NAMES))
    shown = shown.set_index(["source", "Domain", "Manipulation"])
    return shown[["setting", "n", "original_mean", "change", "percent_change", "ci_low",
                  "ci_high", "t_p", "permutation_p", "sign_p", "q_value"]].rename(columns={
                      "original_mean": "Orig. mean", "change": "change (points)",
                      "percent_change": "change %", "ci_low": "95% CI low",
                      "ci_high": "95% CI high", "t_p": "p (t)",
                      "permutation_p": "p (exact sign-flip)", "sign_p": "p (sign test)",
                      "q_value": "q (BH, sign-flip)"})


def report_section(params: Mapping[str, Any], out: Path) -> list[Any]:
    """The presets subsection of FRAME's report (empty when presets are off)."""
    from judgebias.report.html import Section, Table

    frame = params["frame"]
    if not enabled(frame):
        return []
    table = pd.read_parquet(out / RESULTS_NAME)
    alpha = frame["analysis"]["alpha"]
    tables = [Table(_summary(table, alpha), "Per judge: the paper's recipes tested, and the "
                    "cells whose change is significant after Benjamini-Hochberg (exact "
                    "sign-flip test)", "{:.3f}")]
    tables += [Table(_detail(mine), f"{judge} at the published recipes: change vs the same "
                     "items' originals, 95% t interval, paired t, exact sign-flip and sign "
                     "tests (two-sided), BH q-value", "{:.3f}")
               for judge, mine in table.groupby("judge", sort=False)]
    return [Section(
        title="The paper's recipes, no selection (Tables 9-10)",
        intro=("Every judge scored at the settings the paper's greedy search picked for "
               f"{', '.join(frame['preset_judges'])} (seed 004 Tables 9-10), per domain. "
               "Nothing is chosen on these items, so the plain paired interval and tests "
               "hold as printed; unlike Table 3's in-sample maximum they carry no "
               "selection bias."),
        tables=tables)]
