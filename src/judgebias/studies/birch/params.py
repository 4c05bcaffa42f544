"""The `birch:` params block: the checks its schema cannot express, and the typed view
its steps receive (judgebias.workflow.step_dispatch passes `BirchParams` to a step whose ``params``
argument is annotated with it)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, Literal

from judgebias.abilities import Need
from judgebias.config import path_errors
from judgebias.prompts import available_prompts
from judgebias.studies.birch.traits import Traits
from judgebias.study import simulated_models, study_models


@dataclass(frozen=True)
class Downsampling:
    """``birch.downsampling`` (Appendix C.3): each subset sampled at `ratios`, `draws`
    times per ratio; Fig. 4's correctness-driven subset at `cds_ratios`; with `seed`."""

    ratios: tuple[float, ...]
    draws: int
    cds_ratios: tuple[float, ...]
    seed: int


@dataclass(frozen=True)
class Inference:
    """``birch.inference``: paired bootstrap intervals (`resamples`, `interval` method,
    `level`, `seed`) and the FDR level `alpha` of the McNemar tests."""

    resamples: int
    interval: Literal["percentile", "BCa"]
    level: float
    alpha: float
    seed: int


@dataclass(frozen=True)
class BirchParams:
    """What BIRCH's steps read, resolved once from the validated params.

    The data and analysis steps receive it instead of the params mapping; the model jobs
    keep the mapping (the core's job runner reads the panel and the journal).

    Attributes
    ----------
    models : tuple of str
        The judges (``birch.models``).
    labeller, lengthener : str
        The informativeness labeller and the length-equalisation model.
    variants : tuple of str
        The judging variants run.
    swap_order : bool
        Whether every pair is also judged with its answers swapped.
    repeats : int
        How many times the Base judgement of each (pair, order) is asked (repeat 0 is
        the ordinary verdict; the others only feed the judge card's RS).
    caption_prompt : str
        The judge's captioning prompt id.
    equalise_tolerance : int
        Equalised pairs keep at most this length difference (words).
    datasets : Mapping
        ``birch.datasets`` as validated, by name: the pair builder
        (data.pairs.load_pairs) consumes each block whole.
    downsampling : Downsampling
    inference : Inference
    seed : int
        The top-level ``seed`` (a synthetic dataset's seed when it gives none).
    simulated : frozenset of str
        The judges the sim backend answers for (the figures mark them).
    """

    models: tuple[str, ...]
    labeller: str
    lengthener: str
    variants: tuple[str, ...]
    swap_order: bool
    repeats: int
    caption_prompt: str
    equalise_tolerance: int
    datasets: Mapping[str, Mapping[str, Any]]
    downsampling: Downsampling
    inference: Inference
    seed: int
    simulated: frozenset[str]

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> BirchParams:
        """The view of validated `params` (the schema filled every default in)."""
        block = params["birch"]
        models = tuple(study_models(params, "birch"))
        sampling, inference = block["downsampling"], block["inference"]
        return cls(
            models=models, labeller=block["labeller"], lengthener=block["lengthener"],
            variants=tuple(block["variants"]), swap_order=block["swap_order"],
            repeats=block["repeats"],
            caption_prompt=block["caption_prompt"],
            equalise_tolerance=block["equalise_tolerance"], datasets=block["datasets"],
            downsampling=Downsampling(
                ratios=tuple(sampling["ratios"]), draws=sampling["draws"],
                cds_ratios=tuple(sampling["cds_ratios"]), seed=sampling["seed"]),
            inference=Inference(**{key: inference[key] for key in (
                "resamples", "interval", "level", "alpha", "seed")}),
            seed=params["seed"], simulated=frozenset(simulated_models(params, list(models))))


def validate(params: Mapping[str, Any]) -> list[str]:
    """Judges, labeller and lengthener in the panel, simulated ones with sound traits,
    base among the variants, the caption prompt known, and every file named present."""
    block, panel = params["birch"], params["panel"]
    errors = [f"birch.models[{i}]: model {key!r} is not defined under panel"
              for i, key in enumerate(block["models"]) if key not in panel]
    for role in ("labeller", "lengthener"):
        if block[role] not in panel:
            errors.append(f"birch.{role}: model {block[role]!r} is not defined under panel")
    for key in {*block["models"], block["labeller"], block["lengthener"]}:
        if key in panel and panel[key]["backend"] == "sim":
            errors += sim_trait_errors(key, panel[key]["sim"].get("birch", {}))
    if "base" not in block["variants"]:
        errors.append("birch.variants: must include base (every measure starts from it)")
    if block["caption_prompt"] not in available_prompts():
        errors.append(f"birch.caption_prompt: unknown prompt id {block['caption_prompt']!r}")
    for name, dataset in block["datasets"].items():
        errors += dataset_errors(f"birch.datasets.{name}", dataset)
    return errors


