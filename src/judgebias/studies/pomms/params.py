"""Checks of the `pomms:` params block that its schema cannot express."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from judgebias.config import path_errors


def judgement_setting(pomms: Mapping[str, Any]) -> str:
    """The philautia setting that scores the judgement datasets: ``judgement_setting``,
    or ``setting`` when it is null (one setting for both, as before the key existed)."""
    return pomms.get("judgement_setting") or pomms["setting"]


def validate(params: Mapping[str, Any]) -> list[str]:
    """A known philautia setting and training dataset, and every dataset file and image
    folder it names (that the philautia block exists, Study.requires checks)."""
    pomms = params["pomms"]
    errors = []
    settings = params["philautia"]["settings"]
    if pomms["setting"] not in settings:
        errors.append(f"pomms.setting: {pomms['setting']!r} is not a philautia setting "
                      f"(defined: {', '.join(settings)})")
    if pomms.get("judgement_setting") and pomms["judgement_setting"] not in settings:
        errors.append(f"pomms.judgement_setting: {pomms['judgement_setting']!r} is not a "
                      f"philautia setting (defined: {', '.join(settings)})")
    if pomms["train_dataset"] not in pomms["datasets"]:
        errors.append(f"pomms.train_dataset: {pomms['train_dataset']!r} is not defined under "
                      "pomms.datasets")
    for name, spec in pomms["datasets"].items():
        where = f"pomms.datasets.{name}"
        needed = ["n_items"] if spec["format"] == "synthetic" else ["path"]
        missing = [key for key in needed if key not in spec]
        errors += [f"{where}.{key}: required for format {spec['format']!r}" for key in missing]
        if spec["format"] != "synthetic" and not missing:
            errors += path_errors(f"{where}.path", spec["path"])
            errors += path_errors(f"{where}.image_dir", spec["image_dir"], directory=True)
    return errors
