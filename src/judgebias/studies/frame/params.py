"""The `frame:` params block: the checks its schema cannot express, and the typed view
its steps receive (judgebias.workflow.step_dispatch passes `FrameParams` to a step whose ``params``
argument is annotated with it)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from judgebias.abilities import Need
from judgebias.config import path_errors
from judgebias.models.gpu import device_errors
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


@dataclass(frozen=True)
class Annotators:
    """``frame.dataset.synthetic.annotators``: the two simulated annotators' noise `sds`
    and `bias`, or the imported human `scores` file instead."""

    sds: tuple[float, float]
    bias: tuple[float, float]
    scores: str | None


@dataclass(frozen=True)
class Synthetic:
    """``frame.dataset.synthetic`` (§4.1): `n_per_domain` items of each of `domains`,
    k perturbed concepts drawn with `k_weights`, the `seed`, the instruction `writer`
    (None: the offline template), the image backend `images` (a mapping: imagegen.backend
    reads it whole) and the `annotators`."""

    n_per_domain: int
    domains: tuple[str, ...]
    k_weights: tuple[float, ...]
    seed: int
    writer: str | None
    images: Mapping[str, Any]
    annotators: Annotators


@dataclass(frozen=True)
class FrameTable:
    """``frame.dataset.table``: an imported FRAME-format table and its images' folder."""

    path: str
    image_root: str


@dataclass(frozen=True)
class Dataset:
    """``frame.dataset``: the benchmark built (`synthetic`) or imported (`table`); the
    block `name` does not pick may be None."""

    name: Literal["synthetic", "table"]
    synthetic: Synthetic | None
    table: FrameTable | None


@dataclass(frozen=True)
class Pairwise:
    """``frame.pairwise`` (Fig. 3): the comparison `prompt` and the `manipulation` of set A."""

    prompt: str
    manipulation: str


@dataclass(frozen=True)
class Analysis:
    """``frame.analysis``: the permutation tests (`n_permutations`, `seed`), the bootstrap
    of the agreement with humans (`n_bootstrap`, the same `seed`), the FDR level `alpha`
    and the gallery's `examples` per domain."""

    n_permutations: int
    n_bootstrap: int
    seed: int
    alpha: float
    examples: int


@dataclass(frozen=True)
class FrameParams:
    """What FRAME's steps read, resolved once from the validated params.

    The data, render and analysis steps receive it instead of the params mapping; the
    model jobs keep the mapping (the core's job runner reads the panel and the journal).

    Attributes
    ----------
    models : tuple of str
        The judges (``frame.models``).
    analysis_judge : str
        The judge of the follow-ups (mitigation, combinations, pairwise).
    dataset : Dataset
    manipulations : Mapping
        Each manipulation's grid values, in the order params lists them.
    beauty : Mapping
        ``frame.beauty`` as validated: manipulate.restorer reads it, and the render cache
        key holds what of it changes a render (render.beauty_key: the files' content,
        the upscale, the device type; not the paths or ``gpus``).
    resize_back : bool
        Padding resizes the image back to its original size.
    render_cache : str
        The folder of cached manipulated images.
    prompts : Mapping
        The prompt id of each scoring prompt (standard and the mitigation prompts).
    mitigation : tuple of str
        Table 5's prompts.
    combinations : tuple of int
        Table 6's combination sizes.
    pairwise : Pairwise
    presets : str
        ``none`` or ``paper`` (the recipes of seed 004 Tables 9-10).
    preset_judges : tuple of str
        Whose paper recipes the presets take.
    analysis : Analysis
    simulated : frozenset of str
        The judges the sim backend answers for (the figures mark them).
    """

    models: tuple[str, ...]
    analysis_judge: str
    dataset: Dataset
    manipulations: Mapping[str, tuple[Any, ...]]
    beauty: Mapping[str, Any]
    resize_back: bool
    render_cache: str
    prompts: Mapping[str, str]
    mitigation: tuple[Literal["bias_aware", "bias_definition", "cot"], ...]
    combinations: tuple[int, ...]
    pairwise: Pairwise
    presets: Literal["none", "paper"]
    preset_judges: tuple[str, ...]
    analysis: Analysis
    simulated: frozenset[str]

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> FrameParams:
        """The view of validated `params` (the schema filled every default in)."""
        block = params["frame"]
        models = tuple(study_models(params, "frame"))
        dataset, analysis = block["dataset"], block["analysis"]
        synthetic, table = dataset.get("synthetic"), dataset.get("table")
        return cls(
            models=models, analysis_judge=block["analysis_judge"],
            dataset=Dataset(
                name=dataset["name"],
                synthetic=_synthetic(synthetic) if synthetic is not None else None,
                table=FrameTable(path=table["path"], image_root=table["image_root"])
                if table is not None else None),
            manipulations={name: tuple(values)
                           for name, values in block["manipulations"].items()},
            beauty=block["beauty"], resize_back=block["resize_back"],
            render_cache=block["render_cache"], prompts=block["prompts"],
            mitigation=tuple(block["mitigation"]), combinations=tuple(block["combinations"]),
            pairwise=Pairwise(prompt=block["pairwise"]["prompt"],
                              manipulation=block["pairwise"]["manipulation"]),
            presets=block["presets"], preset_judges=tuple(block["preset_judges"]),
            analysis=Analysis(**{key: analysis[key] for key in (
                "n_permutations", "n_bootstrap", "seed", "alpha", "examples")}),
            simulated=frozenset(simulated_models(params, list(models))))


def _synthetic(block: Mapping[str, Any]) -> Synthetic:
    annotators = block["annotators"]
    return Synthetic(
        n_per_domain=block["n_per_domain"], domains=tuple(block["domains"]),
        k_weights=tuple(block["k_weights"]), seed=block["seed"], writer=block["writer"],
        images=block["images"],
        annotators=Annotators(sds=tuple(annotators["sds"]), bias=tuple(annotators["bias"]),
                              scores=annotators["scores"]))


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
    for key in frame["models"]:
        if key in panel and panel[key]["backend"] == "sim":
            errors += sim_trait_errors(f"panel.{key}.sim.frame", panel[key]["sim"].get("frame"))
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
