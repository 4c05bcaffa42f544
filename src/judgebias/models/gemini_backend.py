"""The `gemini` backend: Google's Gemini API through google-genai.

The user turn is the request's text and image parts in their order, images inline.
Log-probs are requested (`response_logprobs`, `logprobs=k`) where the model offers them.
Some Gemini models reject log-prob requests with a 400: the first such answer switches
log-probs off for the rest of the job (detected once, logged once), the request is sent
again without them, and every row records whether it had log-probs
(`logprobs_available`), so the parsed score is used for those rows.

Log-prob availability is the model's own setting: a panel entry whose abilities say it
gives none (``abilities: {answer_logprobs: false}``, judgebias.abilities) is never asked
for them, so no request is refused first.

google-genai's own retries are off (`attempts=1`): judgebias.models.api retries.

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

What a request asks (:func:`generation`), and the REST body it becomes
(:func:`request_json`), are built here once, for the online call and for each line of a
batch (judgebias.models.gemini_batch), so both ask the same; a batch's result row is
parsed back as the online answer is (:func:`response_from_json`, :func:`to_response`).
"""

from __future__ import annotations

import asyncio
import importlib
import json
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from google import genai
from google.genai import _common as genai_common
from google.genai import errors as genai_errors
from google.genai import models as genai_models
from google.genai import types

from judgebias.models.api import (
    PERMANENT_STATUS,
    ApiBackend,
    ApiLimits,
    PermanentError,
    TransientError,
    image_mime_type,
    parse_retry_after,
)
from judgebias.models.base import (
    FINISH_LENGTH,
    REASONING_TOKENS,
    ChatRequest,
    ChatResponse,
    TokenLogprob,
)
from judgebias.models.reasoning import Thinking

if TYPE_CHECKING:
    from judgebias.models.gemini_batch import GeminiBatches

log = logging.getLogger(__name__)

# Part of every journal key; bump when the request encoding changes.
PROTOCOL_VERSION = "gemini-generate-1"


def _transport_errors() -> tuple[type[BaseException], ...]:
    """Connection-level errors of whichever transport google-genai uses here: aiohttp for
    async when installed, else httpx or its drop-in fork httpx2."""
    found: list[type[BaseException]] = [ConnectionError]
    for module, attr in (("aiohttp", "ClientError"), ("httpx", "TransportError"),
                         ("httpx2", "TransportError")):
        try:
            found.append(getattr(importlib.import_module(module), attr))
        except ImportError:
            continue
    return tuple(found)


_TRANSPORT_ERRORS = _transport_errors()


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
    return counts


def finish_reason(reason: types.FinishReason | None) -> str:
    """The finish reason as journaled: ``MAX_TOKENS`` is every backend's ``length`` (an
    answer cut off, judgebias.judging.answers reads it as truncated), the rest lowercase."""
    if reason is None:
        return "stop"
    return FINISH_LENGTH if reason == types.FinishReason.MAX_TOKENS else reason.value.lower()


def refuses_logprobs(code: object, message: str) -> bool:
    """Whether an error (HTTP `code`, `message`) is the model refusing log-probs: online
    (:func:`rejects_logprobs`) and in a batch's result row (gemini_batch)."""
    return code == 400 and "logprob" in message.lower()


def rejects_logprobs(exc: BaseException) -> bool:
    return (isinstance(exc, genai_errors.ClientError)
            and refuses_logprobs(exc.code, str(exc.message or exc)))


class GeminiBackend(ApiBackend):
    name = "gemini"
    version = PROTOCOL_VERSION
    thinking: Thinking | None = None  # panel.<m>.thinking_config (judgebias.models.registry)

    def __init__(self, model_id: str, label: str, limits: ApiLimits, *,
                 base_url: str | None, api_key: str):
        super().__init__(model_id, label, limits, base_url=base_url, api_key=api_key)
        # unknown until the first answer; False where the model's abilities say so
        self.logprobs_supported: bool | None = None
        self._probe: asyncio.Lock | None = None

    def _batch_provider(self) -> GeminiBatches:
        from judgebias.models.gemini_batch import GeminiBatches

        batches = GeminiBatches(genai.Client(api_key=self._api_key,
                                             http_options=self._http_options()),
                                self.model_id, thinking=self.thinking)
        batches.logprobs = self.logprobs_supported is not False
        return batches

    def _http_options(self) -> types.HttpOptions:
        """The client's options, online and batch: the timeout, the endpoint, and the
        SDK's own retries off (judgebias.models.api retries online calls; a batch job
        stopped by a failed call resumes where it was, and a create is never sent twice
        blindly: it is not idempotent, specs/batch.md §2)."""
        options = types.HttpOptions(timeout=int(self.limits.timeout_s * 1000),
                                    retry_options=types.HttpRetryOptions(attempts=1))
        if self._base_url:
            options.base_url = self._base_url
        return options

    async def _open(self) -> genai.Client:
        self._probe = asyncio.Lock()
        return genai.Client(api_key=self._api_key, http_options=self._http_options())

    async def _close(self, client: genai.Client) -> None:
        await client.aio.aclose()

    async def _call(self, client: genai.Client, request: ChatRequest) -> ChatResponse:
        if self.logprobs_supported is None and request.sampling.top_logprobs > 0:
            assert self._probe is not None
            async with self._probe:  # the first request finds out alone; the rest wait
                if self.logprobs_supported is None:
                    return await self._send(client, request)
        return await self._send(client, request)

    async def _send(self, client: genai.Client, request: ChatRequest) -> ChatResponse:
        contents, config = generation(request, self.logprobs_supported is not False,
                                      self.thinking)
        try:
            result = await client.aio.models.generate_content(
                model=request.model, contents=contents, config=config)
        except genai_errors.ClientError as exc:
            if not (config.response_logprobs and rejects_logprobs(exc)):
                raise
            if self.logprobs_supported is not False:
                self.logprobs_supported = False
                log.warning("%s: the model rejects log-probs (%s); using the parsed score",
                            self.label, exc.message)
            return await self._send(client, request)
        if config.response_logprobs:
            self.logprobs_supported = True
        return to_response(result)

    def _classify(self, exc: BaseException) -> TransientError | PermanentError | None:
        if isinstance(exc, genai_errors.APIError):
            reason = exc.message or str(exc)
            if exc.code in PERMANENT_STATUS:
                return self.refused("Gemini", exc.code, reason)
            headers = getattr(exc.response, "headers", None) or {}
            return TransientError(str(exc.code), reason,
                                  parse_retry_after(headers.get("retry-after")))
        if isinstance(exc, _TRANSPORT_ERRORS):
            return TransientError("connection", str(exc) or type(exc).__name__)
        if isinstance(exc, (json.JSONDecodeError, UnicodeDecodeError)):
            return TransientError("garbled", str(exc)[:200])
        return None
