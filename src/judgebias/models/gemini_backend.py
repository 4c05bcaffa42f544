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

What a request asks (its thinking config included), the REST body a batch line carries
and how an answer is read back are the wire encoding's (judgebias.models.gemini_wire),
shared with the batch mode (judgebias.models.gemini_batch), so both ask the same.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import logging

from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from judgebias.models.api import (
    PERMANENT_STATUS,
    ApiBackend,
    PermanentError,
    TransientError,
    parse_retry_after,
)
from judgebias.models.base import ChatRequest, ChatResponse
from judgebias.models.gemini_batch import GeminiBatches
from judgebias.models.gemini_wire import (
    PROTOCOL_VERSION,
    generation,
    refuses_logprobs,
    to_response,
)
from judgebias.models.limits import ApiLimits
from judgebias.models.reasoning import Thinking

log = logging.getLogger(__name__)


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
