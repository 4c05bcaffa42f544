"""MMB's artifacts: schemas and where each one lives (seed 002, spec mmb.md)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import yaml

from judgebias.io.artifacts import ANSWER_FIELDS, CALL_FIELDS, table_schema
from judgebias.models.gpu import GpuNeed
from judgebias.study import ReportInputs
from judgebias.workflow.dvcviews import Curve

# Splits of the pair table. HPSv2 protocol: "test" (all pairs of each test group) and
# "train" (one candidate validation pair per training group). MJBench protocol:
# "mjb_train" (an original preferred over a degraded counterpart; validation data of the
# other folds) and "mjb_test" (all pairs of originals sharing a prompt: no preference).
SPLITS = ("test", "train", "mjb_train", "mjb_test")

# One row per image pair shown to the judge.
PAIRS = table_schema("mmb_pairs", [
    pa.field("pair_id", pa.string(), nullable=False),
    pa.field("group", pa.string(), nullable=False),  # the generation prompt's group id
    pa.field("prompt", pa.string(), nullable=False),  # the generation prompt
    pa.field("image_a", pa.string(), nullable=False),  # image file paths
    pa.field("image_b", pa.string(), nullable=False),
    pa.field("preference", pa.float64(), nullable=False),  # 1: A preferred, 0: B, 0.5: none
    pa.field("split", pa.string(), nullable=False),  # one of SPLITS
    pa.field("fold", pa.int64(), nullable=True),  # MJBench leave-one-group-out fold
    pa.field("source", pa.string(), nullable=False),  # hpdv2 | mjbench | synthetic
    pa.field("style_a", pa.string(), nullable=True),  # planted style (synthetic only)
    pa.field("style_b", pa.string(), nullable=True),
    # sha256 of each image file's bytes (judgebias.io.filedigest): a replaced image changes
    # the table, so `dvc repro` reruns the judges and embeddings after it
    pa.field("image_a_sha256", pa.string(), nullable=False),
    pa.field("image_b_sha256", pa.string(), nullable=False),
])

# The unlabelled support set D_sup the clusters are fitted on (256 x K images).
SUPPORT = table_schema("mmb_support", [
    pa.field("image_path", pa.string(), nullable=False),
    pa.field("group", pa.string(), nullable=False),
    pa.field("fold", pa.int64(), nullable=True),  # MJBench: the fold the image belongs to
    pa.field("style", pa.string(), nullable=True),  # planted style (synthetic only)
    pa.field("image_sha256", pa.string(), nullable=False),  # as the pairs' (above)
])

# One row per image: its CLIP embedding (L2-normalised), keyed by content hash.
EMBEDDINGS = table_schema("mmb_embeddings", [
    pa.field("image_path", pa.string(), nullable=False),
    pa.field("image_sha256", pa.string(), nullable=False),
    pa.field("embedding", pa.list_(pa.float32()), nullable=False),
])

# One row per (pair, instruction, order shown, sample) for one judge: the answer and
# p(A preferred) (jobs.py). Read from log-probs: one sample (0); from samples
# (mmb.probability): n, each its own call, p_a the (pair, instruction, order)'s estimate
# on each usable sample's row.
JUDGEMENTS = table_schema("mmb_judgements", [
    pa.field("pair_id", pa.string(), nullable=False),
    pa.field("instruction", pa.string(), nullable=False),
    pa.field("judge", pa.string(), nullable=False),
    pa.field("order", pa.string(), nullable=False),  # "ab" or "ba": the order shown
    pa.field("sample", pa.int64(), nullable=False),  # r: asked with the sampling seed + r
    pa.field("p_a", pa.float64(), nullable=True),  # p(A preferred); None unless usable
    # logprobs | smoothed_choice | samples | none
    pa.field("p_source", pa.string(), nullable=False),
    *ANSWER_FIELDS,
    *CALL_FIELDS,
])

# The parts of the clusters table: the HPSv2 protocol's (fold -1) and the MJBench
# protocol's, one clustering per held-out fold.
HPS = "hps"
MJB = "mjb"

DATA = "data/mmb"
RESULTS = "results/mmb"
PAIRS_PATH = f"{DATA}/pairs.parquet"
SUPPORT_PATH = f"{DATA}/support.parquet"
IMAGES = f"{DATA}/images"
SUMMARY_PATH = f"{DATA}/summary.json"
EMBEDDINGS_PATH = f"{DATA}/embeddings.parquet"
INSTRUCTIONS_PATH = f"{DATA}/instructions.yaml"


def judgements_path(judge: str) -> str:
    return f"{DATA}/judgements/{judge}.parquet"


def gpu_need(params: Mapping[str, Any], step: str,
             wildcards: Mapping[str, str] | None = None) -> GpuNeed | None:
    """The GPUs an MMB step computes on (``Study.gpus``; the rule's ``gpu`` resource is
    its ``.gpus``): the embedding step's CLIP, ``mmb.embedding.gpus`` of them on
    ``mmb.embedding.device``. No other MMB step runs torch (a judge's vllm engine takes
    its own devices in the judging core)."""
    if step != "embed":
        return None
    block = params["mmb"]["embedding"]
    return GpuNeed.of(block.get("device", "auto"), block.get("gpus", 0))


CLUSTERS_PATH = f"{DATA}/clusters.parquet"
TABLES = ("table1", "table2", "table3", "table4", "significance", "error_coverage",
          "top_prompts", "tau_sweep", "answers", "comparisons", "power")
FIGURES = ("fig1", "fig3", "fig4", "fig5", "power")
METRICS_PATH = f"{RESULTS}/metrics.json"


def table_path(name: str) -> str:
    """One of the section's tables (TABLES)."""
    return f"{RESULTS}/{name}.parquet"


