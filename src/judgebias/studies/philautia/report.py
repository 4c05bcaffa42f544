"""The philautia study's part of the HTML report (seed 000 §6.1-6.2). It reads the files
`tables.report_inputs` lists, which the report rule declares."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from judgebias.report.html import Figure, Section, Table
from judgebias.studies.philautia.tables import (
    SELFPREF_TABLE,
    read_matrix,
    wave_count,
)

# Displayed headers of the tables' columns (the parquet files keep their names).
COLUMN_READING = {"column_mean": "column mean", "column_sd": "column sd",
                  "column_z": "z in its column", "above_1sd": "z > 1", "above_2sd": "z > 2"}
FAMILY_COLUMNS = {
    "members": "members", "k": "size k", "n_off_diagonal": "off-diagonal entries",
    "n_positive": "positive entries", "share_positive": "share positive",
    "mean_off_diagonal": "mean off-diagonal",
    "rank_dense": "rank of the count, dense (§6.2's wording)",
    "rank_competition": "rank of the count, competition",
    "n_ties": "ties", "n_subsets": "k-subsets", "share_subsets_geq":
    "share of subsets ≥ (p-value)", "method": "method", "n_evaluated": "subsets evaluated"}


def _waves_note(params: Mapping[str, Any], results: Path) -> list[str]:
    """Where a run in waves stopped and why (philautia.waves; issue 45)."""
    count = wave_count(params)
    if count == 1:
        return []
    look = json.loads((results / "waves" / f"look-{count}.json").read_text())
    stopped, images = look["stopped_at"], look["n_items"]
    planned = round(images / look["fraction"])  # the look's fraction is of every image
    return [
        f"Waves: the images were judged in {count} waves; the run stopped after wave "
        f"{stopped} of {count} ({images} of {planned} images, {images / planned:.0%} of the "
        f"score calls): {look['reason']}. The self-preference intervals are repeated "
        f"confidence intervals (Lan-DeMets {params['philautia']['waves']['spending']} "
        f"spending; critical value {look['critical']:.3f}, each look's nominal level "
        f"{look['level']:.4f}), valid at {params['philautia']['ci']:.0%} whichever wave "
        "the run stopped at. The philautia scores' bootstrap intervals and the diagonal "
        "test are computed on the images judged as if their number had been fixed "
        "in advance: not adjusted for the stop."]


def _section_for_setting(params: Mapping[str, Any], setting: str, results: Path) -> Section:
    metrics = json.loads((results / "metrics.json").read_text())
    figures = results / "figures"
    test, counts = metrics["diagonal_test"], metrics["counts"]
    prompt = params["philautia"]["settings"][setting]["prompt"]
    notes = [
        f"Diagonal vs off-diagonal (permutation test over generator labels, "
        f"{'exact' if test['exact'] else str(test['n_resamples']) + ' resamples'}): mean "
        f"diagonal {test['mean_diagonal']:.2f}, mean off-diagonal "
        f"{test['mean_off_diagonal']:.2f}, one-sided p = {test['p_value']:.4g}.",
        f"Scores: {counts['n_valid']} valid of {counts['n_scores_expected']} expected; "
        f"{counts['n_excluded']} excluded from the means (by status: "
        f"{counts['excluded_by_status'] or 'none'}).",
        _expected_note(params, results),
        f"Standardisation uses ddof={metrics['ddof']}; intervals are "
        f"{metrics['bootstrap']['ci']:.0%} percentile bootstrap intervals over "
        f"{metrics['n_images']} images ({metrics['bootstrap']['n_boot']} resamples).",
        "Φ̃ is relative: a judge without self-preference can still get a positive score "
        "when the other judges favour themselves (column standardisation lowers every "
        "other generator's entry). Read scores against their intervals and the "
        "leave-one-out ranges.",
        SELFPREF_NOTE,
        *_waves_note(params, results),
        *_identification_note(results),
        "§6.1's \"Φ̃ without LLaVA-1.5\" is read two ways: without that evaluator's column "
        "(its row stays: its captions, judged by the others) and without the model "
        "altogether. The paper's printed numbers (Φ̃_Qwen(Qwen) = 0.49, "
        "Φ̃_LLaVA-1.5(Qwen) = −3.25, ddof 0) give 0.934 exactly under the first.",
        "Family ranks: the dense rank counts distinct larger counts (§6.2's \"second-largest "
        "number\"); the competition rank counts the subsets with more positive entries. "
        "A model may belong to several families (panel.<key>.also_in).",
    ]
    level = f"{metrics['bootstrap']['ci']:.0%}"
    philautia = (pd.read_parquet(results / "philautia.parquet").set_index("model")
                 .rename(columns={"score": "philautia score", "ci_low": f"{level} CI low",
                                  "ci_high": f"{level} CI high", "boot_sd": "bootstrap sd",
                                  **COLUMN_READING}))
    return Section(
        title=f"Setting: {setting}",
        intro=f"Evaluator prompt `{prompt}`. Rows are generators, columns evaluators.",
        figures=[
            Figure(figures / "phi_tilde.png", "Φ̃: diagonal = philautia scores (Fig. 4)"),
            Figure(figures / "philautia.png", "Philautia scores with bootstrap intervals"),
            Figure(figures / "phi.png", "Φ: mean normalised score (Fig. A)"),
        ],
        tables=[
            Table(read_matrix(results / "phi_tilde.parquet"), "Φ̃", "{:.2f}"),
            Table(philautia, "Philautia scores, intervals, column reading (§6.1)", "{:.3f}"),
            Table(_selfpref_table(results, level),
                  "Self- and family-preference in score points (0-100 scale; beyond the "
                  "paper): per-caption regression with caption and judge effects, "
                  "image-clustered intervals, next to the philautia score", "{:.2f}"),
            Table(read_matrix(results / "phi.parquet"), "Φ", "{:.3f}"),
            Table(pd.read_parquet(results / "families.parquet").set_index("family")
                  .rename(columns=FAMILY_COLUMNS),
                  "Family sub-matrices (§6.2): positive off-diagonal entries and rank among "
                  "all principal sub-matrices of the same size", "{:.3f}"),
            Table(pd.read_parquet(results / "loo.parquet").set_index("dropped_evaluator")
                  .rename_axis("evaluator left out"),
                  "Leave-one-out (§6.1), evaluator column only: philautia scores with one "
                  "evaluator's column removed, M × (M−1) (rows: evaluator left out; the "
                  "reading that reproduces §6.1's 0.934)", "{:.2f}"),
            Table(pd.read_parquet(results / "loo_model.parquet").set_index("dropped_model")
                  .rename_axis("model left out"),
                  "Leave-one-out (§6.1), whole model: philautia scores of the panel "
                  "without one model, (M−1) × (M−1) (rows: model left out)", "{:.2f}"),
        ],
        notes=notes,
    )


SELFPREF_NOTE = (
    "Points vs philautia score: the point estimates say how many points (0-100) a judge "
    "adds to its own captions (own) and to its siblings' (family), compared with the "
    "other judges' scores of the same caption and net of the judge's leniency and slope "
    "(the slope fitted within generators, so a preference for another model does not "
    "tilt it). A judge's own effect is relative to the generators it has no modelled "
    "relation with; the intervals include the spread of judges' preferences for other "
    "models (judge x generator variance), and a preference several judges share cannot "
    "be told apart from that generator's captions being better. The "
    "philautia score is relative and the two disagree when (i) other judges favour "
    "themselves: a judge without self-preference then gets a positive philautia score "
    "(column standardisation lowers the other generators' entries); (ii) a judge favours "
    "only its siblings: their captions rise in its column past its own, so its philautia "
    "score turns negative although it adds nothing to its own captions; (iii) the "
    "preference is strong: with ddof 0 the score cannot exceed √(M−1), however many "
    "points are added.")


def _selfpref_table(results: Path, level: str) -> pd.DataFrame:
    """Each effect as "points [CI low, CI high]" (the parquet keeps every column)."""
    table = pd.read_parquet(results / f"{SELFPREF_TABLE}.parquet").set_index("model")

    def interval(prefix: str) -> pd.Series:
        return pd.Series([
            "–" if pd.isna(v) else f"{v:.2f} [{lo:.2f}, {hi:.2f}]"
            for v, lo, hi in zip(table[f"{prefix}_effect" if prefix != "philautia"
                                       else "philautia_score"],
                                 table[f"{prefix}_ci_low"], table[f"{prefix}_ci_high"],
                                 strict=True)], index=table.index)

    return pd.DataFrame({
        f"own points [{level} CI]": interval("own"),
        "own p": table["own_p_value"],
        f"family points [{level} CI]": interval("family"),
        "family p": table["family_p_value"],
        f"own − family points [{level} CI]": interval("own_vs_family"),
        f"philautia score [{level} CI]": interval("philautia"),
        "scores used": table["n_rows"],
        "failed, dropped": table["n_dropped"],
    }).rename_axis("model")


def _identification_note(results: Path) -> list[str]:
    table = pd.read_parquet(results / f"{SELFPREF_TABLE}.parquet")
    notes = []
    if not table["family_estimable"].all():
        alone = ", ".join(table.loc[~table["family_estimable"], "model"])
        notes.append(f"No family effect for {alone}: no sibling in the panel (not "
                     "estimable).")
    if not (table["own_identified"].all() and table["family_identified"][
            table["family_estimable"]].all()):
        notes.append("This panel does not identify every own/family effect in points "
                     "(e.g. it is exactly two families: \"A favours A\" cannot be told "
                     "from \"A's judges are lenient and A's captions good\"). Those "
                     "effects are shown under the minimum-norm normalisation (the "
                     "smallest preferences the data allow); own − family is identified.")
    return notes


def report_section(params: Mapping[str, Any], results_root: Path,
                   data: Mapping[str, Path]) -> Section:
    """The philautia study's part of the HTML report (seed 000 §6.1-6.2); it reads its
    results folder only (`data` is empty: tables.report_inputs names no other file)."""
    settings = params["philautia"]["settings"]
    return Section(
        title="Philautia: self- and family-preference of caption judges",
        intro=("Seed 000 (Philautia-Eval, Algorithm 1): every panel model captions every "
               "image and scores every caption; Φ is standardised per evaluator (columns) "
               "then per generator (rows); the diagonal of Φ̃ is the philautia score. "
               + images_note(params)),
        subsections=[_section_for_setting(params, s, results_root / s) for s in settings],
    )


def images_note(params: Mapping[str, Any]) -> str:
    """Which images were captioned, read from params: a real dataset, or the synthetic
    stand-in said plainly (docs/design.md principle 7)."""
    dataset = params["philautia"]["dataset"]
    if dataset["name"] == "nocaps":
        nocaps = dataset["nocaps"]
        sample = ("all images" if nocaps["n_images"] is None
                  else f"a sample of {nocaps['n_images']} (seed {nocaps['seed']})")
        domains = f", domains {', '.join(nocaps['domains'])}" if nocaps.get("domains") else ""
        return (f"Images: nocaps validation ({Path(nocaps['annotations']).name}), {sample}"
                f"{domains}; {nocaps['n_references']} human reference captions each.")
    synthetic = dataset["synthetic"]
    return (f"Images: {synthetic['n_images']} SYNTHETIC scenes (seed {synthetic['seed']}), "
            f"not photographs; {synthetic['n_references']} generated reference captions each.")


def _expected_note(params: Mapping[str, Any], results: Path) -> str:
    counts = pd.read_parquet(results / "counts.parquet")
    expected, parsed = int(counts["n_expected"].sum()), int(counts["n_parsed_fallback"].sum())
    if params["philautia"]["score"] == "parsed":
        return "Scores are the parsed $NN$ integers (philautia.score: parsed)."
    return (f"{expected} valid scores are log-prob expected scores (exact conditional "
            f"expectation, judgebias.judging.expected); {parsed} fell back to the parsed "
            "integer (no log-probs, or tokens that do not spell the answer). Per cell: "
            "counts.parquet.")
