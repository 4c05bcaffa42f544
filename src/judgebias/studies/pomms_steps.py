"""Pipeline steps of Pomms (seed 000 §4.2, §6.3): what the `pomms` and `pomms_heatmap`
rules run. The estimator and the tables live in judgebias.studies.pomms; this module
reads the artifacts, fits, and writes."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from judgebias.agreement import agreement
from judgebias.artifacts import Paths, read_columns, read_table, write_frame, write_json
from judgebias.judging import score_values
from judgebias.report.figures import heatmap
from judgebias.report.html import Figure, Section, Table
from judgebias.studies.pomms import (
    POMMS,
    Pomms,
    ensemble_caption_scores,
    pomms_phi_tilde,
    table1,
    table2,
)

_ITEM_COLUMNS = ["item_id", "evaluator", "status", "score_raw", "score_expected"]


def judged_ratings(config: Mapping[str, Any]) -> pd.DataFrame:
    """Every human rating of every judgement dataset, with one score column per panel
    evaluator (its score of that rating's item, in [0, 1]; NaN if its answer failed)."""
    study, pomms = config["philautia"], config["pomms"]
    frames = []
    for dataset in pomms["datasets"]:
        judgements = read_table(Paths.judgements(dataset), "judgements")
        scores = pd.concat([read_columns(Paths.item_scores(pomms["setting"], dataset, e),
                                         "item_scores", _ITEM_COLUMNS)
                            for e in study["models"]], ignore_index=True)
        scores["score"] = score_values(scores, study["score"])
        wide = scores.pivot(index="item_id", columns="evaluator", values="score")
        frames.append(judgements.merge(wide[study["models"]], left_on="item_id",
                                       right_index=True, how="left", validate="many_to_one"))
    return pd.concat(frames, ignore_index=True)


def fit_pomms(config: Mapping[str, Any], ratings: pd.DataFrame) -> Pomms:
    """Forward selection + Elastic Net on the training dataset: fitted on its train split,
    members chosen on its val split (seed 000 §6.3)."""
    pomms, models = config["pomms"], config["philautia"]["models"]
    rows = ratings[(ratings["dataset"] == pomms["train_dataset"])
                   & ratings["split"].isin(["train", "val"])]
    estimator = Pomms(max_features=pomms["max_features"], alpha=pomms["alpha"],
                      l1_ratio=pomms["l1_ratio"], positive=pomms["positive"],
                      scoring=pomms["scoring"])
    return estimator.fit(rows[models], rows["human_score"].to_numpy(),
                         validation=(rows["split"] == "val").to_numpy())


def run_pomms(config: Mapping[str, Any], out_dir: Path) -> None:
    models, study = config["philautia"]["models"], config["philautia"]
    setting = config["pomms"]["setting"]
    ratings = judged_ratings(config)
    estimator = fit_pomms(config, ratings)
    scores_long = pd.read_parquet(f"{Paths.phi_dir(setting)}/scores.parquet")
    first = table1(estimator, ratings, scores_long, models, ddof=study["ddof"])
    second = table2(estimator, scores_long, models, ddof=study["ddof"])
    ensemble = ensemble_caption_scores(estimator, scores_long, models)
    phi_t = pomms_phi_tilde(scores_long, models, ensemble, ddof=study["ddof"])
    ratings[POMMS] = estimator.predict(ratings[models])
    write_frame(estimator.steps_, out_dir / "steps.parquet")
    write_frame(first, out_dir / "table1.parquet")
    write_frame(second, out_dir / "table2.parquet")
    write_frame(phi_t.reset_index(), out_dir / "phi_tilde.parquet")
    write_frame(agreement(ratings, [*models, POMMS]), out_dir / "agreement.parquet")
    write_json({
        "setting": setting,
        "members": list(estimator.members_),
        "selection_order": list(estimator.selection_order_),
        "coef": dict(zip(estimator.members_, map(float, estimator.coef_), strict=True)),
        "intercept": float(estimator.intercept_),
        "n_train": int(estimator.n_train_), "n_validation": int(estimator.n_validation_),
        "n_dropped": int(estimator.n_dropped_),
        **{k: _plain(v) for k, v in second.attrs.items()},
    }, out_dir / "metrics.json")


def _plain(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value.item() if hasattr(value, "item") else value


def draw_heatmap(config: Mapping[str, Any], out: Path) -> None:
    """Fig. D of seed 000: Phi-tilde with Pomms as an extra evaluator column."""
    from judgebias.studies.philautia_steps import simulated_models

    phi_t = pd.read_parquet(Path(Paths.pomms_dir) / "phi_tilde.parquet").set_index("generator")
    title = rf"$\tilde{{\Phi}}$ with Pomms as an evaluator, {config['pomms']['setting']}"
    heatmap(phi_t, out, title, diverging=True, simulated=simulated_models(config),
            highlight_diagonal=True)


def report_section(config: Mapping[str, Any]) -> Section:
    """Pomms' part of the HTML report: Table 1 and Table 2 analogues and Fig. D."""
    out = Path(Paths.pomms_dir)
    metrics = json.loads((out / "metrics.json").read_text())
    first = pd.read_parquet(out / "table1.parquet").set_index("label")
    tau_columns = [c for c in first.columns if c.endswith(("/tau_b", "/tau_c"))]
    second = pd.read_parquet(out / "table2.parquet").set_index("generator")
    agreement_table = pd.read_parquet(out / "agreement.parquet")
    return Section(
        title="Pomms: an ensemble of evaluators against self-preference",
        intro=(f"Seed 000 §4.2/§6.3. Forward sequential selection over the panel's evaluators "
               f"with an Elastic Net meta-learner, fitted on the train split of "
               f"`{config['pomms']['train_dataset']}` and selected on its val split, scored "
               f"with the `{metrics['setting']}` prompt. Chosen members: "
               f"{', '.join(metrics['members'])}."),
        figures=[Figure(out / "figures/phi_tilde_pomms.png",
                        "Φ̃ with Pomms as an extra evaluator (Fig. D)")],
        tables=[
            Table(second[["self", "pomms", "abs_pomms_below_self"]],
                  "Table 2 analogue: each model's philautia score Φ̃_i(i) and Pomms' "
                  "score of its captions Φ̃_Pomms(G(i))", "{:.2f}"),
            Table(first[["members", *tau_columns, "phi_score", "most_extreme", "selected"]],
                  "Table 1 analogue: Kendall τ against human judgements per dataset/split, "
                  "and the philautia score, for each evaluator and each selection step",
                  "{:.3f}"),
            Table(agreement_table, "Agreement of every evaluator and Pomms with the human "
                  "judgements (all splits)", "{:.3f}"),
        ],
        notes=[
            f"Pomms' most extreme Φ̃ entry is {metrics['pomms_most_extreme']:.2f} "
            f"({metrics['pomms_most_extreme_generator']}); the least extreme evaluator's most "
            f"extreme entry is {metrics['min_evaluator_most_extreme']:.2f}.",
            "The ensemble's own philautia score is the mean of its column over its members' "
            "captions: an ensemble generates no captions, and the paper does not define it "
            f"(here {metrics['ensemble_philautia']:.2f}).",
            "τ is computed with every human rating as its own row (caption-metric "
            "convention); answers that failed are excluded and counted, never imputed.",
        ],
    )
