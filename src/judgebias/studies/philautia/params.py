"""The `philautia:` params block, declared once: its typed view (judgebias.paramsblock).

Each field of :class:`PhilautiaParams` is a key of the block, with its type, default,
bounds and description (the docstring below it); its nested blocks (:class:`Dataset`,
:class:`Setting`...) likewise. The block's JSON schema, the view its steps receive
(judgebias.workflow.step_dispatch passes it to a step argument annotated with it) and the
keys its rules declare (``block_keys``) all come from it. A field marked ``derived()`` is
computed from other keys. What the schema cannot express is checked in ``validate``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal

from judgebias.abilities import Need
from judgebias.config import path_errors
from judgebias.paramsblock import block_values, derived, key, part, view
from judgebias.prompts import available_prompts, fields
from judgebias.study import simulated_models, study_models

NAME_PATTERN = "^[A-Za-z0-9_-]+$"  # a name of ``philautia.settings`` (and of ``pomms.datasets``)


@view
class SyntheticImages:
    """Generated scenes with known content, each with correct reference captions."""

    n_images: int = key(ge=1)
    """Images to generate."""
    seed: int
    """Seeds the scenes and their references (image i draws from (seed, i))."""
    image_size: int = key(128, ge=32)
    """Side of each image, in pixels."""
    n_references: int = key(5, ge=1, le=10)
    """Reference captions per image, all correct."""


@view
class Nocaps:
    """The nocaps validation set with its human captions as references (seed 000 §5 uses
    4,500 images); download it yourself."""

    annotations: str
    """nocaps' validation annotations (a JSON file such as nocaps_val_4500_captions.json)."""
    image_dir: str
    """The folder holding the validation images."""
    n_images: int | None = key(4500, ge=1)
    """Images drawn (seeded) from the file; null: every image."""
    n_references: int = key(5, ge=1, le=10)
    """Human captions per image given as references."""
    seed: int = 0
    """Seeds the draw of n_images."""
    # no default, yet null a value to write (all three): `absent` drops the default and
    # the null branch, `schema` puts null back into the type
    domains: tuple[Literal["in-domain", "near-domain", "out-domain"], ...] | None = key(
        absent=True, unique=True, schema={"type": ["array", "null"]})
    """Only images of these nocaps domains; null: all three."""
    missing: Literal["error", "skip"] = "error"
    """An image file that is absent: error stops the data step, skip drops the image;
    either way the missing file names are reported."""


@view
class Dataset:
    """The images and their reference captions."""

    name: Literal["synthetic", "nocaps"]
    """synthetic (generated scenes with known content, offline) or nocaps (the nocaps
    validation set, seed 000 §5)."""
    # None where params.yaml leaves the block out. Annotated without ``| None``: for an
    # absent ``Part | None``, block_schema keeps the part's ``$ref`` instead of inlining it
    synthetic: SyntheticImages = key(absent=True)
    """Generated scenes with known content, each with correct reference captions."""
    nocaps: Nocaps = key(absent=True)
    """The nocaps validation set with its human captions as references (seed 000 §5 uses
    4,500 images); download it yourself."""


@view
class Setting:
    """One evaluation setting: the evaluator prompt and whether the evaluator sees the
    references."""

    prompt: str
    """Evaluator prompt template id."""
    references: bool
    """Whether reference captions are given to the evaluator."""


