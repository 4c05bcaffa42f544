"""FRAME's artifacts: schemas and where each one lives (seed 004; spec frame.md).

The benchmark's item table (built or imported by judgebias.studies.frame.data), and what the
pipeline makes of it: manipulated images, 0-5 scores per judge, pairwise verdicts, and the
analysis results.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa

from judgebias.io.artifacts import ANSWER_FIELDS, CALL_FIELDS, read_table, table_schema
from judgebias.models.gpu import GpuNeed

# One row per benchmark instance (seed 004 §4.1; the FRAME table format: frame.data).
ITEMS = table_schema("frame_items", [
    pa.field("item_id", pa.string(), nullable=False),
    pa.field("domain", pa.string(), nullable=False),
    pa.field("instruction", pa.string(), nullable=False),  # the instruction judged
    pa.field("concepts", pa.string(), nullable=False),  # JSON {slot: value}; "{}" if unknown
    pa.field("perturbed_concepts", pa.string(), nullable=True),  # JSON: the prompt rendered
    pa.field("prompt", pa.string(), nullable=True),  # the perturbed prompt text rendered
    pa.field("n_perturbed", pa.int64(), nullable=True),
    pa.field("image", pa.string(), nullable=False),  # set A
    pa.field("image_b", pa.string(), nullable=True),  # set B (Fig. 3)
    # sha256 of each image file's bytes (judgebias.io.filedigest; None without image_b): a
    # replaced image changes the table, so `dvc repro` reruns the renders and judges
    pa.field("image_sha256", pa.string(), nullable=False),
    pa.field("image_b_sha256", pa.string(), nullable=True),
    pa.field("human_score", pa.float64(), nullable=True),  # 1-5
    pa.field("annotator_1", pa.float64(), nullable=True),
    pa.field("annotator_2", pa.float64(), nullable=True),
    pa.field("alignment", pa.float64(), nullable=True),  # planted truth (synthetic only)
    pa.field("boxes", pa.string(), nullable=True),  # JSON [[x0, y0, x1, y1], ...]; null: none
    pa.field("source", pa.string(), nullable=False),
])

# One row per (item, recipe) a render job was asked for: the manipulated image, or why
# there is none ("unavailable": e.g. the beauty filter without its model weights).
RENDERS = table_schema("frame_renders", [
    pa.field("item_id", pa.string(), nullable=False),
    pa.field("recipe", pa.string(), nullable=False),  # canonical recipe id (recipes.py)
    pa.field("image", pa.string(), nullable=True),  # file path; None unless status is ok
    pa.field("status", pa.string(), nullable=False),  # ok | unavailable
    pa.field("message", pa.string(), nullable=False),  # why unavailable ("" when ok)
])

# The key columns of a score row: what was judged and with which prompt.
_SCORE_KEYS = [
    pa.field("item_id", pa.string(), nullable=False),
    pa.field("domain", pa.string(), nullable=False),
    pa.field("judge", pa.string(), nullable=False),
    pa.field("prompt", pa.string(), nullable=False),  # standard|bias_aware|bias_definition|cot
    pa.field("recipe", pa.string(), nullable=False),  # "original" or a recipe id
    pa.field("manipulation", pa.string(), nullable=False),  # "original", a name, or a+b(+c)
    pa.field("setting", pa.string(), nullable=False),  # a single step's setting, else ""
    pa.field("n_steps", pa.int64(), nullable=False),
    pa.field("named", pa.string(), nullable=False),  # bias_definition: the manipulation named
]

# One row per judged image: the 0.0-5.0 score (None unless the answer was usable).
SCORES = table_schema("frame_scores", [
    *_SCORE_KEYS,
    pa.field("score", pa.float64(), nullable=True),
    *ANSWER_FIELDS,
    *CALL_FIELDS,
])

# One row per (item, condition, order shown) of the pairwise comparison (seed 004 Fig. 3).
PAIRWISE = table_schema("frame_pairwise", [
    pa.field("item_id", pa.string(), nullable=False),
    pa.field("domain", pa.string(), nullable=False),
    pa.field("judge", pa.string(), nullable=False),
    pa.field("condition", pa.string(), nullable=False),  # original | manipulated
    pa.field("recipe", pa.string(), nullable=False),  # what set A's image got
    pa.field("order", pa.string(), nullable=False),  # ab: A shown first | ba
    pa.field("verdict", pa.string(), nullable=True),  # A | B | tie; None unless usable
    *ANSWER_FIELDS,
    *CALL_FIELDS,
])

DATA = "data/frame"
RESULTS = "results/frame"
BUILD = f"{DATA}/build"
ITEMS_PATH = f"{DATA}/items.parquet"
IMAGES = f"{DATA}/images"
SUMMARY_PATH = f"{DATA}/summary.json"
CONCEPTS_PATH = f"{BUILD}/concepts.parquet"
INSTRUCTIONS_PATH = f"{BUILD}/instructions.parquet"
GENERATED_PATH = f"{BUILD}/generated.parquet"
COMBINED = "combined"  # the render set of the analysis judge's best recipes combined


def gpu_need(params: Mapping[str, Any], step: str,
             wildcards: Mapping[str, str] | None = None) -> GpuNeed | None:
    """The GPUs a FRAME step computes on (``Study.gpus``; the rule's ``gpu`` resource is
    its ``.gpus``), None for a step that never does:

    * ``images``: a local diffusers pipeline (``frame.dataset.synthetic.images``: ``gpus``,
      ``options.device``);
    * ``render_grid`` of the beauty filter and ``combine`` (whose pairs and triples of the
      analysis judge's best recipes may hold it), where the grid runs GFPGAN
      (``frame.beauty``: ``gpus``, ``device``). Every render of one recipe must be drawn
      on the same kind of device, as GFPGAN's noise differs between CPU and CUDA (the
      render cache keys the device), so both rules ask alike. The offline stand-in
      (``smoothing``) and every other manipulation are pixel arithmetic on the CPU.

    The paper presets (``presets_render``) hold no beauty filter (paper_recipes.yaml)."""
    frame = params["frame"]
    if step == "images":
        images = (frame["dataset"].get("synthetic") or {}).get("images") or {}
        if images.get("backend") != "diffusers":
            return None
        device = (images.get("options") or {}).get("device", "auto")
        return GpuNeed.of(device, images.get("gpus", 0))
    if step not in ("render_grid", "combine"):
        return None
    if "gfpgan" not in frame["manipulations"].get("beauty_filter", ()):
        return None
    if step == "render_grid" and (wildcards or {}).get("manipulation") != "beauty_filter":
        return None
    beauty = frame["beauty"]
    return GpuNeed.of(beauty.get("device", "auto"), beauty.get("gpus", 0))


def renders_path(name: str) -> str:
    """A render set: one manipulation's grid, or the follow-up set."""
    return f"{DATA}/renders/{name}.parquet"


