"""The `openai` backend: the OpenAI API and any OpenAI-compatible server (`vllm serve`,
hosted providers, `judgebias serve-sim`) through `base_url`.

The user message is the request's text and image parts in their order (the template's
image markers, judgebias.prompts), images as base64 data URLs in `image_url` parts
(:func:`judgebias.models.api.openai_chat_messages`, which the vllm backend shares).
Log-probs are asked for with `logprobs=True, top_logprobs=k` and kept token by token
with their alternatives.
The SDK's own retries are off (max_retries=0): judgebias.models.api retries, so that it
can count them, honour Retry-After, and stop at once on permanent errors.

**Reasoning models** (o-series, the GPT-5 family; ``panel.<m>.reasoning``,
judgebias.models.reasoning), as openai 3.63.0 documents them
(``types/chat/completion_create_params.py``, ``types/completion_usage.py``,
``types/shared/reasoning_effort.py``): ``max_tokens`` "is not compatible with o-series
models", so the limit goes as ``max_completion_tokens``, "an upper bound for the number of
tokens that can be generated for a completion, including visible output tokens and
reasoning tokens"; ``reasoning_effort`` is one of none, minimal, low, medium, high, xhigh,
max ("not all reasoning models support every value"). Temperature, top_p and log-probs
are sent only where the panel entry says this model takes them at its effort
(``reasoning.sampling``: the SDK types do not say which model takes what, OpenAI's
reasoning guide does: only the defaults, no log-probs, except some models at effort
none). The same body goes into a Batch API line (judgebias.models.openai_batch). Usage:
``completion_tokens`` already includes ``completion_tokens_details.reasoning_tokens``
(billed as output); both are journaled, the latter as ``reasoning_tokens``. A model
without ``reasoning`` is asked exactly as before (``max_tokens``, its keys unchanged).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import openai

from judgebias.models.api import (
    PERMANENT_STATUS,
    ApiBackend,
    PermanentError,
    TransientError,
    openai_chat_messages,
    parse_retry_after,
)
from judgebias.models.base import REASONING_TOKENS, ChatRequest, ChatResponse, TokenLogprob
from judgebias.models.reasoning import Reasoning

if TYPE_CHECKING:
    from judgebias.models.openai_batch import OpenAIBatches

# Bump when the request encoding changes: it is part of every journal key, so answers to
# differently encoded requests are never confused. (The SDK version is not: it does not
# change what the model is asked, and including it would re-pay every call on upgrade.)
PROTOCOL_VERSION = "openai-chat-1"


def to_response(completion: Any) -> ChatResponse:
    """Map a chat.completion object (SDK model) to a ChatResponse."""
    choice = completion.choices[0]
    tokens = None
    if choice.logprobs is not None and choice.logprobs.content:
        tokens = tuple(
            TokenLogprob(t.token, t.logprob,
                         tuple((alt.token, alt.logprob) for alt in t.top_logprobs or ()))
            for t in choice.logprobs.content)
    usage = completion.usage.model_dump() if completion.usage is not None else {}
    counts = {k: v for k, v in usage.items() if isinstance(v, int)}
    details = completion.usage.completion_tokens_details if completion.usage else None
    if details is not None and details.reasoning_tokens is not None:
        counts[REASONING_TOKENS] = details.reasoning_tokens  # inside completion_tokens
    return ChatResponse(text=choice.message.content or "", tokens=tokens, usage=counts,
                        finish_reason=choice.finish_reason or "stop")


def chat_body(request: ChatRequest, reasoning: Reasoning | None = None) -> dict[str, Any]:
    """The chat-completions request body of `request`: what is sent online, and each
    line's ``body`` of a batch (judgebias.models.openai_batch), so both ask the same. A
    reasoning model gets its effort and ``max_completion_tokens``, and temperature, top_p
    and log-probs only where it takes them (module docstring)."""
    sampling = request.sampling
    body: dict[str, Any] = {"model": request.model, "messages": openai_chat_messages(request)}
    if reasoning is None or reasoning.sampling:
        body.update(temperature=sampling.temperature, top_p=sampling.top_p)
    if reasoning is None:
        body["max_tokens"] = sampling.max_tokens
    else:
        body.update(max_completion_tokens=sampling.max_tokens,
                    reasoning_effort=reasoning.effort)
    body["seed"] = sampling.seed
    if sampling.top_logprobs > 0 and (reasoning is None or reasoning.sampling):
        body.update(logprobs=True, top_logprobs=sampling.top_logprobs)
    return body


class OpenAIBackend(ApiBackend):
    name = "openai"
    version = PROTOCOL_VERSION
    reasoning: Reasoning | None = None  # panel.<m>.reasoning (judgebias.models.registry)

    def _batch_provider(self) -> OpenAIBatches:
        from judgebias.models.openai_batch import OpenAIBatches

        return OpenAIBatches(openai.OpenAI(base_url=self._base_url, api_key=self._api_key,
                                           max_retries=self.limits.max_retries,
                                           timeout=self.limits.timeout_s),
                             reasoning=self.reasoning)

    async def _open(self) -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(base_url=self._base_url, api_key=self._api_key,
                                  max_retries=0, timeout=self.limits.timeout_s)

    async def _call(self, client: openai.AsyncOpenAI, request: ChatRequest) -> ChatResponse:
        return to_response(await client.chat.completions.create(
            **chat_body(request, self.reasoning)))

    def _classify(self, exc: BaseException) -> TransientError | PermanentError | None:
        if isinstance(exc, openai.APITimeoutError):
            return TransientError("timeout", str(exc))
        if isinstance(exc, openai.APIConnectionError):
            return TransientError("connection", str(exc.__cause__ or exc))
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            if status in PERMANENT_STATUS:
                return self.refused("the OpenAI-compatible server", status, _reason(exc))
            retry_after = parse_retry_after(exc.response.headers.get("retry-after"),
                                            exc.response.headers.get("retry-after-ms"))
            return TransientError(str(status), _reason(exc), retry_after)
        if isinstance(exc, (json.JSONDecodeError, openai.APIResponseValidationError,
                            UnicodeDecodeError)):
            return TransientError("garbled", str(exc)[:200])
        return None


def _reason(exc: openai.APIStatusError) -> str:
    body = exc.body if isinstance(exc.body, dict) else {}
    error = body.get("error", body) if isinstance(body, dict) else {}
    message = error.get("message") if isinstance(error, dict) else None
    return str(message or exc.message)