def figure_path(name: str) -> str:
    """One of the section's figures (FIGURES)."""
    return f"{RESULTS}/figures/{name}.png"


# The figures' curves as DVC plots (judgebias.workflow.dvcviews), one CSV per judge each,
# written by the analysis step beside the figure (figures.curve_rows).
CURVES = {
    "error_coverage": Curve("coverage", ("STD", "BEST", "AVG", "BPE", "MMB"),
                            "MMB: error vs coverage at the reported cell (seed 002 Fig. 3)",
                            "coverage", "error"),
    "power": Curve("per_cluster", ("AVG", "BPE", "MMB"),
                   "MMB: ECE vs validation pairs per cluster", "validation pairs per cluster",
                   "ECE"),
    "tau_sweep": Curve("tau", ("ece",), "MMB: ECE vs the weights' temperature tau",
                       "tau", "ECE"),
}


def curve_path(name: str, judge: str) -> str:
    """The CSV of curve `name` (CURVES) for `judge`."""
    return f"{RESULTS}/curves/{name}/{judge}.csv"


def factorial_path(judge: str) -> str:
    return f"{RESULTS}/factorial/{judge}/configurations.parquet"


def nopref_path(judge: str) -> str:
    return f"{RESULTS}/factorial/{judge}/nopref.parquet"


def saved_path(judge: str) -> str:
    """`judge`'s fitted MMB de-biaser at the report's cell (steps.save), loadable without
    executing code (judgebias.io.saved; ``judgebias.load(saved_path(judge))``), its model
    card inside."""
    return f"{RESULTS}/{judge}/debiaser.json"


def layout_answers_path(judge: str) -> str:
    """`judge`'s answers in the other layout to the layout check's items (steps.layout_check;
    the JUDGEMENTS schema, the template in ``prompt_id``)."""
    return f"{DATA}/layout_check/{judge}.parquet"


def layout_metrics_path(judge: str) -> str:
    """`judge`'s layout check: the paired differences between the layouts
    (measures/layout.py), as JSON."""
    return f"{RESULTS}/layout_check/{judge}.json"


def layout_check_on(params: Mapping[str, Any]) -> bool:
    """Whether ``mmb.layout_check`` asks any pair (its jobs and report table exist)."""
    return (params["mmb"].get("layout_check") or {}).get("n_pairs", 0) > 0


def read_pool(path: str | Path) -> pd.DataFrame:
    """The instruction pool (id, kind, text) from its YAML file."""
    with open(path, encoding="utf-8") as handle:
        entries = yaml.safe_load(handle)
    return pd.DataFrame(entries, columns=["id", "kind", "text"])


def report_inputs(params: Mapping[str, Any]) -> ReportInputs:
    """Every file the report section (report.py) reads (``Study.report_inputs``: the report
    rule declares them; the data summary and the instruction pool by name)."""
    checked = params["mmb"]["models"] if layout_check_on(params) else []
    return ReportInputs([METRICS_PATH, *(table_path(t) for t in TABLES),
                         *(figure_path(f) for f in FIGURES),
                         *(layout_metrics_path(judge) for judge in checked)],
                        {"summary": SUMMARY_PATH, "instructions": INSTRUCTIONS_PATH})
