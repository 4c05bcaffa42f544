"""Pipeline steps of the philautia study: what the `phi`, `philautia` and `heatmaps`
rules run, between the score tables and the report. The statistics themselves live in
judgebias.studies.philautia; this module only reads artifacts and calls it."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from judgebias.judging import analysis_scores
from judgebias.report.figures import heatmap, interval_plot
from judgebias.report.html import Figure, Section, Table
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
        rf"$\Phi$ (mean score), {setting}",
        diverging=False,
        value_fmt=".3f",
        simulated=sim,
    )
    heatmap(
        _matrix(results / "phi_tilde.parquet"),
        out_dir / "phi_tilde.png",
        rf"$\tilde{{\Phi}}$ (column- then row-standardised), {setting}",
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


def _section_for_setting(config: Mapping[str, Any], setting: str, results: Path) -> Section:
    metrics = json.loads((results / "metrics.json").read_text())
    figures = results / "figures"
    test, counts = metrics["diagonal_test"], metrics["counts"]
    prompt = config["philautia"]["settings"][setting]["prompt"]
    notes = [
        f"Diagonal vs off-diagonal (permutation test over generator labels, "
        f"{'exact' if test['exact'] else str(test['n_resamples']) + ' resamples'}): mean "
        f"diagonal {test['mean_diagonal']:.2f}, mean off-diagonal "
        f"{test['mean_off_diagonal']:.2f}, one-sided p = {test['p_value']:.4g}.",
        f"Scores: {counts['n_valid']} valid of {counts['n_scores_expected']} expected; "
        f"{counts['n_excluded']} excluded from the means (by status: "
        f"{counts['excluded_by_status'] or 'none'}).",
        f"Standardisation uses ddof={metrics['ddof']}; intervals are "
        f"{metrics['bootstrap']['ci']:.0%} percentile bootstrap intervals over "
        f"{metrics['n_images']} images ({metrics['bootstrap']['n_boot']} resamples).",
        "Φ̃ is relative: a judge without self-preference can still get a positive score "
        "when the other judges favour themselves (column standardisation lowers every "
        "other generator's entry). Read scores against their intervals and the "
        "leave-one-evaluator-out range.",
    ]
    philautia = pd.read_parquet(results / "philautia.parquet").set_index("model")
    return Section(
        title=f"Setting: {setting}",
        intro=f"Evaluator prompt `{prompt}`. Rows are generators, columns evaluators.",
        figures=[
            Figure(figures / "phi_tilde.png", "Φ̃: diagonal = philautia scores (Fig. 4)"),
            Figure(figures / "philautia.png", "Philautia scores with bootstrap intervals"),
            Figure(figures / "phi.png", "Φ: mean normalised score (Fig. A)"),
        ],
        tables=[
            Table(_matrix(results / "phi_tilde.parquet"), "Φ̃", "{:.2f}"),
            Table(philautia, "Philautia scores, intervals, column reading (§6.1)", "{:.3f}"),
            Table(_matrix(results / "phi.parquet"), "Φ", "{:.3f}"),
            Table(pd.read_parquet(results / "families.parquet").set_index("family"),
                  "Family sub-matrices (§6.2): positive off-diagonal entries and rank among "
                  "all principal sub-matrices of the same size", "{:.3f}"),
            Table(pd.read_parquet(results / "loo.parquet").set_index("dropped_evaluator"),
                  "Leave-one-evaluator-out philautia scores (rows: evaluator left out)",
                  "{:.2f}"),
        ],
        notes=notes,
    )


def report_section(config: Mapping[str, Any], results_root: Path) -> Section:
    """The philautia study's part of the HTML report (seed 000 §6.1-6.2)."""
    settings = config["philautia"]["settings"]
    return Section(
        title="Philautia: self- and family-preference of caption judges",
        intro=("Seed 000 (Philautia-Eval, Algorithm 1): every panel model captions every "
               "image and scores every caption; Φ is standardised per evaluator (columns) "
               "then per generator (rows); the diagonal of Φ̃ is the philautia score."),
        subsections=[_section_for_setting(config, s, results_root / s) for s in settings],
    )
