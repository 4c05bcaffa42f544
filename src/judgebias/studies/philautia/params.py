"""The `philautia:` params block: the checks its schema cannot express, and the typed
view its steps receive (judgebias.workflow.step_dispatch passes `PhilautiaParams` to a step whose
``params`` argument is annotated with it)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from judgebias.abilities import Need
from judgebias.config import path_errors
from judgebias.prompts import available_prompts, fields
from judgebias.study import simulated_models, study_models


@dataclass(frozen=True)
class Setting:
    """One ``philautia.settings.<name>``: the evaluator prompt and whether it is given the
    reference captions."""

    prompt: str
    references: bool


@dataclass(frozen=True)
class PhilautiaParams:
    """The validated ``philautia:`` block as the study's steps read it, resolved once.

    Fields are the block's keys (the schema's defaults filled in), with ``models``
    resolved (the block's own subset, else the whole panel) and what the steps derive
    from the panel for those models:

    Attributes
    ----------
    models : tuple of str
        The panel models of the study, each a generator and an evaluator.
    dataset : Mapping
        The ``dataset`` block as validated (judgebias.studies.philautia.data reads it).
    caption_prompt : str
        The generators' prompt template id.
    settings : Mapping of str to Setting
        The evaluation settings by name.
    score : {"expected", "parsed"}
        Which score of an answer the analysis reads.
    ddof, n_bootstrap, n_permutations, ci, seed
        The analysis' standardisation, resampling and interval settings.
    families : Mapping of str to tuple of str
        Model -> every family it belongs to (`model_families`).
    simulated : frozenset of str
        The models that are simulated (figures flag them).
    """

    models: tuple[str, ...]
    dataset: Mapping[str, Any]
    caption_prompt: str
    settings: Mapping[str, Setting]
    score: str
    ddof: int
    n_bootstrap: int
    n_permutations: int
    ci: float
    seed: int
    families: Mapping[str, tuple[str, ...]]
    simulated: frozenset[str]

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> PhilautiaParams:
        block = params["philautia"]
        models = study_models(params, "philautia")
        return cls(
            models=tuple(models), dataset=block["dataset"],
            caption_prompt=block["caption_prompt"],
            settings={name: Setting(prompt=s["prompt"], references=s["references"])
                      for name, s in block["settings"].items()},
            score=block["score"], ddof=block["ddof"], n_bootstrap=block["n_bootstrap"],
            n_permutations=block["n_permutations"], ci=block["ci"], seed=block["seed"],
            families=model_families(params, models),
            simulated=frozenset(simulated_models(params, models)))


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
    for i, key in enumerate(study.get("models") or []):
        if key not in panel:
            errors.append(f"philautia.models[{i}]: model {key!r} is referenced but not "
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


def model_families(config: Mapping[str, Any], models: Sequence[str]
                   ) -> dict[str, tuple[str, ...]]:
    """Model -> every family it belongs to: ``panel.<key>.family`` (its primary family,
    whose sim opener styles its captions) then ``panel.<key>.also_in`` (further
    families for the §6.2 sub-matrices; seed 000 Fig. 6 puts LLaVA-OneVision-7B in both
    the Qwen-based and the LLaVA block)."""
    return {m: (config["panel"][m]["family"], *config["panel"][m].get("also_in", ()))
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
