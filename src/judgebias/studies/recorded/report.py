"""The recorded study's part of the HTML report: each table's measures, as computed."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from judgebias.report.html import Figure, Section, Table


def report_section(params: Mapping[str, Any], results: Path,
                   data: Mapping[str, Path]) -> Section:
    tables, figures = [], []
    for name, spec in params["recorded"]["tables"].items():
        figures.append(Figure(results / name / "headline.png",
                              f"{name}: each judge's headline measure with its interval"))
        measures = pd.read_parquet(results / name / "measures.parquet")
        for kind, group in measures.groupby("table", sort=False):
            shown = group.drop(columns=["table"]).dropna(axis="columns", how="all")
            tables.append(Table(shown, f"{name} ({spec['kind']}, {spec['path']}): {kind}"))
    return Section(
        title="Recorded judgements",
        headline="The audit's measures on judgements recorded elsewhere (no model called).",
        intro=("Scores tables: self- and family-preference (philautia's estimator), the "
               "philautia score on the square sub-panel, agreement with human ratings. "
               "Pairwise tables: position consistency and fairness, accuracy against "
               "human preferences and the informativeness bias (BIRCH)."),
        figures=figures,
        tables=tables,
    )
