"""Models that think before they answer: what a panel entry says about it, for OpenAI's
reasoning models (``reasoning``) and Gemini's thinking models (``thinking_config``).

Issue 41 items 2-3. Such a model spends hidden tokens, billed as output and counted
against the output limit, and (OpenAI) refuses sampling parameters it would otherwise
take. Which model refuses what, at which effort, is the provider's fact about *that*
model, so it is stated in the model's own panel entry and never guessed from its name:

* ``reasoning: {effort: medium}`` (openai): a reasoning model (o-series, the GPT-5
  family). Its requests carry ``reasoning_effort`` and ``max_completion_tokens`` (never
  ``max_tokens``, which such a model refuses), and no temperature, top_p or log-probs.
  ``sampling: true`` states that this model *at this effort* takes them (GPT-5.x at
  ``none``); default false, as OpenAI's reasoning guide documents for reasoning models.
  A temperature or top_p other than the default (1) on a model that does not take them
  is a config error naming the key, not a value sent and refused (a 400 at the first
  call) nor silently replaced by the default (the journal key would then claim a
  temperature the answer was not drawn at). Log-probs asked by the sampling
  (``top_logprobs``, 5 by default) are simply not sent, as for every judge that gives
  none: the answers carry no log-probs, and judgebias.abilities refuses a study that
  needs them before any call (judgebias.models.backends.openai_abilities).
* ``thinking_config: {thinking_budget: N}`` or ``{thinking_level: low}`` (gemini):
  google-genai's ``ThinkingConfig`` fields under their SDK names (the budget in tokens,
  0 off where the model allows it, -1 dynamic; the level for models after 2.5). Named
  apart from Claude's ``thinking``, whose shape differs: the registry requires a field
  two backends share to mean the same.

Journal keys: the effort, the sampling flag and the thinking config change what is
answered (and whether log-probs come with it), so they are part of the backend's
version string, suffixed to the protocol only where set (:attr:`Reasoning.suffix`,
:attr:`Thinking.suffix`; judgebias.models.openai_wire.journal_version and
gemini_wire.journal_version add them): every key of a model without them is
byte-identical to before.

Where ../shared/specs/judges.md and the SDKs differ, the SDKs win: the spec lists the
efforts minimal-high (and ``none`` on later models), openai 3.63.0 also ``xhigh`` and
``max``; the spec says later Gemini models take "a level", google-genai 3.6.1 names five
(MINIMAL, LOW, MEDIUM, HIGH, XHIGH). That thoughts count against ``max_output_tokens`` is
the spec's word: the SDK's types do not say.

Hidden tokens are journaled in each answer's usage as ``reasoning_tokens`` (included in
``completion_tokens``, which is every billed output token: judgebias.models.base), and
`judgebias plan` counts them (``pricing.reasoning_tokens`` estimates them until journaled
answers measure them). This module imports nothing heavy, and no other module of
judgebias: the registry and the providers' wire encodings read it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# openai 3.63.0, openai/types/shared/reasoning_effort.py (not every model takes each)
EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
# google-genai 3.6.1, types.ThinkingLevel (the API's enum, case-insensitive)
LEVELS = ("minimal", "low", "medium", "high", "xhigh")
DEFAULT = 1.0  # the only temperature and top_p a reasoning model takes without `sampling`

REASONING_FIELDS: Mapping[str, Any] = {"reasoning": {
    "type": "object", "additionalProperties": False, "required": ["effort"],
    "properties": {
        "effort": {"enum": list(EFFORTS), "description": "reasoning_effort sent with "
                   "every request (which values a model takes varies: check the model)."},
        "sampling": {"type": "boolean", "description": "This model at this effort takes "
                     "temperature, top_p and log-probs (GPT-5.x at none); default false."}},
    "description": "An OpenAI reasoning model (o-series, GPT-5): sent reasoning_effort and "
                   "max_completion_tokens (sampling.max_tokens, hidden reasoning included), "
                   "never max_tokens; temperature, top_p and log-probs only where `sampling` "
                   "says this model takes them at this effort (judgebias.models.reasoning)."}}
THINKING_FIELDS: Mapping[str, Any] = {"thinking_config": {
    "type": "object", "additionalProperties": False,
    "properties": {
        "thinking_budget": {"type": "integer", "minimum": -1,
                            "description": "Thought tokens (0: off where the model allows "
                                           "it; -1: the model decides)."},
        "thinking_level": {"enum": list(LEVELS),
                           "description": "A thinking level (later Gemini models)."}},
    "description": "Gemini's thinking (google-genai ThinkingConfig): a budget (2.5 models) "
                   "or a level (later models), one of them. Thoughts are billed as output "
                   "and count against sampling.max_tokens: an answer they leave no room "
                   "for ends truncated (judgebias.models.reasoning)."}}


@dataclass(frozen=True)
class Reasoning:
    """An OpenAI reasoning model's settings (``panel.<m>.reasoning``)."""

    effort: str
    sampling: bool = False

    @classmethod
    def of(cls, fields: Mapping[str, Any]) -> Reasoning | None:
        block = fields.get("reasoning")
        return None if block is None else cls(block["effort"], bool(block.get("sampling")))

    @property
    def suffix(self) -> str:
        return f"+reasoning-{self.effort}" + ("+sampling" if self.sampling else "")


@dataclass(frozen=True)
class Thinking:
    """A Gemini model's thinking config (``panel.<m>.thinking_config``)."""

    budget: int | None = None
    level: str | None = None

    @classmethod
    def of(cls, fields: Mapping[str, Any]) -> Thinking | None:
        block = fields.get("thinking_config")
        return None if block is None else cls(block.get("thinking_budget"),
                                              block.get("thinking_level"))

    @property
    def suffix(self) -> str:
        if self.budget is not None:  # -1: the model decides (google-genai's AUTOMATIC)
            return f"+thinking-budget-{'dynamic' if self.budget < 0 else self.budget}"
        return f"+thinking-level-{self.level}"


def openai_checks(key: str, model: Mapping[str, Any]) -> list[str]:
    """A reasoning model's sampling must be what it takes (module docstring)."""
    reasoning = Reasoning.of(model)
    if reasoning is None or reasoning.sampling:
        return []
    where, sampling = f"panel.{key}", model.get("sampling", {})
    errors = [f"{where}.sampling.{name}: {sampling[name]} is refused by a reasoning model "
              f"(effort {reasoning.effort}) that takes only the default ({DEFAULT:g}): set "
              f"it to {DEFAULT:g}, or {where}.reasoning.sampling: true if this model takes "
              "sampling parameters at this effort"
              for name in ("temperature", "top_p") if sampling.get(name, DEFAULT) != DEFAULT]
    if model.get("abilities", {}).get("answer_logprobs"):
        errors.append(f"{where}.abilities.answer_logprobs: true, but {where}.reasoning says "
                      "the model refuses log-probs at this effort (set reasoning.sampling: "
                      "true if it takes them)")
    return errors


def gemini_checks(key: str, model: Mapping[str, Any]) -> list[str]:
    """One of a budget and a level, as the API takes (it refuses both together)."""
    block = model.get("thinking_config")
    if block is None or len(set(block) & {"thinking_budget", "thinking_level"}) == 1:
        return []
    return [f"panel.{key}.thinking_config: give one of thinking_budget and thinking_level"]

