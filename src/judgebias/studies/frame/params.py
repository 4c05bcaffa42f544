"""The `frame:` params block, declared once: its typed view (judgebias.paramsblock).

Each field of :class:`FrameParams` is a key of the block, with its type, default, bounds
and description (the docstring below it); its nested blocks (:class:`Dataset`,
:class:`Synthetic`, :class:`Manipulations`...) likewise. The block's JSON schema, the view
its steps receive (judgebias.workflow.step_dispatch passes it to a step argument annotated
with it) and the keys its rules declare (``block_keys``) all come from it. The field marked
``derived()`` is computed from other keys. What the schema cannot express is checked in
``validate``; it, ``warnings`` and ``needs`` take the params mapping."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from judgebias.abilities import Need
from judgebias.config import path_errors
from judgebias.models.gpu import device_errors
from judgebias.paramsblock import Positive, block_values, derived, key, part, view
from judgebias.prompts import available_prompts, fields
from judgebias.studies.frame.recipes import (
    DOMAINS,
    MANIPULATIONS,
    OVERLAYS,
    POSITIONS,
    TONES,
    step,
)
from judgebias.studies.frame.traits import PAIRWISE_DEFAULTS
from judgebias.study import simulated_models, study_models

PROMPT_FIELDS = {"standard": {"Instruction"}, "bias_aware": {"Instruction"},
                 "bias_definition": {"Instruction", "Perturbation", "Definition"},
                 "cot": {"Instruction"}}
SIM_NUMBERS = ("leniency", "slope", "opinion", "noise", "saturation", "off_target")
SIM_BLOCKS = ("susceptibility", "prompts", "cot", "pairwise")
# The traits of the blocks of numbers under ``sim.frame`` (judgebias.studies.frame.sim,
# not imported here: validation runs at every job's start-up, and every step imports
# this module).
SIM_SUB_BLOCKS = {"prompts": ("bias_aware", "bias_definition", "cot"),
                  "cot": ("lift", "bounding_box"),
                  "pairwise": ("temperature", "tie", "position_bias")}

# The types of the schema's words (recipes.DOMAINS and POSITIONS, as literals)
Domain = Literal["people", "animal", "illustration", "indoor", "outdoor"]
Position = Literal["bottom-right", "bottom-left", "top-right", "top-left", "center"]
MitigationPrompt = Literal["bias_aware", "bias_definition", "cot"]
# The paper's judges with a recipe (presets.paper_judges: paper_recipes.yaml's keys)
PaperJudge = Literal["gpt-4.1", "gpt-4.1-mini", "gpt-4o", "qwen2.5-vl-32b", "llava-1.5-13b",
                     "gpt-4o-mini", "llava-next-8b", "llava-onevision-7b"]
NonNegative = Annotated[float, Field(ge=0)]


@view
class Images:
    """The text-to-image step."""

    backend: Literal["offline", "openai", "diffusers"] = "offline"
    """offline renderer (default) | the OpenAI images API (DALL-E 3 in the paper) | a
    local diffusers pipeline (GPU rule)."""
    size: int = key(256, ge=128)
    """Offline renderer's image size in pixels (its layout needs 128 or more)."""
    error_rate: float = key(0.1, ge=0, le=1)
    """Offline renderer: share of concepts drawn wrong (a text-to-image model's own
    errors)."""
    options: dict[str, Any] = key(default_factory=dict, schema={"default": {}})
    """Backend options (openai: model, size, quality, base_url, api_key_env; diffusers:
    model, steps, guidance, device)."""
    gpus: int = key(0, ge=0)
    """GPUs the image rule asks for (diffusers; its options.device: auto computes on them,
    else on the CPU; cuda needs gpus >= 1)."""
    cache_dir: str = key(".judgebias/images", run_setting=True)
    """Generated images cached per (backend, model, prompt, seed): never paid twice."""


@view
class Annotators:
    """Two simulated annotators, each scoring an image clip(round(1 + 4 x alignment + bias
    + N(0, sd)), 1, 5); or human scores from `scores`."""

    sds: tuple[NonNegative, ...] = key((0.6, 0.9), min_length=2, max_length=2)
    """Each annotator's noise sd."""
    bias: tuple[float, ...] = key((0.0, 0.2), min_length=2, max_length=2)
    """Each annotator's leniency, added to every score."""
    scores: str | None = None
    """Human scores of the generated images (CSV or JSON lines: item_id and human_score,
    or annotator_1 and annotator_2) instead of simulated annotators."""


