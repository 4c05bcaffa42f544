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

# An images task. One row per generation prompt: its text and, in the synthetic world,
# its style (judgebias.studies.mmb.data.synthetic).
PROMPTS = table_schema("leaderboard_prompts", [
    pa.field("item_id", pa.string(), nullable=False),
    pa.field("prompt", pa.string(), nullable=False),
    pa.field("style", pa.string(), nullable=True),
])

# One row per (prompt, system): the system's image, where it came from, and in the
# synthetic world its planted quality (the simulated humans' preference, MMB's law).
PICTURES = table_schema("leaderboard_pictures", [
    pa.field("item_id", pa.string(), nullable=False),
    pa.field("system", pa.string(), nullable=False),
    pa.field("image_path", pa.string(), nullable=False),
    pa.field("source", pa.string(), nullable=False),  # synthetic | table
    pa.field("quality", pa.float64(), nullable=True),
])

# One row per (prompt, pair of systems, instruction, order shown) and judge: the
# judge's answer to MMB's pairwise prompt and p(system_a preferred) read from it (the
# MMB judgements' reading, judgebias.studies.mmb.jobs.p_first). system_a comes before
# system_b in the task's system order.
VERDICTS = table_schema("leaderboard_verdicts", [
    pa.field("item_id", pa.string(), nullable=False),
    pa.field("system_a", pa.string(), nullable=False),
    pa.field("system_b", pa.string(), nullable=False),
    pa.field("pair_id", pa.string(), nullable=False),
    pa.field("instruction", pa.string(), nullable=False),
    pa.field("judge", pa.string(), nullable=False),
    pa.field("order", pa.string(), nullable=False),
    pa.field("sample", pa.int64(), nullable=False),
    pa.field("p_a", pa.float64(), nullable=True),
    pa.field("p_source", pa.string(), nullable=False),
    *ANSWER_FIELDS,
    *CALL_FIELDS,
])

DATA = "data/leaderboard"
RESULTS = "results/leaderboard"
RESULT_TABLES = ("systems", "pairs", "ppi", "changes")
# An images task's extra result: each compared pair's calibrated preference under every
# mmb method and whether triage lets the judge decide it.
TRIAGE = "triage"


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


def prompts_path(task: str) -> str:
    return f"{DATA}/{task}/prompts.parquet"


def pictures_path(task: str) -> str:
    return f"{DATA}/{task}/pictures.parquet"


def pictures_dir(task: str) -> str:
    return f"{DATA}/{task}/pictures"


def verdicts_path(task: str, judge: str) -> str:
    return f"{DATA}/{task}/verdicts/{judge}.parquet"


def embeddings_path(task: str) -> str:
    return f"{DATA}/{task}/embeddings.parquet"


def result_tables(kind: str) -> tuple[str, ...]:
    """The result tables of a task of `kind` (an images task adds the triage)."""
    return (*RESULT_TABLES, TRIAGE) if kind == "images" else RESULT_TABLES


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
    return ReportInputs([*(result_path(name, table) for name, task in tasks.items()
                           for table in result_tables(task["kind"])),
                         *(figure_path(task) for task in tasks)])
