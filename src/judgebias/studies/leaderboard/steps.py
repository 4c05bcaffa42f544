"""The leaderboard study's steps, one per rule: each reads the files its rule names, calls
the study's functions and writes the files its rule names. A step imports what only it
uses inside its body, so its rule's code dependencies stay its own
(judgebias.workflow.codedeps).

Why this module is long: the step dispatcher finds every step of a study in its one
``steps`` module, and the leaderboard has four task kinds, each with its items, judge and
rank steps; each step is a thin reader and writer around the kind's own module
(data/pictures/vqa/scored, jobs, methods, measures)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judgebias.models.context import RunContext
from judgebias.studies.leaderboard.params import LeaderboardParams, Method, SyntheticSystem
from judgebias.studies.mmb.params import MmbParams
from judgebias.studies.philautia.params import SyntheticImages

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger(__name__)


def images(params: LeaderboardParams, *, task: str, table: Path, images: Path) -> None:
    """The task's images (synthetic scenes with known content and references)."""
    from judgebias.io.artifacts import write_table
    from judgebias.studies.philautia.data import build_synthetic_dataset
    from judgebias.studies.philautia.tables import IMAGES

    spec = _synthetic_images(params, task)
    built = build_synthetic_dataset(images.parent, n_images=spec.n_images, seed=spec.seed,
                                    image_size=spec.image_size,
                                    n_references=spec.n_references)
    write_table(built, table, IMAGES)


def _synthetic_images(params: LeaderboardParams, task: str) -> SyntheticImages:
    """A captions task's images block (validate: a captions task has one)."""
    images = params.tasks[task].images
    assert images is not None
    return images.synthetic


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
                seed=_synthetic_images(params, task).seed))
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
    """Every method's leaderboard of a captions task: each system's mean and rank
    intervals, the pairwise differences with FDR, the PPI++ intervals where labels exist,
    and the order changes against the baseline; `tables` are the rule's table outputs,
    one per name of ``tables.RESULT_TABLES`` (by file stem)."""
    import pandas as pd

    from judgebias.io.artifacts import read_table
    from judgebias.stats.ppi_power import few_labels
    from judgebias.studies.leaderboard.measures import PPI_COLUMNS, ppi_rows, rank_methods
    from judgebias.studies.leaderboard.methods import judge_values, method_scores
    from judgebias.studies.leaderboard.tables import LABELS, OUTPUTS, SCORES

    table = read_table(outputs, OUTPUTS)
    values = judge_values(pd.concat([read_table(p, SCORES) for p in scores],
                                    ignore_index=True), params.score)
    human = read_table(labels, LABELS) if labels is not None else None
    fitted = saved_estimator(ensemble).estimator if ensemble is not None else None
    images = sorted(table["image_id"].unique())
    systems = list(params.tasks[task].systems)
    scored = {name: method_scores(params, task, name, values, images, systems, fitted)
              for name in params.task_methods(task)}
    boards, pairs = rank_methods(scored, systems, params.inference)
    ppi = [ppi_rows(name, method.matrix, method.unit, human, params.inference.level)
           for name, method in scored.items()] if human is not None else []
    ppi_table = (pd.concat(ppi, ignore_index=True) if ppi
                 else pd.DataFrame(columns=list(PPI_COLUMNS)))
    labelled = 0 if human is None else int(human["image_id"].nunique())
    # a failed judge answer lowers a target's labelled count below the labelled images
    tuned = ppi_table[ppi_table["estimator"] == "ppi++"]
    warning = (few_labels(int(tuned["n_labelled"].min()) if len(tuned) else labelled)
               if human is not None else None)
    if warning is not None:
        log.warning("leaderboard task %s: %s", task, warning)
    write_results(params, task, tables, metrics, boards, pairs, ppi_table,
                  {"images": len(images), "labelled_images": labelled,
                   "few_labels": warning})


def saved_estimator(path: Path) -> Any:
    """A saved de-biaser the pipeline wrote (judgebias.io.saved). Loaded here, not
    through judgebias.load, with the estimators' modules imported so that they are this
    step's code dependencies (judgebias/__init__.py imports them lazily)."""
    from judgebias.io.saved import load
    from judgebias.studies.mmb.estimator import ClusteredBayesianEnsemble  # noqa: F401
    from judgebias.studies.pomms.estimator import Pomms  # noqa: F401
    from judgebias.study import saved_classes

    return load(path, trusted=saved_classes())


