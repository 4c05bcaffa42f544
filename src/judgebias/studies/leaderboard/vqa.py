"""A vqa task of the leaderboard: systems answer questions about images, judges compare
every pair of answers, BIRCH's way or plainly (issue 43; seed 003,
``003_6a8a290eb195f311.txt``).

Items are (image, question) pairs; each system answers every question. On each item a
judge compares every pair of systems' answers with BIRCH's prompts, so the simulated
judges of the BIRCH study (their ``sim.birch`` traits, judgebias.studies.birch.sim) answer
them unchanged:

* method ``single`` is BIRCH's **Base** variant (seed 003 §6.2 "Base", a standard pairwise
  judge after Chen et al.; our Base prompt is Fig. 21 without its reference block, spec
  birch.md), judgebias.studies.birch.jobs ``judge(..., "base")``;
* method ``birch`` is **BIRCH** (seed 003 §5.2): the judge first revises both answers
  against the image and merges them into an anchor in one pass (Fig. 20,
  birch.jobs ``prepare(..., "anchor")``), then judges the pair against the anchor
  (Fig. 21, ``judge(..., "birch")``).

Both orders are always asked (``birch.jobs.ORDERS``): BIRCH's judges are planted with a
position bias (``sim.birch.position_bias``) and so are real ones (spec birch.md, "VL-
RewardBench labels": a judge asked one order looks accurate or inaccurate by position
alone); a pair's verdict is the mean over the two orders, so a pull towards the first
answer cancels in it. A system's score on an item is its win rate over the others (ties
half; judgebias.stats.ranking.item_win_rates through methods.pair_matrix), the unit the
leaderboard's paired bootstrap resamples (spec leaderboard.md, "Units").

The synthetic world is BIRCH's (judgebias.studies.birch.vqa, .data.synthetic): a fresh
scene per item and a question about one of its facts; a simulated system answers
correctly with probability ``quality``, adds ``details`` valid extra facts and
``padding`` filler sentences (BIRCH's ``write_answer``: a wrong answer carries exactly one
false fact). The planted truth is BIRCH's simulated humans (``human_preference``): the
correct answer wins; between two correct (or two wrong) answers the more informative;
else a tie, counted half (`planted_win_rates`).

Imported questions (item_id, image_path, question) and answers (item_id, answer) are
checked before any judge is called; each error names the file and the row, rows counted
from 1 at the first data row (judgebias.data.rows.FIRST_ROW).

Pairs are identified by item and both systems (``item|a|b``, a before b in the task's
system order, as jobs.system_pairs does), so adding a system adds pairs and changes
none: every request of an old pair is the same and the journal answers it.

Role: the vqa kind's items, answers, planted truth, model jobs, methods, params checks
and the paths and schemas of its tables (the workflow's rules import this module for
paths: it imports no statistics library at its top).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import combinations
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyarrow as pa

from judgebias.config import path_errors
from judgebias.data.paths import input_files, resolve_inside
from judgebias.data.rows import FIRST_ROW, no_repeats, read_any_table, require_columns
from judgebias.data.scenes import (
    random_scene,
    render,
    scene_from_json,
    scene_to_json,
    to_png_bytes,
)
from judgebias.io.artifacts import table_schema, write_bytes
from judgebias.io.filedigest import file_sha256
from judgebias.studies.birch.data.synthetic import human_preference
from judgebias.studies.birch.tables import VERDICTS as BIRCH_VERDICTS
from judgebias.studies.birch.vqa import asked, draw_question, true_facts, write_answer
from judgebias.studies.leaderboard.tables import DATA

if TYPE_CHECKING:
    from judgebias.models.context import RunContext
    from judgebias.plan import PlannedCalls
    from judgebias.studies.leaderboard.methods import MethodScores
    from judgebias.studies.leaderboard.params import SyntheticSystem

# BIRCH's default scene size (birch.datasets.<name>.image_size): the simulated judges
# read the scene back exactly from 64 pixels up (judgebias.data.scenes.render).
IMAGE_SIZE = 128
# The BIRCH variant each method kind judging vqa tasks asks (its keys are the kinds
# params.METHOD_TASKS applies to vqa; birch.jobs.JUDGE_PROMPTS has each variant's prompt).
# This module does not import .params: params.validate imports it (no import circle).
VARIANTS: Mapping[str, str] = {"single": "base", "birch": "birch"}
# A verdict mapped back to the pair (birch.jobs.to_pair_side) as P(system_a preferred).
P_FIRST: Mapping[str, float] = {"A": 1.0, "B": 0.0, "tie": 0.5}

# One row per item: the question, the image (its bytes pinned by SHA-256) and, in the
# synthetic world, the scene it shows (scenes.scene_to_json).
QUESTIONS = table_schema("leaderboard_questions", [
    pa.field("item_id", pa.string(), nullable=False),
    pa.field("question", pa.string(), nullable=False),
    pa.field("image_path", pa.string(), nullable=False),
    pa.field("image_sha256", pa.string(), nullable=False),
    pa.field("source", pa.string(), nullable=False),  # synthetic | table
    pa.field("scene", pa.string(), nullable=True),
])

# One row per (item, system): the answer and, for a simulated system, its planted truth
# (BIRCH's pair table's correct_*, details_*, padding_*).
ANSWERS = table_schema("leaderboard_answers", [
    pa.field("item_id", pa.string(), nullable=False),
    pa.field("system", pa.string(), nullable=False),
    pa.field("answer", pa.string(), nullable=False),
    pa.field("source", pa.string(), nullable=False),  # synthetic | table
    pa.field("correct", pa.bool_(), nullable=True),
    pa.field("details", pa.int64(), nullable=True),
    pa.field("padding", pa.int64(), nullable=True),
])

# One row per (item, pair of systems, order shown) of one judge in one variant: BIRCH's
# verdicts table (the verdict mapped back to the pair's A = system_a, B = system_b) with
# the item and the systems.
ANSWER_VERDICTS = table_schema("leaderboard_answer_verdicts", [
    pa.field("item_id", pa.string(), nullable=False),
    pa.field("system_a", pa.string(), nullable=False),
    pa.field("system_b", pa.string(), nullable=False),
    *BIRCH_VERDICTS,
])


def questions_path(task: str) -> str:
    return f"{DATA}/{task}/questions.parquet"


def answers_path(task: str) -> str:
    return f"{DATA}/{task}/answers.parquet"


def scenes_dir(task: str) -> str:
    """Where a synthetic task's scene images are written."""
    return f"{DATA}/{task}/scenes"