@view
class Synthetic:
    """The §4.1 construction pipeline: concepts (Table 8), instructions, perturbed
    prompts, images, human scores."""

    n_per_domain: int = key(20, ge=2)
    """Items per domain (the paper: 100)."""
    domains: tuple[Domain, ...] = key(DOMAINS, min_length=1, unique=True)
    """The domains items are built in."""
    k_weights: tuple[NonNegative, ...] = key((0.05, 0.15, 0.3, 0.3, 0.2), min_length=1)
    """P(k concepts perturbed), k = 0, 1, ...; spreads the scores like Table 2."""
    seed: int = 0
    """Seeds the construction."""
    writer: str | None = None
    """A panel model that writes each instruction from its concepts (GPT-4o in the
    paper); null: the offline template."""
    images: Images = part(Images)
    """The text-to-image step."""
    annotators: Annotators = part(Annotators)
    """Two simulated annotators, each scoring an image clip(round(1 + 4 x alignment + bias
    + N(0, sd)), 1, 5); or human scores from `scores`."""


@view
class FrameTable:
    """A FRAME-format table (judgebias.studies.frame.data documents it)."""

    path: str = key()
    """The FRAME-format table."""
    image_root: str = key()
    """The folder the table's image paths are relative to."""
    n_per_domain: int | None = key(absent=True, ge=1)
    """The table's published size per domain (the FRAME benchmark: 100), which `judgebias
    plan` counts from while the table is not downloaded yet; the table, once there, is
    counted exactly."""
    domains: tuple[Domain, ...] | None = key(absent=True, min_length=1, unique=True)
    """With n_per_domain: the domains the table covers (default: all five)."""


@view
class Dataset:
    """The benchmark: built offline as §4.1 builds it (synthetic), or read from a FRAME
    table."""

    name: Literal["synthetic", "table"] = key()
    """synthetic (the §4.1 construction) or table (a FRAME-format file)."""
    # None where params.yaml leaves the block out. Annotated without ``| None``: for an
    # absent ``Part | None``, block_schema keeps the part's ``$ref`` instead of inlining it
    synthetic: Synthetic = key(absent=True)
    """The §4.1 construction pipeline: concepts (Table 8), instructions, perturbed
    prompts, images, human scores."""
    table: FrameTable = key(absent=True)
    """A FRAME-format table (judgebias.studies.frame.data documents it)."""


@view
class Manipulations:
    """Each manipulation's grid (Appendix B.3); leave one out to skip it (None)."""

    brightness: tuple[Positive, ...] | None = key(absent=True, min_length=1, unique=True)
    """Brightness factors (every channel multiplied; 1.0 is the identity)."""
    gamma: tuple[Positive, ...] | None = key(absent=True, min_length=1, unique=True)
    """Gamma values g: out = 255 (in / 255)^(1/g); g above 1 brightens the mid-tones."""
    authenticity_overlay: tuple[Position, ...] | None = key(absent=True, min_length=1,
                                                            unique=True)
    """Positions of the overlaid phrase "Reference Image"."""
    keyword_overlay: tuple[Position, ...] | None = key(absent=True, min_length=1,
                                                       unique=True)
    """Positions of an overlaid keyword of the prompt (the item's object concept)."""
    instruction_overlay: tuple[Position, ...] | None = key(absent=True, min_length=1,
                                                           unique=True)
    """Positions of the overlaid generation instruction."""
    padding: tuple[Positive, ...] | None = key(absent=True, min_length=1, unique=True)
    """Widths of a black border on all four sides, in pixels at the 1024-px reference."""
    bounding_box: tuple[Literal["annotated"], ...] | None = key(absent=True, min_length=1,
                                                      max_length=1)
    """[annotated]: red outlines around the item's annotated objects."""
    beauty_filter: tuple[Literal["gfpgan", "smoothing"], ...] | None = key(
        absent=True, min_length=1, max_length=1)
    """gfpgan (the paper's; needs its weights) | smoothing (an offline stand-in, not
    GFPGAN)."""

    def grid(self, name: str) -> tuple[Any, ...]:
        """Manipulation `name`'s grid values, in the order params.yaml lists them."""
        values = getattr(self, name) if name in MANIPULATIONS else None
        if values is None:
            raise KeyError(f"frame.manipulations.{name}: not run")
        return tuple(values)