def write_results(params: LeaderboardParams, task: str, tables: Sequence[Path],
                   metrics: Path, boards: pd.DataFrame, pairs: pd.DataFrame,
                   ppi: pd.DataFrame, counts: Mapping[str, Any],
                   extra: Mapping[str, pd.DataFrame] | None = None,
                   extra_metrics: Mapping[str, Any] | None = None) -> None:
    """The result tables (`tables`, by file stem: ``tables.result_tables``) and
    metrics.json of a task, with the order changes against the baseline."""
    from judgebias.io.artifacts import by_stem, write_frame, write_json
    from judgebias.studies.leaderboard.measures import order_changes, summary
    from judgebias.studies.leaderboard.tables import result_tables

    out = by_stem(tables, result_tables(params.tasks[task].kind), "leaderboard tables")
    changes = order_changes(pairs, params.baseline)
    for name, frame in {"systems": boards, "pairs": pairs, "ppi": ppi, "changes": changes,
                        **(extra or {})}.items():
        write_frame(frame, out[name])
    write_json({"task": task, "kind": params.tasks[task].kind, "baseline": params.baseline,
                **counts, "methods": summary(boards, changes),
                "order_changes": changes["text"].tolist(), **(extra_metrics or {})},
               metrics)


def systems_outputs(params: LeaderboardParams, task: str, items: str,
                    imported: Callable[[str, Path], pd.DataFrame],
                    simulated: Callable[[str, SyntheticSystem], pd.DataFrame] | None
                    ) -> pd.DataFrame:
    """Every system's outputs on a task's items in one table: an imported system's file
    read by `imported(name, path)`, a simulated one's drawn by `simulated(name, spec)`
    (None: the items are imported, and a simulated system needs synthetic ones, named by
    `items`, the task's key). Each error names the system's key, the file and the row."""
    import pandas as pd

    from judgebias.config import input_errors

    frames = []
    for name, system in params.tasks[task].systems.items():
        at = f"leaderboard.tasks.{task}.systems.{name}"
        if system.outputs is not None:
            with input_errors(f"{at}.outputs"):
                frames.append(imported(name, Path(system.outputs)))
            continue
        assert system.synthetic is not None  # validate: a system's one source
        with input_errors(f"{at}.synthetic"):
            if simulated is None:
                raise ValueError("a simulated system needs synthetic items "
                                 f"(leaderboard.tasks.{task}.{items}.synthetic)")
            frames.append(simulated(name, system.synthetic))
    return pd.concat(frames, ignore_index=True)


def pictures(params: LeaderboardParams, *, task: str, prompts: Path, pictures: Path,
             images: Path) -> None:
    """An images task's prompts and every system's image for each: a simulated
    generator's drawn here (MMB's synthetic world), an imported file's checked here
    (each error names the key, the file and the row)."""

    from judgebias.config import input_errors
    from judgebias.io.artifacts import write_table
    from judgebias.studies.leaderboard.pictures import (
        imported_pictures,
        imported_prompts,
        synthetic_pictures,
        synthetic_prompts,
    )
    from judgebias.studies.leaderboard.tables import PICTURES, PROMPTS

    spec = params.tasks[task]
    assert spec.prompts is not None  # validate: an images task has prompts
    drawn = spec.prompts.synthetic
    if drawn is not None:
        table = synthetic_prompts(drawn.n_prompts)
    else:
        with input_errors(f"leaderboard.tasks.{task}.prompts.path"):
            table = imported_prompts(Path(str(spec.prompts.path)))
    drawn_ = drawn  # bound for the closure (mypy narrows it here)
    outputs = systems_outputs(
        params, task, "prompts", lambda name, path: imported_pictures(table, name, path),
        None if drawn_ is None else lambda name, spec_: synthetic_pictures(
            table, name, spec_.quality, spec_.spread, size=drawn_.image_size,
            seed=drawn_.seed, folder=images))
    images.mkdir(parents=True, exist_ok=True)
    write_table(table, prompts, PROMPTS)
    write_table(outputs, pictures, PICTURES)


