"""Anthropic's Messages API wire: ``POST /v1/messages`` bodies in, ``Message`` JSON and
Anthropic's error bodies out, as the ``anthropic`` SDK speaks them (checked against
anthropic 2.17.0: ``resources/messages``, ``types/message.py``, ``types/usage.py``,
``_exceptions.py``).

Request -> :class:`ChatRequest`: ``prompt`` is the user messages' text blocks in order
(turns joined with ``"\\n"``), ``images`` the decoded base64 ``image`` blocks in order
(each ``media_type`` must be what the bytes are, as the API checks), ``system`` the
top-level ``system`` (a string or text blocks). ``max_tokens`` is required. The
``anthropic-version`` header decides the sampling fields: ``2026-10-21`` (the SDK's)
refuses ``temperature``, ``top_p`` and ``top_k`` ("Extra inputs are not permitted");
``2023-06-01`` takes them, except that with thinking on ``temperature`` (other than 1)
and ``top_k`` are refused and ``top_p`` must be in [0.95, 1]. No seed exists: the sim
answers with seed 0 and no log-probs (Claude gives none).

Thinking (``{"type": "enabled", "budget_tokens": N}``, N >= 1024 and below
``max_tokens``; ``adaptive``; ``disabled``): the answer opens with a ``thinking`` block
(a few words about the request, and an opaque ``signature``), then the ``text`` block.
Thinking counts toward ``max_tokens`` (the sim answers within what is left) and is
billed as output: ``usage.output_tokens`` includes it, ``usage.output_tokens_details.
thinking_tokens`` counts it.

Prompt caching: a block (system, content, or top-level) may carry ``cache_control``;
what the marked prefixes read from and wrote to serve-sim's cache
(serve_sim.prefix_cache) is reported in ``cache_read_input_tokens`` and
``cache_creation_input_tokens``, and left out of ``input_tokens``, as Anthropic reports
them.

Errors: ``{"type": "error", "error": {"type", "message"}, "request_id"}``; an outage
(``down_models``) is Anthropic's ``529 overloaded_error``.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping
from typing import Any

from judgebias.devtools.serve_sim.errors import BadRequest
from judgebias.devtools.serve_sim.wire import b64decode, integer, one_turn, request_id, sampling
from judgebias.models.base import ChatRequest, ChatResponse
from judgebias.models.wire import image_mime_type

CURRENT, LEGACY = "2026-10-21", "2023-06-01"
VERSIONS = (CURRENT, LEGACY)
SAMPLING_FIELDS = ("temperature", "top_p", "top_k")
KNOWN = frozenset({"model", "max_tokens", "messages", "system", "thinking", "metadata",
                   "stop_sequences", "service_tier", "stream", "cache_control"})
OVERLOADED = 529
# The messages of the errors serve-sim makes up (faults, quota, outage, a wrong key).
MESSAGES = {
    429: "Number of requests has exceeded your rate limit (simulated by serve-sim).",
    500: "Internal server error (simulated by serve-sim).",
    401: "invalid x-api-key",
    503: "Overloaded (an outage simulated by serve-sim)",
    OVERLOADED: "Overloaded (an outage simulated by serve-sim)",
}
ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error",
               402: "billing_error", 403: "permission_error", 404: "not_found_error",
               413: "request_too_large", 429: "rate_limit_error", 500: "api_error",
               503: "overloaded_error", 504: "gateway_timeout_error",
               OVERLOADED: "overloaded_error"}


def anthropic_error(status: int, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": ERROR_TYPES.get(status, "api_error"),
                                       "message": message}, "request_id": None}


def parse_anthropic(body: Any, version: str | None
                    ) -> tuple[ChatRequest, Mapping[str, Any] | None]:
    """A Messages body (sent with `version`) -> (the request the sim answers, thinking)."""
    if version not in VERSIONS:
        raise BadRequest(f"anthropic-version: {version!r} is not a known API version "
                         f"({', '.join(VERSIONS)})" if version else
                         "anthropic-version: header is required")
    if not isinstance(body, dict):
        raise BadRequest("request body must be a JSON object")
    allowed = KNOWN | (set(SAMPLING_FIELDS) if version == LEGACY else set())
    for name in body:
        if name not in allowed:
            raise BadRequest(f"{name}: Extra inputs are not permitted")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise BadRequest("model: Field required")
    if body.get("stream"):
        raise BadRequest("stream: not supported by serve-sim")
    if body.get("max_tokens") is None:
        raise BadRequest("max_tokens: Field required")
    max_tokens = integer(body.get("max_tokens"), "max_tokens", 1, 1, 10**7)
    thinking = _thinking(body.get("thinking"), max_tokens)
    _check_sampling(body, thinking)
    spent = thinking_tokens(thinking, _user_parts(body)) if thinking else 0
    return ChatRequest.from_parts(
        model, _user_parts(body), system=_system(body.get("system")),
        sampling=sampling(body.get("temperature"), body.get("top_p"),
                          max(1, max_tokens - spent), None, 0)), thinking


def _thinking(value: Any, max_tokens: int) -> Mapping[str, Any] | None:
    if value is None:
        return None
    kind = value.get("type") if isinstance(value, dict) else None
    if kind not in ("enabled", "adaptive", "disabled"):
        raise BadRequest("thinking.type: Input should be 'enabled', 'adaptive' or 'disabled'")
    if kind == "enabled":
        budget = integer(value.get("budget_tokens"), "thinking.budget_tokens", 0, 1024,
                         10**7)
        if budget >= max_tokens:
            raise BadRequest(f"max_tokens: must be greater than thinking.budget_tokens "
                             f"({max_tokens} <= {budget})")
    return None if kind == "disabled" else value


def _check_sampling(body: Mapping[str, Any], thinking: Mapping[str, Any] | None) -> None:
    """The 2023-06-01 API's sampling rules (2026-10-21 took none: parse_anthropic)."""
    temperature, top_p = body.get("temperature"), body.get("top_p")
    if temperature is not None and not (isinstance(temperature, int | float)
                                        and 0 <= temperature <= 1):
        raise BadRequest("temperature: must be in [0, 1]")
    if thinking is None:
        return
    if temperature not in (None, 1, 1.0) or body.get("top_k") is not None:
        raise BadRequest("temperature may only be set to 1 and top_k not at all when "
                         "thinking is enabled")
    if top_p is not None and not (isinstance(top_p, int | float) and 0.95 <= top_p <= 1):
        raise BadRequest("top_p must be between 0.95 and 1 when thinking is enabled")


