"""What every HTTP API backend shares: concurrency, rate limits, retries, fault handling.

A job sends its requests concurrently (at most `concurrency` in flight, at most
`requests_per_minute` started per minute) and journals each answer as it arrives.

* Transient faults -- 429, 5xx, timeouts, dropped connections, garbled bodies -- are
  retried with exponential backoff and jitter (delay_k = min(max, initial * 2^k), drawn
  uniformly from [delay_k / 2, delay_k]); a `Retry-After` header is honoured as given.
  After `max_retries` the request is recorded as failed (never as an answer) and the job
  goes on; the retry counts by reason are logged.
* Permanent errors -- 400, 401, 403, 404, 422, a model that does not exist -- stop the
  job at once with the model and the provider's reason, instead of a retry storm. What
  had completed is already journaled.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import random
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from judgebias.models.base import ChatRequest, ChatResponse, OnResponse

log = logging.getLogger(__name__)

PERMANENT_STATUS = frozenset({400, 401, 403, 404, 405, 413, 422})


@dataclass(frozen=True)
class ApiLimits:
    """Per-backend client settings from params.yaml (`backends.<name>`)."""

    concurrency: int = 8
    requests_per_minute: float | None = None
    timeout_s: float = 120.0
    max_retries: int = 8
    backoff_initial_s: float = 1.0
    backoff_max_s: float = 60.0


class TransientError(Exception):
    """A fault worth retrying; `reason` is counted, `retry_after` honoured."""

    def __init__(self, reason: str, detail: str = "", retry_after: float | None = None):
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason, self.retry_after = reason, retry_after


class PermanentError(RuntimeError):
    """A fault no retry can fix (bad request, bad key, unknown model): stop the job."""


class RateLimiter:
    """Spaces request starts at least 60 / requests_per_minute seconds apart."""

    def __init__(self, requests_per_minute: float | None):
        self.interval = 60.0 / requests_per_minute if requests_per_minute else 0.0
        self._next = 0.0
        self._lock = asyncio.Lock()

    async def wait(self) -> None:
        if not self.interval:
            return
        async with self._lock:
            now = time.monotonic()
            start = max(now, self._next)
            self._next = start + self.interval
        await asyncio.sleep(start - now)


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds form); None if absent or a date."""
    try:
        return max(float(value), 0.0) if value is not None else None
    except ValueError:
        return None


_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def image_mime_type(image: bytes) -> str:
    """The MIME type of encoded image bytes, from their magic number.

    A data URL or inline part must name the format, and a wrong name is a silent decode
    failure in some loaders; an unknown format raises ValueError so the job fails
    visibly, before the request is sent.
    """
    for magic, mime in _MAGIC:
        if image.startswith(magic):
            return mime
    if image[:4] == b"RIFF" and image[8:12] == b"WEBP":
        return "image/webp"
    raise ValueError(f"unknown image format (first bytes {image[:8]!r}); expected PNG or JPEG")


def image_data_url(image: bytes) -> str:
    """``data:<mime>;base64,<payload>``: how an image travels in an OpenAI-style message."""
    payload = base64.b64encode(image).decode("ascii")
    return f"data:{image_mime_type(image)};base64,{payload}"


class ApiBackend:
    """Base of the HTTP backends: subclasses implement `_open`, `_call` and `_classify`."""

    name = "api"

    def __init__(self, model_id: str, label: str, limits: ApiLimits, *,
                 base_url: str | None, api_key: str, seed: int = 0):
        self.model_id, self.label, self.limits = model_id, label, limits
        self._base_url, self._api_key = base_url, api_key
        self.retry_counts: Counter[str] = Counter()
        self._jitter = random.Random(seed)

    async def _open(self) -> Any:
        """Create the provider client inside the running event loop."""
        raise NotImplementedError

    async def _call(self, client: Any, request: ChatRequest) -> ChatResponse:
        """One HTTP call; provider errors propagate as the SDK raises them."""
        raise NotImplementedError

    def _classify(self, exc: BaseException) -> TransientError | PermanentError | None:
        """Map a provider exception to transient/permanent; None re-raises it as a bug."""
        raise NotImplementedError

    def complete(self, requests: Sequence[ChatRequest],
                 on_response: OnResponse | None = None) -> list[ChatResponse]:
        return asyncio.run(self._complete(list(requests), on_response))

    async def _complete(self, requests: list[ChatRequest],
                        on_response: OnResponse | None) -> list[ChatResponse]:
        results: list[ChatResponse | None] = [None] * len(requests)
        limiter = RateLimiter(self.limits.requests_per_minute)
        gate = asyncio.Semaphore(self.limits.concurrency)
        client = await self._open()

        async def one(index: int, request: ChatRequest) -> None:
            async with gate:
                response = await self._with_retries(client, limiter, request)
            results[index] = response
            if on_response is not None:
                on_response(index, response)

        tasks = [asyncio.create_task(one(i, r)) for i, r in enumerate(requests)]
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await self._close(client)
        if self.retry_counts:
            log.info("%s: retries by reason: %s", self.label, dict(self.retry_counts))
        return [r for r in results if r is not None]

    async def _close(self, client: Any) -> None:
        close = getattr(client, "close", None)
        if close is not None:
            result = close()
            if asyncio.iscoroutine(result):
                await result

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return retry_after
        cap = min(self.limits.backoff_max_s, self.limits.backoff_initial_s * 2**attempt)
        return self._jitter.uniform(cap / 2, cap)

    async def _with_retries(self, client: Any, limiter: RateLimiter,
                            request: ChatRequest) -> ChatResponse:
        last = ""
        for attempt in range(self.limits.max_retries + 1):
            await limiter.wait()
            try:
                return await asyncio.wait_for(self._call(client, request),
                                              timeout=self.limits.timeout_s * 2)
            except Exception as exc:  # classified below; anything unknown is re-raised
                fault = (TransientError("timeout", "no answer in time")
                         if isinstance(exc, TimeoutError) else self._classify(exc))
                if fault is None:
                    raise
                if isinstance(fault, PermanentError):
                    raise fault from exc
                self.retry_counts[fault.reason] += 1
                last = str(fault)
                if attempt == self.limits.max_retries:
                    break
                delay = self._delay(attempt, fault.retry_after)
                log.debug("%s: %s; retry %d in %.2f s", self.label, fault, attempt + 1, delay)
                await asyncio.sleep(delay)
        return ChatResponse(text="", status="failed", finish_reason="error",
                            error=f"gave up after {self.limits.max_retries} retries: {last}")


def permanent(label: str, provider: str, status: int | str, reason: str) -> PermanentError:
    return PermanentError(f"{label}: {provider} refused the request ({status}): {reason}")