def embed(mmb: MmbParams, *, pictures: Path, embeddings: Path) -> None:
    """The CLIP embedding of every image of an images task, computed as the MMB fit's
    were (``mmb.embedding``), cached per image hash in the MMB study's cache."""
    from dataclasses import asdict

    import numpy as np
    import pandas as pd

    from judgebias.io.artifacts import read_table, write_table
    from judgebias.studies.leaderboard.tables import PICTURES
    from judgebias.studies.mmb.embed import EmbeddingSpec, embed_images
    from judgebias.studies.mmb.tables import EMBEDDINGS

    paths = list(dict.fromkeys(read_table(pictures, PICTURES)["image_path"]))
    spec = EmbeddingSpec.from_params(asdict(mmb.embedding))
    hashes, vectors, stats = embed_images(paths, spec, Path(mmb.embedding.cache_dir))
    log.info("embedded %d images with %s: %s", len(paths), spec.description(), stats)
    write_table(pd.DataFrame({"image_path": paths, "image_sha256": hashes,
                              "embedding": list(vectors.astype(np.float32))}),
                embeddings, EMBEDDINGS)


def compare(params: LeaderboardParams, mmb: MmbParams, run: RunContext, *, task: str,
            board_judge: str, prompts: Path, pictures: Path, pool: Path,
            verdicts: Path) -> None:
    """One judge (`board_judge`) compares every pair of systems' images on every prompt
    of an images task, under the instructions its methods need
    (`compared_instructions`), with MMB's pairwise prompt in MMB's layout (the template
    its fits' answers were asked with: mmb.prompt in mmb.layout) (a model job)."""
    from judgebias.io.artifacts import read_table, write_table
    from judgebias.studies.leaderboard.jobs import compare_pictures, system_pairs
    from judgebias.studies.leaderboard.tables import PICTURES, PROMPTS, VERDICTS
    from judgebias.studies.mmb.params import judge_prompt
    from judgebias.studies.mmb.tables import read_pool

    spec = params.tasks[task]
    instructions = read_pool(pool)
    asked = compared_instructions(params, mmb, board_judge, list(instructions["id"]))
    pairs = system_pairs(read_table(prompts, PROMPTS), read_table(pictures, PICTURES),
                         list(spec.systems))
    write_table(compare_pictures(run, board_judge, pairs,
                                 instructions[instructions["id"].isin(asked)],
                                 prompt=judge_prompt(mmb.prompt, mmb.layout),
                                 order=spec.order,
                                 order_seed=spec.order_seed,
                                 how=mmb.probability.of(board_judge)),
                verdicts, VERDICTS)


def compared_instructions(params: LeaderboardParams, mmb: MmbParams, judge: str,
                          pool: Sequence[str]) -> list[str]:
    """The pool instructions `judge` is asked on an images task: each single method's
    (default: the pool's first) and, for an mmb method, the instructions of the fit the
    MMB study saves (judgebias.studies.mmb.estimator.saved_instructions: the report
    cell's ensemble). They follow from params and the pool alone, so refitting MMB (a
    new K, tau, validation size) reruns no comparison."""
    from judgebias.studies.mmb.estimator import saved_instructions

    asked: set[str] = set()
    for name, spec in params.methods.items():
        if spec.judge != judge:
            continue
        if spec.kind == "single":
            asked.add(single_instruction(name, spec, pool))
        elif spec.kind == "mmb":
            asked.update(saved_instructions(pool, mmb))
    return [i for i in pool if i in asked]


def single_instruction(name: str, method: Method, pool: Sequence[str]) -> str:
    """The MMB pool instruction a single method asks on an images task: its own, or the
    pool's first."""
    if method.instruction is None:
        return pool[0]
    if method.instruction not in pool:
        raise ValueError(f"leaderboard.methods.{name}.instruction: {method.instruction!r} "
                         "is not an id of MMB's instruction pool")
    return method.instruction


