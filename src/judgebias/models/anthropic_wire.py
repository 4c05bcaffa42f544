"""The Anthropic Messages wire encoding: the body that asks a request, and the answer
read back from a Message.

Why a module of its own: the online backend (judgebias.models.anthropic_backend) sends
this body, and each request of a Message Batch (judgebias.models.anthropic_batch) carries
it as its ``params``, a batch's succeeded message read back as the online one
(:func:`to_response`), so both must share one encoding; with it in either of them, each
imported the other. It imports no SDK at run time: the registry's
:func:`journal_version` loads it for every Claude model it keys.

Checked against anthropic 2.17.0 (and its floor, 2.0.0, the first release of API version
2026-10-21):

* One user message: the request's text and image parts in their order
  (:meth:`ChatRequest.parts`), images as ``{"type": "image", "source": {"type":
  "base64", "media_type", "data"}}`` blocks (PNG, JPEG, GIF or WebP; up to 100 per
  request); the system prompt is the top-level ``system`` field; ``max_tokens`` (required)
  is the sampling's.
* **No sampling parameters by default.** API version 2026-10-21 answers ``temperature``,
  ``top_p`` and ``top_k`` with a 400 at any value, on every model, and the SDK no longer
  has them; Claude samples at its default (temperature 1). The config therefore refuses a
  Claude model whose ``sampling.temperature`` or ``top_p`` is not 1.0
  (judgebias.models.backends), so no journal key claims a temperature that was not used.
  A panel entry may ask for the previous API version (``anthropic_version: "2023-06-01"``,
  older models only: Claude from 4.7 on refuses sampling parameters there too); then a
  temperature or top_p other than 1.0 is sent (1.0, the API's default, is left out:
  models from 4.5 on refuse temperature and top_p together, even at their defaults).
* **Thinking** (``thinking:`` on the panel entry): ``{type: enabled, budget_tokens: N}``
  (manual extended thinking; N >= 1024 and < ``max_tokens``, as thinking counts toward
  it; deprecated on Claude 4.6, refused from 4.7 on), ``{type: adaptive}`` (Claude
  decides) or ``{type: disabled}``; absent: the model's default. With thinking on, the
  2023-06-01 API refuses a temperature (and top_k) and takes top_p only in [0.95, 1]: the
  config checks it. Thinking is billed as output: ``usage.output_tokens`` includes it, and
  ``usage.output_tokens_details.thinking_tokens`` (where reported) is journaled as
  ``thinking_tokens``. The thinking blocks (text and signature) stay out of the answer
  text; they are kept in the raw response the journal stores (ChatResponse.raw).
* No log-probs at all: every answer has ``tokens=None`` (studies use the parsed score).
* Usage is journaled as Anthropic reports it (``input_tokens``, ``output_tokens``, the
  cache counts) and under the names the rest of judgebias reads (``prompt_tokens``: all
  input tokens, cached ones included; ``completion_tokens``; ``total_tokens``;
  ``cached_tokens`` = ``cache_read_input_tokens`` and ``cache_write_tokens`` =
  ``cache_creation_input_tokens``, judgebias.models.base.CACHED_TOKENS). ``input_tokens``
  is only the part after the last cache breakpoint (anthropic 2.17.0 ``types/usage.py``:
  ``cache_creation_input_tokens`` "the number of input tokens used to create the cache
  entry", ``cache_read_input_tokens`` "read from the cache"), so the three add up.
* **Cache markers** (issue 45). Claude caches only what a request marks: "Using the
  cache_control parameter, you can define up to 4 cache breakpoints"; the prefix cached
  is "tools, system, and messages (in that order) up to and including the block
  designated with cache_control"; writes cost "1.25x base input" (5-minute TTL, the
  default of ``{"type": "ephemeral"}``), reads "0.1x"; a prefix below the model's minimum
  (1,024 tokens for Sonnet 4.5 / Opus 4.1 and earlier Sonnets, 2,048 Haiku 3/3.5, 4,096
  Opus 4.5/4.6 and Haiku 4.5) is "processed without caching", no error; each breakpoint
  also finds hits "at previous content block boundaries" (about 20 blocks back); and "a
  cache entry only becomes available after the first response begins" (platform.claude.com
  /docs/en/build-with-claude/prompt-caching; anthropic 2.17.0
  ``types/cache_control_ephemeral_param.py``: ttl "5m" by default, or "1h"). So where a
  request shares a prefix with others of its job (``ChatRequest.shared_parts`` > 0,
  judgebias.models.prefix), two of the four breakpoints are set: one on the user part that
  ends the shared prefix (the ``shared_parts``-th: it caches the system prompt and those
  parts together, which the requests after it read at a tenth of the price), and one on the
  system prompt, sent then as one text block, as the API takes it (the job's requests all
  share it: one whose shared parts differ still reads the system prompt where it is long
  enough to be cached; below the minimum the marker costs nothing). With ``shared_parts``
  0 nothing is marked and the body is what it was before markers existed: no write is paid
  for a prefix no other request reads. The markers are no part of the journal key (the
  question is the same; judgebias.models.journal keys the request, not the body).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from judgebias.models.backends import LEGACY_ANTHROPIC_API
from judgebias.models.base import CACHE_WRITE_TOKENS, CACHED_TOKENS, ChatRequest, ChatResponse
from judgebias.models.wire import image_mime_type

if TYPE_CHECKING:
    from anthropic.types import Message

    from judgebias.models.panel import PanelModel

PROTOCOL_VERSION = "anthropic-messages-1"  # part of every journal key (journal_version)
FINISH = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length"}


def journal_version(model: PanelModel) -> str:
    """Claude's journal version (the registry's ``version``): the protocol, and what else
    changes its answers (the thinking asked for, the older API version)."""
    parts = [PROTOCOL_VERSION]
    thinking = model.fields.get("thinking")
    if thinking is not None:
        kind = thinking.get("type", "enabled")
        parts.append(f"thinking-{kind}" + (f"-{thinking['budget_tokens']}"
                                           if kind == "enabled" else ""))
    if model.fields.get("anthropic_version") == LEGACY_ANTHROPIC_API:
        parts.append(f"api-{LEGACY_ANTHROPIC_API}")
    return "+".join(parts)


EPHEMERAL: Final = {"type": "ephemeral"}  # a cache breakpoint, 5-minute TTL (docstring)


def content_blocks(request: ChatRequest) -> list[dict[str, Any]]:
    """The user message's content: the request's parts in order, images as base64; the
    part that ends the prefix the request shares (``shared_parts``) carries a cache
    breakpoint (module docstring, *Cache markers*)."""
    blocks: list[dict[str, Any]] = [
        {"type": "text", "text": part} if isinstance(part, str) else
        {"type": "image", "source": {"type": "base64", "media_type": image_mime_type(part),
                                     "data": base64.b64encode(part).decode("ascii")}}
        for part in request.parts()]
    if request.shared_parts > 0:
        blocks[min(request.shared_parts, len(blocks)) - 1]["cache_control"] = dict(EPHEMERAL)
    return blocks


def thinking_param(thinking: Mapping[str, Any]) -> dict[str, Any]:
    """The API's ``thinking`` object of a panel entry's ``thinking`` block (its type
    defaults to ``enabled`` where a budget is given)."""
    kind = thinking.get("type", "enabled")
    return ({"type": kind, "budget_tokens": thinking["budget_tokens"]} if kind == "enabled"
            else {"type": kind})


def message_params(request: ChatRequest, thinking: Mapping[str, Any] | None = None,
                   api_version: str | None = None) -> dict[str, Any]:
    """The Messages API body asking `request` (module docstring): the online call's
    arguments, and each Message Batch request's ``params``."""
    params: dict[str, Any] = {
        "model": request.model, "max_tokens": request.sampling.max_tokens,
        "messages": [{"role": "user", "content": content_blocks(request)}]}
    if request.system:
        params["system"] = request.system if request.shared_parts <= 0 else [
            {"type": "text", "text": request.system, "cache_control": dict(EPHEMERAL)}]
    if thinking is not None:
        params["thinking"] = thinking_param(thinking)
    if api_version == LEGACY_ANTHROPIC_API:  # 1.0, the API's default, is never sent
        for name in ("temperature", "top_p"):
            value = getattr(request.sampling, name)
            if value != 1.0:
                params[name] = value
    return params