@view
class Waves:
    """Judge the images in waves and stop when the self-preference of every judge is
    decided (issue 45; beyond the paper, which scores every image). Each wave's look
    gives repeated confidence intervals (a group-sequential design with Lan-DeMets alpha
    spending, judgebias.stats.sequential) at level ``ci``, valid however early the run
    stops; docs/studies/philautia.md says which outputs carry them."""

    count: int = key(1, ge=1, le=20)
    """Waves the images are split into; 1 = the paper's fixed design (no looks). Fixed
    before the run: a new count moves images between waves."""
    seed: int = 0
    """Seeds the order of the images into waves."""
    spending: Literal["obrien_fleming", "pocock"] = "obrien_fleming"
    """Lan-DeMets alpha-spending function: O'Brien-Fleming-type (spends little early; the
    last look's interval barely wider than the fixed design's) or Pocock-type."""
    measures: tuple[Literal["own", "family", "own_vs_family"], ...] = key(
        ("own",), min_length=1, unique=True)
    """The effects looked at, per judge (selfpref's own, family and own - family points).
    An effect the panel does not identify (own and family in a panel of exactly two
    families: use own_vs_family there) is recorded as such and never decides."""
    target_width: float | None = key(None, gt=0)
    """Also decided: an effect whose interval is narrower than this (score points);
    null: only an interval excluding 0 decides, so a panel with a judge that has no
    self-preference runs every wave (the saving needs a width)."""


@view
class PhilautiaParams:
    """Seed 000 §4.1 -- does a caption judge score its own captions, or its family's,
    higher than their quality warrants? Every panel model captions every image and scores
    every caption."""

    PARAMS_KEY: ClassVar[str] = "philautia"

    # key(): pydantic lists the required fields given a Field first; so `required` keeps
    # the declaration order (dataset, settings)
    dataset: Dataset = key()
    """The images and their reference captions."""
    caption_prompt: str = "caption_llava_ov"
    """Prompt template id of the generator prompt (seed 000 Appendix C)."""
    models: tuple[str, ...] | None = key(absent=True, unique=True, min_length=3)
    """Panel keys (default all); each model is both a generator and an evaluator."""
    settings: dict[str, Setting] = key(names=NAME_PATTERN, min_length=1)
    """The evaluation settings, by a name of your choice (ref_based, ref_free): every
    evaluator scores every caption in each."""
    score: Literal["expected", "parsed"] = "expected"
    """expected = log-prob weighted score where log-probs exist (else the parsed one);
    parsed = the $NN$ integer."""
    ddof: Literal[0, 1] = 0
    """Standard-deviation convention of the standardisation: 0 (population, as
    scipy.stats.zscore) or 1, which multiplies every Phi-tilde entry by sqrt((M-1)/M)."""
    n_bootstrap: int = key(1000, ge=10)
    """Image resamples of the bootstrap behind the philautia scores' intervals."""
    n_permutations: int = key(10000, ge=100)
    """Permutations of the test of diagonal against off-diagonal entries."""
    ci: float = key(0.95, gt=0, lt=1)
    """Confidence level of the intervals."""
    seed: int = 0
    """Seeds the bootstrap and the permutation test."""
    waves: Waves = part(Waves)
    """Judge the images in waves, stopping once every judge is decided (beyond the
    paper)."""
    judges: tuple[str, ...] = derived()
    """The study's panel models, each a generator and an evaluator: ``models``, or every
    panel model where it is absent (judgebias.study.study_models)."""
    families: Mapping[str, tuple[str, ...]] = derived()
    """Model -> every family it belongs to (`model_families`)."""
    simulated: frozenset[str] = derived()
    """The judges that are simulated (figures flag them)."""

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> PhilautiaParams:
        """The view of validated `params` (the schema filled every default in)."""
        judges = study_models(params, "philautia")
        return cls(**block_values(params, "philautia"), judges=tuple(judges),
                   families=model_families(params, judges),
                   simulated=frozenset(simulated_models(params, judges)))


def settings_of(block: Mapping[str, Any]) -> dict[str, Setting]:
    """Every evaluation setting of the validated ``philautia:`` `block`, by name (for
    what takes the params mapping: the plan, Pomms' view)."""
    return {name: Setting(prompt=spec["prompt"], references=spec["references"])
            for name, spec in block["settings"].items()}


# What belongs at the nocaps paths and where to get it, for `judgebias validate` to say
# beside a path that does not exist yet (configs/philautia_eval.yaml ships placeholders).
NOCAPS_ANNOTATIONS = ("the nocaps validation annotations, nocaps_val_4500_captions.json "
                      "(4,500 images, 10 human captions each; seed 000 §5), from "
                      "https://nocaps.org/download")