@view
class Beauty:
    """The beauty filter's GFPGAN files and device (where manipulations.beauty_filter is
    [gfpgan])."""

    weights: str | None = None
    """GFPGAN weights (e.g. GFPGANv1.4.pth); without them the beauty filter is reported
    unavailable."""
    face_models: str | None = None
    """Folder with facexlib's face detector and parser (detection_Resnet50_Final.pth,
    parsing_parsenet.pth), read locally, never downloaded; without them the beauty filter
    is reported unavailable."""
    upscale: int = key(1, ge=1)
    """GFPGAN's upscale factor (1 keeps the image's size)."""
    device: Literal["auto", "cpu", "cuda"] = "auto"
    """auto: CUDA on the GPUs the job is given (gpus), else the CPU; cuda needs gpus >= 1;
    cpu asks for none."""
    gpus: int = key(0, ge=0)
    """GPUs the GFPGAN renders ask for (the beauty-filter grid and the combinations, whose
    recipes may hold it); the job holds that many devices of its own. The offline stand-in
    (smoothing) asks for none."""


@view
class Prompts:
    """Template ids of the scoring prompts: standard (Fig. 4) and the mitigation prompts
    (Figs. 5-7)."""

    standard: str = "frame_standard"
    """The 0.0-5.0 scoring prompt (Fig. 4)."""
    bias_aware: str = "frame_bias_aware"
    """The bias-aware mitigation prompt (Fig. 5)."""
    bias_definition: str = "frame_bias_definition"
    """The mitigation prompt that defines the manipulation (Fig. 6)."""
    cot: str = "frame_cot"
    """The chain-of-thought mitigation prompt (Fig. 7)."""

    def of(self, kind: str) -> str:
        """The prompt id of scoring prompt `kind` (standard or a mitigation prompt)."""
        if kind not in PROMPT_FIELDS:
            raise KeyError(f"frame.prompts.{kind}: no such scoring prompt")
        prompt: str = getattr(self, kind)
        return prompt


@view
class Pairwise:
    """Fig. 3's pairwise win rates before and after a manipulation (the analysis judge,
    Fig. 8's prompt in both orders)."""

    prompt: str = "frame_pairwise"
    """Template id of the pairwise prompt (Fig. 8)."""
    manipulation: str = "instruction_overlay"
    """Fig. 3's manipulation of set A, at the analysis judge's best setting per domain."""


@view
class Analysis:
    """The statistics: permutation tests, the bootstrap of the agreement with humans, the
    FDR level, the report's gallery."""

    n_permutations: int = key(2000, ge=100)
    """Draws of the permutation nulls."""
    n_bootstrap: int = key(2000, ge=0)
    """Bootstrap resamples of the interval of each judge's Kendall tau with the human
    scores (0 for none)."""
    seed: int = 0
    """Seeds the permutation tests and the bootstrap."""
    alpha: float = key(0.05, gt=0, lt=1)
    """FDR level of the Benjamini-Hochberg corrections."""
    examples: int = key(2, ge=1)
    """Example items per domain in the report's image gallery."""


