"""The `leaderboard:` params block, declared once: its typed view (judgebias.paramsblock).

The user's systems (captioners here) are listed per task with where their outputs come
from; the judging methods are listed once and applied to every task. What the schema
cannot check (a system with two sources, a method naming a model not in the panel, a
pomms method whose prompt differs from the one Pomms was fitted with) is in `validate`.

Why this module is long: the block declares four task kinds (their items, systems and
labels) and six methods, each key once with its description, and the checks the schema
cannot express read across them (a method's kind against each task's kind, a system's
source against its task's); split, the checks would import every part and one block's
declaration would be spread over files (as mmb/params.py).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal

from judgebias.abilities import Need
from judgebias.config import path_errors
from judgebias.paramsblock import block_values, derived, key, part, view
from judgebias.prompts import available_prompts
from judgebias.studies.philautia.params import NAME_PATTERN, SyntheticImages, model_families
from judgebias.study import simulated_models, study_models


@view
class SyntheticSystem:
    """A simulated system with planted quality. A captioner describes each image's scene,
    in a neutral style or in a panel family's (so a judge that prefers that family's
    captions favours it, as it would a model of the family); an image generator draws
    one image per prompt in the prompt's style of MMB's synthetic world, its quality
    scattered around `quality`."""

    quality: float = key(ge=0, le=1)
    """Captions: P(each attribute it describes is right), as a simulated panel model's
    caption_quality. Images: the mean planted quality of its images (MMB's synthetic
    world: the share of the image free of defects, which the simulated humans prefer).
    VQA: P(its answer is correct). Scored images: the share of the instruction's concepts
    its picture shows (FRAME's alignment)."""
    style_of: str | None = None
    """Captions only: a family of `families:` whose opener the captions start with;
    null: neutral."""
    spread: float = key(0.15, ge=0, le=1)
    """Images only: the sd of each image's quality around `quality` (clipped to
    [0, 1])."""
    details: int = key(0, ge=0)
    """VQA only: valid extra details each answer adds (informativeness, BIRCH's world:
    visible in the text, preferred by people only between correct answers)."""
    padding: int = key(0, ge=0)
    """VQA only: filler sentences each answer adds (length without information)."""
    edit: str | None = None
    """Scored images only: a FRAME manipulation recipe (e.g. ``brightness:1.4``) applied to
    every image, a cosmetic edit a biased judge rewards; null: none."""


@view
class System:
    """One system under comparison: where its outputs come from (exactly one of
    `outputs`, `synthetic`, or `model` alone, which then captions the images) and whose
    it is, for self-exclusion."""

    model: str | None = key(absent=True)
    """The panel model that wrote these outputs. Alone, it captions the task's images (a
    model job; captions tasks only); beside `outputs`, it only says whose outputs they
    are (`exclude: own`)."""
    outputs: str | None = key(absent=True)
    """A CSV or Parquet file of this system's outputs, one row per item of the task:
    columns image_id and caption (a captions task), or prompt_id and image_path (an
    images task; a path relative to the file's folder, inside it)."""
    synthetic: SyntheticSystem | None = key(absent=True)
    """A simulated captioner with planted quality (the offline default)."""
    family: str | None = key(absent=True)
    """Its family, for `exclude: family`; a model system's is its panel family
    (and also_in)."""


@view
class TaskImages:
    """The items every system captions."""

    synthetic: SyntheticImages = key()
    """Generated scenes with known content, each with correct reference captions."""


@view
class SyntheticPrompts:
    """Generation prompts in MMB's synthetic world (judgebias.studies.mmb.data.synthetic):
    each prompt has one visual style, the styles taking turns, so the simulated judges
    and humans of the MMB study apply unchanged."""

    n_prompts: int = key(ge=2)
    """Prompts to generate."""
    image_size: int = key(64, ge=16)
    """Side of each generated image, in pixels."""
    seed: int = 0
    """Seeds each prompt's subject and each simulated generator's images."""


@view
class TaskPrompts:
    """The generation prompts every system draws an image for (exactly one of
    `synthetic`, `path`)."""

    synthetic: SyntheticPrompts | None = key(absent=True)
    """Prompts in MMB's synthetic styled world (the offline default)."""
    path: str | None = key(absent=True)
    """A CSV or Parquet file: prompt_id, prompt (every prompt once)."""


@view
class SyntheticQuestions:
    """Questions about generated scenes with known answers (BIRCH's synthetic world,
    judgebias.studies.birch.data.synthetic), so each answer's correctness is known."""

    n_items: int = key(ge=2)
    """Questions (one per scene) to generate."""
    seed: int = 0
    """Seeds the scenes, the questions and each simulated system's answers."""


@view
class TaskQuestions:
    """The questions every system answers (exactly one of `synthetic`, `path`)."""

    synthetic: SyntheticQuestions | None = key(absent=True)
    """Questions in BIRCH's synthetic world (the offline default)."""
    path: str | None = key(absent=True)
    """A CSV or Parquet file: item_id, image_path (relative to the file's folder), question."""


@view
class SyntheticLabels:
    """Simulated human raters on a random subset of the items: each rates every system's
    caption of a labelled image by its true accuracy plus noise."""

    n_items: int = key(ge=2)
    """Images drawn (seeded, uniformly: PPI needs a random sample) to be labelled."""
    n_raters: int = key(3, ge=1)
    """Raters per caption; the label is their mean."""
    rater_noise: float = key(0.1, ge=0)
    """The sd of each rating around the caption's true accuracy (clipped to [0, 1])."""
    seed: int = 0
    """Seeds the draw of the labelled images and the raters."""


@view
class HumanLabels:
    """Human labels of some systems' outputs on a random subset of the items (exactly one
    of `path`, `synthetic`): prediction-powered inference uses them."""

    path: str | None = key(absent=True)
    """A CSV or Parquet file: image_id, system, label; its images must be a random sample
    of the task's images."""
    synthetic: SyntheticLabels | None = key(absent=True)
    """Simulated raters (the offline default)."""
    scale: tuple[float, float] = key((0.0, 1.0), min_length=2, max_length=2)
    """The labels' lowest and highest possible value: a label outside is an error."""


@view
class Task:
    """One task: the items, the systems' outputs on them, how a judge is asked, and the
    optional human labels."""

    kind: Literal["captions", "images", "vqa", "scored_images"] = "captions"
    """captions: systems caption images and judges score each caption (G-VEval);
    images: systems draw an image per prompt and judges compare every pair of systems'
    images (MMB's pairwise prompt, mmb.prompt in mmb.layout: the one MMB was fitted
    with); vqa: systems
    answer questions about images and judges compare every pair of answers (BIRCH's
    prompts); scored_images: systems draw an image per instruction and judges score each
    (FRAME's 0-5 prompts)."""
    images: TaskImages | None = key(absent=True)
    """captions: the items every system captions."""
    prompts: TaskPrompts | None = key(absent=True)
    """images, scored_images: the prompts every system draws an image for (scored_images:
    synthetic prompts are FRAME's instructions)."""
    questions: TaskQuestions | None = key(absent=True)
    """vqa: the questions about images every system answers."""
    systems: dict[str, System] = key(names=NAME_PATTERN, min_length=2)
    """The systems to rank, by a name of your choice."""
    prompt: str = "gveval_ref"
    """captions: the judge's prompt template id (G-VEval, seed 000 Appendix C)."""
    references: bool = True
    """captions: whether the judge is given the images' reference captions."""
    caption_prompt: str = "caption_llava_ov"
    """captions: the prompt a model system captions with."""
    human_labels: HumanLabels | None = key(absent=True)
    """captions: human labels on a random subset of the items: PPI++ intervals beside
    the judge's."""
    order: Literal["random", "both"] = "both"
    """images: which image a pairwise judge sees first: both orders (each comparison
    asked twice, its position bias cancelled in the mean) or one drawn per (pair,
    instruction), seeded by order_seed (half the calls)."""
    order_seed: int = 0
    """images: seeds the drawn orders (order: random)."""


@view
class Method:
    """One way of judging the systems' outputs."""

    kind: Literal["single", "panel", "pomms", "mmb", "birch", "frame_mitigated"]
    """single: one judge's score (captions) or verdict (images); panel: the mean of
    several judges' scores (captions); pomms: the ensemble the pomms study fitted (seed
    000 §4.2), in human units (captions); mmb: the judge's calibrated preference from the
    MMB fit (seed 002 eq. 10) and triage (images); birch: the judge compares answers
    against its own anchor (seed 003 Figs. 20-21; vqa); frame_mitigated: the judge scores
    with a FRAME mitigation prompt (seed 004 Figs. 5-7; scored_images)."""
    judge: str | None = key(absent=True)
    """single, birch, frame_mitigated: the panel model that judges; mmb: the judge whose
    MMB fit is applied (one of mmb.models)."""
    instruction: str | None = key(absent=True)
    """single, on images tasks: the id of the MMB pool instruction the judge is asked
    with; default: the pool's first."""
    target_accuracy: float = key(0.9, gt=0.5, lt=1)
    """mmb: triage decides a new pair by the judge only where the audit certifies this
    accuracy (the rest are listed for humans)."""
    mitigation: Literal["bias_aware", "bias_definition", "cot"] = "bias_aware"
    """frame_mitigated: FRAME's mitigation prompt (seed 004): bias_aware (Fig. 5: ignore
    superficial edits), bias_definition (Fig. 6: names `manipulation`) or cot (Fig. 7)."""
    manipulation: str | None = key(absent=True)
    """frame_mitigated with bias_definition: the FRAME manipulation the prompt names."""
    risk: float = key(0.05, gt=0, lt=1)
    """mmb: the probability that the certified accuracy is not met (Learn then Test's
    delta)."""
    judges: tuple[str, ...] | None = key(absent=True, unique=True, min_length=1)
    """panel: the panel models whose scores are averaged; default: every panel model."""
    exclude: Literal["none", "own", "family"] = "none"
    """panel: leave out each judge's scores of its own system (own) or of its family's
    systems (family); a system no judge may score gets no entry."""


@view
class Inference:
    """The intervals and tests."""

    resamples: int = key(2000, ge=100)
    """Item resamples of the paired bootstrap behind means, differences and ranks."""
    level: float = key(0.95, gt=0, lt=1)
    """Confidence level of every interval."""
    fdr: float = key(0.05, gt=0, lt=1)
    """Benjamini-Hochberg false discovery rate over each method's pairwise tests."""
    seed: int = 0
    """Seeds the bootstrap."""


@view
class LeaderboardParams:
    """Rank your own systems with the judges the audit vetted: each method beside a
    plain single judge, with intervals, and the places where the order changes."""

    PARAMS_KEY: ClassVar[str] = "leaderboard"

    tasks: dict[str, Task] = key(names=NAME_PATTERN, min_length=1)
    """The tasks, by a name of your choice; every method judges every task."""
    methods: dict[str, Method] = key(names=NAME_PATTERN, min_length=1)
    """The judging methods, by a name of your choice."""
    baseline: str = key()
    """The method every other is compared with: a `single` one, the plain judge."""
    score: Literal["expected", "parsed"] = "expected"
    """expected = log-prob weighted score where log-probs exist (else the parsed one);
    parsed = the $NN$ integer. A pomms method needs philautia's."""
    inference: Inference = part(Inference)
    """The intervals and tests."""
    families: Mapping[str, tuple[str, ...]] = derived()
    """Panel model -> every family it belongs to (family and also_in)."""
    simulated: frozenset[str] = derived()
    """The panel models that are simulated (the figure flags them)."""

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> LeaderboardParams:
        """The view of validated `params` (the schema filled every default in)."""
        return cls(**block_values(params, "leaderboard"),
                   families=model_families(params, list(params["panel"])),
                   simulated=frozenset(simulated_models(params, list(params["panel"]))))

    def task_methods(self, task: str) -> list[str]:
        """The methods that judge `task` (its kind, `applies`): the baseline first, then
        the others in params order."""
        kind = self.tasks[task].kind
        return [self.baseline, *(name for name, spec in self.methods.items()
                                 if name != self.baseline and applies(spec.kind, kind))]

    def mmb_judges(self) -> list[str]:
        """The judges whose MMB fit an mmb method applies, in params order, once each."""
        return list(dict.fromkeys(str(spec.judge) for spec in self.methods.values()
                                  if spec.kind == "mmb"))

    def system_families(self, task: str, system: str) -> tuple[str, ...]:
        """The families of `system` in `task`: its own `family`, else its model's."""
        spec = self.tasks[task].systems[system]
        if spec.family is not None:
            return (spec.family,)
        return self.families.get(spec.model, ()) if spec.model else ()


# The task kinds each method judges: a pointwise caption score (single, panel, pomms)
# or a pairwise image verdict (single, mmb).
METHOD_TASKS: Mapping[str, tuple[str, ...]] = {
    "single": ("captions", "images", "vqa", "scored_images"), "panel": ("captions",),
    "pomms": ("captions",), "mmb": ("images",), "birch": ("vqa",),
    "frame_mitigated": ("scored_images",)}


# The method kinds that name one judge (`judge`).
JUDGED_BY_ONE = ("single", "mmb", "birch", "frame_mitigated")


def applies(method_kind: str, task_kind: str) -> bool:
    """Whether a method of `method_kind` judges a task of `task_kind` (a task's
    leaderboard lists only those)."""
    return task_kind in METHOD_TASKS[method_kind]


def method_judges(params: Mapping[str, Any], kind: str = "captions") -> list[str]:
    """Every panel model a method judging `kind` tasks reads, in panel order. Captions: a
    single method's judge, a panel method's judges (default: the whole panel) and, for a
    pomms method, the models Pomms selects from (its members are chosen by its fit).
    Images: a single or mmb method's judge."""
    panel = list(params["panel"])
    wanted: set[str] = set()
    for spec in params["leaderboard"]["methods"].values():
        if not applies(spec["kind"], kind):
            continue
        if spec["kind"] in JUDGED_BY_ONE and "judge" in spec:
            wanted.add(spec["judge"])
        elif spec["kind"] == "panel":
            wanted.update(spec.get("judges", panel))
        elif spec["kind"] == "pomms" and params.get("pomms") is not None:
            wanted.update(study_models(params, "pomms"))
    return [m for m in panel if m in wanted]


def tasks_of(params: Mapping[str, Any], kind: str) -> list[str]:
    """The tasks of `kind`, in params order."""
    return [name for name, task in params["leaderboard"]["tasks"].items()
            if task["kind"] == kind]


def model_systems(task: Mapping[str, Any]) -> dict[str, str]:
    """System -> the panel model that captions the task's images for it (a system with
    `model` and no other source)."""
    return {name: spec["model"] for name, spec in task["systems"].items()
            if "model" in spec and "outputs" not in spec and "synthetic" not in spec}


def validate(params: Mapping[str, Any]) -> list[str]:
    """Each task has the items of its kind; each system has exactly one source its task
    kind can use; every model, family, file and prompt named exists; each method has what
    its kind needs; the baseline is a single method; a pomms method asks what Pomms was
    fitted on (the same prompt, references and score); an images task has the MMB study
    whose prompt and instructions it asks with."""
    board = params["leaderboard"]
    errors: list[str] = []
    for name, task in board["tasks"].items():
        where = f"leaderboard.tasks.{name}"
        errors += _task_errors(params, where, task)
        errors += _system_errors(params, where, task)
    errors += _method_errors(params)
    return errors


def _task_errors(params: Mapping[str, Any], where: str, task: Mapping[str, Any]
                 ) -> list[str]:
    """What a task of its kind needs (a vqa or scored_images task: its module's
    `task_errors`, imported only where such a task exists)."""
    if task["kind"] == "captions":
        return _caption_task_errors(params, where, task)
    if task["kind"] == "images":
        return _image_task_errors(params, where, task)
    if task["kind"] == "vqa":
        from judgebias.studies.leaderboard.vqa import task_errors
    else:
        from judgebias.studies.leaderboard.scored import task_errors
    return task_errors(params, where, task)


def _caption_task_errors(params: Mapping[str, Any], where: str, task: Mapping[str, Any]
                         ) -> list[str]:
    prompts = available_prompts()
    errors = [f"{where}.{prompt_key}: unknown prompt template {task[prompt_key]!r}"
              for prompt_key in ("prompt", "caption_prompt") if task[prompt_key] not in prompts]
    if "images" not in task:
        errors.append(f"{where}.images: a captions task needs the images its systems caption")
    if "prompts" in task:
        errors.append(f"{where}.prompts: only an images task has generation prompts")
    labels = task.get("human_labels")
    if labels is not None:
        sources = [s for s in ("path", "synthetic") if s in labels]
        if len(sources) != 1:
            errors.append(f"{where}.human_labels: give exactly one of path, synthetic")
        low, high = labels["scale"]
        if not low < high:
            errors.append(f"{where}.human_labels.scale: {low} is not below {high}")
        elif "path" in labels:
            missing = path_errors(f"{where}.human_labels.path", labels["path"])
            errors += missing or _file_errors(f"{where}.human_labels.path", task, labels)
    return errors


def _image_task_errors(params: Mapping[str, Any], where: str, task: Mapping[str, Any]
                       ) -> list[str]:
    errors = []
    if params.get("mmb") is None:
        errors.append(f"{where}.kind: an images task asks MMB's pairwise prompt and "
                      "instructions (mmb.prompt, the pool): it needs the `mmb:` block")
    prompts = task.get("prompts") or {}
    if len([s for s in ("synthetic", "path") if s in prompts]) != 1:
        errors.append(f"{where}.prompts: an images task needs exactly one of "
                      "prompts.synthetic, prompts.path")
    if "path" in prompts:
        errors += path_errors(f"{where}.prompts.path", prompts["path"])
    if "images" in task:
        errors.append(f"{where}.images: an images task's items are its prompts "
                      f"({where}.prompts)")
    if "human_labels" in task:
        errors.append(f"{where}.human_labels: human labels are used on captions tasks "
                      "(PPI++ of scores); an images task has no labelled verdicts yet")
    return errors


def _system_errors(params: Mapping[str, Any], where: str, task: Mapping[str, Any]
                   ) -> list[str]:
    panel = params["panel"]
    families = set(params.get("families") or {})
    errors: list[str] = []
    generators: dict[str, str] = {}
    files: dict[str, str] = {}
    for system, spec in task["systems"].items():
        at = f"{where}.systems.{system}"
        sources = [s for s in ("outputs", "synthetic") if s in spec]
        if len(sources) > 1 or (not sources and "model" not in spec):
            errors.append(f"{at}: give exactly one of outputs, synthetic, or model "
                          f"alone (it has {', '.join(sources) or 'none'})")
        if "model" in spec and spec["model"] not in panel:
            errors.append(f"{at}.model: {spec['model']!r} is not a panel model")
        elif "model" in spec and not sources and task["kind"] == "images":
            errors.append(f"{at}.model: a panel model draws no images: give the "
                          "system's images as `outputs` (prompt_id, image_path)")
        elif "model" in spec and not sources:
            if spec["model"] in generators:
                errors.append(f"{at}.model: {spec['model']!r} already captions for "
                              f"system {generators[spec['model']]!r}: its outputs "
                              "would count twice")
            generators[spec["model"]] = system
        if "family" in spec and spec["family"] not in families:
            errors.append(f"{at}.family: {spec['family']!r} is not under families:")
        style = (spec.get("synthetic") or {}).get("style_of")
        if style is not None and task["kind"] == "images":
            errors.append(f"{at}.synthetic.style_of: captions only (an image generator "
                          "draws in each prompt's style)")
        elif style is not None and style not in families:
            errors.append(f"{at}.synthetic.style_of: {style!r} is not under families:")
        elif style is not None and "opener" not in (
                params["families"][style].get("sim") or {}):
            errors.append(f"{at}.synthetic.style_of: family {style!r} has no "
                          f"families.{style}.sim.opener to write like")
        if "outputs" in spec:
            missing = path_errors(f"{at}.outputs", spec["outputs"])
            errors += missing or _file_errors(f"{at}.outputs", task, None, system, spec)
            same = os.path.normpath(spec["outputs"])
            if same in files:
                errors.append(f"{at}.outputs: {spec['outputs']!r} is system "
                              f"{files[same]!r}'s file too: its outputs would count twice")
            files.setdefault(same, system)
    return errors


def _file_errors(where: str, task: Mapping[str, Any], labels: Mapping[str, Any] | None,
                 system: str | None = None, spec: Mapping[str, Any] | None = None
                 ) -> list[str]:
    """A captions task's imported outputs file (`spec`'s, of `system`) or labels file
    (`labels`), read as its step will read it, against the task's synthetic images and
    systems, before any job runs (so before any paid call; its errors name the file and
    the row). A task of imported images is checked by its step."""
    if task["kind"] != "captions" or "synthetic" not in (task.get("images") or {}):
        return []
    import pandas as pd

    from judgebias.studies.leaderboard.data import imported_captions, imported_labels
    from judgebias.studies.philautia.data import image_id_for

    ids = [image_id_for(i) for i in range(task["images"]["synthetic"]["n_images"])]
    try:
        if labels is not None:
            imported_labels(Path(labels["path"]), pd.DataFrame(
                [(i, s) for i in ids for s in task["systems"]], columns=["image_id", "system"]),
                (float(labels["scale"][0]), float(labels["scale"][1])))
        elif spec is not None and system is not None:
            imported_captions(pd.DataFrame({"image_id": ids, "scene": None}), system,
                              Path(spec["outputs"]))
    except (ValueError, KeyError, OSError) as exc:
        return [f"{where}: {exc}"]
    return []


def _method_errors(params: Mapping[str, Any]) -> list[str]:
    board, panel = params["leaderboard"], params["panel"]
    errors: list[str] = []
    for name, spec in board["methods"].items():
        at = f"leaderboard.methods.{name}"
        kind = spec["kind"]
        if kind in JUDGED_BY_ONE:
            if "judge" not in spec:
                errors.append(f"{at}.judge: required for kind {kind}")
            elif spec["judge"] not in panel:
                errors.append(f"{at}.judge: {spec['judge']!r} is not a panel model")
        errors += [f"{at}.judges: {m!r} is not a panel model"
                   for m in spec.get("judges", ()) if m not in panel]
        for extra, kinds in (("judge", JUDGED_BY_ONE), ("judges", ("panel",)),
                             ("instruction", ("single",)),
                             ("manipulation", ("frame_mitigated",))):
            if extra in spec and kind not in kinds:
                errors.append(f"{at}.{extra}: only a method of kind {', '.join(kinds)} has it")
        if kind == "frame_mitigated" and (spec["mitigation"] == "bias_definition") != (
                "manipulation" in spec):
            errors.append(f"{at}.manipulation: the bias_definition prompt (and only it) names "
                          "the manipulation")
        if spec["exclude"] != "none" and kind != "panel":
            errors.append(f"{at}.exclude: only a panel method leaves judges out")
        if kind == "pomms":
            errors += _pomms_errors(params, at)
        if kind == "mmb":
            errors += _mmb_errors(params, at, spec)
        if "instruction" in spec and params.get("mmb") is not None:
            ids = _known_instructions(params["mmb"])
            if ids is not None and spec["instruction"] not in ids:
                errors.append(f"{at}.instruction: {spec['instruction']!r} is not an id of "
                              "MMB's instruction pool")
    baseline = board["baseline"]
    if baseline not in board["methods"]:
        errors.append(f"leaderboard.baseline: {baseline!r} is not a method "
                      f"(defined: {', '.join(board['methods'])})")
    elif board["methods"][baseline]["kind"] != "single":
        errors.append(f"leaderboard.baseline: {baseline!r} is a "
                      f"{board['methods'][baseline]['kind']} method, not a single judge")
    return errors


def _known_instructions(mmb: Mapping[str, Any]) -> set[str] | None:
    """The ids of MMB's pool where they are known before the pipeline runs (the built-in
    pool with no extra file and no writer); None otherwise (the step checks)."""
    if mmb["instructions"]["extra"] is not None or mmb["instructions"]["grow"] is not None:
        return None
    from judgebias.studies.mmb.params import builtin_pool

    return {entry["id"] for entry in builtin_pool()}


def _mmb_errors(params: Mapping[str, Any], at: str, spec: Mapping[str, Any]) -> list[str]:
    """An mmb method applies a judge's MMB fit, so the judge must be one the MMB study
    fits."""
    if params.get("mmb") is None:
        return [f"{at}.kind: mmb needs the mmb study (a `mmb:` block)"]
    if "judge" in spec and spec["judge"] not in params["mmb"]["models"]:
        return [f"{at}.judge: {spec['judge']!r} is not fitted by the MMB study "
                f"(mmb.models: {', '.join(params['mmb']['models'])})"]
    return []


def _pomms_errors(params: Mapping[str, Any], at: str) -> list[str]:
    """A pomms method applies the ensemble to scores asked as Pomms' training scores were:
    the same prompt, references and score (anything else feeds the fitted coefficients
    numbers from another scale)."""
    if params.get("pomms") is None or params.get("philautia") is None:
        return [f"{at}.kind: pomms needs the pomms study (a `pomms:` block, and the "
                "`philautia:` block it builds on)"]
    from judgebias.studies.pomms.params import judgement_setting

    philautia = params["philautia"]
    setting = judgement_setting(params["pomms"])
    fitted = philautia["settings"].get(setting)
    errors = []
    if fitted is not None:
        for name, task in params["leaderboard"]["tasks"].items():
            for field in ("prompt", "references"):
                if task[field] != fitted[field]:
                    errors.append(
                        f"leaderboard.tasks.{name}.{field}: {task[field]!r}, but Pomms was "
                        f"fitted on scores asked with {fitted[field]!r} "
                        f"(philautia.settings.{setting}.{field}): {at} would feed its "
                        "coefficients scores of another prompt")
    if params["leaderboard"]["score"] != philautia["score"]:
        errors.append(f"leaderboard.score: {params['leaderboard']['score']!r}, but Pomms "
                      f"reads {philautia['score']!r} scores (philautia.score)")
    return errors


def needs(params: Mapping[str, Any]) -> list[Need]:
    """A captions task's judges score one caption of one image; with ``score: expected``
    they need the score token's log-probs. A model system captions one image at a time.
    An images task's judges compare two images; its mmb method reads the verdict's
    log-probs where the MMB study does (mmb.probability)."""
    board = params["leaderboard"]
    generators = sorted({m for task in board["tasks"].values()
                         for m in model_systems(task).values()})
    expected = board["score"] == "expected"
    caption_judges = method_judges(params) if tasks_of(params, "captions") else []
    found = [Need("leaderboard", "judge", caption_judges, images_per_request=1,
                  answer_logprobs=expected,
                  why={"answer_logprobs": "leaderboard.score: expected weighs the score "
                                          "by them"},
                  fallback="leaderboard.score: parsed"),
             Need("leaderboard", "system", generators, images_per_request=1,
                  fallback="give the system's captions as `outputs` instead")]
    if tasks_of(params, "images"):
        found.append(Need("leaderboard", "comparer", method_judges(params, "images"),
                          images_per_request=2,
                          fallback="judge the images tasks with another model"))
    if tasks_of(params, "vqa"):
        found.append(Need("leaderboard", "answer judge", method_judges(params, "vqa"),
                          images_per_request=1,
                          fallback="judge the vqa tasks with another model"))
    if tasks_of(params, "scored_images"):
        found.append(Need("leaderboard", "frame judge",
                          method_judges(params, "scored_images"), images_per_request=1,
                          system_prompt=True,
                          fallback="judge the scored_images tasks with another model"))
    return found