NOCAPS_IMAGES = ("the nocaps validation images (Open Images files named in that JSON's "
                 "`images`), from https://nocaps.org/download")


def validate(params: Mapping[str, Any]) -> list[str]:
    """Models named but not in the panel; the dataset block and its files; unknown
    prompts; a setting whose `references` flag disagrees with its prompt."""
    errors = []
    study, panel, prompts = params["philautia"], params["panel"], available_prompts()
    dataset = study["dataset"]
    if dataset["name"] not in dataset:
        errors.append(f"philautia.dataset.{dataset['name']}: philautia.dataset.name is "
                      f"{dataset['name']!r} but that block is missing")
    elif dataset["name"] == "nocaps":
        nocaps = dataset["nocaps"]
        errors += path_errors("philautia.dataset.nocaps.annotations", nocaps["annotations"],
                              what=NOCAPS_ANNOTATIONS)
        errors += path_errors("philautia.dataset.nocaps.image_dir", nocaps["image_dir"],
                              directory=True, what=NOCAPS_IMAGES)
    if study["caption_prompt"] not in prompts:
        errors.append(f"philautia.caption_prompt: unknown prompt id {study['caption_prompt']!r}"
                      f" (available: {', '.join(sorted(prompts))})")
    for i, model in enumerate(study.get("models") or []):
        if model not in panel:
            errors.append(f"philautia.models[{i}]: model {model!r} is referenced but not "
                          f"defined under panel (defined: {', '.join(panel)})")
    if not study.get("models") and len(panel) < 3:
        errors.append("philautia.models: the study needs at least 3 models "
                      f"(the panel has {len(panel)})")
    for name, setting in study["settings"].items():
        if setting["prompt"] not in prompts:
            errors.append(f"philautia.settings.{name}.prompt: unknown prompt id "
                          f"{setting['prompt']!r} (available: {', '.join(sorted(prompts))})")
            continue
        takes = "Reference" in fields(setting["prompt"])
        if takes != setting["references"]:
            errors.append(f"philautia.settings.{name}.references: is {setting['references']} "
                          f"but prompt {setting['prompt']!r} "
                          f"{'takes' if takes else 'has no'} references")
    return errors


def model_families(params: Mapping[str, Any], models: Sequence[str]
                   ) -> dict[str, tuple[str, ...]]:
    """Model -> every family it belongs to: ``panel.<key>.family`` (its primary family,
    whose sim opener styles its captions) then ``panel.<key>.also_in`` (further
    families for the §6.2 sub-matrices; seed 000 Fig. 6 puts LLaVA-OneVision-7B in both
    the Qwen-based and the LLaVA block)."""
    return {m: (params["panel"][m]["family"], *params["panel"][m].get("also_in", ()))
            for m in models}


def models_key(params: Mapping[str, Any]) -> str:
    """The params key naming the study's models: its own subset, else the whole panel."""
    return "philautia.models" if "models" in params["philautia"] else "panel"


def setting_prompt_id(params: Mapping[str, Any], setting: str) -> str:
    """The evaluator prompt of a philautia setting (a score job depends on it only)."""
    return params["philautia"]["settings"][setting]["prompt"]


def needs(params: Mapping[str, Any]) -> list[Need]:
    """What philautia needs from its models (judgebias.abilities): a caption of one image
    per generator request; one image per evaluator request, and with ``score: expected``
    (FLEUR / G-VEval's log-prob weighted score, seed 000 §4.1) the score token's log-probs."""
    models = study_models(params, "philautia")
    expected = params["philautia"]["score"] == "expected"
    return [Need("philautia", "generator", models, images_per_request=1,
                 fallback="leave the model out of philautia.models"),
            Need("philautia", "evaluator", models, images_per_request=1,
                 answer_logprobs=expected,
                 why={"answer_logprobs": "philautia.score: expected weighs the score by them"},
                 fallback="philautia.score: parsed (the $NN$ integer), or leave the model "
                          "out of philautia.models")]
