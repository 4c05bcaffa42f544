"""What every HTTP API backend shares: concurrency, rate limits, retries, fault handling.

A job sends its requests concurrently (at most `concurrency` in flight, at most
`requests_per_minute` started per minute) and journals each answer as it arrives.

* Transient faults -- 429, 5xx, timeouts, dropped connections, garbled bodies -- are
  retried with exponential backoff and jitter (delay_k = min(max, initial * 2^k), drawn
  uniformly from [delay_k / 2, delay_k]); a `Retry-After` header is honoured as given.
  After `max_retries` the request is recorded as failed (never as an answer) and the job
  goes on; the retry counts by reason are logged.
* A 429 *with* `Retry-After` is the provider's quota pacing us, not a fault: the
  :class:`RateLimiter` holds every start of the job until then and slows its pace (see
  there), and the request is retried without spending `max_retries`, up to
  `max_rate_limited` such answers (a quota that never recovers still ends the job's
  wait). So a 429 storm costs time, never a request.
* Permanent errors -- 400, 401, 403, 404, 422, a model that does not exist -- stop the
  job at once with the model, its base_url and the provider's reason, instead of a retry
  storm. What had completed is already journaled.
* A dead endpoint stops the job too (issue 41). No retry can tell a wrong `base_url`, or
  a server that was never started, from one that will come back; a retry storm only
  postpones the verdict (with the default limits, 8 retries of 1-60 s back-off: 138 s
  per request, some 85 min for a job of 294 requests 8 at a time, every job of the
  model alike). So the rule is: a connection refused, a host name that does not
  resolve, a TLS handshake refused or a URL no transport can use, *before the endpoint
  has answered this backend once* (any HTTP answer, even an error status, a torn body or
  a dropped connection: something listens there), stops the job at once with one line
  naming the model, its base_url and the operating system's words. The same failure
  *after* such an answer is an outage of a server that was there (restarting,
  overloaded): retried with back-off, counted as ``unreachable``. Timeouts stay
  transient either way (a cold or busy server may be slow to accept).
* No message of a stopped job holds the API key: the base_url is shown without user
  info or query (where a key may sit), and the key is masked in the provider's words
  (Gemini echoes it in some 403s).
* The batch path (:meth:`ApiBackend.complete_batched`) retries nothing itself (a stopped
  job resumes its batches on the rerun); what it raises is classified the same way, so a
  dead endpoint or a permanent error ends it with the same line, not a traceback.

How the SDKs surface these faults (checked against openai 3.63.0, google-genai 3.6.1
over aiohttp 3.14.5 (async) and httpx2 2.17.0 (sync), the versions pinned here):
openai raises ``APIConnectionError`` whose ``__cause__`` is ``httpx2.ConnectError``
(refused: ``ConnectionRefusedError`` below it; unresolvable: ``socket.gaierror``; a
scheme-less URL: ``httpx2.UnsupportedProtocol``), ``APITimeoutError`` (a subclass) for
timeouts, and ``AuthenticationError`` 401, ``PermissionDeniedError`` 403,
``NotFoundError`` 404 (all ``APIStatusError``, the body's ``error.message`` the
provider's words). google-genai raises ``errors.ClientError``/``ServerError`` with
``code`` and ``message`` for HTTP errors, and lets the transport's own errors through
unwrapped: ``aiohttp.ClientConnectorError`` (``ClientConnectorDNSError`` for a name)
async, ``httpx2.ConnectError`` sync. :func:`unreachable` reads the whole exception
chain (``__cause__``, else ``__context__``), so the SDKs' wrappers do not hide the
cause.
"""

from __future__ import annotations

import asyncio
import logging
import random
import socket
import sys
import time
from collections import Counter, deque
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from judgebias.models.base import ChatRequest, ChatResponse, OnResponse
from judgebias.models.batch import BatchProvider, answer_in_batches
from judgebias.models.limits import ApiLimits

if TYPE_CHECKING:
    from judgebias.models.journal import Journal

log = logging.getLogger(__name__)

PERMANENT_STATUS = frozenset({400, 401, 403, 404, 405, 413, 422})


class TransientError(Exception):
    """A fault worth retrying; `reason` is counted, `retry_after` honoured."""

    def __init__(self, reason: str, detail: str = "", retry_after: float | None = None):
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason, self.retry_after = reason, retry_after


class PermanentError(RuntimeError):
    """A fault no retry can fix (bad request, bad key, unknown model, an endpoint that
    never answered): stop the job."""


# Exceptions of a request that reached no server, as (module, class): looked up only in
# modules already imported (an exception of a transport never loaded cannot occur), so
# importing this module -- every `judgebias` command does -- loads no HTTP stack.
_CONNECT_FAILURES = (("httpx", "ConnectError"), ("httpx2", "ConnectError"),
                     ("aiohttp", "ClientConnectorError"))
_UNUSABLE_URLS = (("httpx", "UnsupportedProtocol"), ("httpx2", "UnsupportedProtocol"),
                  ("aiohttp", "InvalidURL"), ("aiohttp", "NonHttpUrlClientError"))


