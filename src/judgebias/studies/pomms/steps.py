"""Pomms' steps, one per rule of workflow/rules/pomms.smk (judgebias.workflow.step_dispatch): each
reads the files its rule names, calls the study's functions and writes the files its rule names.

A step imports what only it uses inside its body, so its rule's code dependencies
(derived from those imports) stay its own. The estimator is judgebias.studies.pomms
.estimator, its readings (Tables 1 and 2, Phi-tilde with Pomms) .measures."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judgebias.models.context import RunContext
from judgebias.studies.philautia.tables import SCORE_SCALE
from judgebias.studies.pomms.params import PommsParams
from judgebias.studies.pomms.tables import ITEM_SCORES, JUDGEMENTS, TABLES

if TYPE_CHECKING:
    import pandas as pd

    from judgebias.studies.pomms.estimator import Pomms

log = logging.getLogger(__name__)

_ITEM_COLUMNS = ["item_id", "evaluator", "status", "value", "expected"]


def judged_ratings(judgements: Sequence[str | Path], item_scores: Sequence[str | Path],
                   models: Sequence[str], score: str) -> pd.DataFrame:
    """Every human rating of the judgement datasets, with one score column per panel
    evaluator of `models` (its score of that rating's item, in [0, 1]; NaN if its answer
    failed); `score` as ``philautia.score``."""
    import pandas as pd

    from judgebias.io.artifacts import read_columns, read_table
    from judgebias.judging.values import numeric_values

    scores = pd.concat([read_columns(p, ITEM_SCORES, [*_ITEM_COLUMNS, "dataset"])
                        for p in item_scores], ignore_index=True)
    scores["score"] = numeric_values(scores, score, SCORE_SCALE)
    frames = []
    for path in judgements:
        table = read_table(path, JUDGEMENTS)
        dataset = scores[scores["dataset"].isin(table["dataset"].unique())]
        wide = dataset.pivot(index="item_id", columns="evaluator", values="score")
        frames.append(table.merge(wide.reindex(columns=list(models)), left_on="item_id",
                                  right_index=True, how="left", validate="many_to_one"))
    return pd.concat(frames, ignore_index=True)


def candidates(rows: pd.DataFrame, models: Sequence[str]) -> list[str]:
    """The evaluators Pomms may select: those with at least one usable score on the
    training rows. An evaluator every call of which failed (accepted by max_failures)
    would otherwise drop every row, since a row with any NaN score is left out."""
    usable = [m for m in models if rows[m].notna().any()]
    if len(usable) < len(models):
        log.warning("Pomms leaves out evaluators without one usable score: %s",
                    sorted(set(models) - set(usable)))
    return usable


def fit_pomms(params: PommsParams, ratings: pd.DataFrame,
              scores_long: pd.DataFrame | None = None) -> Pomms:
    """Forward selection + Elastic Net on the training dataset: fitted on its train split,
    scored on its val split (seed 000 §6.3, `validation_split`); the ensemble size by
    ``pomms.select`` (min_philautia reads `scores_long`, the philautia setting's long
    table, as Table 2 chose Pomms (iv) by its philautia score)."""
    from judgebias.studies.pomms.estimator import Pomms, validation_split

    rows = ratings[(ratings["dataset"] == params.train_dataset)
                   & ratings["split"].isin(["train", "val"])]
    models = candidates(rows, params.models)
    estimator = Pomms(max_features=params.max_features, alpha=params.alpha,
                      l1_ratio=params.l1_ratio, positive=params.positive,
                      scoring=params.scoring, select=params.select,
                      min_members=params.min_members, ddof=params.ddof,
                      cv=validation_split((rows["split"] == "val").to_numpy()))
    return estimator.fit(rows[models], rows["human_score"].to_numpy(),
                         caption_scores=scores_long)


def judgements(params: PommsParams, *, dataset: str, table: Path,
               images: Path) -> None:
    """Build or import caption-judgement dataset `dataset` (``pomms.datasets``)."""
    import dataclasses

    from judgebias.config import input_errors
    from judgebias.io.artifacts import write_table
    from judgebias.studies.pomms.data import build_judgements

    with input_errors(f"pomms.datasets.{dataset}"):
        built = build_judgements(dataset, dataclasses.asdict(params.datasets[dataset]),
                                 images)
    write_table(built, table, JUDGEMENTS)
    log.info("%s: %d ratings of %d items -> %s", dataset, len(built),
             built["item_id"].nunique(), table)


def judge_items(params: PommsParams, run: RunContext, *, evaluator: str, setting: str,
                judgements: Path, item_scores: Path) -> None:
    """Score every item of a judgement dataset with one evaluator in philautia setting
    `setting` (seed 000 §6.3; a model job: `run` calls the evaluator)."""
    from judgebias.io.artifacts import write_table
    from judgebias.studies.pomms.jobs import score_items

    write_table(score_items(run, evaluator, setting, str(judgements),
                            spec=params.settings[setting]), item_scores, ITEM_SCORES)


def heatmap(params: PommsParams, *, phi_tilde: Path, figure: Path) -> None:
    """Fig. D of seed 000: Phi-tilde with Pomms as an extra evaluator column."""
    from judgebias.studies.pomms.figures import draw_heatmap

    draw_heatmap(params.setting, params.simulated, str(phi_tilde), figure)


_CARD_AGREEMENT = ["dataset", "metric", "tau_b", "tau_b_low", "tau_b_high", "tau_c",
                   "tau_c_low", "tau_c_high", "n", "n_clusters"]


def ensemble_card(params: PommsParams, estimator: Pomms, ratings: pd.DataFrame,
                  calls: pd.DataFrame, agreement_table: pd.DataFrame) -> dict[str, Any]:
    """The fitted ensemble's model card, saved with it (ensemble.json's ``card``): the
    panel (each evaluator's backend, model id and revision as its answers record them),
    the training data and its splits, the fit settings, the members and weights, and the
    agreement with humans on the test split (Kendall tau of the ensemble and of each
    judge, the agreement table's rows: no new statistics)."""
    from judgebias.studies.pomms.measures import POMMS

    weights = dict(zip(estimator.members_, map(float, estimator.coef_), strict=True))
    selectable = [str(c) for c in estimator.feature_names_in_]
    panel = []
    for model in params.models:
        mine = calls[calls["evaluator"] == model]

        def recorded(column: str, mine: pd.DataFrame = mine) -> str:
            return ", ".join(sorted(set(mine[column].astype(str))))

        panel.append({"model": model, "backend": recorded("backend"),
                      "model_id": recorded("model_id"), "revision": recorded("revision"),
                      "simulated": recorded("backend") == "sim",
                      "selectable": model in selectable, "member": model in weights,
                      "weight": weights.get(model)})
    train = ratings[ratings["dataset"] == params.train_dataset]
    splits = {str(split): {"ratings": len(rows), "items": int(rows["item_id"].nunique()),
                           "images": int(rows["image_id"].nunique())}
              for split, rows in train.groupby("split", sort=True)}
    test = agreement_table[agreement_table["split"] == "test"]
    settings = estimator.get_params(deep=False)
    settings["cv"] = "validation_split: the train split fits, the val split selects"
    return {
        "model": "Pomms ensemble of MLLM judges (seed 000 §4.2, §6.3)",
        "usage": "judgebias.load(path).predict(X)",
        "input": (f"a DataFrame with one column per member, named as the panel model: its "
                  f"score of the caption in [0, 1] (the 0-100 answer / 100, "
                  f"philautia.score `{params.score}`), asked with the prompt of philautia "
                  f"setting `{params.judged_with}`; other columns are ignored"),
        "output": (f"the ensemble score of each row, on the scale of the human scores of "
                   f"`{params.train_dataset}`; NaN where a member's score is NaN"),
        "members": list(estimator.members_),
        "weights": weights,
        "intercept": float(estimator.intercept_),
        "selection_order": list(estimator.selection_order_),
        "panel": panel,
        "simulated": any(p["simulated"] for p in panel),
        "training": {"dataset": params.train_dataset,
                     "judgement_setting": params.judged_with, "score": params.score,
                     "philautia_setting": params.setting, "splits": splits,
                     "n_train": int(estimator.n_train_),
                     "n_validation": int(estimator.n_validation_),
                     "n_dropped": int(estimator.n_dropped_)},
        "fit_settings": settings,
        "agreement_test": {
            "what": (f"Kendall tau of each judge and of the ensemble ({POMMS!r}) with the "
                     "human scores on each dataset's test split, with image-cluster "
                     "bootstrap intervals where pomms.n_bootstrap > 0"),
            "rows": test[[c for c in _CARD_AGREEMENT if c in test]].to_dict("records"),
        },
    }


def card_markdown(card: dict[str, Any]) -> str:
    """The model card (`ensemble_card`) as a short Markdown page, ensemble.md."""
    def number(value: Any) -> str:
        return "" if value is None else f"{value:.3f}"

    lines = [f"# {card['model']}", "",
             "Load it (no code in the file runs): `judgebias.load(\"ensemble.json\")"
             ".predict(X)`.", "",
             f"* **Input**: {card['input']}.", f"* **Output**: {card['output']}.", ""]
    if card["simulated"]:
        lines += ["**Simulated models**: some of the panel below are simulated "
                  "(backend `sim`); the ensemble and its numbers are a demonstration.", ""]
    lines += ["## Members", "", f"Intercept {card['intercept']!r}; selection order: "
              f"{', '.join(card['selection_order'])}.", "",
              "| model | backend | model id | revision | member | weight |",
              "|---|---|---|---|---|---|"]
    lines += [f"| {p['model']} | {p['backend']} | {p['model_id']} | {p['revision']} | "
              f"{'yes' if p['member'] else 'no'} | "
              f"{'' if p['weight'] is None else repr(p['weight'])} |" for p in card["panel"]]
    training = card["training"]
    lines += ["", "## Training data", "",
              f"Dataset `{training['dataset']}`, scored with philautia setting "
              f"`{training['judgement_setting']}` (score: {training['score']}); "
              f"{training['n_train']} rows fit the Elastic Net, {training['n_validation']} "
              f"select the members, {training['n_dropped']} dropped for a failed score.", "",
              "| split | ratings | items | images |", "|---|---|---|---|"]
    lines += [f"| {name} | {n['ratings']} | {n['items']} | {n['images']} |"
              for name, n in training["splits"].items()]
    lines += ["", "## Fit settings", ""]
    lines += [f"* `{key}`: {value!r}" for key, value in sorted(card["fit_settings"].items())]
    agreement = card["agreement_test"]
    lines += ["", "## Agreement with humans (test split)", "", agreement["what"] + ".", "",
              "| dataset | judge | tau-b | 95% interval | tau-c | n |", "|---|---|---|---|---|---|"]
    for row in agreement["rows"]:
        interval = (f"[{number(row['tau_b_low'])}, {number(row['tau_b_high'])}]"
                    if "tau_b_low" in row else "")
        lines.append(f"| {row['dataset']} | {row['metric']} | {number(row['tau_b'])} | "
                     f"{interval} | {number(row['tau_c'])} | {row['n']} |")
    return "\n".join(lines) + "\n"


def fit(params: PommsParams, *, judgements: Sequence[Path],
        item_scores: Sequence[Path], scores: Path, metrics: Path,
        tables: Sequence[Path], ensemble: Path, model_card: Path) -> None:
    """Fit Pomms and write its tables: Table 1/2 analogues, Phi-tilde with Pomms, agreement;
    and the fitted ensemble (`ensemble`, JSON that `judgebias.load` reads, with its model
    card inside) with that card as Markdown (`model_card`).

    `scores` is the long scores table of the philautia setting Pomms uses (``setting``);
    `item_scores` hold the judgement datasets scored with ``judgement_setting``; `tables`
    are the rule's table outputs, one per name of ``tables.TABLES`` (by file stem).
    """
    import pandas as pd

    from judgebias.io.artifacts import (
        by_stem,
        read_columns,
        write_frame,
        write_json,
        write_text,
    )
    from judgebias.io.saved import save
    from judgebias.judging.values import failed_calls
    from judgebias.stats.agreement import agreement
    from judgebias.studies.pomms.measures import (
        POMMS,
        ensemble_caption_scores,
        pomms_phi_tilde,
        table1,
        table2,
    )

    out = by_stem(tables, TABLES, "pomms tables")
    models = list(params.models)
    ratings = judged_ratings(judgements, item_scores, models, params.score)
    scores_long = pd.read_parquet(scores)
    estimator = fit_pomms(params, ratings, scores_long)
    first = table1(estimator, ratings, scores_long, models, ddof=params.ddof)
    second = table2(estimator, scores_long, models, ddof=params.ddof)
    caption_scores = ensemble_caption_scores(estimator, scores_long, models)
    phi_t = pomms_phi_tilde(scores_long, models, caption_scores, ddof=params.ddof)
    ratings[POMMS] = estimator.predict(ratings[models])
    write_frame(estimator.steps_, out["steps"])
    write_frame(first, out["table1"])
    write_frame(second.table, out["table2"])
    write_frame(phi_t.reset_index(), out["phi_tilde"])
    # one caption's ratings, and an image's captions, share what the judge saw: the image
    # is the resampling unit (judgebias.stats.agreement, benchmarks/kendall_interval.py); each
    # judge is compared with the ensemble on the same resamples (the judge card's "does
    # Pomms help", benchmarks/kendall_difference.py)
    agreement_table = agreement(ratings, [*models, POMMS], cluster="image_id",
                                n_resamples=params.n_bootstrap, seed=params.seed,
                                versus=POMMS if params.n_bootstrap else None)
    write_frame(agreement_table, out["agreement"])
    calls = pd.concat([read_columns(p, ITEM_SCORES, ["evaluator", "status", "backend",
                                                     "model_id", "revision"])
                       for p in item_scores], ignore_index=True)
    card = ensemble_card(params, estimator, ratings, calls, agreement_table)
    save(estimator, ensemble, card)
    write_text(card_markdown(card), model_card)
    write_json({
        "setting": params.setting,
        "judgement_setting": params.judged_with,
        "min_members": int(estimator.min_members),
        "selection_order": list(estimator.selection_order_),
        "coef": dict(zip(estimator.members_, map(float, estimator.coef_), strict=True)),
        "intercept": float(estimator.intercept_),
        "n_train": int(estimator.n_train_), "n_validation": int(estimator.n_validation_),
        "n_dropped": int(estimator.n_dropped_),
        "evaluators_left_out": [m for m in models
                                if m not in list(estimator.feature_names_in_)],
        "failed_calls": failed_calls(calls[["evaluator", "status"]], "evaluator"),
        **second.summary(),
    }, metrics)
