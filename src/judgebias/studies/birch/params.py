"""The `birch:` params block, declared once: its typed view (judgebias.paramsblock).

Each field of :class:`BirchParams` is a key of the block, with its type, default, bounds
and description (the docstring below it); its nested blocks (:class:`BirchDataset`,
:class:`Downsampling`, :class:`Inference`) likewise. The block's JSON schema, the view its
steps receive (judgebias.workflow.step_dispatch passes `BirchParams` to a step whose
``params`` argument is annotated with it) and the keys its rules declare (``block_keys``)
all come from it. A field marked ``derived()`` is computed from other keys: the top-level
``seed`` and the simulated judges. A step that runs a model job also takes the run context
(judgebias.models.context.RunContext: the journal, the panel models, their limits and
prices) and hands the jobs (.jobs) that and the values they need of this view
(``swap_order``, ``caption_prompt``), never the params mapping. What the schema cannot
express is checked in ``validate``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Annotated, Any, ClassVar, Literal, get_args

from pydantic import Field

from judgebias.abilities import Need
from judgebias.config import path_errors
from judgebias.paramsblock import block_values, derived, key, part, view
from judgebias.prompts import available_prompts
from judgebias.studies.birch.traits import Traits
from judgebias.study import simulated_models, study_models

NAME_PATTERN = "^[A-Za-z0-9_-]+$"  # a name of ``birch.datasets``
Variant = Literal["base", "no_image", "caption", "standard_ref", "birch", "equalised"]


@view
class BirchDataset:
    """One benchmark of pairs: synthetic, VL-RewardBench or an MLLM-as-a-Judge pair
    file."""

    format: Literal["synthetic", "vl_rewardbench", "mllm_judge"] = key()
    """synthetic (generated scenes and answers, offline), vl_rewardbench (its data.jsonl)
    or mllm_judge (an MLLM-as-a-Judge pair file)."""
    n_pairs: int | None = key(absent=True, ge=1)
    """synthetic: the pairs to draw (required; params.yaml: 300). vl_rewardbench /
    mllm_judge: the file's published size (VL-RewardBench 1,250 rows, MLLM-as-a-Judge
    7,756 pairs), which `judgebias plan` counts from while the file is not downloaded
    yet; the file, once there, is counted exactly."""
    p_correct: float = key(0.6, ge=0, le=1)
    """synthetic only: P(an answer is correct) -- drawn independently per answer."""
    max_details: int = key(3, ge=0)
    """synthetic only: valid extra facts per answer ~ U{0..max_details}."""
    max_padding: int = key(3, ge=0)
    """synthetic only: filler sentences per answer ~ U{0..max_padding}."""
    image_size: int = key(128, ge=64)
    """synthetic only."""
    seed: int | None = None
    """synthetic only: seeds the scenes and answers; null: the top-level seed."""
    path: str | None = key(absent=True)
    """vl_rewardbench: data.jsonl (human_ranking: ranks, 0 = preferred); mllm_judge: a
    pair file (JSONL or JSON; human label under human_answer or human)."""
    images: str | None = key(absent=True)
    """The folder the file's image paths are relative to (VL-RewardBench: the one
    holding images/)."""
    order_seed: int | None = 0
    """Seeds the shown order of each row (1,245 of VL-RewardBench's 1,250 rows put the
    preferred answer first); null keeps the file's order (mllm_judge only)."""
    overrides: str | None = None
    """A label-override file (YAML pair_id: A|B|tie, or CSV pair_id,preference; labels in
    the benchmark file's own order). Off by default: no label is ever corrected unless
    you name a file."""
    reference_labels: str | None = None
    """Human informativeness labels for Table 7 (YAML or CSV pair_id -> A|B in the shown
    order); synthetic data use their planted truth."""


@view
class Downsampling:
    """Appendix C.3's down-sampling and Fig. 4's ratios of the correctness-driven
    subset."""

    ratios: tuple[Annotated[float, Field(gt=0, le=1)], ...] = key(
        (0.4, 0.6, 0.8, 1.0), min_length=1, unique=True)
    """Appendix C.3: each subset sampled at these fractions."""
    draws: int = key(10, ge=1)
    """Draws per ratio (4 x 4 x 10 = 160 per statistic)."""
    cds_ratios: tuple[Annotated[float, Field(gt=0, lt=1)], ...] = key(
        (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8), min_length=1, unique=True)
    """Fig. 4: target ratios of the correctness-driven subset."""
    seed: int = 0
    """Seeds the draws."""


