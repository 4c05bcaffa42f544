"""The philautia study's artifacts: schemas and where each one lives."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa

from judgebias.io.artifacts import ANSWER_FIELDS, CALL_FIELDS, table_schema
from judgebias.study import ReportInputs

# One row per image of the dataset (synthetic or imported).
IMAGES = table_schema("images", [
    pa.field("image_id", pa.string(), nullable=False),
    pa.field("image_path", pa.string(), nullable=False),
    pa.field("image_sha256", pa.string(), nullable=False),
    pa.field("references", pa.list_(pa.string()), nullable=False),
    pa.field("source", pa.string(), nullable=False),
    pa.field("scene", pa.string(), nullable=True),  # synthetic ground truth (JSON)
])

# One row per (image, generator): the caption (`label`), or why there is none.
CAPTIONS = table_schema("captions", [
    pa.field("image_id", pa.string(), nullable=False),
    pa.field("generator", pa.string(), nullable=False),
    *ANSWER_FIELDS,
    *CALL_FIELDS,
])

# One row per (image, generator, evaluator, setting): the judge's answer and its score.
SCORES = table_schema("scores", [
    pa.field("image_id", pa.string(), nullable=False),
    pa.field("generator", pa.string(), nullable=False),
    pa.field("evaluator", pa.string(), nullable=False),
    pa.field("setting", pa.string(), nullable=False),
    *ANSWER_FIELDS,
    *CALL_FIELDS,
])

# One row per evaluator: its own-caption and family effects in score points with their
# intervals (beyond the paper; judgebias.studies.philautia.selfpref), next to its
# philautia score (seed 000 §4.1).
EFFECT_FIELDS = ("effect", "se", "ci_low", "ci_high", "p_value")
SELFPREF = table_schema("selfpref", [
    pa.field("model", pa.string(), nullable=False),
    *[pa.field(f"own_{f}", pa.float64(), nullable=True) for f in EFFECT_FIELDS],
    pa.field("own_identified", pa.bool_(), nullable=False),
    pa.field("own_n", pa.int64(), nullable=False),
    pa.field("family_estimable", pa.bool_(), nullable=False),
    pa.field("family_identified", pa.bool_(), nullable=False),
    *[pa.field(f"family_{f}", pa.float64(), nullable=True) for f in EFFECT_FIELDS],
    *[pa.field(f"own_vs_family_{f}", pa.float64(), nullable=True) for f in EFFECT_FIELDS],
    pa.field("family_n", pa.int64(), nullable=False),
    pa.field("n_rows", pa.int64(), nullable=False),
    pa.field("n_dropped", pa.int64(), nullable=False),
    pa.field("philautia_score", pa.float64(), nullable=True),
    pa.field("philautia_ci_low", pa.float64(), nullable=True),
    pa.field("philautia_ci_high", pa.float64(), nullable=True),
])


SCORE_SCALE = 100.0  # G-VEval scores are integers 0..100; seed 000 §5 normalises to [0, 1]

DATASET_TABLE = "data/dataset/images.parquet"
DATASET_IMAGES = "data/dataset/images"
RESULTS = "results/philautia"
# Tables the `philautia` rule writes (Phi and counts come from the `phi` rule).
ANALYSIS_TABLES = ("phi_tilde", "philautia", "loo", "loo_model", "families")
FIGURES = ("phi", "phi_tilde", "philautia")
SELFPREF_TABLE = "selfpref"  # written by the `selfpref` rule


def captions_path(generator: str) -> str:
    return f"data/captions/{generator}.parquet"


def scores_path(setting: str, evaluator: str, generator: str, wave: str | None = None
                ) -> str:
    """One score job's table; with `wave` (``philautia.waves.count`` > 1), one wave's."""
    if wave is None:
        return f"data/scores/{setting}/{evaluator}/{generator}.parquet"
    return f"data/scores/{setting}/wave-{wave}/{evaluator}/{generator}.parquet"


def look_path(setting: str, wave: str | int) -> str:
    """The look after wave `wave` of a setting (judgebias.stats.waves.Look, JSON)."""
    return f"{setting_dir(setting)}/waves/look-{wave}.json"


def setting_dir(setting: str) -> str:
    return f"{RESULTS}/{setting}"


def setting_file(setting: str, name: str, suffix: str = ".parquet") -> str:
    """A result file of one setting (tables by name, ``metrics.json``)."""
    return f"{setting_dir(setting)}/{name}{suffix}"


def figure_path(setting: str, figure: str) -> str:
    return f"{setting_dir(setting)}/figures/{figure}.png"


def wave_count(params: Mapping[str, Any]) -> int:
    """``philautia.waves.count`` (1 where the block leaves waves out: the fixed design)."""
    return int(params["philautia"].get("waves", {}).get("count", 1))


def read_matrix(path: str | Path) -> pd.DataFrame:
    """A generator x evaluator matrix result table (Phi, Phi-tilde), indexed by generator."""
    return pd.read_parquet(path).set_index("generator")


def report_inputs(params: Mapping[str, Any]) -> ReportInputs:
    """Every file the report section (report.py) reads, per setting (``Study.report_inputs``:
    the report rule declares them)."""
    waves = wave_count(params)
    return ReportInputs([
        path for setting in params["philautia"]["settings"]
        for path in [setting_file(setting, "metrics", ".json"),
                     *([look_path(setting, waves)] if waves > 1 else []),
                     *(setting_file(setting, t)
                       for t in ("phi", "counts", *ANALYSIS_TABLES, SELFPREF_TABLE)),
                     *(figure_path(setting, f) for f in FIGURES)]])
