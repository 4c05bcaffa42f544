"""A scored_images task of the leaderboard (issue 43): the user's image generators, each
image scored pointwise 0.0-5.0 by FRAME's prompts (seed 004,
/work/shared/seeds/004_eb2847ac5d078cb2.txt, Figs. 4-7), and the audit's fix for FRAME's
finding, the mitigation prompt, beside the plain one.

Items are generation instructions; every system draws one image per instruction and every
judge scores every image. A system's score on an item is its image's score, in "FRAME
score (0-5)" (spec leaderboard.md, "Units"); items are the bootstrap's unit.

Methods
-------
* ``single``: FRAME's standard prompt (Fig. 4).
* ``frame_mitigated``: the chosen mitigation prompt: bias-aware (Fig. 5), bias-definition
  naming ``manipulation`` with its Table 1 definition (Fig. 6), or chain of thought
  (Fig. 7). FRAME's Table 5 shows these prompts shrink, without removing, the lift a
  cosmetic edit buys.

Both are asked through FRAME's own job functions (judgebias.studies.frame.jobs:
``score_images`` with FRAME's built-in template ids, :data:`PROMPTS`, and its system
prompt), so a simulated judge's ``sim.frame`` traits answer exactly as in the FRAME study,
and a scored answer is the parsed decimal (FRAME reads "Score: X.X"; a decimal has no
log-prob expectation, judgebias.judging.answers.DecimalScore): ``leaderboard.score`` does
not apply. A failed or unparseable answer has no score (NaN), never a number.

The synthetic world
-------------------
FRAME's benchmark (§4.1, judgebias.studies.frame.data): instructions written by FRAME's
offline template from one Table 8 concept per slot, the five domains taking turns. A
simulated system draws each instruction with FRAME's offline renderer
(judgebias.studies.frame.scene.render) at a per-slot error rate of ``1 - quality``:
decision, each concept is shown with probability ``quality`` independently (the
renderer's own error model, so an image is drawn exactly as FRAME draws one), not exactly
the share ``quality`` of them; the mean true alignment is then ``quality`` in
expectation, and each image's alignment (the share of the instruction's concepts it
shows, FRAME's ``a``) is known: the planted truth people judge (:func:`planted_scores`).
A system's ``edit`` (a FRAME recipe, judgebias.studies.frame.recipes) is then applied to
every image by FRAME's manipulation functions (judgebias.studies.frame.manipulate); it is
cosmetic: it changes no concept shown (FRAME's reader, scene.read_scene, reads the same
scene), so it earns nothing in truth and whatever a judge gives it is bias. A step that
does not apply to an item's domain (Table 1: no keyword overlay or boxes in Outdoor, the
beauty filter in People only; recipes.applies) is left out for that image, and the
table records the recipe each image got. The beauty filter is the offline stand-in
(``beauty_filter=smoothing``); GFPGAN needs FRAME's weights, which this task does not
read. Each image is seeded by (seed, system, instruction), so adding a system or
an instruction changes no other system's images (and no judge call is paid again).

Imported instructions and images reuse the images task's importers
(judgebias.studies.leaderboard.pictures: prompt_id, prompt / prompt_id, image_path, each
error naming the file and the row); their alignment is unknown.

Role: the items, images, planted truth, jobs, methods and checks of a scored_images
task (its steps are judgebias.studies.leaderboard.steps' ``renders``, ``score`` and
``rank_scores``).
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyarrow as pa

from judgebias.config import path_errors
from judgebias.io.artifacts import (
    ANSWER_FIELDS,
    CALL_FIELDS,
    read_table,
    table_schema,
    write_bytes,
)
from judgebias.studies.frame.params import Prompts
from judgebias.studies.frame.recipes import (
    DOMAINS,
    ORIGINAL,
    Step,
    applies,
    parse_recipe,
    recipe_id,
)
from judgebias.studies.leaderboard.tables import DATA

if TYPE_CHECKING:
    from PIL import Image

    from judgebias.models.context import RunContext
    from judgebias.studies.leaderboard.methods import MethodScores
    from judgebias.studies.leaderboard.params import LeaderboardParams, Method

FRAME_SCORE = "FRAME score (0-5)"
PROMPTS = Prompts()
"""FRAME's built-in template ids of the scoring prompts (``frame.prompts``' defaults):
the leaderboard asks as the FRAME study asks by default, whether or not a `frame:` block
is configured."""
MIN_IMAGE_SIZE = 128  # FRAME's offline renderer's layout (frame.dataset...images.size)
OFFLINE_BEAUTY = "smoothing"  # the beauty filter's offline stand-in (manipulate.py)

# One row per instruction: its text and, for FRAME's synthetic instructions, its domain
# and its Table 8 concepts (JSON).
INSTRUCTIONS = table_schema("leaderboard_instructions", [
    pa.field("item_id", pa.string(), nullable=False),
    pa.field("prompt", pa.string(), nullable=False),
    pa.field("domain", pa.string(), nullable=True),
    pa.field("concepts", pa.string(), nullable=True),
])

# One row per (instruction, system): the system's image, where it came from, and for a
# simulated system its true alignment and the recipe its image got ("original": none).
DRAWN = table_schema("leaderboard_drawn", [
    pa.field("item_id", pa.string(), nullable=False),
    pa.field("system", pa.string(), nullable=False),
    pa.field("image_path", pa.string(), nullable=False),
    pa.field("source", pa.string(), nullable=False),  # synthetic | table
    pa.field("alignment", pa.float64(), nullable=True),
    pa.field("edit", pa.string(), nullable=True),
])

# One row per (instruction, system, prompt asked) and judge: the judge's answer to one of
# FRAME's scoring prompts (`prompt`: standard, bias_aware, bias_definition or cot; `named`:
# the manipulation Fig. 6 names, "" otherwise) and the score read from it.
FRAME_SCORES = table_schema("leaderboard_frame_scores", [
    pa.field("item_id", pa.string(), nullable=False),
    pa.field("system", pa.string(), nullable=False),
    pa.field("judge", pa.string(), nullable=False),
    pa.field("prompt", pa.string(), nullable=False),
    pa.field("named", pa.string(), nullable=False),
    pa.field("score", pa.float64(), nullable=True),
    *ANSWER_FIELDS,
    *CALL_FIELDS,
])


# -- where the files live (apart from an images task's prompts and pictures) ---------------

def instructions_path(task: str) -> str:
    return f"{DATA}/{task}/instructions.parquet"


def drawn_path(task: str) -> str:
    return f"{DATA}/{task}/drawn.parquet"


def drawn_dir(task: str) -> str:
    return f"{DATA}/{task}/drawn"


def frame_scores_path(task: str, judge: str) -> str:
    return f"{DATA}/{task}/frame_scores/{judge}.parquet"


# -- items ------------------------------------------------------------------------------------

def domain_counts(n_prompts: int) -> dict[str, int]:
    """Instructions per FRAME domain, the five domains taking turns (seed 004 §4.1 builds
    the same number per domain)."""
    return {domain: n_prompts // len(DOMAINS) + (i < n_prompts % len(DOMAINS))
            for i, domain in enumerate(DOMAINS)}


def synthetic_instructions(n_prompts: int, seed: int) -> pd.DataFrame:
    """`n_prompts` FRAME instructions (seed 004 §4.1, Table 8): concepts drawn by FRAME's
    stage 1 with none perturbed (the instruction is what each system is asked to draw),
    written by FRAME's offline template."""
    from judgebias.studies.frame.concepts import compose_instruction
    from judgebias.studies.frame.data import draw_concepts

    drawn = draw_concepts(domain_counts(n_prompts), (1.0,), seed=seed)
    prompts = [compose_instruction(domain, json.loads(concepts))
               for domain, concepts in zip(drawn["domain"], drawn["concepts"], strict=True)]
    return pd.DataFrame({"item_id": drawn["item_id"], "prompt": prompts,
                         "domain": drawn["domain"], "concepts": drawn["concepts"]},
                        columns=INSTRUCTIONS.names)


