"""BIRCH's artifacts: schemas and where each one lives (seed 003; spec birch.md).

One pair table for every source (synthetic, VL-RewardBench, MLLM-as-a-Judge): a query, an
image, two answers in the order they are shown (A, B) and the human preference. What the
pipeline adds per pair (informativeness labels, verdicts) is keyed by ``pair_id``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from judgebias.io.artifacts import ANSWER_FIELDS, CALL_FIELDS, table_schema
from judgebias.study import ReportInputs
from judgebias.workflow.dvcviews import Curve

PREFERENCES = ("A", "B", "tie")
SOURCES = ("synthetic", "vl_rewardbench", "mllm_judge")

# One row per pairwise VQA item, answers in the order shown to every judge.
PAIRS = table_schema("birch_pairs", [
    pa.field("pair_id", pa.string(), nullable=False),
    pa.field("source", pa.string(), nullable=False),  # one of SOURCES
    pa.field("domain", pa.string(), nullable=False),  # sub-dataset / question kind
    pa.field("query", pa.string(), nullable=False),
    pa.field("image", pa.string(), nullable=False),  # image file path
    # sha256 of the image file's bytes (judgebias.io.filedigest): a replaced image changes
    # the table, so `dvc repro` reruns the judges after it; None only where the file is
    # missing, which the data step refuses (importers.check_images) before writing
    pa.field("image_sha256", pa.string(), nullable=True),
    pa.field("answer_a", pa.string(), nullable=False),
    pa.field("answer_b", pa.string(), nullable=False),
    pa.field("preference", pa.string(), nullable=False),  # human: one of PREFERENCES
    # "ab": answer_a is the file's first answer; "ba": the importer swapped them
    pa.field("file_order", pa.string(), nullable=False),
    pa.field("overridden", pa.bool_(), nullable=False),  # preference set by an override file
    pa.field("model_a", pa.string(), nullable=True),  # the answering models, if known
    pa.field("model_b", pa.string(), nullable=True),
    # planted truth (synthetic only): is the answer correct, how many valid extra details
    # it gives, how many filler sentences pad it
    pa.field("correct_a", pa.bool_(), nullable=True),
    pa.field("correct_b", pa.bool_(), nullable=True),
    pa.field("details_a", pa.int64(), nullable=True),
    pa.field("details_b", pa.int64(), nullable=True),
    pa.field("padding_a", pa.int64(), nullable=True),
    pa.field("padding_b", pa.int64(), nullable=True),
    # planted truth (synthetic only): the scene the image shows, as scenes.scene_to_json,
    # against which an anchor's facts are scored exactly (Table 5 analogue)
    pa.field("scene", pa.string(), nullable=True),
])

# One row per (pair, order shown) for one labeller: which answer is more informative
# (Fig. 18, image withheld), mapped back from the order shown to the pair's A / B.
LABEL_ANSWERS = table_schema("birch_label_answers", [
    pa.field("pair_id", pa.string(), nullable=False),
    pa.field("labeller", pa.string(), nullable=False),
    pa.field("order", pa.string(), nullable=False),  # "ab" | "ba"
    pa.field("more_informative", pa.string(), nullable=True),  # "A" | "B"; None unless usable
    *ANSWER_FIELDS,
    *CALL_FIELDS,
])

# One row per (pair, step) for one judge: the text a preparatory pass wrote (the Standard
# Ref reference, the Image Caption caption, BIRCH's merged anchor, a lengthened answer).
TEXTS = table_schema("birch_texts", [
    pa.field("pair_id", pa.string(), nullable=False),
    pa.field("model", pa.string(), nullable=False),
    pa.field("step", pa.string(), nullable=False),  # reference|caption|anchor|lengthen_A|_B
    pa.field("text", pa.string(), nullable=True),  # None unless status is ok
    *ANSWER_FIELDS,
    *CALL_FIELDS,
])

# One row per (pair, variant, order shown) for one judge: the verdict mapped back to the
# pair's A / B ("tie" kept), None unless the answer was usable.
VERDICTS = table_schema("birch_verdicts", [
    pa.field("pair_id", pa.string(), nullable=False),
    pa.field("judge", pa.string(), nullable=False),
    pa.field("variant", pa.string(), nullable=False),  # see params.Variant
    pa.field("order", pa.string(), nullable=False),  # "ab" | "ba" (the order shown)
    pa.field("verdict", pa.string(), nullable=True),  # "A" | "B" | "tie" | None
    *ANSWER_FIELDS,
    *CALL_FIELDS,
])

REPEATS = table_schema("birch_repeats", [
    *list(VERDICTS)[:4],  # pair_id, judge, variant ("base"), order
    pa.field("repeat", pa.int64(), nullable=False),  # 1..birch.repeats - 1
    *list(VERDICTS)[4:],
])
"""The Base verdicts asked again (``birch.repeats``): the verdicts' columns and the repeat
index; repeat r was sent with the judge's sampling seed + r (jobs.judge)."""

