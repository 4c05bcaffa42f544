"""The Gemini wire encoding (google-genai): what a request asks, the REST body it becomes,
and the answer read back from a response.

Why a module of its own: the online backend (judgebias.models.gemini_backend) asks with
:func:`generation`, and each line of a batch (judgebias.models.gemini_batch) carries the
same request as JSON (:func:`request_json`), its result row parsed back as the online
answer is (:func:`response_from_json`, :func:`to_response`), so both must share one
encoding; with it in either of them, each imported the other.

The user turn is the request's text and image parts in their order, images inline.
Log-probs are requested (`response_logprobs`, `logprobs=k`) where the sampling wants them
and the caller has not learnt that the model refuses them (:func:`refuses_logprobs`: the
backend and the batch module each switch them off for the rest of the job).

**Thinking** (``panel.<m>.thinking_config``, judgebias.models.reasoning), as google-genai
3.6.1 spells it (``types.py``): ``GenerateContentConfig(thinking_config=ThinkingConfig(
thinking_budget=..., thinking_level=...))``, the budget in tokens ("0 is DISABLED. -1 is
AUTOMATIC. The default values and allowed ranges are model dependent"), the level a
``ThinkingLevel`` (MINIMAL, LOW, MEDIUM, HIGH, XHIGH). Thoughts are reported as
``usage_metadata.thoughts_token_count`` ("the number of tokens that were part of the
model's generated thoughts"; ``total_token_count`` is "the sum of prompt_token_count,
candidates_token_count, tool_use_prompt_token_count, and thoughts_token_count") and billed
as output, so ``completion_tokens`` is journaled as candidates plus thoughts (every billed
output token, as OpenAI's is) and the thoughts apart as ``reasoning_tokens``. They count
against ``max_output_tokens`` (../shared/specs/judges.md; the SDK's types say nothing of
it): an answer they leave no room for comes back with finish reason ``MAX_TOKENS`` and no
text, which is mapped, as every cut answer, to ``length`` and read as truncated, never
parsed. A model without thinking_config is asked exactly as before (its keys unchanged).

**Implicit caching** (issue 45): nothing is asked. "Implicit caching is enabled by default
for all Gemini 2.5 and newer models ... We automatically pass on cost savings if your
request hits caches", for a repeated prefix of at least the model's minimum (the table of
ai.google.dev/gemini-api/docs/caching has changed over 2026: 1,024 for 2.5 Flash and
4,096 for 2.5 Pro in May, 2,048 for both and 4,096 for the 3.x models since; "try to send
requests with similar prefix in a short amount of time"). The hit is
``usage_metadata.cached_content_token_count`` (google-genai 3.6.1 ``types.py``: "the
number of tokens in the cached content that was used for this request", inside
``prompt_token_count``, which "when cached_content is set, also includes" them), journaled
as ``cached_tokens`` (judgebias.models.base.CACHED_TOKENS) with every usage: the REST
API leaves a zero count out (proto3 JSON omits defaults), so a usage without it read
nothing from a cache, and is journaled 0, not as unknown (a share of cached input counted
only over the answers that hit would be 100 %). A batch result row's response is read by
the same code.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from google import genai
from google.genai import _common as genai_common
from google.genai import models as genai_models
from google.genai import types

from judgebias.models.base import (
    CACHED_TOKENS,
    FINISH_LENGTH,
    REASONING_TOKENS,
    ChatRequest,
    ChatResponse,
    TokenLogprob,
)
from judgebias.models.reasoning import Thinking
from judgebias.models.wire import image_mime_type

if TYPE_CHECKING:
    from judgebias.models.panel import PanelModel

# Part of every journal key; bump when the request encoding changes.
PROTOCOL_VERSION = "gemini-generate-1"


def journal_version(model: PanelModel) -> str:
    """The gemini backend's journal version (the registry's ``version``): the protocol,
    and the model's thinking config, which changes what is answered
    (judgebias.models.reasoning)."""
    thinking = Thinking.of(model.fields)
    return PROTOCOL_VERSION + (thinking.suffix if thinking else "")


def build_contents(request: ChatRequest) -> list[Any]:
    """One user turn: the request's text and image parts (inline) in their order, the
    same sequence every backend sends (:meth:`ChatRequest.parts`)."""
    parts = [types.Part.from_text(text=part) if isinstance(part, str)
             else types.Part.from_bytes(data=part, mime_type=image_mime_type(part))
             for part in request.parts()]
    return [types.Content(role="user", parts=parts)]


def generation(request: ChatRequest, logprobs: bool, thinking: Thinking | None = None
               ) -> tuple[list[Any], types.GenerateContentConfig]:
    """The contents and config that ask `request` (log-probs if `logprobs` and the
    sampling wants them; the model's thinking config where it has one): the online call's
    arguments, and each batch line's."""
    sampling = request.sampling
    config = types.GenerateContentConfig(
        temperature=sampling.temperature, top_p=sampling.top_p,
        max_output_tokens=sampling.max_tokens, seed=sampling.seed,
        system_instruction=request.system or None)
    if logprobs and sampling.top_logprobs > 0:
        config.response_logprobs = True
        config.logprobs = sampling.top_logprobs
    if thinking is not None:
        level = types.ThinkingLevel(thinking.level.upper()) if thinking.level else None
        config.thinking_config = types.ThinkingConfig(thinking_budget=thinking.budget,
                                                      thinking_level=level)
    return build_contents(request), config


def request_json(client: genai.Client, request: ChatRequest, logprobs: bool,
                 thinking: Thinking | None = None) -> dict[str, Any]:
    """The ``GenerateContentRequest`` JSON the online call sends for `request`: the body
    of ``models.generate_content``, converted by google-genai's own code (the SDK builds no
    JSONL lines for batch files, and a hand-written twin of its conversion would drift
    from what online asks). A batch line's ``request`` (specs/batch.md §2)."""
    contents, config = generation(request, logprobs, thinking)
    parameters = types._GenerateContentParameters(model=request.model, contents=contents,
                                                  config=config)
    body = genai_models._GenerateContentParameters_to_mldev(
        client._api_client, parameters, None, parameters)
    for internal in ("_url", "_query", "config"):  # what the SDK strips before sending
        body.pop(internal, None)
    return genai_common.encode_unserializable_types(genai_common.convert_to_dict(body))


def response_from_json(data: Mapping[str, Any]) -> types.GenerateContentResponse:
    """A ``GenerateContentResponse`` JSON (a batch result row's ``response``) parsed as
    google-genai parses the online answer's body."""
    return types.GenerateContentResponse._from_response(
        response=genai_models._GenerateContentResponse_from_mldev(dict(data)), kwargs={})


def to_response(result: types.GenerateContentResponse) -> ChatResponse:
    if not result.candidates:
        reason = getattr(result.prompt_feedback, "block_reason", None)
        # The provider refused the prompt: an answer (never retried by the API layer, never
        # counted against max_failures), not a failed call.
        return ChatResponse(text="", status="refused", finish_reason="blocked",
                            error=f"no candidate returned (block reason: {reason})")
    candidate = result.candidates[0]
    parts = candidate.content.parts if candidate.content and candidate.content.parts else []
    text = "".join(p.text for p in parts if p.text)
    tokens = None
    logprobs = candidate.logprobs_result
    if logprobs is not None and logprobs.chosen_candidates:
        tops = logprobs.top_candidates or []
        tokens = tuple(
            TokenLogprob(chosen.token or "", chosen.log_probability or 0.0,
                         tuple((alt.token or "", alt.log_probability or 0.0)
                               for alt in (tops[i].candidates or [] if i < len(tops) else [])))
            for i, chosen in enumerate(logprobs.chosen_candidates))
    return ChatResponse(text=text, tokens=tokens, usage=usage_counts(result.usage_metadata),
                        finish_reason=finish_reason(candidate.finish_reason))


def usage_counts(usage: types.GenerateContentResponseUsageMetadata | None) -> dict[str, int]:
    """Usage as journaled (module docstring): thoughts billed as output, and apart."""
    if usage is None:
        return {}
    thoughts = usage.thoughts_token_count
    counts = {"prompt_tokens": usage.prompt_token_count or 0,
              "completion_tokens": (usage.candidates_token_count or 0) + (thoughts or 0),
              "total_tokens": usage.total_token_count or 0}
    if thoughts is not None:
        counts[REASONING_TOKENS] = thoughts
    # inside prompt_tokens; a zero count is left out of the JSON (module docstring)
    counts[CACHED_TOKENS] = usage.cached_content_token_count or 0
    return counts


def finish_reason(reason: types.FinishReason | None) -> str:
    """The finish reason as journaled: ``MAX_TOKENS`` is every backend's ``length`` (an
    answer cut off, judgebias.judging.answers reads it as truncated), the rest lowercase."""
    if reason is None:
        return "stop"
    return FINISH_LENGTH if reason == types.FinishReason.MAX_TOKENS else reason.value.lower()


def refuses_logprobs(code: object, message: str) -> bool:
    """Whether an error (HTTP `code`, `message`) is the model refusing log-probs: online
    (judgebias.models.gemini_backend.rejects_logprobs) and in a batch's result row
    (judgebias.models.gemini_batch)."""
    return code == 400 and "logprob" in message.lower()