def imported_instructions(path: Path) -> pd.DataFrame:
    """The user's instructions (prompt_id, prompt; pictures.imported_prompts checks them):
    for a real user the instruction's text is the item, its domain and concepts unknown."""
    from judgebias.studies.leaderboard.pictures import imported_prompts

    table = imported_prompts(path)
    return pd.DataFrame({"item_id": table["item_id"], "prompt": table["prompt"],
                         "domain": None, "concepts": None}, columns=INSTRUCTIONS.names)


# -- images ------------------------------------------------------------------------------------

def edit_steps(edit: str | None, domain: str) -> tuple[Step, ...]:
    """The steps of a system's edit that apply to an image of `domain` (seed 004 Table 1
    and §5.2: recipes.applies); none without an edit."""
    if edit is None:
        return ()
    return tuple(s for s in parse_recipe(edit) if applies(s.manipulation, domain))


def draw_seed(seed: int, system: str, item_id: str) -> int:
    """The renderer's seed of `system`'s image of `item_id` (names hold no NUL, so the
    separator keeps (system, item) pairs apart)."""
    entropy = [seed, *system.encode("utf-8"), 0, *item_id.encode("utf-8")]
    return int(np.random.SeedSequence(entropy).generate_state(1)[0])


def edited(image: Image.Image, steps: Sequence[Step], instruction: str,
           concepts: Mapping[str, str], domain: str, boxes: Sequence[Any]) -> Image.Image:
    """`image` after FRAME's manipulation functions apply `steps` (manipulate.apply; the
    keyword overlay writes the object concept, the boxes outline the drawn objects)."""
    from judgebias.studies.frame import manipulate
    from judgebias.studies.frame.concepts import keyword

    if not steps:
        return image
    beauty = any(s.manipulation == "beauty_filter" for s in steps)
    context = manipulate.ItemContext(
        instruction, keyword(domain, concepts), tuple(boxes),
        manipulate.restorer(OFFLINE_BEAUTY) if beauty else None)
    return manipulate.apply(image, list(steps), context)


