"""The `anthropic` backend: Claude through the official ``anthropic`` SDK's Messages API.

Checked against anthropic 2.17.0 (and its floor, 2.0.0, the first release of API version
2026-10-21, which it sends as ``anthropic-version``; it authenticates with
``Authorization: Bearer``):

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
  input tokens, cached ones included; ``completion_tokens``; ``total_tokens``).
* Errors (``APIStatusError.status_code``; the body ``{"type": "error", "error": {"type",
  "message"}}``): 400, 401, 402 (billing), 403, 404, 413 stop the job at once; 429 (with
  ``retry-after``), 500, 529 (``overloaded_error``) and other 5xx are retried by
  judgebias.models.api, the SDK's own retries being off (max_retries=0).

The request (:func:`message_params`) is built once here for the online call and for each
request of a Message Batch (judgebias.models.anthropic_batch), so both ask the same, and a
batch's succeeded message is read back as the online one (:func:`to_response`).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import anthropic
from anthropic.types import Message

from judgebias.models.api import (
    PERMANENT_STATUS,
    ApiBackend,
    PermanentError,
    TransientError,
    image_mime_type,
    parse_retry_after,
)
from judgebias.models.base import ChatRequest, ChatResponse

if TYPE_CHECKING:
    from judgebias.models.anthropic_batch import AnthropicBatches
    from judgebias.models.journal import Journal
    from judgebias.models.panel import PanelModel

LEGACY_API = "2023-06-01"  # the API version before 2026-10-21: it takes sampling parameters
FINISH = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length"}
BILLING = 402  # billing_error: no retry pays the bill


def content_blocks(request: ChatRequest) -> list[dict[str, Any]]:
    """The user message's content: the request's parts in order, images as base64."""
    return [{"type": "text", "text": part} if isinstance(part, str) else
            {"type": "image", "source": {"type": "base64", "media_type": image_mime_type(part),
                                         "data": base64.b64encode(part).decode("ascii")}}
            for part in request.parts()]


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
        params["system"] = request.system
    if thinking is not None:
        params["thinking"] = thinking_param(thinking)
    if api_version == LEGACY_API:  # 1.0 is the API's default: never sent (docstring)
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


def error_reason(exc: anthropic.APIStatusError) -> str:
    """The provider's words: the body's ``error.type: error.message``."""
    body = exc.body if isinstance(exc.body, dict) else {}
    error = body.get("error")
    kind, message = (error.get("type"), error.get("message")) if isinstance(error, dict) \
        else (None, None)
    return f"{kind}: {message}" if kind and message else str(message or exc.message)


class AnthropicBackend(ApiBackend):
    name = "anthropic"

    def __init__(self, *args: Any, thinking: Mapping[str, Any] | None = None,
                 api_version: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.thinking, self.api_version = thinking, api_version
        self._resume: tuple[Journal, Mapping[str, ChatRequest]] | None = None

    def _options(self, max_retries: int) -> dict[str, Any]:
        """The SDK client's options, online and batch: endpoint, key, timeout, retries,
        and the API version where the panel entry names one."""
        headers = {"anthropic-version": self.api_version} if self.api_version else None
        return {"api_key": self._api_key, "base_url": self._base_url,
                "max_retries": max_retries, "timeout": self.limits.timeout_s,
                "default_headers": headers}

    async def _open(self) -> anthropic.AsyncAnthropic:
        return anthropic.AsyncAnthropic(**self._options(0))

    async def _call(self, client: anthropic.AsyncAnthropic, request: ChatRequest
                    ) -> ChatResponse:
        params = message_params(request, self.thinking, self.api_version)
        sampling = {k: params.pop(k) for k in ("temperature", "top_p") if k in params}
        message = await client.messages.create(**params, extra_body=sampling or None)
        return to_response(message)

    def complete_batched(self, pending: Mapping[str, ChatRequest], journal: Journal,
                         on_response: Callable[[str, ChatResponse], None],
                         reserve: Callable[[int], object]) -> None:
        """As every backend's, with the journal and the requests at hand for the batch
        provider: a Message Batch takes its requests inline, so after a stop they are
        rebuilt from them (judgebias.models.anthropic_batch)."""
        self._resume = (journal, pending)
        try:
            super().complete_batched(pending, journal, on_response, reserve)
        finally:
            self._resume = None

    def _batch_provider(self) -> AnthropicBatches:
        from judgebias.models.anthropic_batch import AnthropicBatches

        assert self._resume is not None, "batch mode runs through complete_batched"
        journal, pending = self._resume
        # the SDK retries the reads (idempotent); a create is never sent twice blindly
        client = anthropic.Anthropic(**self._options(self.limits.max_retries))
        return AnthropicBatches(client, journal, pending, self.limits, thinking=self.thinking,
                                api_version=self.api_version)

    def _classify(self, exc: BaseException) -> TransientError | PermanentError | None:
        if isinstance(exc, anthropic.APITimeoutError):
            return TransientError("timeout", str(exc))
        if isinstance(exc, anthropic.APIConnectionError):
            return TransientError("connection", str(exc.__cause__ or exc))
        if isinstance(exc, anthropic.APIStatusError):
            status = exc.status_code
            if status in PERMANENT_STATUS or status == BILLING:
                return self.refused("Anthropic", status, error_reason(exc))
            return TransientError(str(status), error_reason(exc),
                                  parse_retry_after(exc.response.headers.get("retry-after")))
        if isinstance(exc, (json.JSONDecodeError, anthropic.APIResponseValidationError,
                            UnicodeDecodeError)):
            return TransientError("garbled", str(exc)[:200])
        return None


def build(config: Mapping[str, Any], model: PanelModel, role: str) -> AnthropicBackend:
    """The registry's builder: an HTTP backend with its client settings and key
    (judgebias.models.registry), and the panel entry's thinking and API version."""
    from judgebias.models.registry import api_client

    backend = api_client(AnthropicBackend, config, model)
    assert isinstance(backend, AnthropicBackend)
    backend.thinking = model.fields.get("thinking")
    backend.api_version = model.fields.get("anthropic_version")
    return backend