# Every step receives the view instead of the params mapping; a model job's step also
# takes the run context (judgebias.models.context.RunContext: the journal, the panel
# models) and passes the job the values of the view it needs (the prompt ids, the
# mitigation prompts, the pairwise block).
@view
class FrameParams:
    """Seed 004 -- visual manipulations that inflate LVLM judges' text-to-image alignment
    scores."""

    PARAMS_KEY: ClassVar[str] = "frame"

    # key(): pydantic lists the required fields given a Field first; so `required` keeps
    # the declaration order (models, analysis_judge, dataset, manipulations)
    models: tuple[str, ...] = key(min_length=1, unique=True)
    """The judges (panel keys); each scores every original and manipulated image (Tables
    3, 12)."""
    analysis_judge: str = key()
    """The judge of §6's analyses (GPT-4.1-mini in the paper): mitigation prompts,
    combinations, pairwise."""
    dataset: Dataset = key()
    """The benchmark: built offline as §4.1 builds it (synthetic), or read from a FRAME
    table."""
    manipulations: Manipulations = key()
    """Each manipulation's grid (Appendix B.3); leave one out to skip it."""
    beauty: Beauty = part(Beauty)
    """The beauty filter's GFPGAN files and device (where manipulations.beauty_filter is
    [gfpgan])."""
    resize_back: bool = False
    """Padding: resize the padded image back to its original size (the image grows by
    default)."""
    render_cache: str = key(".judgebias/frame-renders", run_setting=True)
    """Manipulated images cached per (image, recipe, code): a new grid value renders only
    its own images."""
    prompts: Prompts = part(Prompts)
    """Template ids of the scoring prompts: standard (Fig. 4) and the mitigation prompts
    (Figs. 5-7)."""
    mitigation: tuple[MitigationPrompt, ...] = key(("bias_aware", "bias_definition", "cot"),
                                                   unique=True)
    """Table 5's prompts, for the analysis judge on its best recipes."""
    combinations: tuple[Literal[2, 3], ...] = key((2, 3), unique=True)
    """Table 6: all pairs and triples of the analysis judge's best single recipes."""
    pairwise: Pairwise = part(Pairwise)
    """Fig. 3's pairwise win rates before and after a manipulation (the analysis judge,
    Fig. 8's prompt in both orders)."""
    presets: Literal["none", "paper"] = "none"
    """paper: also score every judge at the recipes of seed 004 Tables 9-10
    (judgebias.studies.frame.presets), no selection, so a plain paired interval and exact
    tests per domain and manipulation; none: off."""
    preset_judges: tuple[PaperJudge, ...] = key(("gpt-4.1-mini",), min_length=1,
                                                unique=True)
    """Whose recipes (the paper's judges: Table 9 gpt-4.1, gpt-4.1-mini, gpt-4o,
    qwen2.5-vl-32b, llava-1.5-13b; Table 10 gpt-4o-mini, llava-next-8b,
    llava-onevision-7b); gpt-4.1-mini's drive the paper's analyses (App. B.3)."""
    analysis: Analysis = part(Analysis)
    """The statistics: permutation tests, the bootstrap of the agreement with humans, the
    FDR level, the report's gallery."""
    simulated: frozenset[str] = derived()
    """The judges the sim backend answers for (the figures mark them)."""

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> FrameParams:
        """The view of validated `params` (the schema filled every default in)."""
        return cls(**block_values(params, "frame"),
                   simulated=frozenset(simulated_models(params, study_models(params,
                                                                             "frame"))))


def validate(params: Mapping[str, Any]) -> list[str]:
    """Judges and writer in the panel, simulated judges with their planted traits, the
    prompts' placeholders, the pairwise manipulation in the grid, and every file named."""
    frame, panel = params["frame"], params["panel"]
    errors = [f"frame.models[{i}]: model {key!r} is not defined under panel"
              for i, key in enumerate(frame["models"]) if key not in panel]
    if frame["analysis_judge"] not in frame["models"]:
        errors.append(f"frame.analysis_judge: {frame['analysis_judge']!r} is not one of "
                      "frame.models")
    errors += _combination_errors(frame["combinations"], frame["manipulations"])
    for judge in frame["models"]:
        if judge in panel and panel[judge]["backend"] == "sim":
            errors += sim_trait_errors(f"panel.{judge}.sim.frame",
                                       panel[judge]["sim"].get("frame"))
    for kind, prompt in frame["prompts"].items():
        if prompt not in available_prompts():
            errors.append(f"frame.prompts.{kind}: unknown prompt id {prompt!r}")
        elif fields(prompt) != PROMPT_FIELDS[kind]:
            errors.append(f"frame.prompts.{kind}: {prompt!r} must have the placeholders "
                          f"{', '.join(sorted(PROMPT_FIELDS[kind]))}")
    pairwise = frame["pairwise"]
    if pairwise["prompt"] not in available_prompts():
        errors.append(f"frame.pairwise.prompt: unknown prompt id {pairwise['prompt']!r}")
    if pairwise["manipulation"] not in frame["manipulations"]:
        errors.append(f"frame.pairwise.manipulation: {pairwise['manipulation']!r} is not "
                      "in frame.manipulations")
    errors += _same_recipe_errors(frame["manipulations"])
    errors += _dataset_errors(frame["dataset"], panel)
    errors += path_errors("frame.beauty.weights", frame["beauty"]["weights"],
                          what=DOWNLOADS["beauty.weights"])
    errors += path_errors("frame.beauty.face_models", frame["beauty"]["face_models"],
                          directory=True, what=DOWNLOADS["beauty.face_models"])
    errors += device_errors("frame.beauty", frame["beauty"]["device"], frame["beauty"]["gpus"])
    return errors