def png_bytes(image: Image.Image) -> bytes:
    """An image encoded as FRAME's renders are (render.PNG_OPTIONS): the bytes a judge's
    request key hashes."""
    from judgebias.studies.frame.render import PNG_OPTIONS

    buffer = io.BytesIO()
    image.save(buffer, **PNG_OPTIONS)
    return buffer.getvalue()


def draw_pictures(instructions: pd.DataFrame, system: str, quality: float,
                  edit: str | None, *, size: int, seed: int, folder: Path) -> pd.DataFrame:
    """A simulated system's image of every FRAME instruction (module docstring): FRAME's
    renderer showing each concept with probability `quality`, then `edit`, written under
    ``folder/system``; each row with its true alignment and the recipe it got."""
    from judgebias.studies.frame.concepts import parse_instruction
    from judgebias.studies.frame.scene import alignment, render

    paths, truth, recipes = [], [], []
    for item_id, prompt, domain, concepts in zip(
            instructions["item_id"], instructions["prompt"], instructions["domain"],
            instructions["concepts"], strict=True):
        if domain is None or concepts is None:
            raise ValueError(f"system {system!r}: a simulated system draws FRAME's "
                             f"synthetic instructions; {item_id!r} is not one")
        scene = render(prompt, size=size, seed=draw_seed(seed, system, item_id),
                       error_rate=1.0 - quality)
        steps = edit_steps(edit, domain)
        image = edited(scene.image, steps, prompt, json.loads(concepts), domain, scene.boxes)
        path = folder / system / f"{item_id}.png"
        write_bytes(png_bytes(image), path)
        paths.append(str(path))
        truth.append(alignment(parse_instruction(prompt, domain), dict(scene.drawn)))
        recipes.append(recipe_id(list(steps)))
    return pd.DataFrame({"item_id": instructions["item_id"].to_numpy(), "system": system,
                         "image_path": paths, "source": "synthetic", "alignment": truth,
                         "edit": recipes}, columns=DRAWN.names)


def imported_drawn(instructions: pd.DataFrame, system: str, path: Path) -> pd.DataFrame:
    """A system's own images (prompt_id, image_path; pictures.imported_pictures checks
    every row): alignment and edit unknown."""
    from judgebias.studies.leaderboard.pictures import imported_pictures

    table = imported_pictures(instructions[["item_id"]], system, path)
    return pd.DataFrame({"item_id": table["item_id"], "system": system,
                         "image_path": table["image_path"], "source": "table",
                         "alignment": np.nan, "edit": None}, columns=DRAWN.names)


def planted_scores(drawn: pd.DataFrame, systems: Sequence[str]) -> pd.Series:
    """Each system's mean true alignment (FRAME's ``a``: the share of the instruction's
    concepts its images show, what people judge, seed 004 §4.1); NaN for all where any
    image's alignment is unknown (an imported image)."""
    wide = drawn.pivot(index="item_id", columns="system", values="alignment").reindex(
        columns=list(systems)).astype(float)
    if wide.isna().to_numpy().any():
        return pd.Series(np.nan, index=list(systems))
    return wide.mean(axis=0)


# -- jobs --------------------------------------------------------------------------------------

def prompt_of(method: Method) -> tuple[str, str]:
    """The FRAME prompt a method asks on a scored_images task and the manipulation it
    names ("" unless Fig. 6): single, the standard prompt (Fig. 4); frame_mitigated, its
    mitigation prompt (Figs. 5-7)."""
    if method.kind == "single":
        return "standard", ""
    named = method.manipulation if method.mitigation == "bias_definition" else None
    return method.mitigation, named or ""