def usage_counts(usage: Any) -> dict[str, int]:
    """A message's usage as journaled (module docstring)."""
    counts = {k: v for k, v in usage.model_dump().items()
              if isinstance(v, int) and not isinstance(v, bool)}
    details = getattr(usage, "output_tokens_details", None)
    if details is not None:
        counts["thinking_tokens"] = details.thinking_tokens
    prompt = sum(counts.get(k, 0) for k in ("input_tokens", "cache_creation_input_tokens",
                                            "cache_read_input_tokens"))
    counts.update(prompt_tokens=prompt, completion_tokens=usage.output_tokens,
                  total_tokens=prompt + usage.output_tokens)
    if usage.cache_read_input_tokens is not None:
        counts[CACHED_TOKENS] = usage.cache_read_input_tokens
    if usage.cache_creation_input_tokens is not None:
        counts[CACHE_WRITE_TOKENS] = usage.cache_creation_input_tokens
    return counts


def to_response(message: Message) -> ChatResponse:
    """A Message as an answer: its text blocks joined (thinking left out of the text and
    kept, with the whole message, in `raw`); a refusal is the provider's answer, not a
    failed call."""
    text = "".join(block.text for block in message.content if block.type == "text")
    usage = usage_counts(message.usage)
    raw = message.model_dump_json(exclude_none=True)
    if message.stop_reason == "refusal":
        return ChatResponse(text=text, usage=usage, finish_reason="refusal", status="refused",
                            error="Claude declined to answer (stop_reason refusal)", raw=raw)
    finish = FINISH.get(message.stop_reason or "end_turn", message.stop_reason or "stop")
    return ChatResponse(text=text, usage=usage, finish_reason=finish, raw=raw)
