"""The leaderboard study's steps, one per rule: each reads the files its rule names, calls
the study's functions and writes the files its rule names. A step imports what only it
uses inside its body, so its rule's code dependencies stay its own
(judgebias.workflow.codedeps)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from judgebias.models.context import RunContext
from judgebias.studies.leaderboard.params import LeaderboardParams

log = logging.getLogger(__name__)


def images(params: LeaderboardParams, *, task: str, table: Path, images: Path) -> None:
    """The task's images (synthetic scenes with known content and references)."""
    from judgebias.io.artifacts import write_table
    from judgebias.studies.philautia.data import build_synthetic_dataset
    from judgebias.studies.philautia.tables import IMAGES

    spec = params.tasks[task].images.synthetic
    built = build_synthetic_dataset(images.parent, n_images=spec.n_images, seed=spec.seed,
                                    image_size=spec.image_size,
                                    n_references=spec.n_references)
    write_table(built, table, IMAGES)


def caption(params: LeaderboardParams, run: RunContext, *, task: str, board_model: str,
            images: Path, captions: Path) -> None:
    """A model system's panel model (`board_model`: a wildcard named apart from
    philautia's `generator`, which Snakemake constrains to philautia's models) captions
    every image of the task (a model job)."""
    from judgebias.io.artifacts import write_table
    from judgebias.studies.philautia.jobs import caption_images
    from judgebias.studies.philautia.tables import CAPTIONS

    write_table(caption_images(run, board_model, str(images),
                               prompt=params.tasks[task].caption_prompt), captions, CAPTIONS)


def outputs(params: LeaderboardParams, run: RunContext, *, task: str, images: Path,
            generated: Sequence[Path] = (), outputs: Path) -> None:
    """Every system's captions of the task's images in one table: a model system's from
    its captions job (`generated`, by panel model), a simulated captioner's drawn here, an
    imported file's checked here (each error names the file and the row). `run` gives
    the opener of the family a simulated captioner writes like."""
    import pandas as pd

    from judgebias.config import input_errors
    from judgebias.io.artifacts import read_table, write_table
    from judgebias.studies.leaderboard.data import (
        imported_captions,
        model_captions,
        synthetic_captions,
    )
    from judgebias.studies.leaderboard.tables import OUTPUTS
    from judgebias.studies.philautia.tables import CAPTIONS, IMAGES

    table = read_table(images, IMAGES)
    by_model = {path.stem: path for path in generated}
    frames = []
    for name, system in params.tasks[task].systems.items():
        if system.outputs is not None:
            with input_errors(f"leaderboard.tasks.{task}.systems.{name}.outputs"):
                frames.append(imported_captions(table, name, Path(system.outputs)))
        elif system.synthetic is not None:
            style = system.synthetic.style_of
            frames.append(synthetic_captions(
                table, name, system.synthetic.quality,
                opener=run.opener(style) if style else None,
                seed=params.tasks[task].images.synthetic.seed))
        else:
            frames.append(model_captions(table, name, read_table(by_model[str(system.model)],
                                                                 CAPTIONS)))
    write_table(pd.concat(frames, ignore_index=True), outputs, OUTPUTS)


def labels(params: LeaderboardParams, *, task: str, outputs: Path, labels: Path) -> None:
    """The task's human labels: simulated raters on a seeded random subset of the images,
    or the user's file, checked against the task's images, systems and scale."""
    from judgebias.config import input_errors
    from judgebias.io.artifacts import read_table, write_table
    from judgebias.studies.leaderboard.data import imported_labels, synthetic_labels
    from judgebias.studies.leaderboard.tables import LABELS, OUTPUTS

    spec = params.tasks[task].human_labels
    assert spec is not None  # the rule exists only for a task with labels
    table = read_table(outputs, OUTPUTS)
    if spec.path is not None:
        with input_errors(f"leaderboard.tasks.{task}.human_labels.path"):
            built = imported_labels(Path(spec.path), table, spec.scale)
    else:
        assert spec.synthetic is not None  # validate: exactly one source
        syn = spec.synthetic
        built = synthetic_labels(table, syn.n_items, syn.n_raters, syn.rater_noise, syn.seed)
    write_table(built, labels, LABELS)