# What belongs at each path and where to get it (seed 004 §4, Appendix B.3), for
# `judgebias validate` to say beside a path that does not exist yet (configs/frame.yaml
# ships placeholders).
DOWNLOADS = {
    "table.path": ("the FRAME benchmark (500 instances, 100 per domain; seed 004 §4) in the "
                   "FRAME table format (judgebias.studies.frame.data documents it), "
                   "converted from https://github.com/DongryeolLee96/FRAME"),
    "table.image_root": "the folder the FRAME table's image paths are relative to",
    "beauty.weights": ("GFPGAN weights, e.g. GFPGANv1.4.pth, from "
                       "https://github.com/TencentARC/GFPGAN releases (seed 004 App. B.3)"),
    "beauty.face_models": ("a folder with facexlib's detection_Resnet50_Final.pth and "
                           "parsing_parsenet.pth (https://github.com/xinntao/facexlib releases)"),
}


def _same_recipe_errors(manipulations: Mapping[str, list[Any]]) -> list[str]:
    """Two grid values that name one recipe (a setting is written with 6 significant
    digits: 1.3 and 1.3000001 are both ``brightness=1.3``) would count its cells twice;
    the schema's uniqueItems catches exact repeats, this the near ones."""
    errors = []
    for name, values in manipulations.items():
        first: dict[str, int] = {}
        for i, value in enumerate(values):
            recipe = step(name, value).id
            if recipe in first:
                errors.append(f"frame.manipulations.{name}[{i}]: {value!r} is the recipe "
                              f"{recipe!r} again (first at frame.manipulations.{name}"
                              f"[{first[recipe]}]: {values[first[recipe]]!r})")
            first.setdefault(recipe, i)
    return errors


def _dataset_errors(dataset: Mapping[str, Any], panel: Mapping[str, Any]) -> list[str]:
    name = dataset["name"]
    if name not in dataset:
        return [f"frame.dataset.{name}: frame.dataset.name is {name!r} but that block is "
                "missing"]
    if name == "table":
        return (path_errors("frame.dataset.table.path", dataset["table"]["path"],
                            what=DOWNLOADS["table.path"])
                + path_errors("frame.dataset.table.image_root", dataset["table"]["image_root"],
                              directory=True, what=DOWNLOADS["table.image_root"]))
    writer = dataset["synthetic"]["writer"]
    errors = path_errors("frame.dataset.synthetic.annotators.scores",
                         dataset["synthetic"]["annotators"]["scores"])
    if not any(dataset["synthetic"]["k_weights"]):
        errors.append("frame.dataset.synthetic.k_weights: all zero; P(k concepts perturbed) "
                      "is each weight over their sum, so at least one must be positive")
    if writer is not None and writer not in panel:
        errors.append(f"frame.dataset.synthetic.writer: model {writer!r} is not defined "
                      "under panel")
    images = dataset["synthetic"]["images"]
    if images.get("backend") == "diffusers":
        errors += device_errors("frame.dataset.synthetic.images",
                                (images.get("options") or {}).get("device", "auto"),
                                images.get("gpus", 0))
    return errors