def rank_pairs(params: LeaderboardParams, mmb: MmbParams, *, task: str, prompts: Path,
               pictures: Path, pool: Path, verdicts: Sequence[Path], tables: Sequence[Path],
               metrics: Path, embeddings: Path | None = None,
               debiasers: Sequence[Path] = ()) -> None:
    """Every method's leaderboard of an images task from the judges' pairwise verdicts:
    win rates (single) and mean calibrated probabilities (mmb) with intervals, pairwise
    differences with FDR, rank intervals, the order changes against the baseline, and
    each mmb method's triage of the new pairs. `debiasers` are the saved MMB fits of the
    mmb methods' judges (by judge, in params order)."""
    import numpy as np
    import pandas as pd

    from judgebias.io.artifacts import read_table
    from judgebias.stats.triage import certify_threshold
    from judgebias.studies.leaderboard.jobs import system_pairs
    from judgebias.studies.leaderboard.measures import (
        PPI_COLUMNS,
        TRIAGE_COLUMNS,
        rank_methods,
        triage_rows,
        triage_summary,
    )
    from judgebias.studies.leaderboard.methods import (
        calibrated_pairs,
        single_pairwise,
    )
    from judgebias.studies.leaderboard.methods import (
        mmb as calibrated_scores,
    )
    from judgebias.studies.leaderboard.pictures import planted_win_rates
    from judgebias.studies.leaderboard.tables import PICTURES, PROMPTS, VERDICTS
    from judgebias.studies.mmb.tables import EMBEDDINGS, read_pool

    spec = params.tasks[task]
    systems = list(spec.systems)
    pool_ids = list(read_pool(pool)["id"])
    prompt_table, picture_table = read_table(prompts, PROMPTS), read_table(pictures, PICTURES)
    prompt_ids = list(prompt_table["item_id"])
    pairs = system_pairs(prompt_table, picture_table, systems)
    judged = pd.concat([read_table(p, VERDICTS) for p in verdicts], ignore_index=True)
    fits = dict(zip(params.mmb_judges(), debiasers, strict=True))
    vectors: dict[str, np.ndarray] = {}
    if embeddings is not None:
        table = read_table(embeddings, EMBEDDINGS)
        vectors = dict(zip(table["image_path"], np.stack(table["embedding"].to_numpy()),
                           strict=True))
    scored, triaged, triage_metrics = {}, [], {}
    for name in params.task_methods(task):
        method = params.methods[name]
        judge = str(method.judge)
        if method.kind == "single":
            scored[name] = single_pairwise(judged, prompt_ids, systems, judge,
                                           single_instruction(name, method, pool_ids))
            continue
        saved = saved_estimator(fits[judge])
        calibrated = calibrated_pairs(judged, judge, saved.estimator, vectors, pairs)
        scored[name] = calibrated_scores(calibrated, prompt_ids, systems, judge)
        rule = certify_threshold(saved.estimator.audit_confidence_,
                                 saved.estimator.audit_correct_,
                                 target_accuracy=method.target_accuracy, delta=method.risk)
        rows = triage_rows(name, calibrated, rule)
        triaged.append(rows)
        triage_metrics[name] = triage_summary(rows, rule)
    boards, pair_table = rank_methods(scored, systems, params.inference)
    gamma = mmb.dataset.synthetic.gamma
    planted = (planted_win_rates(picture_table, systems, gamma) if gamma is not None
               else pd.Series(np.nan, index=systems))
    write_results(
        params, task, tables, metrics, boards, pair_table,
        pd.DataFrame(columns=list(PPI_COLUMNS)),
        {"prompts": len(prompt_ids), "labelled_images": 0},
        extra={"triage": pd.concat(triaged, ignore_index=True) if triaged
               else pd.DataFrame(columns=list(TRIAGE_COLUMNS))},
        extra_metrics={"triage": triage_metrics,
                       "planted_win_rate": None if planted.isna().any()
                       else {s: float(v) for s, v in planted.items()}})


def figure(params: LeaderboardParams, *, task: str, systems: Path, figure: Path) -> None:
    """The leaderboard figure of the task: every method's means and intervals."""
    import pandas as pd

    from judgebias.studies.leaderboard.figures import draw_leaderboard

    draw_leaderboard(pd.read_parquet(systems), params.task_methods(task), task,
                     params.simulated, figure)


# -- scored_images tasks --