def _loaded(names: Sequence[tuple[str, str]]) -> tuple[type[BaseException], ...]:
    return tuple(getattr(sys.modules[module], attr) for module, attr in names
                 if hasattr(sys.modules.get(module), attr))


def _chain(exc: BaseException) -> list[BaseException]:
    """`exc` and its causes, outermost first: ``__cause__``, else ``__context__`` even
    where a traceback hides it (httpcore re-raises a connect failure ``from None``)."""
    links: list[BaseException] = []
    link: BaseException | None = exc
    while link is not None and all(link is not seen for seen in links):
        links.append(link)
        link = link.__cause__ or link.__context__
    return links


def unreachable(exc: BaseException) -> str | None:
    """What kept `exc`'s request from reaching any server (a refused connection, a name
    that does not resolve, a failed connect or TLS handshake, an unusable URL) with the
    operating system's or transport's words; None if the request may have reached one
    (an HTTP error, a timeout, a connection dropped mid-request)."""
    chain = _chain(exc)
    root = chain[-1]
    words = str(root) or type(root).__name__
    kinds = ((_loaded(_UNUSABLE_URLS), "the URL cannot be used"),
             ((socket.gaierror,), "the host name does not resolve"),
             ((ConnectionRefusedError,), "connection refused"),
             (_loaded(_CONNECT_FAILURES), "cannot connect"))
    for types, what in kinds:
        if any(isinstance(link, types) for link in chain):
            return f"{what} ({words})"
    return None


def redact_url(url: str) -> str:
    """`url` without user info, query and fragment: the parts that may carry a key."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


class RateLimiter:
    """Paces request starts: a fixed or learned interval, and a provider's Retry-After.

    * `requests_per_minute` (params) spaces starts at least 60 / rpm seconds apart.
    * A 429 with Retry-After (:meth:`throttle`) means the provider's quota is empty for
      the whole job, so no request starts before it expires -- not only the refused one,
      or the other requests in flight would each pay a refusal at the same wall.
    * It also means our pace is too fast (no rpm configured, or one above the provider's
      real limit). While we are refused, the requests the provider does admit arrive at
      its own pace, so the new interval is the mean spacing of the starts of the last
      `window` answered requests (too few of them yet, or a spacing no slower than
      ours: the interval grows x `increase`). Refusals of requests scheduled before the
      last throttle were caused by the old pace and change nothing. Retry-After alone
      cannot give the pace: a token-bucket provider sets it to the time until its next
      token, anywhere in (0, its interval].
    * Each answer shrinks the interval x `decrease`, never below the configured one, so
      the pace creeps back up to the quota (and to a provider that raised it); the
      provider's burst allowance absorbs the creep's overshoot until the next 429.
      Measure-then-probe, as TCP BBR does with a bottleneck's rate.
    """

    window = 16
    increase = 1.5
    decrease = 0.998

    def __init__(self, requests_per_minute: float | None):
        self.floor = 60.0 / requests_per_minute if requests_per_minute else 0.0
        self.interval = self.floor
        self._next = 0.0
        self._throttled_at = -1.0
        self._answered: deque[float] = deque(maxlen=self.window)
        self._lock = asyncio.Lock()

    async def wait(self) -> float:
        """Sleep until this request may start; returns its start time (monotonic)."""
        async with self._lock:
            now = time.monotonic()
            start = max(now, self._next)
            self._next = start + self.interval
        if start > now:
            await asyncio.sleep(start - now)
        return start

    def throttle(self, started: float, retry_after: float) -> None:
        """A request started at `started` was refused with this Retry-After (seconds)."""
        self._next = max(self._next, time.monotonic() + retry_after)
        if started < self._throttled_at:
            return  # scheduled at the old pace
        self._throttled_at = self._next  # every start scheduled so far had the old pace
        spacing = 0.0
        if len(self._answered) == self.window:
            spacing = (max(self._answered) - min(self._answered)) / (self.window - 1)
        if spacing <= self.interval:
            spacing = max(self.interval * self.increase, retry_after)
        self.interval = max(self.floor, spacing)

    def succeeded(self, started: float) -> None:
        """A request started at `started` was answered."""
        self._answered.append(started)
        if self.interval > self.floor:
            self.interval = max(self.floor, self.interval * self.decrease)


def parse_retry_after(value: str | None, milliseconds: str | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` (OpenAI's precise form) if present, else
    ``Retry-After`` (delta-seconds, fractional accepted); None if absent or a date."""
    for text, scale in ((milliseconds, 1000.0), (value, 1.0)):
        try:
            if text is not None:
                return max(float(text) / scale, 0.0)
        except ValueError:
            continue
    return None