DATA = "data/birch"
RESULTS = "results/birch"


# Every path is per dataset (birch.datasets.<name>), so two benchmarks never share a file
# and adding one reruns only its own jobs.
def pairs_path(dataset: str) -> str:
    return f"{DATA}/{dataset}/pairs.parquet"


def images_dir(dataset: str) -> str:
    return f"{DATA}/{dataset}/images"


def summary_path(dataset: str) -> str:
    return f"{DATA}/{dataset}/summary.json"


def equalised_path(dataset: str) -> str:
    return f"{DATA}/{dataset}/equalised.parquet"


def equalised_summary_path(dataset: str) -> str:
    return f"{DATA}/{dataset}/equalised.json"


def labels_path(dataset: str, labeller: str) -> str:
    return f"{DATA}/{dataset}/labels/{labeller}.parquet"


def texts_path(dataset: str, model: str, step: str) -> str:
    return f"{DATA}/{dataset}/texts/{model}/{step}.parquet"


def verdicts_path(dataset: str, judge: str, variant: str) -> str:
    return f"{DATA}/{dataset}/verdicts/{judge}/{variant}.parquet"


def repeats_path(dataset: str, judge: str) -> str:
    """The Base verdicts' repeats 1..R-1 (``birch.repeats``), beside the verdicts."""
    return f"{DATA}/{dataset}/repeats/{judge}.parquet"


# The analysis' tables (results/birch/<dataset>/<name>.parquet), figures
# (figures/<name>.png) and metrics.json; then the supplement's (Fig. 11, Tables 5 and 6).
TABLES = ("accuracy", "table1", "irs_subsets", "bias", "table2", "table4", "table7",
          "cds_curve", "domains", "downsampling", "intervals", "tests")
FIGURES = ("fig1", "fig3", "fig4", "fig5", "fig6", "fig8", "fig10")
SUPPLEMENT_TABLES = ("fig11", "table5", "table6")
SUPPLEMENT_FIGURE = "fig11"


def metrics_path(dataset: str) -> str:
    return f"{RESULTS}/{dataset}/metrics.json"


def table_path(dataset: str, name: str) -> str:
    return f"{RESULTS}/{dataset}/{name}.parquet"


def figure_path(dataset: str, name: str) -> str:
    return f"{RESULTS}/{dataset}/figures/{name}.png"


# Fig. 4's curve as a DVC plot (judgebias.workflow.dvcviews), one CSV per judge, written
# by the analysis step beside the figure (figures.cds_share_rows).
CURVES = {
    # accuracy: the down-sampling draws' mean; analytic: r Acc_CDS + (1 - r) Acc_IDS
    "cds_share": Curve("target_ratio", ("accuracy", "analytic"),
                       "BIRCH: accuracy vs CDS share (seed 003 Fig. 4)",
                       "share of correctness-driven pairs (CDS)", "accuracy"),
}


def curve_path(dataset: str, name: str, judge: str) -> str:
    """The CSV of curve `name` (CURVES) for `judge` on `dataset`."""
    return f"{RESULTS}/{dataset}/curves/{name}/{judge}.csv"


def report_inputs(params: Mapping[str, Any]) -> ReportInputs:
    """Every file the report section (report.py) reads (``Study.report_inputs``: the report
    rule declares them): every dataset's metrics, tables and figures, and its data
    summary by name (``summary.<dataset>``)."""
    names = list(params["birch"]["datasets"])
    return ReportInputs(
        [path for name in names
         for path in [metrics_path(name), *(table_path(name, t) for t in TABLES),
                      *(figure_path(name, f) for f in FIGURES),
                      *(table_path(name, t) for t in SUPPLEMENT_TABLES),
                      figure_path(name, SUPPLEMENT_FIGURE)]],
        {f"summary.{name}": summary_path(name) for name in names})
