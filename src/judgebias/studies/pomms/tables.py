"""Pomms' artifacts: schemas and where each one lives."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from judgebias.io.artifacts import ANSWER_FIELDS, CALL_FIELDS, table_schema
from judgebias.study import ReportInputs

# One row per human rating of a caption-judgement dataset (seed 000 §6.3).
JUDGEMENTS = table_schema("judgements", [
    pa.field("item_id", pa.string(), nullable=False),
    pa.field("dataset", pa.string(), nullable=False),
    pa.field("image_id", pa.string(), nullable=False),
    pa.field("image_path", pa.string(), nullable=True),  # None: no pixels imported
    # sha256 of the image file's bytes (judgebias.io.filedigest; None with image_path): a
    # replaced image changes the table, so `dvc repro` reruns the judges after it
    pa.field("image_sha256", pa.string(), nullable=True),
    pa.field("candidate", pa.string(), nullable=False),
    pa.field("references", pa.list_(pa.string()), nullable=False),
    pa.field("human_score", pa.float64(), nullable=False),
    pa.field("rater", pa.int64(), nullable=False),
    pa.field("split", pa.string(), nullable=False),
])

# One row per (judgement item, evaluator, setting): the judge's answer and its score.
ITEM_SCORES = table_schema("item_scores", [
    pa.field("item_id", pa.string(), nullable=False),
    pa.field("dataset", pa.string(), nullable=False),
    pa.field("evaluator", pa.string(), nullable=False),
    pa.field("setting", pa.string(), nullable=False),
    *ANSWER_FIELDS,
    *CALL_FIELDS,
])

RESULTS = "results/pomms"
TABLES = ("steps", "table1", "table2", "phi_tilde", "agreement")
METRICS = f"{RESULTS}/metrics.json"
HEATMAP = f"{RESULTS}/figures/phi_tilde_pomms.png"
# The fitted ensemble, loadable without executing code (judgebias.io.saved;
# `judgebias.load(ENSEMBLE)`), with its model card inside, and that card as Markdown.
ENSEMBLE = f"{RESULTS}/ensemble.json"
ENSEMBLE_CARD = f"{RESULTS}/ensemble.md"


def table_path(table: str) -> str:
    return f"{RESULTS}/{table}.parquet"


def judgements_path(dataset: str) -> str:
    return f"data/judgements/{dataset}.parquet"


def judgement_images(dataset: str) -> str:
    return f"data/judgements/{dataset}"


def item_scores_path(setting: str, dataset: str, evaluator: str) -> str:
    return f"data/item_scores/{setting}/{dataset}/{evaluator}.parquet"


def report_inputs(params: Mapping[str, Any]) -> ReportInputs:
    """Every file the report section (report.py) reads (``Study.report_inputs``: the report
    rule declares them)."""
    return ReportInputs([METRICS, HEATMAP, *(table_path(t) for t in TABLES)])
