"""Reasoning and thinking models on serve-sim: what each model refuses, and the hidden
tokens it spends (issue 41 items 2-3; the client side: judgebias.models.reasoning).

Which served model is a reasoning or thinking model is read from the panel params the
clients run (:class:`ServedModels`), as a provider knows its own models: an entry with
``reasoning`` makes its model id an OpenAI reasoning model, taking temperature, top_p and
log-probs at exactly the efforts whose entries say ``sampling: true``; one with
``thinking_config`` a Gemini thinking model; ``abilities: {answer_logprobs: false}`` a
model that refuses log-probs (either API). Nothing is inferred from a model's name.

OpenAI (its reasoning guide, and openai 3.63.0's ``completion_create_params.py``): a
reasoning model refuses ``max_tokens`` (400 ``unsupported_parameter``: use
``max_completion_tokens``), a temperature or top_p other than 1 (400
``unsupported_value``) and ``logprobs`` (400 ``unsupported_parameter``) unless its
settings take them at the request's effort; a model that is not one refuses
``reasoning_effort``. Gemini: a thinking config with both a budget and a level is
refused (400 ``INVALID_ARGUMENT``).

Hidden tokens: a plausible count that grows with the effort (or Gemini's level; a budget
caps it, -1 or no config on a thinking model is the model's own choice, ``medium``) and
with the request's size. They count against the output limit: the sim answers within
what they leave (:func:`within`), and where they leave nothing the answer is cut off with
no text (OpenAI ``finish_reason: length``, Gemini ``MAX_TOKENS``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from judgebias.devtools.serve_sim.errors import BadRequest
from judgebias.devtools.serve_sim.wire import first_of
from judgebias.models.base import ChatRequest

# Hidden tokens per effort or level before the request's own size is added.
EFFORT_TOKENS = {"none": 0, "minimal": 12, "low": 48, "medium": 160, "high": 480,
                 "xhigh": 960, "max": 1920}
DYNAMIC = "medium"  # what a thinking model spends when the request leaves it to the model


@dataclass(frozen=True)
class ServedModels:
    """What the clients' panel params say of each served model id (module docstring)."""

    reasoning: Mapping[str, Mapping[str, bool]] = field(default_factory=dict)
    thinking: frozenset[str] = frozenset()
    no_logprobs: frozenset[str] = frozenset()

    @classmethod
    def from_params(cls, params: Mapping[str, Any] | None) -> ServedModels:
        reasoning: dict[str, dict[str, bool]] = {}
        thinking: set[str] = set()
        no_logprobs: set[str] = set()
        for entry in (params or {}).get("panel", {}).values():
            model = entry.get("model_id")
            if not isinstance(model, str):
                continue
            if isinstance(entry.get("reasoning"), Mapping):
                block = entry["reasoning"]
                reasoning.setdefault(model, {})[block.get("effort")] = bool(
                    block.get("sampling"))
            if isinstance(entry.get("thinking_config"), Mapping):
                thinking.add(model)
            if (entry.get("abilities") or {}).get("answer_logprobs") is False:
                no_logprobs.add(model)
        return cls(reasoning, frozenset(thinking), frozenset(no_logprobs))

    def openai_refusal(self, body: Mapping[str, Any]) -> tuple[str, str, str] | None:
        """(message, param, code) of OpenAI's 400 for a chat body this model refuses."""
        model, effort = str(body.get("model")), body.get("reasoning_effort")
        if model not in self.reasoning:
            return None if effort is None else _unsupported("reasoning_effort")
        if body.get("max_tokens") is not None:
            return (f"{_unsupported('max_tokens')[0]} Use 'max_completion_tokens' instead.",
                    "max_tokens", "unsupported_parameter")
        if self.reasoning[model].get(str(effort or DYNAMIC), False):
            return None
        for name in ("temperature", "top_p"):
            value = body.get(name)
            if value is not None and value != 1:
                return (f"Unsupported value: '{name}' does not support {value} with this "
                        "model. Only the default (1) value is supported.", name,
                        "unsupported_value")
        return _unsupported("logprobs") if body.get("logprobs") else None

    def reasoning_tokens(self, body: Mapping[str, Any], request: ChatRequest) -> int | None:
        """The hidden tokens an OpenAI reasoning model spends (None: not one)."""
        if request.model not in self.reasoning:
            return None
        return hidden_tokens(str(body.get("reasoning_effort") or DYNAMIC), request)

    def thoughts(self, body: Mapping[str, Any], request: ChatRequest) -> int | None:
        """The thought tokens a Gemini request spends (None: no thinking); BadRequest for
        a config the API refuses."""
        config = first_of(body, "generationConfig", "generation_config") or {}
        thinking = first_of(config, "thinkingConfig", "thinking_config")
        if not isinstance(thinking, Mapping):
            return hidden_tokens(DYNAMIC, request) if request.model in self.thinking else None
        budget = first_of(thinking, "thinkingBudget", "thinking_budget")
        level = first_of(thinking, "thinkingLevel", "thinking_level")
        if budget is not None and level is not None:
            raise BadRequest("You can only set one of thinking budget and thinking level.")
        if level is not None:
            return hidden_tokens(str(level).lower(), request)
        dynamic = hidden_tokens(DYNAMIC, request)
        return dynamic if budget is None or budget < 0 else min(int(budget), dynamic)


def _unsupported(param: str) -> tuple[str, str, str]:
    return (f"Unsupported parameter: '{param}' is not supported with this model.", param,
            "unsupported_parameter")


def hidden_tokens(effort: str, request: ChatRequest) -> int:
    """Hidden tokens at `effort` (or level) for `request`: more for more images and words."""
    base = EFFORT_TOKENS.get(effort, EFFORT_TOKENS[DYNAMIC])
    if base == 0:
        return 0
    return base + 16 * len(request.images) + len(request.prompt.split()) // 10


def within(request: ChatRequest, spent: int) -> ChatRequest | None:
    """`request` with the output limit its hidden tokens left (None: they left nothing)."""
    left = request.sampling.max_tokens - spent
    if left <= 0:
        return None
    return dataclasses.replace(request, sampling=dataclasses.replace(request.sampling,
                                                                     max_tokens=left))