class ApiBackend:
    """Base of the HTTP backends: subclasses implement `_open`, `_call` and `_classify`."""

    name = "api"
    batch = False  # panel.<m>.batch: answer through the provider's batch API (build_backend)

    def __init__(self, model_id: str, label: str, limits: ApiLimits, *,
                 base_url: str | None, api_key: str, seed: int = 0):
        self.model_id, self.label, self.limits = model_id, label, limits
        self._base_url, self._api_key = base_url, api_key
        self.retry_counts: Counter[str] = Counter()
        self._jitter = random.Random(seed)
        self._reached = False  # the endpoint has answered this backend (module docstring)

    async def _open(self) -> Any:
        """Create the provider client inside the running event loop."""
        raise NotImplementedError

    async def _call(self, client: Any, request: ChatRequest) -> ChatResponse:
        """One HTTP call; provider errors propagate as the SDK raises them."""
        raise NotImplementedError

    def _classify(self, exc: BaseException) -> TransientError | PermanentError | None:
        """Map a provider exception to transient/permanent; None re-raises it as a bug."""
        raise NotImplementedError

    def _batch_provider(self) -> BatchProvider:
        """The provider's batch API over a synchronous SDK client (batch mode only)."""
        raise NotImplementedError(f"{self.name}: no batch API")

    def complete(self, requests: Sequence[ChatRequest],
                 on_response: OnResponse | None = None) -> list[ChatResponse]:
        return asyncio.run(self._complete(list(requests), on_response))

    def complete_batched(self, pending: Mapping[str, ChatRequest], journal: Journal,
                         on_response: Callable[[str, ChatResponse], None],
                         reserve: Callable[[int], object]) -> None:
        """Answer `pending` (journal key -> request) through the provider's batch API,
        journaled batch by batch (judgebias.models.batch); `on_response(key, response)`
        as each is ingested. Same keys and requests as online: the answers are the same,
        and a failure retried ``online`` goes through :meth:`complete`."""
        try:
            answer_in_batches(self._batch_provider(), self.label, self.limits,
                              lambda requests, each: self.complete(requests,
                                                                   on_response=each),
                              pending, journal, on_response, reserve)
        except PermanentError:
            raise
        except Exception as exc:  # the batch path retries nothing: it ends the job anyway
            reason = unreachable(exc)
            fault = self.cannot_reach(reason) if reason else self._classify(exc)
            if isinstance(fault, PermanentError):
                raise fault from exc
            raise

    @property
    def endpoint(self) -> str:
        """The base_url as a message may show it (:func:`redact_url`)."""
        return (redact_url(self._base_url) if self._base_url
                else f"(unset: the {self.name} SDK's default endpoint)")

    def _stop(self, message: str) -> PermanentError:
        """The error that stops the job, the API key masked wherever it was echoed (keys
        shorter than 4 characters, e.g. a local server's "x", are no secret to mask)."""
        if len(self._api_key) >= 4:
            message = message.replace(self._api_key, "***")
        return PermanentError(message)

    def refused(self, provider: str, status: int | str, reason: str) -> PermanentError:
        """The provider answered with a permanent error (`reason`: its own words)."""
        return self._stop(f"{self.label}: {provider} at {self.endpoint} refused the "
                          f"request ({status}): {reason[:500]}")

    def cannot_reach(self, reason: str) -> PermanentError:
        """The endpoint cannot be reached (`reason`: from :func:`unreachable`)."""
        return self._stop(f"{self.label}: cannot reach base_url {self.endpoint}: {reason}; "
                          "check base_url and that the server is up, then rerun "
                          "(journaled answers are kept)")

    def _fault(self, exc: BaseException) -> TransientError | PermanentError | None:
        """How the retry loop treats `exc` (module docstring); None: a bug, re-raised."""
        if isinstance(exc, TimeoutError):
            return TransientError("timeout", "no answer in time")
        reason = unreachable(exc)
        if reason is None:
            return self._classify(exc)
        return TransientError("unreachable", reason) if self._reached else \
            self.cannot_reach(reason)

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
        attempt = rate_limited = 0
        while True:
            started = await limiter.wait()
            try:
                response = await asyncio.wait_for(self._call(client, request),
                                                  timeout=self.limits.timeout_s * 2)
            except Exception as exc:  # classified below; anything unknown is re-raised
                fault = self._fault(exc)
                if fault is None:
                    raise
                if isinstance(fault, PermanentError):
                    raise fault from exc
                self._reached |= fault.reason not in ("timeout", "unreachable")
                self.retry_counts[fault.reason] += 1
                last = str(fault)
                if fault.reason == "429" and fault.retry_after is not None:
                    limiter.throttle(started, fault.retry_after)
                    rate_limited += 1
                    if rate_limited > self.limits.max_rate_limited:
                        break
                    continue  # the limiter sleeps out the Retry-After for everyone
                if attempt == self.limits.max_retries:
                    break
                delay = self._delay(attempt, fault.retry_after)
                attempt += 1
                log.debug("%s: %s; retry %d in %.2f s", self.label, fault, attempt, delay)
                await asyncio.sleep(delay)
            else:
                self._reached = True
                limiter.succeeded(started)
                return response
        return ChatResponse(text="", status="failed", finish_reason="error",
                            error=f"gave up after {attempt} retries and {rate_limited} "
                                  f"rate-limit refusals: {last}")
