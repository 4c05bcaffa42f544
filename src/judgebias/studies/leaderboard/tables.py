"""The leaderboard study's artifacts: the schema of every table it writes and where each
file lives (rules and steps take paths from here only)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from judgebias.io.artifacts import ANSWER_FIELDS, CALL_FIELDS, table_schema
from judgebias.study import ReportInputs

# One row per (image, system): the system's caption, or why there is none ("no_caption":
# a model system's call failed, kept as a failure), where it came from, and, where the
# image's scene is known (synthetic images), the caption's true accuracy.
OUTPUTS = table_schema("leaderboard_outputs", [
    pa.field("image_id", pa.string(), nullable=False),
    pa.field("system", pa.string(), nullable=False),
    pa.field("caption", pa.string(), nullable=True),
    pa.field("status", pa.string(), nullable=False),
    pa.field("source", pa.string(), nullable=False),  # model | synthetic | table
    pa.field("accuracy", pa.float64(), nullable=True),
])

# One row per (image, system, judge): the judge's answer to the task's prompt.
SCORES = table_schema("leaderboard_scores", [
    pa.field("image_id", pa.string(), nullable=False),
    pa.field("system", pa.string(), nullable=False),
    pa.field("judge", pa.string(), nullable=False),
    *ANSWER_FIELDS,
    *CALL_FIELDS,
])

# One row per labelled (image, system): the human label on the task's label scale.
LABELS = table_schema("leaderboard_labels", [
    pa.field("image_id", pa.string(), nullable=False),
    pa.field("system", pa.string(), nullable=False),
    pa.field("label", pa.float64(), nullable=False),
])

DATA = "data/leaderboard"
RESULTS = "results/leaderboard"
RESULT_TABLES = ("systems", "pairs", "ppi", "changes")


def images_table(task: str) -> str:
    return f"{DATA}/{task}/images.parquet"


def images_dir(task: str) -> str:
    return f"{DATA}/{task}/images"


def generated_path(task: str, generator: str) -> str:
    """A model system's captions of the task's images (philautia's captions table)."""
    return f"{DATA}/{task}/generated/{generator}.parquet"


def outputs_path(task: str) -> str:
    return f"{DATA}/{task}/outputs.parquet"


def labels_path(task: str) -> str:
    return f"{DATA}/{task}/labels.parquet"


def scores_path(task: str, judge: str) -> str:
    return f"{DATA}/{task}/scores/{judge}.parquet"


def result_path(task: str, table: str) -> str:
    """Result table `table` of `task` (one of RESULT_TABLES)."""
    return f"{RESULTS}/{task}/{table}.parquet"


def metrics_path(task: str) -> str:
    return f"{RESULTS}/{task}/metrics.json"


def figure_path(task: str) -> str:
    return f"{RESULTS}/{task}/figures/leaderboard.png"


def report_inputs(params: Mapping[str, Any]) -> ReportInputs:
    """Every task's result tables (the report rule declares them)."""
    tasks = params["leaderboard"]["tasks"]
    return ReportInputs([*(result_path(task, table) for task in tasks
                           for table in RESULT_TABLES),
                         *(figure_path(task) for task in tasks)])
