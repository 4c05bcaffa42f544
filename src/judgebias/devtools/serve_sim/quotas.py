"""A provider's requests-per-minute quota (``--requests-per-minute``).

Generation requests are limited as providers do: a token bucket refilled at
``requests_per_minute / 60`` per second and holding at most ``burst`` tokens (default one
second's worth: OpenAI documents that its per-minute limits are enforced over shorter
intervals, so a minute's requests cannot be sent at once). A request finding the bucket
empty gets 429 with ``Retry-After`` (and ``retry-after-ms``) set to the time until the next
token, counted as ``rate_limited``.
"""

from __future__ import annotations

import threading
import time

from judgebias.devtools.serve_sim.errors import ServeSimError


class RequestQuota:
    """A provider's requests-per-minute limit: a thread-safe token bucket.

    ``take()`` spends a token and returns None, or returns the seconds until one is
    available (the request is refused and spends nothing). The bucket starts full.
    """

    def __init__(self, requests_per_minute: float, burst: float | None = None) -> None:
        if requests_per_minute <= 0:
            raise ServeSimError("serve-sim: requests_per_minute must be > 0")
        self.rate = requests_per_minute / 60.0
        self.burst = max(1.0, self.rate) if burst is None else float(burst)
        if self.burst < 1:
            raise ServeSimError("serve-sim: the quota's burst must be >= 1 request")
        self._tokens = self.burst
        self._stamp = time.monotonic()
        self._lock = threading.Lock()

    def take(self) -> float | None:
        with self._lock:
            now = time.monotonic()
            self._tokens = min(self.burst, self._tokens + (now - self._stamp) * self.rate)
            self._stamp = now
            if self._tokens >= 1.0:
                self._tokens -= 1.0
                return None
            return (1.0 - self._tokens) / self.rate