def asked_prompts(params: LeaderboardParams, task: str, judge: str) -> list[tuple[str, str]]:
    """The prompts (kind, named) `judge` is asked on `task`: those of its methods that
    judge the task, once each, in method order."""
    asked = [prompt_of(params.methods[name]) for name in params.task_methods(task)
             if params.methods[name].judge == judge]
    return list(dict.fromkeys(asked))


def shown_images(instructions: pd.DataFrame, drawn: pd.DataFrame) -> pd.DataFrame:
    """Every system's image with what FRAME's scoring prompts need (jobs.score_images:
    item_id, domain, instruction, recipe, image), and its system."""
    shown = drawn.merge(instructions[["item_id", "prompt", "domain"]], on="item_id",
                        how="left")
    return pd.DataFrame({"item_id": shown["item_id"], "domain": shown["domain"],
                         "instruction": shown["prompt"], "recipe": ORIGINAL,
                         "image": shown["image_path"], "system": shown["system"]})


def score_drawn(run: RunContext, judge: str, instructions: pd.DataFrame,
                drawn: pd.DataFrame, asked: Sequence[tuple[str, str]]) -> pd.DataFrame:
    """`judge` scores every system's image of every instruction under each prompt of
    `asked` (FRAME's jobs.score_images: Figs. 4-7 with their system prompt; `run` the
    journal and the panel): one FRAME_SCORES row per (image, prompt)."""
    from judgebias.studies.frame.jobs import score_images

    images = shown_images(instructions, drawn)
    frames = [score_images(run, judge, kind, images.assign(named=named), prompts=PROMPTS)
              .assign(system=images["system"].to_numpy())
              for kind, named in asked]
    if not frames:
        return FRAME_SCORES.empty_table().to_pandas()
    return pd.concat(frames, ignore_index=True)[FRAME_SCORES.names]


NOT_DRAWN = ("the task's images not drawn: one call per instruction, system and prompt "
             "asked")


def planned_scores(params: LeaderboardParams, judges: Sequence[str], run: RunContext,
                   task: str, calls: dict[tuple[str, str], Any]) -> None:
    """`judgebias plan`'s count of a scored_images task's judge calls, added to `calls`
    (judgebias.plan.PlannedCalls by (judge, prompt)): for each of `judges` (the task
    kind's, params.method_judges), keyed one by one as the score step sends them where
    the task's instructions and images are drawn; else counted from its size (synthetic
    instructions, or the rows of the user's file) x systems x the prompts the judge is
    asked."""
    from judgebias.judging.tasks import build_requests
    from judgebias.plan import PlannedCalls
    from judgebias.studies.frame.jobs import prompt_items, score_task

    built = all(Path(p).exists() for p in (instructions_path(task), drawn_path(task)))
    images = (shown_images(read_table(instructions_path(task), INSTRUCTIONS),
                           read_table(drawn_path(task), DRAWN)) if built else None)
    for judge in judges:
        for kind, named in asked_prompts(params, task, judge):
            asking = score_task(PROMPTS, kind)
            planned = calls.setdefault((judge, f"frame {kind} {named}".strip()),
                                       PlannedCalls(judge, task=asking))
            if images is not None:
                requests, _ = build_requests(run, judge, asking,
                                             prompt_items(kind, images.assign(named=named)))
                planned.requests += [r for r in requests if r is not None]
            else:
                planned.estimated += (n_instructions(params, task)
                                      * len(params.tasks[task].systems))
                planned.note = NOT_DRAWN


def n_instructions(params: LeaderboardParams, task: str) -> int:
    """How many instructions a task has before they are drawn: its synthetic count, or
    the rows of the user's file (0 while it is not there)."""
    prompts = params.tasks[task].prompts
    assert prompts is not None  # validate: a scored_images task has prompts
    if prompts.synthetic is not None:
        return prompts.synthetic.n_prompts
    path = Path(str(prompts.path))
    return len(imported_instructions(path)) if path.is_file() else 0


# -- methods -----------------------------------------------------------------------------------

def prompted(scores: pd.DataFrame, items: Sequence[str], systems: Sequence[str],
             judge: str, prompt: str, named: str = "") -> MethodScores:
    """One judge's scores under one FRAME prompt (items x systems, NaN: no score)."""
    # imported here: methods imports the statistics, which reading the workflow must not
    from judgebias.studies.leaderboard.methods import MethodScores

    chosen = scores[(scores["judge"] == judge) & (scores["prompt"] == prompt)
                    & (scores["named"] == named)]
    wide = chosen.pivot(index="item_id", columns="system", values="score").reindex(
        index=list(items), columns=list(systems)).astype(float)
    return MethodScores(wide, FRAME_SCORE, {s: (judge,) for s in systems})


