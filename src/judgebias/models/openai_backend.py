"""The `openai` backend: the OpenAI API and any OpenAI-compatible server (`vllm serve`,
hosted providers, `judgebias serve-sim`) through `base_url`.

What a request asks, a reasoning model's included, and how a completion is read back is
the wire encoding's (judgebias.models.openai_wire), which a Batch API line carries too
(judgebias.models.openai_batch). This module makes the calls: the SDK's own retries are
off (max_retries=0): judgebias.models.api retries, so that it can count them, honour
Retry-After, and stop at once on permanent errors.
"""

from __future__ import annotations

import json

import openai

from judgebias.models.api import (
    PERMANENT_STATUS,
    ApiBackend,
    PermanentError,
    TransientError,
    parse_retry_after,
)
from judgebias.models.base import ChatRequest, ChatResponse
from judgebias.models.openai_batch import OpenAIBatches
from judgebias.models.openai_wire import PROTOCOL_VERSION, chat_body, to_response
from judgebias.models.reasoning import Reasoning


class OpenAIBackend(ApiBackend):
    name = "openai"
    version = PROTOCOL_VERSION
    reasoning: Reasoning | None = None  # panel.<m>.reasoning (judgebias.models.registry)

    def _batch_provider(self) -> OpenAIBatches:
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