def sim_trait_errors(where: str, block: Any) -> list[str]:
    """The planted traits of a simulated FRAME judge (judgebias.studies.frame.sim)."""
    if not isinstance(block, Mapping):
        return [f"{where}: a simulated judge needs its planted FRAME traits (leniency, "
                "slope, susceptibility, ...; see judgebias.studies.frame.sim)"]
    errors = [f"{where}.{key}: unknown trait (known: {', '.join(SIM_NUMBERS + SIM_BLOCKS)})"
              for key in block if key not in SIM_NUMBERS + SIM_BLOCKS]
    errors += [f"{where}.{key}: must be a number" for key in SIM_NUMBERS
               if key in block and not _is_number(block[key])]
    for name, planted in (block.get("susceptibility") or {}).items():
        errors += _susceptibility_errors(f"{where}.susceptibility.{name}", name, planted)
    for name, known in SIM_SUB_BLOCKS.items():
        errors += _sub_block_errors(f"{where}.{name}", block.get(name, {}), known)
    return errors


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _sub_block_errors(where: str, block: Any, known: tuple[str, ...]) -> list[str]:
    """A misspelt trait would be ignored and its default used, so it is an error."""
    if not isinstance(block, Mapping):
        return [f"{where}: must be a mapping of {', '.join(known)}"]
    return ([f"{where}.{key}: unknown trait (known: {', '.join(known)})"
             for key in block if key not in known]
            + [f"{where}.{key}: must be a number, got {value!r}"
               for key, value in block.items() if key in known and not _is_number(value)])


def warnings(params: Mapping[str, Any]) -> list[str]:
    """A simulated analysis judge without the traits of its follow-ups: its pairwise
    answers (Fig. 3) and mitigation prompts (Table 5) then run on the defaults."""
    frame = params["frame"]
    key = frame["analysis_judge"]
    model = params["panel"][key]
    if model["backend"] != "sim":
        return []
    block = model["sim"]["frame"]
    where = f"panel.{key}.sim.frame"
    lines = []
    if "pairwise" not in block:
        defaults = ", ".join(f"{name} {value:g}" for name, value in PAIRWISE_DEFAULTS.items())
        lines.append(f"{where}.pairwise: not given, so the analysis judge {key!r} answers "
                     f"the pairwise comparisons (Fig. 3) with the defaults ({defaults})")
    if frame["mitigation"] and "prompts" not in block:
        lines.append(f"{where}.prompts: not given, so for the analysis judge {key!r} every "
                     "mitigation prompt (Table 5) keeps the planted gains (multiplier 1)")
    return lines


def _susceptibility_errors(where: str, name: str, planted: Any) -> list[str]:
    if name not in MANIPULATIONS:
        return [f"{where}: unknown manipulation (known: {', '.join(MANIPULATIONS)})"]
    if not isinstance(planted, Mapping):
        return [f"{where}: must be {{strength, best, domains}}"]
    errors = [f"{where}.{key}: unknown key (known: strength, best, domains)"
              for key in planted if key not in ("strength", "best", "domains")]
    best = planted.get("best")
    if name in (*TONES, "padding") and not isinstance(best, int | float):
        errors.append(f"{where}.best: the planted best {name} setting must be a number")
    if name in OVERLAYS and best not in POSITIONS:
        errors.append(f"{where}.best: must be one of {', '.join(POSITIONS)}")
    errors += [f"{where}.domains.{domain}: unknown domain (known: {', '.join(DOMAINS)})"
               for domain in planted.get("domains") or {} if domain not in DOMAINS]
    return errors


def _combination_errors(sizes: list[int], manipulations: Mapping[str, Any]) -> list[str]:
    """Table 6 combines the analysis judge's best single recipes, one per manipulation: a
    size larger than the manipulations run would combine nothing (after every judge call)."""
    return [f"frame.combinations: {size} combines {size} manipulations, but "
            f"frame.manipulations runs {len(manipulations)}" for size in sizes
            if size > len(manipulations)]


def needs(params: Mapping[str, Any]) -> list[Need]:
    """FRAME's judges score one image under a system prompt (seed 004's scoring prompt);
    the analysis judge also compares two images in one request (Fig. 3's pairwise)."""
    block = params["frame"]
    judges = dict.fromkeys([*block["models"], *block.get("preset_judges", [])])
    return [Need("frame", "judge", list(judges), images_per_request=1, system_prompt=True,
                 fallback="leave the model out of frame.models"),
            Need("frame", "analysis judge", [block["analysis_judge"]], images_per_request=2,
                 system_prompt=True, fallback="another frame.analysis_judge")]