def _system(value: Any) -> str:
    if value is None or isinstance(value, str):
        return value or ""
    if isinstance(value, list) and all(isinstance(b, dict) and b.get("type") == "text"
                                       and isinstance(b.get("text"), str) for b in value):
        return "\n".join(b["text"] for b in value)
    raise BadRequest("system: a string or an array of text blocks expected")


def _user_parts(body: Mapping[str, Any]) -> list[str | bytes]:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise BadRequest("messages: a non-empty array is required")
    turns: list[list[str | bytes]] = []
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") != "user":
            raise BadRequest(f"messages.{i}: serve-sim answers user messages only")
        content = message.get("content")
        if isinstance(content, str):
            turns.append([content])
            continue
        if not isinstance(content, list) or not content:
            raise BadRequest(f"messages.{i}.content: a string or a non-empty array")
        turns.append([_block(block, f"messages.{i}.content.{j}")
                      for j, block in enumerate(content)])
    return one_turn(turns)


def _block(block: Any, where: str) -> str | bytes:
    kind = block.get("type") if isinstance(block, dict) else None
    if kind == "text" and isinstance(block.get("text"), str):
        return str(block["text"])
    source = block.get("source") if kind == "image" else None
    if not isinstance(source, dict) or source.get("type") != "base64":
        raise BadRequest(f"{where}: a text block or a base64 image block expected")
    data = b64decode(source.get("data"), f"{where}.source.data")
    try:
        actual = image_mime_type(data)
    except ValueError as exc:
        raise BadRequest(f"{where}.source: {exc}") from exc
    if source.get("media_type") != actual:
        raise BadRequest(f"{where}.source: Image does not match the provided media type "
                         f"{source.get('media_type')!r} ({actual})")
    return data