@view
class Inference:
    """Paired bootstrap intervals and McNemar tests (issue 20;
    studies/birch/measures/inference.py)."""

    resamples: int = key(2000, ge=100)
    """Bootstrap resamples of the pairs per judge."""
    interval: Literal["percentile", "BCa"] = "percentile"
    """scipy.stats.bootstrap's interval (benchmarks/birch_null.py measures both)."""
    level: float = key(0.95, gt=0, lt=1)
    """Confidence level of the bootstrap intervals."""
    alpha: float = key(0.05, gt=0, lt=1)
    """FDR level of the Benjamini-Hochberg correction over every McNemar test."""
    seed: int = 0
    """Seeds the bootstrap."""


@view
class BirchParams:
    """Seed 003 -- image reliance, informativeness bias, length bias and BIRCH's truthful
    anchor in pairwise VQA judging."""

    PARAMS_KEY: ClassVar[str] = "birch"

    models: tuple[str, ...] = key(min_length=1, unique=True)
    """The judges (panel keys); each judges every pair in every variant."""
    labeller: str = key()
    """The informativeness labeller (the paper: GPT-4o), asked Fig. 18 in both orders
    with the image withheld. Changing it reruns labelling and the measures, never a
    judge call."""
    lengthener: str = key()
    """The model that lengthens the shorter answer for the length-equalisation ablation
    (Appendix C.5; the paper: GPT-4o)."""
    variants: tuple[Variant, ...] = key(get_args(Variant), unique=True)
    """The judging variants run (base is always needed by the measures)."""
    swap_order: bool = False
    """Also judge every pair with the answers swapped; the swapped order is reported
    separately."""
    repeats: int = key(1, ge=1)
    """Ask the Base judgement of every (pair, order) this many times for the judge card's
    repetition stability (Shi et al.): repeat r is sent with the judge's sampling seed +
    r, a new journaled (and paid) call; the study's measures use repeat 0, the ordinary
    verdicts. Meaningful only where the judge samples (temperature > 0)."""
    caption_prompt: str = "caption_llava_ov"
    """The judge's captioning prompt for Image Caption (the paper prints none)."""
    equalise_tolerance: int = key(5, ge=0)
    """Keep equalised pairs whose lengths differ by at most this many words (Appendix
    C.5: 5)."""
    datasets: dict[str, BirchDataset] = key(names=NAME_PATTERN, min_length=1)
    """The benchmarks, by a name of your choice (its files live under data/birch/<name>/
    and results/birch/<name>/); every judge judges each, and the report sets Tables 1-3
    side by side. Adding one reruns only its own jobs."""
    downsampling: Downsampling = part(Downsampling)
    """Appendix C.3's down-sampling and Fig. 4's ratios of the correctness-driven
    subset."""
    inference: Inference = part(Inference)
    """Paired bootstrap intervals and McNemar tests (issue 20;
    studies/birch/measures/inference.py)."""
    seed: int = derived()
    """The top-level ``seed`` (a synthetic dataset's seed when it gives none)."""
    simulated: frozenset[str] = derived()
    """The judges the sim backend answers for (the figures mark them)."""

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> BirchParams:
        """The view of validated `params` (the schema filled every default in)."""
        return cls(**block_values(params, "birch"), seed=params["seed"],
                   simulated=frozenset(simulated_models(
                       params, study_models(params, "birch"))))


def validate(params: Mapping[str, Any]) -> list[str]:
    """Judges, labeller and lengthener in the panel, simulated ones with sound traits,
    base among the variants, the caption prompt known, and every file named present."""
    block, panel = params["birch"], params["panel"]
    errors = [f"birch.models[{i}]: model {model!r} is not defined under panel"
              for i, model in enumerate(block["models"]) if model not in panel]
    for role in ("labeller", "lengthener"):
        if block[role] not in panel:
            errors.append(f"birch.{role}: model {block[role]!r} is not defined under panel")
    for model in {*block["models"], block["labeller"], block["lengthener"]}:
        if model in panel and panel[model]["backend"] == "sim":
            errors += sim_trait_errors(model, panel[model]["sim"].get("birch", {}))
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
    their file is read here, so a bad one stops the run before any call. (The reader,
    with pandas, is imported only for a file to read: every job validates its params.)"""
    errors = path_errors(where, path)
    if path is None or errors:
        return errors
    from judgebias.studies.birch.data.importers import read_reference_labels

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