# What belongs at a benchmark's `path` and `images`, and where to get it (seed 003 §6.1,
# Appendix B), for `judgebias validate` to say beside a path that does not exist yet
# (configs/birch.yaml ships placeholders).
DOWNLOADS = {
    "vl_rewardbench": (
        "VL-RewardBench's data.jsonl (1,250 rows; seed 003 uses 1,247), from "
        "https://github.com/vl-rewardbench/VL_RewardBench (data/data.jsonl)",
        "the VL-RewardBench folder holding its images/ (the rows' image_path)"),
    "mllm_judge": (
        "MLLM-as-a-Judge's pairwise-comparison file (7,756 pairs; seed 003 Appendix B), "
        "from https://github.com/Dongping-Chen/MLLM-Judge",
        "the folder MLLM-as-a-Judge's image_path entries are relative to (its images)"),
}


def dataset_errors(where: str, dataset: Mapping[str, Any]) -> list[str]:
    """A synthetic benchmark states its size; a real one's file and images exist (it
    names both), and its override and reference-label files are readable."""
    errors = []
    if dataset["format"] == "synthetic" and "n_pairs" not in dataset:
        errors.append(f"{where}.n_pairs: required for format synthetic (the pairs to draw)")
    if dataset["format"] != "synthetic":
        for key in ("path", "images"):
            if key not in dataset:
                errors.append(f"{where}.{key}: required for format {dataset['format']}")
        path_what, images_what = DOWNLOADS.get(dataset["format"], ("", ""))
        errors += path_errors(f"{where}.path", dataset.get("path"), what=path_what)
        errors += path_errors(f"{where}.images", dataset.get("images"), directory=True,
                              what=images_what)
    errors += path_errors(f"{where}.overrides", dataset["overrides"])
    return errors + _reference_label_errors(f"{where}.reference_labels",
                                            dataset["reference_labels"])


def _reference_label_errors(where: str, path: str | None) -> list[str]:
    """The Table 7 reference labels are read by the analysis, after every judge call:
    their file is read here, so a bad one stops the run before any call."""
    from judgebias.studies.birch.data.importers import read_reference_labels

    errors = path_errors(where, path)
    if path is None or errors:
        return errors
    try:
        read_reference_labels(path)
    except ValueError as exc:
        return [f"{where}: {exc}"]
    return []


def sim_trait_errors(key: str, block: Any) -> list[str]:
    """The simulated model's ``sim.birch`` traits, checked before any job."""
    where = f"panel.{key}.sim.birch"
    if not isinstance(block, Mapping):
        return [f"{where}: must be a mapping of traits"]
    known = set(Traits.__dataclass_fields__)
    errors = [f"{where}.{name}: unknown trait (one of {', '.join(sorted(known))})"
              for name in sorted(set(block) - known)]
    for name, value in block.items():
        if name in known and (isinstance(value, bool) or not isinstance(value, int | float)):
            errors.append(f"{where}.{name}: must be a number, got {value!r}")
    for name in ("perception", "image_use", "reference_trust"):
        value = block.get(name)
        if isinstance(value, int | float) and not 0 <= value <= 1:
            errors.append(f"{where}.{name}: a probability, must be in [0, 1], got {value!r}")
    if isinstance(block.get("noise"), int | float) and block["noise"] <= 0:
        errors.append(f"{where}.noise: must be > 0, got {block['noise']!r}")
    return errors


def warnings(params: Mapping[str, Any]) -> list[str]:
    """Simulated judges and labeller without a ``sim.birch`` block: they run, on the
    default traits of judgebias.studies.birch.traits.Traits, which the user may not know.
    (The lengthener reads no trait.)"""
    block, panel = params["birch"], params["panel"]
    roles: dict[str, list[str]] = {key: ["judge"] for key in block["models"]}
    roles.setdefault(block["labeller"], []).append("labeller")
    defaults = ", ".join(f"{f.name} {f.default:g}" for f in fields(Traits))
    return [f"panel.{key}.sim.birch: not given, so simulated BIRCH {' and '.join(jobs)} "
            f"{key!r} runs on the default traits ({defaults}); plant its own in that block"
            for key, jobs in roles.items()
            if panel[key]["backend"] == "sim" and "birch" not in panel[key]["sim"]]


def needs(params: Mapping[str, Any]) -> list[Need]:
    """BIRCH's judges see one image per verdict (none in the no-image variant); repeats
    beyond the first are new samples, meaningful only at a temperature above 0. The
    labeller and the lengthener get text only."""
    block = params["birch"]
    return [Need("birch", "judge", study_models(params, "birch"), images_per_request=1,
                 temperature=block["repeats"] > 1,
                 why={"temperature": "birch.repeats > 1 asks each verdict again"},
                 fallback="birch.repeats: 1, or leave the model out of birch.models"),
            Need("birch", "labeller", [block["labeller"]], fallback="another birch.labeller"),
            Need("birch", "lengthener", [block["lengthener"]],
                 fallback="another birch.lengthener")]
