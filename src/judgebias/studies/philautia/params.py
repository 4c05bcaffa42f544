"""Checks of the `philautia:` params block that its schema cannot express."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from judgebias.config import path_errors
from judgebias.prompts import available_prompts, fields


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
        errors += path_errors("philautia.dataset.nocaps.annotations", nocaps["annotations"])
        errors += path_errors("philautia.dataset.nocaps.image_dir", nocaps["image_dir"],
                              directory=True)
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


def model_families(config: Mapping[str, Any], models: Sequence[str]) -> dict[str, list[str]]:
    """Model -> every family it belongs to: ``panel.<key>.family`` (its primary family,
    whose sim opener styles its captions) then ``panel.<key>.also_in`` (further
    families for the §6.2 sub-matrices; seed 000 Fig. 6 puts LLaVA-OneVision-7B in both
    the Qwen-based and the LLaVA block)."""
    return {m: [config["panel"][m]["family"], *config["panel"][m].get("also_in", [])]
            for m in models}


def models_key(params: Mapping[str, Any]) -> str:
    """The params key naming the study's models: its own subset, else the whole panel."""
    return "philautia.models" if "models" in params["philautia"] else "panel"


def setting_prompt_id(params: Mapping[str, Any], setting: str) -> str:
    """The evaluator prompt of a philautia setting (a score job depends on it only)."""
    return params["philautia"]["settings"][setting]["prompt"]
