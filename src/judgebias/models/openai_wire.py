"""The OpenAI chat-completions wire encoding: the body that asks a request, and the
answer read back from a completion.

Why a module of its own: the online backend (judgebias.models.openai_backend) sends this
body, and each line of a Batch API file (judgebias.models.openai_batch) carries it, so
both must ask the same; with the encoding in either of them, each imported the other.
The vllm backend sends the same messages (:func:`openai_chat_messages`). It imports no
SDK: the vllm backend's jobs and the registry's :func:`journal_version` load it too.

The user message is the request's text and image parts in their order (the template's
image markers, judgebias.prompts), images as base64 data URLs in `image_url` parts.
Log-probs are asked for with `logprobs=True, top_logprobs=k` and kept token by token
with their alternatives.

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
none). Usage: ``completion_tokens`` already includes
``completion_tokens_details.reasoning_tokens`` (billed as output); both are journaled,
the latter as ``reasoning_tokens``. A model without ``reasoning`` is asked exactly as
before (``max_tokens``, its keys unchanged).

**Prompt caching** (issue 45): OpenAI caches prompt prefixes by itself, nothing in the body
asks for it. Its guide (developers.openai.com/api/docs/guides/prompt-caching): "caching
is enabled automatically for prompts that are 1024 tokens or longer", hits are "only
possible for exact prefix matches" (images included) and come "in increments of 128
tokens"; the hit is reported in ``usage.prompt_tokens_details.cached_tokens`` (openai
3.63.0 ``types/completion_usage.py``: ``PromptTokensDetails.cached_tokens``, "cached
tokens present in the prompt", inside ``prompt_tokens``), and from the GPT-5.6 family on,
writes "cost 1.25x the uncached input token rate" and are reported in
``cache_write_tokens`` ("the unadjusted number of prompt tokens written to cache"). A
Batch API result's body is a ``chat.completion`` with the same usage, and ``vllm serve``
fills ``prompt_tokens_details.cached_tokens`` when started with
``--enable-prompt-tokens-details`` (else the details are null: nothing is journaled, as
unknown). Both are journaled as ``cached_tokens`` and ``cache_write_tokens``
(judgebias.models.base.CACHED_TOKENS), the nested object itself is not (the journal keeps
token counts only).
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

from judgebias.models.base import (
    CACHE_WRITE_TOKENS,
    CACHED_TOKENS,
    REASONING_TOKENS,
    ChatRequest,
    ChatResponse,
    TokenLogprob,
)
from judgebias.models.reasoning import Reasoning
from judgebias.models.wire import image_mime_type

if TYPE_CHECKING:
    from judgebias.models.panel import PanelModel

# Bump when the request encoding changes: it is part of every journal key, so answers to
# differently encoded requests are never confused. (The SDK version is not: it does not
# change what the model is asked, and including it would re-pay every call on upgrade.)
PROTOCOL_VERSION = "openai-chat-1"


def journal_version(model: PanelModel) -> str:
    """The openai backend's journal version (the registry's ``version``): the protocol,
    and a reasoning model's effort and sampling flag, which change what is answered
    (judgebias.models.reasoning)."""
    reasoning = Reasoning.of(model.fields)
    return PROTOCOL_VERSION + (reasoning.suffix if reasoning else "")


def image_data_url(image: bytes) -> str:
    """``data:<mime>;base64,<payload>``: how an image travels in an OpenAI-style message."""
    payload = base64.b64encode(image).decode("ascii")
    return f"data:{image_mime_type(image)};base64,{payload}"


def openai_chat_messages(request: ChatRequest) -> list[dict[str, Any]]:
    """The request as OpenAI chat messages: the optional system message, then one user
    message whose content is the request's text and image parts in their order
    (:meth:`ChatRequest.parts`). The OpenAI API and vLLM's ``LLM.chat`` both take it."""
    content = [{"type": "text", "text": part} if isinstance(part, str)
               else {"type": "image_url", "image_url": {"url": image_data_url(part)}}
               for part in request.parts()]
    system = [{"role": "system", "content": request.system}] if request.system else []
    return [*system, {"role": "user", "content": content}]


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


def to_response(completion: Any) -> ChatResponse:
    """Map a chat.completion object (SDK model) to a ChatResponse."""
    choice = completion.choices[0]
    tokens = None
    if choice.logprobs is not None and choice.logprobs.content:
        tokens = tuple(
            TokenLogprob(t.token, t.logprob,
                         tuple((alt.token, alt.logprob) for alt in t.top_logprobs or ()))
            for t in choice.logprobs.content)
    return ChatResponse(text=choice.message.content or "", tokens=tokens,
                        usage=usage_counts(completion.usage),
                        finish_reason=choice.finish_reason or "stop")


def usage_counts(usage: Any) -> dict[str, int]:
    """A completion's ``usage`` (``CompletionUsage``) as journaled: its integer fields as
    OpenAI names them, the hidden part of ``completion_tokens`` as ``reasoning_tokens``,
    and the prompt's cached part (module docstring, *Prompt caching*) as ``cached_tokens``
    (and ``cache_write_tokens`` where reported); a nested detail is read, not kept."""
    if usage is None:
        return {}
    counts = {k: v for k, v in usage.model_dump().items()
              if isinstance(v, int) and not isinstance(v, bool)}
    details = usage.completion_tokens_details
    if details is not None and details.reasoning_tokens is not None:
        counts[REASONING_TOKENS] = details.reasoning_tokens  # inside completion_tokens
    prompt = usage.prompt_tokens_details
    if prompt is not None and prompt.cached_tokens is not None:
        counts[CACHED_TOKENS] = prompt.cached_tokens  # inside prompt_tokens
    if prompt is not None and prompt.cache_write_tokens is not None:
        counts[CACHE_WRITE_TOKENS] = prompt.cache_write_tokens
    return counts