def anchors_path(task: str, judge: str) -> str:
    """`judge`'s anchors (Fig. 20) of every pair: BIRCH's texts table."""
    return f"{DATA}/{task}/anchors/{judge}.parquet"


def answer_verdicts_path(task: str, judge: str, variant: str) -> str:
    return f"{DATA}/{task}/answer_verdicts/{judge}/{variant}.parquet"


def answers_files(task: Mapping[str, Any]) -> list[str]:
    """The user's files the answers step of `task` reads (its questions file, each
    imported system's answers), for its rule to declare (editing one reruns it)."""
    questions = task.get("questions") or {}
    return input_files([questions.get("path"),
                        *(spec.get("outputs") for spec in task["systems"].values())])


def judgements(params: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(judge, variant) of every method judging vqa tasks, once each, in params order:
    the verdict tables the rank step reads."""
    return list(dict.fromkeys(
        (spec["judge"], VARIANTS[spec["kind"]])
        for spec in params["leaderboard"]["methods"].values()
        if spec["kind"] in VARIANTS and "judge" in spec))


# -- items and answers --

def synthetic_questions(n_items: int, seed: int, folder: Path) -> pd.DataFrame:
    """`n_items` questions in BIRCH's synthetic world, one fresh scene each
    (judgebias.data.scenes.random_scene, birch.vqa.draw_question), the scene drawn as a
    PNG under `folder`. Item i draws from its own generator seeded by (seed, i), so an
    item does not change when more are asked for."""
    rows = []
    for index in range(n_items):
        rng = np.random.default_rng([seed, index])
        scene = random_scene(rng)
        query, _ = draw_question(scene, rng)
        item_id = synthetic_item(index)
        path = write_bytes(to_png_bytes(render(scene, IMAGE_SIZE)), folder / f"{item_id}.png")
        rows.append({"item_id": item_id, "question": query, "image_path": str(path),
                     "image_sha256": file_sha256(path), "source": "synthetic",
                     "scene": scene_to_json(scene)})
    return pd.DataFrame(rows, columns=QUESTIONS.names)


def synthetic_item(index: int) -> str:
    """The id of synthetic item `index` (known before its scene is drawn: the params
    checks read an answers file against it)."""
    return f"q{index:04d}"


def synthetic_answers(questions: pd.DataFrame, system: str, spec: SyntheticSystem,
                      seed: int) -> pd.DataFrame:
    """A simulated system's answer to every synthetic question, built as BIRCH's
    synthetic answers are (birch.vqa.write_answer, seed 003 spec "What the simulated
    judge must plant"): correct with probability ``spec.quality``, ``spec.details`` valid
    extra facts (fewer where the scene has fewer to tell) and ``spec.padding`` filler
    sentences. Item i draws from a generator seeded by (seed, system, i), so a system's
    answers do not change when another system is added."""
    stream = [int(b) for b in system.encode()]
    rows = []
    for index, (item_id, query, scene_json) in enumerate(zip(
            questions["item_id"], questions["question"], questions["scene"], strict=True)):
        key = asked(str(query))
        if scene_json is None or key is None:
            raise ValueError(f"system {system!r}: a simulated system answers synthetic "
                             f"questions; item {item_id!r} has no known scene")
        scene = scene_from_json(scene_json)
        rng = np.random.default_rng([seed, *stream, index])
        correct = bool(rng.random() < spec.quality)
        text, details = write_answer(scene, true_facts(scene)[key], correct, spec.details,
                                     spec.padding, rng)
        rows.append((item_id, system, text, "synthetic", correct, details, spec.padding))
    return pd.DataFrame(rows, columns=ANSWERS.names)


def imported_questions(path: Path) -> pd.DataFrame:
    """The task's questions from a CSV or Parquet file of item_id, image_path (relative to
    the file's folder, inside it), question: each item once, no empty question, each
    image an existing file."""
    table = read_any_table(path)
    require_columns(table.columns, ("item_id", "image_path", "question"), path)
    ids = table["item_id"].astype(str)
    rows = []
    for row, (raw, item_id, relative, query) in enumerate(
            zip(table["item_id"], ids, table["image_path"], table["question"], strict=True),
            start=FIRST_ROW):
        _text(raw if isinstance(raw, str) else str(raw) if pd.notna(raw) else None,
              path, row, "item_id")
        _text(query, path, row, f"question of item {item_id!r}")
        image = resolve_inside(path.parent, str(relative),
                               what=f"{path}: row {row}: image_path")
        if not image.is_file():
            raise ValueError(f"{path}: row {row}: image_path {str(relative)!r}: no such "
                             f"file ({image})")
        rows.append((item_id, str(query), str(image), file_sha256(image), "table", None))
    no_repeats(ids, path, "item_id")
    return pd.DataFrame(rows, columns=QUESTIONS.names)


def imported_answers(questions: pd.DataFrame, system: str, path: Path) -> pd.DataFrame:
    """A system's answers from a CSV or Parquet file of item_id, answer: every item of
    the task exactly once, no other item, no empty answer (its truth unknown)."""
    table = read_any_table(path)
    require_columns(table.columns, ("item_id", "answer"), path)
    ids = table["item_id"].astype(str)
    known = set(questions["item_id"])
    for row, (item_id, text) in enumerate(zip(ids, table["answer"], strict=True),
                                          start=FIRST_ROW):
        if item_id not in known:
            raise ValueError(f"{path}: row {row}: item_id {item_id!r} is not an item of "
                             "the task")
        _text(text, path, row, f"answer for item {item_id!r}")
    no_repeats(ids, path, "item_id")
    absent = sorted(known - set(ids))
    if absent:
        raise ValueError(f"{path}: no answer for {len(absent)} item(s) of the task, e.g. "
                         f"{absent[:3]}: every system needs an output on every item")
    answer = dict(zip(ids, table["answer"].astype(str), strict=True))
    return pd.DataFrame({"item_id": questions["item_id"].to_numpy(), "system": system,
                         "answer": [answer[i] for i in questions["item_id"]],
                         "source": "table", "correct": None, "details": None,
                         "padding": None}, columns=ANSWERS.names)


def _text(value: Any, path: Path, row: int, what: str) -> None:
    """A non-empty text cell (an empty CSV cell is "", an empty Parquet one None/NaN)."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{path}: row {row}: empty {what}")


# -- the planted truth --

def planted_win_rates(answers: pd.DataFrame, items: Sequence[str], systems: Sequence[str]
                      ) -> pd.Series:
    """Each system's true win rate, the number a vqa leaderboard should recover.

    Per item, BIRCH's simulated humans' verdict on every pair of systems
    (birch.data.synthetic.human_preference: the correct answer; between equally correct
    ones the more informative; else a tie, half; spec birch.md "What the simulated judge
    must plant", after seed 003 §3.1's human-preferred y^c), as win rates over the
    opponents (methods.pair_matrix, the methods' own estimand), averaged over items.

    Parameters
    ----------
    answers
        The answers table (``ANSWERS``): ``correct`` and ``details`` per (item, system).
    items, systems
        The task's items and systems, in order.

    Returns
    -------
    pandas.Series
        By system; NaN for all where any answer's truth is unknown (an imported answer)
        or there are fewer than two systems.
    """
    from judgebias.studies.leaderboard.methods import pair_matrix

    truth = answers.set_index(["item_id", "system"])
    if truth["correct"].isna().any() or len(systems) < 2:
        return pd.Series(np.nan, index=list(systems))
    rows = []
    for item_id in items:
        for a, b in combinations(systems, 2):
            first, second = truth.loc[(item_id, a)], truth.loc[(item_id, b)]
            label = human_preference(bool(first["correct"]), bool(second["correct"]),
                                     int(first["details"]), int(second["details"]))
            rows.append((item_id, a, b, P_FIRST[label]))
    pairs = pd.DataFrame(rows, columns=["item_id", "system_a", "system_b", "win"])
    return pair_matrix(pairs, "win", items, systems).mean(axis=0)


# -- the model jobs --

def answer_pairs(questions: pd.DataFrame, answers: pd.DataFrame) -> pd.DataFrame:
    """Every pair of systems on every item, in BIRCH's pair-table shape (pair_id, query,
    image, answer_a, answer_b: what birch.jobs shows a judge) with the item and the
    systems; system_a before system_b in the answers' system order (the task's). The pair
    id names the item and both systems, so adding a system changes no pair."""
    systems = list(dict.fromkeys(answers["system"]))
    text = answers.set_index(["item_id", "system"])["answer"]
    rows = [{"pair_id": f"{item_id}|{a}|{b}", "item_id": item_id, "system_a": a,
             "system_b": b, "query": query, "image": image, "answer_a": text[(item_id, a)],
             "answer_b": text[(item_id, b)]}
            for item_id, query, image in zip(questions["item_id"], questions["question"],
                                             questions["image_path"], strict=True)
            for a, b in combinations(systems, 2)]
    return pd.DataFrame(rows, columns=["pair_id", "item_id", "system_a", "system_b", "query",
                                       "image", "answer_a", "answer_b"])


def anchor_pairs(run: RunContext, judge: str, pairs: pd.DataFrame) -> pd.DataFrame:
    """BIRCH's anchor of every pair by `judge`: both answers revised against the image
    and merged in one pass (seed 003 §5.2, Fig. 20; birch.jobs.prepare), as BIRCH's texts
    table (an answer without a ``Merged Response:`` keeps status unparseable)."""
    from judgebias.studies.birch.jobs import prepare

    return prepare(run, judge, "anchor", pairs, caption_prompt="")


def judge_pairs(run: RunContext, judge: str, variant: str, pairs: pd.DataFrame,
                anchors: pd.DataFrame | None = None) -> pd.DataFrame:
    """`judge`'s verdict on every pair in one BIRCH variant, both orders always.

    Both orders because BIRCH's judges (and real ones) lean towards a position; the
    mean over the two cancels the lean (module docstring). The requests are BIRCH's
    own (birch.jobs.judge), so a simulated judge's ``sim.birch`` traits apply unchanged
    and a request the BIRCH study already made is answered from the journal.

    Parameters
    ----------
    run
        The run context (journal, the judge, its limits).
    judge
        The panel model that judges.
    variant
        ``base`` (seed 003 §6.2's Base) or ``birch`` (Fig. 21 against the pair's anchor).
    pairs
        `answer_pairs`' table.
    anchors
        ``birch``: the judge's anchors (`anchor_pairs`); a pair without one keeps status
        ``no_text`` and is not asked.

    Returns
    -------
    pandas.DataFrame
        One row per (pair, order shown): ``ANSWER_VERDICTS``' columns.
    """
    from judgebias.studies.birch.jobs import judge as judge_variant

    verdicts = judge_variant(run, judge, variant, pairs, anchors,
                             swap_order=True).drop(columns="repeat")
    return pairs[["pair_id", "item_id", "system_a", "system_b"]].merge(
        verdicts, on="pair_id", how="right", validate="one_to_many")


# -- the methods --

def method_scores(kind: str, judge: str, verdicts: pd.DataFrame, items: Sequence[str],
                  systems: Sequence[str]) -> MethodScores:
    """A vqa method's win rates: Base (seed 003 §6.2) for ``single``, BIRCH (§5.2) for
    ``birch``, read alike so that the two differ only in what the judge was shown.

    A pair's verdict is the mean over the orders asked (a position bias cancels in it),
    a tie counts half, a failed answer not at all (methods.single_pairwise, with the
    variant in the instruction's place).

    Parameters
    ----------
    kind
        The method's kind (a key of ``VARIANTS``).
    judge
        The method's judge: only its verdicts count.
    verdicts
        Verdict rows (``ANSWER_VERDICTS``: item_id, system_a, system_b, judge, variant,
        verdict "A" / "B" / "tie" / None).
    items, systems
        The task's items and systems, in order.

    Returns
    -------
    MethodScores
        Items x systems win rates (NaN: no judged pair), unit ``methods.WIN_RATE``.
    """
    from judgebias.studies.leaderboard.methods import single_pairwise

    shown = verdicts.assign(instruction=verdicts["variant"],
                            p_a=verdicts["verdict"].map(P_FIRST).astype(float))
    return single_pairwise(shown, items, systems, judge, VARIANTS[kind])


# -- params checks --

def task_errors(params: Mapping[str, Any], where: str, task: Mapping[str, Any]
                ) -> list[str]:
    """What a vqa task needs (params.validate calls it): exactly one source of questions,
    an existing file where it is one, none of the other kinds' items or labels, both
    orders (the position-bias fix is not optional here), and systems this kind can
    answer with: a simulated one (on synthetic questions) or a file of answers, none of
    the other kinds' simulated traits. An imported file is read now, as its step will
    read it, where the items are known before any job runs."""
    questions = task.get("questions") or {}
    errors = []
    if len([s for s in ("synthetic", "path") if s in questions]) != 1:
        errors.append(f"{where}.questions: a vqa task needs exactly one of "
                      "questions.synthetic, questions.path")
    items: list[str] | None = None
    if "synthetic" in questions:
        items = [synthetic_item(i) for i in range(questions["synthetic"]["n_items"])]
    elif "path" in questions:
        missing = path_errors(f"{where}.questions.path", questions["path"])
        items, found = _imported_items(f"{where}.questions.path", questions["path"])
        errors += missing or found
    errors += [f"{where}.{extra}: {why}" for extra, why in (
        ("images", f"a vqa task's items are its questions ({where}.questions)"),
        ("prompts", f"a vqa task's items are its questions ({where}.questions)"),
        ("human_labels", "human labels are used on captions tasks (PPI++ of scores); a "
                         "vqa task has no labelled verdicts yet")) if extra in task]
    if task.get("order", "both") != "both":
        errors.append(f"{where}.order: a vqa task always asks both orders (BIRCH's judges "
                      "have a position bias the mean over orders cancels)")
    for system, spec in task["systems"].items():
        errors += _system_errors(f"{where}.systems.{system}", spec, questions, items)
    return errors


def _system_errors(at: str, spec: Mapping[str, Any], questions: Mapping[str, Any],
                   items: list[str] | None) -> list[str]:
    """A system's source and traits; its answers file read against `items` (None: the
    items are not known yet)."""
    errors = []
    if "model" in spec and "outputs" not in spec and "synthetic" not in spec:
        errors.append(f"{at}.model: a panel model answers no questions here: give the "
                      "system's answers as `outputs` (item_id, answer)")
    drawn = spec.get("synthetic") or {}
    for trait, kinds in (("style_of", "captions"), ("edit", "scored_images")):
        if drawn.get(trait) is not None:
            errors.append(f"{at}.synthetic.{trait}: {kinds} only")
    if drawn and "synthetic" not in questions:
        errors.append(f"{at}.synthetic: a simulated system answers synthetic questions "
                      "(questions.synthetic), whose scenes it knows")
    if "outputs" in spec and items is not None and not path_errors(
            f"{at}.outputs", spec["outputs"]):
        try:
            imported_answers(pd.DataFrame({"item_id": items}), "", Path(spec["outputs"]))
        except (ValueError, KeyError, OSError) as exc:
            errors.append(f"{at}.outputs: {exc}")
    return errors


def _imported_items(where: str, path: str) -> tuple[list[str] | None, list[str]]:
    """The items of a questions file read as its step will read it, or its error (file
    and row) under `where`; (None, []) where the file is not there."""
    if not Path(path).is_file():
        return None, []
    try:
        return list(imported_questions(Path(path))["item_id"]), []
    except (ValueError, KeyError, OSError) as exc:
        return None, [f"{where}: {exc}"]


# -- judgebias plan --

def planned_calls(params: Mapping[str, Any], task: str) -> list[PlannedCalls]:
    """The calls of vqa task `task`, for `judgebias plan` (leaderboard.plan): per judge,
    its anchors (one per pair, a birch method's) and its verdicts (two per pair and
    variant), keyed where the questions and answers (and, for BIRCH's verdicts, the
    anchors) are built, else counted from the task's size."""
    from judgebias.io.artifacts import read_table
    from judgebias.judging.tasks import build_requests
    from judgebias.models.context import RunContext
    from judgebias.plan import PlannedCalls
    from judgebias.studies.birch.jobs import (
        ORDERS,
        judge_task,
        shown,
        text_task,
        with_texts,
    )
    from judgebias.studies.birch.tables import TEXTS

    spec = params["leaderboard"]["tasks"][task]
    built = all(Path(p).exists() for p in (questions_path(task), answers_path(task)))
    pairs = (answer_pairs(read_table(questions_path(task), QUESTIONS),
                          read_table(answers_path(task), ANSWERS)) if built else None)
    n_pairs = (len(pairs) if pairs is not None
               else _n_items(spec["questions"]) * len(list(combinations(spec["systems"], 2))))
    run, planned = RunContext(params), []

    def keyed(judge: str, asking: Any, items: pd.DataFrame) -> PlannedCalls:
        requests, _ = build_requests(run, judge, asking, items)
        return PlannedCalls(judge, [r for r in requests if r is not None])

    for judge, variant in judgements(params):
        anchors = anchors_path(task, judge)
        if variant == "birch":
            planned.append(keyed(judge, text_task("anchor", ""), shown(pairs, ORDERS[:1]))
                           if pairs is not None else PlannedCalls(
                               judge, estimated=n_pairs, note=NOT_BUILT,
                               task=text_task("anchor", "")))
        if pairs is not None and (variant == "base" or Path(anchors).exists()):
            texts = read_table(anchors, TEXTS) if variant == "birch" else None
            planned.append(keyed(judge, judge_task(variant),
                                 shown(with_texts(pairs, texts), ORDERS)))
        else:
            planned.append(PlannedCalls(judge, estimated=n_pairs * len(ORDERS),
                                        note=NOT_BUILT, task=judge_task(variant)))
    return planned


def _n_items(questions: Mapping[str, Any]) -> int:
    """The items of a task whose tables are not built: its synthetic count, or the rows
    of its questions file (0 where that is not there yet)."""
    if "synthetic" in questions:
        return int(questions["synthetic"]["n_items"])
    path = Path(questions["path"])
    return len(read_any_table(path)) if path.is_file() else 0


NOT_BUILT = ("the task's answers (or, for BIRCH, the judge's anchors) not built: every "
             "pair of systems on every item, one anchor per pair, two verdicts (both "
             "orders) per pair and variant")
