"""The leaderboard's part of the HTML report: per task, every method's leaderboard beside
the plain judge's, the order changes in words, what the human labels buy, and on an
images task the triage of the compared pairs. It reads only the files
`tables.report_inputs` lists, which the report rule declares."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from judgebias.report.html import Figure, Section, Table
from judgebias.stats.ppi_power import few_labels


def _interval(frame: pd.DataFrame, value: str, low: str = "low", high: str = "high"
              ) -> pd.Series:
    return frame.apply(lambda r: f"{r[value]:.3g} [{r[low]:.3g}, {r[high]:.3g}]", axis=1)


def report_section(params: Mapping[str, Any], results: Path,
                   data: Mapping[str, Path]) -> Section:
    board = params["leaderboard"]
    tables, figures, lines = [], [], []
    for task, spec in board["tasks"].items():
        folder = results / task
        systems = pd.read_parquet(folder / "systems.parquet")
        changes = pd.read_parquet(folder / "changes.parquet")
        ppi = pd.read_parquet(folder / "ppi.parquet")
        shown = systems.assign(
            score=_interval(systems, "mean"),
            rank_range=systems.apply(lambda r: f"{int(r['rank_low'])}-{int(r['rank_high'])}",
                                     axis=1))
        wide = shown.pivot(index="system", columns="method", values="score")
        ranks = shown.pivot(index="system", columns="method", values="rank_range")
        what = "win rate" if spec["kind"] in ("images", "vqa") else "mean score"
        tables.append(Table(wide, f"{task}: {what} per system and method, with its 95% "
                                  "paired bootstrap interval (units: see below)"))
        figures.append(Figure(folder / "figures/leaderboard.png",
                              f"{task}: each method's means and intervals"))
        tables.append(Table(ranks, f"{task}: rank intervals (1 = best)"))
        units = systems.drop_duplicates("method").set_index("method")["unit"]
        tables.append(Table(units.to_frame(), f"{task}: each method's unit"))
        if len(changes):
            lines += [f"{task}: {text}." for text in changes["text"]]
        else:
            lines.append(f"{task}: every method orders the systems as the plain judge "
                         f"{board['baseline']} does.")
        if len(ppi):
            warning = few_labels(int(ppi.loc[ppi["estimator"] == "ppi++", "n_labelled"].min()))
            if warning is not None:
                lines.append(f"{task}: {warning}")
            means = ppi[ppi["target"] == "mean"].assign(
                interval=lambda f: _interval(f, "estimate", "ci_low", "ci_high"))
            tables.append(Table(
                means.pivot_table(index=["method", "system"], columns="estimator",
                                  values="interval", aggfunc="first"),
                f"{task}: with the human labels: judge-only, human-only and PPI++ "
                "(arXiv 2311.01453) intervals of each system's mean"))
        if spec["kind"] == "images":
            tables += _triage_tables(task, pd.read_parquet(folder / "triage.parquet"))
    return Section(
        title="Leaderboard: your systems ranked by a judge you can trust",
        headline=" ".join(lines),
        intro=("Each method's mean score per system over the task's images, with paired "
               "bootstrap intervals (items resampled, every system together; on an images "
               "or vqa task a system's score on an item is its win rate over the others), rank "
               "intervals from the same resamples, and pairwise differences with BH-FDR "
               f"(results/leaderboard/<task>/pairs.parquet). The baseline is the plain "
               f"judge {board['baseline']}; a change in order is named above."),
        tables=tables,
        figures=figures,
    )


def _triage_tables(task: str, triage: pd.DataFrame) -> list[Table]:
    """Per mmb method: the certified threshold for its target accuracy, how many compared
    pairs the judge decides and how many it leaves for humans (the list:
    triage.parquet)."""
    if triage.empty:
        return []
    counts = triage.groupby("method").agg(
        target_accuracy=("target_accuracy", "first"), threshold=("threshold", "first"),
        pairs=("pair_id", "size"), decided=("decided", "sum"))
    counts["for_humans"] = counts["pairs"] - counts["decided"]
    return [Table(counts, f"{task}: triage (spec leaderboard.md): the confidence threshold "
                          "the MMB audit certifies for the target accuracy (Learn then Test; "
                          "none: no threshold certified, every pair goes to humans), the "
                          "pairs the judge decides and those left for humans "
                          f"(results/leaderboard/{task}/triage.parquet)")]