def renders_dir(name: str) -> str:
    return f"{DATA}/renders/{name}"


def scores_path(judge: str, name: str) -> str:
    """A judge's standard-prompt scores of the originals or one manipulation's grid."""
    return f"{DATA}/scores/{judge}/{name}.parquet"


def recipes_path(judge: str) -> str:
    """A judge's best setting per (domain, manipulation): seed 004 Tables 9-10."""
    return f"{RESULTS}/recipes/{judge}.parquet"


MITIGATION_PATH = f"{DATA}/followup/mitigation.parquet"
COMBINATIONS_PATH = f"{DATA}/followup/combinations.parquet"
PAIRWISE_PATH = f"{DATA}/followup/pairwise.parquet"
TABLES = ("table2", "table3_in_sample", "table3_cross_fitted", "attack_success", "table4",
          "table5", "table6", "table7", "recipes", "combinations", "win_rates",
          "significance", "human_correlation", "answers")
FIGURES = ("fig2", "fig3", "examples", "null")
METRICS_PATH = f"{RESULTS}/metrics.json"


def result_path(name: str) -> str:
    """One of the analysis step's tables (``TABLES``), e.g. ``table3_cross_fitted``."""
    if name not in TABLES:
        raise ValueError(f"not a FRAME results table: {name!r} (one of {', '.join(TABLES)})")
    return f"{RESULTS}/{name}.parquet"


def figure_path(name: str) -> str:
    """One of the analysis step's figures (``FIGURES``)."""
    return f"{RESULTS}/figures/{name}.png"


def read_renders(paths: Sequence[str | Path]) -> pd.DataFrame:
    """Render tables (``RENDERS``), stacked: what the steps and the plan read of them."""
    return pd.concat([read_table(p, RENDERS) for p in paths], ignore_index=True)
