"""Pipeline steps of the philautia study: what the `phi`, `philautia` and `heatmaps`
rules run, between the score tables and the report. The statistics themselves live in
judgebias.studies.philautia; this module only reads artifacts and calls it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from judgebias.judging import analysis_scores
from judgebias.report.figures import heatmap, interval_plot
from judgebias.studies.philautia import PhilautiaResult, analyse, phi_matrix, score_tensor

# Tables the `philautia` rule writes (Phi and counts come from the `phi` rule).
ANALYSIS_TABLES = ("phi_tilde", "philautia", "loo", "families")


def simulated_models(config: Mapping[str, Any]) -> set[str]:
    return {k for k in config["philautia"]["models"] if config["models"][k]["backend"] == "sim"}


def collect_scores(
    config: Mapping[str, Any], score_paths: Sequence[str]
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The setting's scores as one long table, Phi (seed 000 §4.1) and per-cell counts."""
    models = config["philautia"]["models"]
    long = analysis_scores(list(score_paths), config["philautia"]["score"])
    _, tensor = score_tensor(long, models)
    result = phi_matrix(tensor)
    gen = pd.Index(models, name="generator")
    phi = pd.DataFrame(result.phi, index=gen, columns=models)
    counts = pd.DataFrame(
        {
            "generator": [g for g in models for _ in models],
            "evaluator": [e for _ in models for e in models],
            "n_valid": result.n_valid.ravel(),
            "n_excluded": result.n_excluded.ravel(),
        }
    )
    return long, phi.reset_index(), counts


def run_analysis(config: Mapping[str, Any], scores_path: Path) -> PhilautiaResult:
    """Phi-tilde, philautia scores, the diagonal test, family sub-matrices,
    leave-one-evaluator-out and bootstrap intervals for one setting."""
    study = config["philautia"]
    families = {m: config["models"][m]["family"] for m in study["models"]}
    return analyse(
        pd.read_parquet(scores_path),
        study["models"],
        families,
        ddof=study["ddof"],
        n_boot=study["n_bootstrap"],
        n_permutations=study["n_permutations"],
        seed=study["seed"],
        ci=study["ci"],
    )


def _matrix(path: Path) -> pd.DataFrame:
    return pd.read_parquet(path).set_index("generator")


def draw_figures(config: Mapping[str, Any], setting: str, out_dir: Path) -> None:
    """Fig. A (raw Phi) and Fig. 4 (Phi-tilde) of seed 000 for one setting, plus the
    philautia scores with their bootstrap intervals."""
    results = out_dir.parent
    sim = simulated_models(config)
    heatmap(
        _matrix(results / "phi.parquet"),
        out_dir / "phi.png",
        f"Φ (mean score), {setting}",
        diverging=False,
        value_fmt=".3f",
        simulated=sim,
    )
    heatmap(
        _matrix(results / "phi_tilde.parquet"),
        out_dir / "phi_tilde.png",
        f"Φ̃ (column- then row-standardised), {setting}",
        diverging=True,
        simulated=sim,
        highlight_diagonal=True,
    )
    estimates = pd.read_parquet(results / "philautia.parquet")
    interval_plot(
        estimates.rename(columns={"score": "estimate"}),
        out_dir / "philautia.png",
        f"Philautia scores with bootstrap intervals, {setting}",
        simulated=sim,
    )