def renders(params: LeaderboardParams, *, task: str, instructions: Path, drawn: Path,
            images: Path) -> None:
    """A scored_images task's instructions and every system's image of each: a simulated
    system's drawn here (FRAME's renderer and the system's edit, seed 004 §4.1 and Table
    1), an imported file's checked here (each error names the key, the file and the row;
    judgebias.studies.leaderboard.scored)."""

    from judgebias.config import input_errors
    from judgebias.io.artifacts import write_table
    from judgebias.studies.leaderboard.scored import (
        DRAWN,
        INSTRUCTIONS,
        draw_pictures,
        imported_drawn,
        imported_instructions,
        synthetic_instructions,
    )

    spec = params.tasks[task]
    assert spec.prompts is not None  # validate: a scored_images task has prompts
    synthetic = spec.prompts.synthetic
    if synthetic is not None:
        table = synthetic_instructions(synthetic.n_prompts, synthetic.seed)
    else:
        with input_errors(f"leaderboard.tasks.{task}.prompts.path"):
            table = imported_instructions(Path(str(spec.prompts.path)))
    drawn_ = synthetic
    outputs = systems_outputs(
        params, task, "prompts", lambda name, path: imported_drawn(table, name, path),
        None if drawn_ is None else lambda name, spec_: draw_pictures(
            table, name, spec_.quality, spec_.edit, size=drawn_.image_size,
            seed=drawn_.seed, folder=images))
    images.mkdir(parents=True, exist_ok=True)
    write_table(table, instructions, INSTRUCTIONS)
    write_table(outputs, drawn, DRAWN)


def score(params: LeaderboardParams, run: RunContext, *, task: str, board_judge: str,
          instructions: Path, drawn: Path, scores: Path) -> None:
    """One judge (`board_judge`) scores every system's image of every instruction of a
    scored_images task 0.0-5.0 under the FRAME prompts its methods ask (seed 004 Figs.
    4-7; scored.asked_prompts), a model job: a journaled answer is never asked again."""
    from judgebias.io.artifacts import read_table, write_table
    from judgebias.studies.leaderboard.scored import (
        DRAWN,
        FRAME_SCORES,
        INSTRUCTIONS,
        asked_prompts,
        score_drawn,
    )

    write_table(score_drawn(run, board_judge, read_table(instructions, INSTRUCTIONS),
                            read_table(drawn, DRAWN),
                            asked_prompts(params, task, board_judge)),
                scores, FRAME_SCORES)


def rank_scores(params: LeaderboardParams, *, task: str, instructions: Path, drawn: Path,
                scores: Sequence[Path], tables: Sequence[Path], metrics: Path) -> None:
    """Every method's leaderboard of a scored_images task: each system's mean FRAME score
    (0-5) with paired bootstrap and rank intervals, the pairwise differences with FDR,
    the order changes against the baseline, and each system's planted mean alignment
    where it is known (``planted_alignment``)."""
    import pandas as pd

    from judgebias.io.artifacts import read_columns, read_table
    from judgebias.studies.leaderboard.measures import PPI_COLUMNS, rank_methods
    from judgebias.studies.leaderboard.scored import (
        DRAWN,
        FRAME_SCORES,
        INSTRUCTIONS,
        method_scores,
        planted_scores,
    )

    items = list(read_table(instructions, INSTRUCTIONS)["item_id"])
    systems = list(params.tasks[task].systems)
    judged = pd.concat([read_columns(p, FRAME_SCORES, ["item_id", "system", "judge",
                                                       "prompt", "named", "score"])
                        for p in scores], ignore_index=True)
    scored = {name: method_scores(params, name, judged, items, systems)
              for name in params.task_methods(task)}
    boards, pairs = rank_methods(scored, systems, params.inference)
    planted = planted_scores(read_table(drawn, DRAWN), systems)
    write_results(params, task, tables, metrics, boards, pairs,
                  pd.DataFrame(columns=list(PPI_COLUMNS)),
                  {"prompts": len(items), "labelled_images": 0},
                  extra_metrics={"planted_alignment": None if planted.isna().any()
                                 else {s: float(v) for s, v in planted.items()}})


# -- vqa tasks --
def vqa_answers(params: LeaderboardParams, *, task: str, questions: Path, answers: Path,
                scenes: Path) -> None:
    """A vqa task's questions and every system's answer to each: BIRCH's synthetic scenes
    and a simulated system's answers drawn here, an imported file's checked here (each
    error names the key, the file and the row; leaderboard.vqa)."""

    from judgebias.config import input_errors
    from judgebias.io.artifacts import write_table
    from judgebias.studies.leaderboard.vqa import (
        ANSWERS,
        QUESTIONS,
        imported_answers,
        imported_questions,
        synthetic_answers,
        synthetic_questions,
    )

    spec = params.tasks[task]
    assert spec.questions is not None  # validate: a vqa task has questions
    drawn = spec.questions.synthetic
    scenes.mkdir(parents=True, exist_ok=True)
    if drawn is not None:
        table = synthetic_questions(drawn.n_items, drawn.seed, scenes)
    else:
        with input_errors(f"leaderboard.tasks.{task}.questions.path"):
            table = imported_questions(Path(str(spec.questions.path)))
    drawn_ = drawn
    outputs = systems_outputs(
        params, task, "questions", lambda name, path: imported_answers(table, name, path),
        None if drawn_ is None
        else lambda name, spec_: synthetic_answers(table, name, spec_, drawn_.seed))
    write_table(table, questions, QUESTIONS)
    write_table(outputs, answers, ANSWERS)