def judge(params: LeaderboardParams, run: RunContext, *, task: str, board_judge: str,
          images: Path, outputs: Path, scores: Path) -> None:
    """One judge (`board_judge`) scores every system's caption of every image of the task
    (a model job)."""
    from judgebias.io.artifacts import write_table
    from judgebias.studies.leaderboard.jobs import score_outputs
    from judgebias.studies.leaderboard.tables import SCORES

    spec = params.tasks[task]
    write_table(score_outputs(run, board_judge, str(images), str(outputs), prompt=spec.prompt,
                              references=spec.references), scores, SCORES)


def rank(params: LeaderboardParams, *, task: str, outputs: Path, scores: Sequence[Path],
         tables: Sequence[Path], metrics: Path, labels: Path | None = None,
         ensemble: Path | None = None) -> None:
    """Every method's leaderboard of the task: each system's mean and rank intervals,
    the pairwise differences with FDR, the PPI++ intervals where labels exist, and the
    order changes against the baseline; `tables` are the rule's table outputs, one per
    name of ``tables.RESULT_TABLES`` (by file stem)."""
    import pandas as pd

    from judgebias.io.artifacts import by_stem, read_table, write_frame, write_json
    from judgebias.stats.ranking import leaderboard
    from judgebias.studies.leaderboard.measures import (
        PPI_COLUMNS,
        methods_in_order,
        order_changes,
        ppi_rows,
        summary,
    )
    from judgebias.studies.leaderboard.methods import judge_values, method_scores
    from judgebias.studies.leaderboard.tables import LABELS, OUTPUTS, RESULT_TABLES, SCORES

    out = by_stem(tables, RESULT_TABLES, "leaderboard tables")
    spec, inference = params.tasks[task], params.inference
    table = read_table(outputs, OUTPUTS)
    values = judge_values(pd.concat([read_table(p, SCORES) for p in scores],
                                    ignore_index=True), params.score)
    human = read_table(labels, LABELS) if labels is not None else None
    fitted = None
    if ensemble is not None:  # imported here, not through judgebias.load: the loader and
        # the estimator are this step's code dependencies (judgebias/__init__.py)
        from judgebias.io.saved import load
        from judgebias.studies.pomms.estimator import Pomms  # noqa: F401
        from judgebias.study import saved_classes

        fitted = load(ensemble, trusted=saved_classes()).estimator
    images = sorted(table["image_id"].unique())
    systems = list(spec.systems)
    boards, pairs, ppi = [], [], []
    for name in methods_in_order(params.methods, params.baseline):
        scored = method_scores(params, task, name, values, images, systems, fitted)
        ranked = leaderboard(scored.matrix.to_numpy(), systems,
                             n_resamples=inference.resamples,
                             confidence_level=inference.level, fdr=inference.fdr,
                             rng=inference.seed)
        boards.append(ranked.systems.assign(
            method=name, unit=scored.unit,
            judges=[",".join(scored.judges[s]) for s in ranked.systems["system"]]))
        pairs.append(ranked.pairs.assign(method=name, unit=scored.unit))
        if human is not None:
            ppi.append(ppi_rows(name, scored.matrix, scored.unit, human, inference.level))
    board_table, pair_table = pd.concat(boards, ignore_index=True), pd.concat(pairs,
                                                                               ignore_index=True)
    changes = order_changes(pair_table, params.baseline)
    write_frame(board_table, out["systems"])
    write_frame(pair_table, out["pairs"])
    write_frame(pd.concat(ppi, ignore_index=True) if ppi
                else pd.DataFrame(columns=list(PPI_COLUMNS)), out["ppi"])
    write_frame(changes, out["changes"])
    write_json({"task": task, "baseline": params.baseline, "images": len(images),
                "labelled_images": 0 if human is None else int(human["image_id"].nunique()),
                "methods": summary(board_table, changes),
                "order_changes": changes["text"].tolist()}, metrics)


def figure(params: LeaderboardParams, *, task: str, systems: Path, figure: Path) -> None:
    """The leaderboard figure of the task: every method's means and intervals."""
    import pandas as pd

    from judgebias.studies.leaderboard.figures import draw_leaderboard
    from judgebias.studies.leaderboard.measures import methods_in_order

    draw_leaderboard(pd.read_parquet(systems), methods_in_order(params.methods,
                                                                params.baseline),
                     task, params.simulated, figure)
