"""The `_template:` params block, declared once: its typed view (judgebias.paramsblock).

Each field of :class:`TemplateParams` is a key of the block, with its type, default,
bounds and description (the docstring below it); the block's JSON schema, the view its
steps receive (judgebias.workflow.step_dispatch passes it to a step argument annotated
with it) and the keys its rules declare (``block_keys``) all come from it. A field marked
``derived()`` is computed from other keys. What the schema cannot express is checked in
``validate``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from judgebias.abilities import Need
from judgebias.paramsblock import block_values, derived, key, view
from judgebias.study import study_models


@view
class TemplateParams:
    """The template study -- a verbosity preference in score points."""

    PARAMS_KEY: ClassVar[str] = "_template"

    models: tuple[str, ...] | None = key(absent=True, unique=True, min_length=1)
    """The panel models that judge; all of the panel when absent."""
    n_items: int = key(60, ge=8)
    """Synthetic answers per judge."""
    max_words: int = key(40, ge=2)
    """Longest answer, in words."""
    seed: int = 0
    """Seeds the synthetic answers."""
    ci: float = key(0.95, gt=0, lt=1)
    """Confidence level of the interval."""
    judges: tuple[str, ...] = derived()
    """The judges: ``models``, or every panel model where it is absent."""

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> TemplateParams:
        """The view of validated `params` (the schema filled every default in)."""
        return cls(**block_values(params, "_template"),
                   judges=tuple(study_models(params, "_template")))


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