def method_scores(params: LeaderboardParams, method: str, scores: pd.DataFrame,
                  items: Sequence[str], systems: Sequence[str]) -> MethodScores:
    """Method `method` of ``leaderboard.methods`` on a scored_images task: its judge's
    scores under its prompt (:func:`prompt_of`)."""
    spec = params.methods[method]
    if spec.kind not in ("single", "frame_mitigated"):
        raise ValueError(f"method {method!r}: a {spec.kind} method does not judge "
                         "scored_images tasks")
    prompt, named = prompt_of(spec)
    return prompted(scores, items, systems, str(spec.judge), prompt, named)


# -- params checks -----------------------------------------------------------------------------

def task_errors(params: Mapping[str, Any], where: str, task: Mapping[str, Any]) -> list[str]:
    """What a scored_images task needs (called by params.validate): its instructions,
    no other kind's items, systems whose images it can have, valid edits; and, once for
    the first such task, each bias_definition method's manipulation."""
    errors = _item_errors(where, task)
    for system, spec in task["systems"].items():
        errors += _system_errors(f"{where}.systems.{system}", task, spec)
    first = next(name for name, spec in params["leaderboard"]["tasks"].items()
                 if spec["kind"] == "scored_images")
    if where == f"leaderboard.tasks.{first}":
        errors += _manipulation_errors(params["leaderboard"]["methods"])
    return errors


def _item_errors(where: str, task: Mapping[str, Any]) -> list[str]:
    prompts = task.get("prompts") or {}
    errors = []
    if len([s for s in ("synthetic", "path") if s in prompts]) != 1:
        errors.append(f"{where}.prompts: a scored_images task needs exactly one of "
                      "prompts.synthetic, prompts.path")
    if "path" in prompts:
        errors += path_errors(f"{where}.prompts.path", prompts["path"])
    size = (prompts.get("synthetic") or {}).get("image_size")
    if size is not None and size < MIN_IMAGE_SIZE:
        errors.append(f"{where}.prompts.synthetic.image_size: {size}, but FRAME's offline "
                      f"renderer needs {MIN_IMAGE_SIZE} px or more")
    for other, why in (("images", "its items are its instructions (prompts)"),
                       ("questions", "questions belong to a vqa task"),
                       ("human_labels", "human labels are used on captions tasks")):
        if other in task:
            errors.append(f"{where}.{other}: not for a scored_images task ({why})")
    return errors


def _system_errors(at: str, task: Mapping[str, Any], spec: Mapping[str, Any]) -> list[str]:
    errors = []
    if "model" in spec and "outputs" not in spec and "synthetic" not in spec:
        errors.append(f"{at}.model: a panel model draws no images: give the system's "
                      "images as `outputs` (prompt_id, image_path)")
    synthetic = spec.get("synthetic")
    if synthetic is None:
        return errors
    if "synthetic" not in (task.get("prompts") or {}):
        errors.append(f"{at}.synthetic: a simulated system draws FRAME's synthetic "
                      "instructions (prompts.synthetic)")
    if synthetic.get("style_of") is not None:
        errors.append(f"{at}.synthetic.style_of: captions only")
    errors += [f"{at}.synthetic.{extra}: vqa only" for extra in ("details", "padding")
               if synthetic.get(extra)]
    return errors + edit_errors(f"{at}.synthetic.edit", synthetic.get("edit"))


def edit_errors(where: str, edit: str | None) -> list[str]:
    """A system's edit must be a FRAME recipe (recipes.parse_recipe: canonical order,
    valid settings) this task can draw offline (the beauty filter's stand-in only)."""
    if edit is None:
        return []
    try:
        steps = parse_recipe(edit)
    except ValueError as exc:
        return [f"{where}: {exc}"]
    return [f"{where}: beauty_filter={s.setting}: a scored_images task draws the offline "
            f"stand-in only (beauty_filter={OFFLINE_BEAUTY})"
            for s in steps if s.manipulation == "beauty_filter" and s.setting != OFFLINE_BEAUTY]


def _manipulation_errors(methods: Mapping[str, Any]) -> list[str]:
    """Fig. 6 names a manipulation by its Table 1 name and definition (jobs.DEFINITIONS):
    only FRAME's eight have them."""
    from judgebias.studies.frame.jobs import DEFINITIONS

    return [f"leaderboard.methods.{name}.manipulation: {spec['manipulation']!r} is not a "
            f"FRAME manipulation ({', '.join(DEFINITIONS)})"
            for name, spec in methods.items()
            if spec["kind"] == "frame_mitigated" and "manipulation" in spec
            and spec["manipulation"] not in DEFINITIONS]
