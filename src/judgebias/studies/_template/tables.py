"""The template study's artifacts: the schema of every table it writes, and where each
file lives (rules and steps take paths from here only)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from judgebias.io.artifacts import ANSWER_FIELDS, CALL_FIELDS, table_schema
from judgebias.study import ReportInputs

# One row per synthetic answer: its text, its quality (facts it states) and its length.
ANSWERS = table_schema("_template_answers", [
    pa.field("item_id", pa.string(), nullable=False),
    pa.field("answer", pa.string(), nullable=False),
    pa.field("n_facts", pa.int64(), nullable=False),
    pa.field("n_words", pa.int64(), nullable=False),
])

# One row per (answer, judge): the judge's reply, its parsed score and its status.
SCORES = table_schema("_template_scores", [
    pa.field("item_id", pa.string(), nullable=False),
    pa.field("judge", pa.string(), nullable=False),
    *ANSWER_FIELDS,
    *CALL_FIELDS,
])

DATA = "data/_template"
RESULTS = "results/_template"
ANSWERS_PATH = f"{DATA}/answers.parquet"
METRICS = f"{RESULTS}/metrics.json"
SLOPES = f"{RESULTS}/slopes.parquet"


def scores_path(judge: str) -> str:
    return f"{DATA}/scores/{judge}.parquet"


def report_inputs(params: Mapping[str, Any]) -> ReportInputs:
    """Every file the report section (report.py) reads (``Study.report_inputs``: the report
    rule declares them): those of its results folder, and by name in ``data`` any outside
    it, e.g. a data summary."""
    return ReportInputs([SLOPES])
