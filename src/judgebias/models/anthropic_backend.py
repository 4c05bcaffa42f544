"""The `anthropic` backend: Claude through the official ``anthropic`` SDK's Messages API.

Checked against anthropic 2.17.0 (and its floor, 2.0.0, the first release of API version
2026-10-21, which it sends as ``anthropic-version``; it authenticates with
``Authorization: Bearer``).

What a request asks (one user message, no sampling parameters by default, thinking) and
how a Message is read back (no log-probs; usage under the names judgebias reads) is the
wire encoding's (judgebias.models.anthropic_wire), which each request of a Message Batch
carries too (judgebias.models.anthropic_batch), so both ask the same. This module makes
the calls. Errors (``APIStatusError.status_code``; the body ``{"type": "error", "error":
{"type", "message"}}``): 400, 401, 402 (billing), 403, 404, 413 stop the job at once; 429
(with ``retry-after``), 500, 529 (``overloaded_error``) and other 5xx are retried by
judgebias.models.api, the SDK's own retries being off (max_retries=0).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import anthropic

from judgebias.models.anthropic_batch import AnthropicBatches
from judgebias.models.anthropic_wire import message_params, to_response
from judgebias.models.api import (
    PERMANENT_STATUS,
    ApiBackend,
    PermanentError,
    TransientError,
    parse_retry_after,
)
from judgebias.models.base import ChatRequest, ChatResponse

if TYPE_CHECKING:
    from judgebias.models.journal import Journal

BILLING = 402  # billing_error: no retry pays the bill


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

