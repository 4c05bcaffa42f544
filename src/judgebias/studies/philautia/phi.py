"""The philautia study's analysis steps: collect a setting's scores into Phi (seed 000
§4.1), then Phi-tilde, philautia scores, tests and intervals (judgebias.studies.philautia
.analysis holds the statistics)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from judgebias.artifacts import read_columns
from judgebias.judging.values import numeric_values
from judgebias.studies.philautia.analysis import (
    PhilautiaResult,
    analyse,
    phi_matrix,
    score_tensor,
)
from judgebias.studies.philautia.tables import SCORES
from judgebias.study import study_models

SCORE_SCALE = 100.0  # G-VEval scores are integers 0..100; seed 000 §5 normalises to [0, 1]


def analysis_scores(paths: Sequence[str], score: str) -> pd.DataFrame:
    """The long (image, generator, evaluator, score in [0,1]) table the analysis reads;
    failed or unparseable answers are NaN (excluded from means, counted). `used_expected`
    says which rows used the log-prob expected score rather than the parsed one."""
    columns = ["image_id", "generator", "evaluator", "status", "value", "expected"]
    scores = pd.concat([read_columns(p, SCORES, columns) for p in paths], ignore_index=True)
    scores["score"] = numeric_values(scores, score, SCORE_SCALE)
    scores["used_expected"] = ((score == "expected") & scores["expected"].notna()
                               & scores["score"].notna())
    return scores[["image_id", "generator", "evaluator", "status", "score", "used_expected"]]


def collect_scores(config: Mapping[str, Any], score_paths: Sequence[str]
                   ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The setting's scores as one long table, Phi (seed 000 §4.1) and per-cell counts,
    including how many valid scores used the expected score and how many fell back to
    the parsed one (no log-probs, or tokens that do not spell the answer)."""
    models = study_models(config, "philautia")
    long = analysis_scores(score_paths, config["philautia"]["score"])
    _, tensor = score_tensor(long, models)
    result = phi_matrix(tensor)
    gen = pd.Index(models, name="generator")
    phi = pd.DataFrame(result.phi, index=gen, columns=models)
    valid = long[long["score"].notna()]
    used = valid.groupby(["generator", "evaluator"])["used_expected"].agg(["sum", "size"])
    counts = pd.DataFrame({
        "generator": [g for g in models for _ in models],
        "evaluator": [e for _ in models for e in models],
        "n_valid": result.n_valid.ravel(),
        "n_excluded": result.n_excluded.ravel(),
    })
    used = used.reindex(pd.MultiIndex.from_frame(counts[["generator", "evaluator"]]),
                        fill_value=0)
    counts["n_expected"] = used["sum"].to_numpy().astype(int)
    counts["n_parsed_fallback"] = (used["size"] - used["sum"]).to_numpy().astype(int)
    return long.drop(columns="used_expected"), phi.reset_index(), counts


def model_families(config: Mapping[str, Any], models: Sequence[str]) -> dict[str, list[str]]:
    """Model -> every family it belongs to: ``panel.<key>.family`` (its primary family,
    whose sim opener styles its captions) then ``panel.<key>.also_in`` (further
    families for the §6.2 sub-matrices; seed 000 Fig. 6 puts LLaVA-OneVision-7B in both
    the Qwen-based and the LLaVA block)."""
    return {m: [config["panel"][m]["family"], *config["panel"][m].get("also_in", [])]
            for m in models}


def run_analysis(config: Mapping[str, Any], scores_path: str) -> PhilautiaResult:
    """Phi-tilde, philautia scores, the diagonal test, family sub-matrices, both
    leave-one-out readings and bootstrap intervals for one setting."""
    study = config["philautia"]
    models = study_models(config, "philautia")
    families = model_families(config, models)
    return analyse(pd.read_parquet(scores_path), models, families, ddof=study["ddof"],
                   n_boot=study["n_bootstrap"], n_permutations=study["n_permutations"],
                   seed=study["seed"], ci=study["ci"])
