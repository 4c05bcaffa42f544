"""The recorded study's artifacts and where each file lives (rules and steps take paths
from here only). Its outputs are the measures' own tables (each module's columns), one
folder per recorded table."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from judgebias.study import ReportInputs

RESULTS = "results/recorded"
SCORE_TABLES = ("self_preference", "philautia", "agreement")
PAIRWISE_TABLES = ("position", "accuracy")


def table_dir(name: str) -> str:
    return f"{RESULTS}/{name}"


def metrics_path(name: str) -> str:
    return f"{table_dir(name)}/metrics.json"


def measures_path(name: str) -> str:
    """Every measure of the table in one Parquet file, a ``table`` column naming which
    (self_preference, philautia, agreement / position, accuracy): one output per job,
    whichever measures its side files allow."""
    return f"{table_dir(name)}/measures.parquet"


def figure_path(name: str) -> str:
    return f"{table_dir(name)}/headline.png"


def report_inputs(params: Mapping[str, Any]) -> ReportInputs:
    return ReportInputs([path for n in params["recorded"]["tables"]
                         for path in (measures_path(n), figure_path(n))])