def vqa_anchor(run: RunContext, *, task: str, board_judge: str, questions: Path,
               answers: Path, anchors: Path) -> None:
    """BIRCH's anchor (seed 003 Fig. 20) of every pair of answers on every item of a vqa
    task, by `board_judge` (a model job; a birch method's first pass)."""
    from judgebias.io.artifacts import read_table, write_table
    from judgebias.studies.birch.tables import TEXTS
    from judgebias.studies.leaderboard.vqa import ANSWERS, QUESTIONS, anchor_pairs, answer_pairs

    pairs = answer_pairs(read_table(questions, QUESTIONS), read_table(answers, ANSWERS))
    written = anchor_pairs(run, board_judge, pairs)
    write_table(written, anchors, TEXTS)
    log.info("%s anchors by %s: %s", task, board_judge,
             written["status"].value_counts().to_dict())


def vqa_judge(run: RunContext, *, task: str, board_judge: str, board_variant: str,
              questions: Path, answers: Path, verdicts: Path,
              anchors: Path | None = None) -> None:
    """`board_judge` compares every pair of answers on every item of a vqa task, in both
    orders, in BIRCH variant `board_variant` (base: a single method's; birch: against its
    `anchors`, a birch method's), with BIRCH's prompts (a model job)."""
    from judgebias.io.artifacts import read_table, write_table
    from judgebias.studies.birch.tables import TEXTS
    from judgebias.studies.leaderboard.vqa import (
        ANSWER_VERDICTS,
        ANSWERS,
        QUESTIONS,
        answer_pairs,
        judge_pairs,
    )

    pairs = answer_pairs(read_table(questions, QUESTIONS), read_table(answers, ANSWERS))
    texts = read_table(anchors, TEXTS) if anchors is not None else None
    judged = judge_pairs(run, board_judge, board_variant, pairs, texts)
    write_table(judged, verdicts, ANSWER_VERDICTS)
    log.info("%s %s %s: %s", task, board_judge, board_variant,
             judged["status"].value_counts().to_dict())


def vqa_rank(params: LeaderboardParams, *, task: str, questions: Path, answers: Path,
             verdicts: Sequence[Path], tables: Sequence[Path], metrics: Path) -> None:
    """Every method's leaderboard of a vqa task from the judges' pairwise verdicts: win
    rates per item (single: BIRCH's Base; birch: BIRCH) with paired bootstrap intervals,
    pairwise differences with FDR, rank intervals, the order changes against the
    baseline, and the planted win rates where every answer's truth is known."""
    import pandas as pd

    from judgebias.io.artifacts import read_table
    from judgebias.studies.leaderboard.measures import PPI_COLUMNS, rank_methods
    from judgebias.studies.leaderboard.vqa import (
        ANSWER_VERDICTS,
        ANSWERS,
        QUESTIONS,
        method_scores,
        planted_win_rates,
    )

    items = list(read_table(questions, QUESTIONS)["item_id"])
    answer_table = read_table(answers, ANSWERS)
    systems = list(dict.fromkeys(answer_table["system"]))  # the task's order
    judged = pd.concat([read_table(p, ANSWER_VERDICTS) for p in verdicts], ignore_index=True)
    scored = {name: method_scores(params.methods[name].kind, str(params.methods[name].judge),
                                  judged, items, systems)
              for name in params.task_methods(task)}
    boards, pairs = rank_methods(scored, systems, params.inference)
    planted = planted_win_rates(answer_table, items, systems)
    write_results(params, task, tables, metrics, boards, pairs,
                  pd.DataFrame(columns=list(PPI_COLUMNS)),
                  {"questions": len(items), "labelled_images": 0},
                  extra_metrics={"planted_win_rate": None if planted.isna().any()
                                 else {s: float(v) for s, v in planted.items()}})