def user_parts(body: Mapping[str, Any]) -> list[str | bytes]:
    """The user messages' parts in order, turns joined as the request's prompt joins them
    (each a block of serve_sim.prefix_cache)."""
    return _user_parts(body)


def cache_marks(body: Mapping[str, Any]) -> list[int]:
    """The blocks that carry ``cache_control``, as indices into
    :func:`judgebias.devtools.serve_sim.prefix_cache.prompt_of`'s blocks of
    (``system``, :func:`user_parts`): 0 the system prompt (a block of it marked), then each
    user part in order (turns after the first preceded by their joining newline, as
    ``one_turn`` joins them); a top-level ``cache_control`` marks the last part, as the
    API's automatic caching does."""
    marks: list[int] = []
    system = body.get("system")
    if isinstance(system, list) and any(isinstance(b, dict) and b.get("cache_control")
                                        for b in system):
        marks.append(0)
    index = 0
    for i, message in enumerate(body.get("messages") or []):
        content = message.get("content") if isinstance(message, dict) else None
        blocks = content if isinstance(content, list) else [content]
        index += 1 if i else 0  # the newline joining this turn to the one before
        for block in blocks:
            index += 1
            if isinstance(block, dict) and block.get("cache_control"):
                marks.append(index)
    if body.get("cache_control") and index:
        marks.append(index)
    return marks


def _thought(parts: list[str | bytes]) -> str:
    images = sum(isinstance(p, bytes) for p in parts)
    words = sum(len(p.split()) for p in parts if isinstance(p, str))
    return (f"The request holds {images} image(s) and {words} words of instructions. "
            "I look at each image before I answer as asked.")


def thinking_tokens(thinking: Mapping[str, Any], parts: list[str | bytes]) -> int:
    """The tokens the sim spends thinking: its thought's words and the block's two
    delimiters, within the budget."""
    spent = len(_thought(parts).split()) + 2
    budget = thinking.get("budget_tokens")
    return min(spent, budget) if isinstance(budget, int) else spent


def anthropic_message(request: ChatRequest, answer: ChatResponse,
                      thinking: Mapping[str, Any] | None, cache: tuple[int, int] = (0, 0)
                      ) -> dict[str, Any]:
    """The ``Message`` object of a successful answer (module docstring); `cache` is what
    the prompt read from and wrote to the cache (serve_sim.prefix_cache), which
    ``input_tokens`` leaves out, as Anthropic counts them."""
    read, write = cache
    content: list[dict[str, Any]] = []
    spent = 0
    if thinking is not None:
        thought = _thought(request.parts())
        spent = thinking_tokens(thinking, request.parts())
        signature = hashlib.sha256(f"{request.model}\n{thought}".encode()).digest()
        content.append({"type": "thinking", "thinking": thought,
                        "signature": base64.b64encode(signature).decode("ascii")})
    content.append({"type": "text", "text": answer.text, "citations": None})
    output = int(answer.usage.get("completion_tokens", 0)) + spent
    return {
        "id": f"msg_{request_id(request)}", "type": "message", "role": "assistant",
        "model": request.model, "content": content,
        "stop_reason": "max_tokens" if answer.finish_reason == "length" else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": int(answer.usage.get("prompt_tokens", 0)) - read - write,
                  "output_tokens": output, "cache_creation_input_tokens": write,
                  "cache_read_input_tokens": read, "service_tier": "standard",
                  "output_tokens_details": {"thinking_tokens": spent}},
    }
