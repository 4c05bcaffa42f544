"""The `_template:` params block: the checks its schema cannot express, and the typed
view its steps receive (judgebias.workflow.step_dispatch passes `TemplateParams` to a step whose
``params`` argument is annotated with it)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from judgebias.abilities import Need
from judgebias.study import study_models


@dataclass(frozen=True)
class TemplateParams:
    """What the template study's steps read, resolved once from the validated params."""

    judges: tuple[str, ...]
    n_items: int
    max_words: int
    seed: int
    ci: float

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> TemplateParams:
        block = params["_template"]
        return cls(judges=tuple(study_models(params, "_template")), n_items=block["n_items"],
                   max_words=block["max_words"], seed=block["seed"], ci=block["ci"])


def validate(params: Mapping[str, Any]) -> list[str]:
    """Judges named but not in the panel."""
    block = params["_template"]
    return [f"_template.models: {m!r} is not a panel model"
            for m in block.get("models", []) if m not in params["panel"]]


def needs(params: Mapping[str, Any]) -> list[Need]:
    """What each role needs from its models, checked before any call
    (judgebias.abilities): the template's judges get text only and read the parsed
    score, so nothing beyond a text answer. A study that reads the answer token's
    log-probs says ``answer_logprobs=True``; one that shows two images,
    ``images_per_request=2``."""
    return [Need("_template", "judge", study_models(params, "_template"),
                 fallback="leave the model out of _template.models")]
