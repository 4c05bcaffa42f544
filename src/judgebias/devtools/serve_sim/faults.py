"""Fault injection: which fault (if any) an HTTP request gets.

Faults are drawn per HTTP request from one seeded RNG after the authentication check, and
apply to both APIs: 429 (with ``Retry-After``), 500, a stall (sleep ``stall_s``, then
answer normally), a dropped connection (closed without any response) and a garbled 200 (a
truncated JSON body). The handler (judgebias.devtools.serve_sim.handler) acts them out.
"""

from __future__ import annotations

import random
import threading
from dataclasses import dataclass

from judgebias.devtools.serve_sim.errors import ServeSimError


@dataclass(frozen=True)
class Faults:
    """Per-request fault probabilities (each in [0, 1], summing to at most 1).

    ``retry_after_s`` is sent with every 429 (``Retry-After`` and ``retry-after-ms``);
    ``stall_s`` is how long a stalled request sleeps before answering normally.
    """

    rate_429: float = 0.0
    retry_after_s: float = 1.0
    rate_500: float = 0.0
    rate_stall: float = 0.0
    stall_s: float = 5.0
    rate_drop: float = 0.0
    rate_garbled: float = 0.0

    def __post_init__(self) -> None:
        rates = self.rates()
        for name, rate in rates.items():
            if not 0.0 <= rate <= 1.0:
                raise ServeSimError(f"serve-sim: fault rate {name} must be in [0, 1], "
                                    f"got {rate}")
        if sum(rates.values()) > 1.0 + 1e-9:
            raise ServeSimError("serve-sim: fault rates must sum to at most 1")
        if self.retry_after_s < 0 or self.stall_s < 0:
            raise ServeSimError("serve-sim: retry_after_s and stall_s must be >= 0")

    def rates(self) -> dict[str, float]:
        """Fault name (as counted in the stats) -> probability, in drawing order."""
        return {"429": self.rate_429, "500": self.rate_500, "stall": self.rate_stall,
                "drop": self.rate_drop, "garbled": self.rate_garbled}

    @property
    def any(self) -> bool:
        return any(rate > 0 for rate in self.rates().values())


class FaultDrawer:
    """Thread-safe seeded draws: one uniform number per HTTP request picks its fault."""

    def __init__(self, faults: Faults, seed: int) -> None:
        self.faults = faults
        self._rng = random.Random(seed)
        self._lock = threading.Lock()

    def draw(self) -> str | None:
        if not self.faults.any:
            return None
        with self._lock:
            u = self._rng.random()
        edge = 0.0
        for name, rate in self.faults.rates().items():
            edge += rate
            if u < edge:
                return name
        return None


HOLD_ACTIONS = ("upload", "create", "retrieve", "content")


@dataclass(frozen=True)
class BatchFaults:
    """What can go wrong with an OpenAI batch (specs/batch.md §1, §3), acted out when a
    batch completes (judgebias.devtools.serve_sim.openai_batch); the lines each fault hits
    are drawn from a generator seeded by the server's seed and the batch's id.

    * ``fail_share``: that share of the lines fail inside the batch (an error-file row
      with a top-level ``error`` ``server_error`` and no response; not answered);
    * ``expire_share``: the batch ends ``expired``: the last share of its lines (input
      order) were never answered and come back as ``batch_expired`` error rows;
    * ``missing_rows``: that many answered rows are left out of the output file (answered
      and counted, as a provider that lost them would have billed them);
    * ``duplicate_rows``: that many answered rows appear twice in the output file;
    * ``foreign_rows``: that many rows for a ``custom_id`` the batch never held;
    * ``hold``: the first request of each named action (``upload``: a file upload,
      ``create``: a batch create, ``retrieve``: a batch poll, ``content``: a file
      download) is carried out, then its reply is held back ``hold_s`` seconds: the
      moment a test kills the client (kill -9) after the provider acted and before the
      client heard of it (specs/batch.md §4).
    """

    fail_share: float = 0.0
    expire_share: float = 0.0
    missing_rows: int = 0
    duplicate_rows: int = 0
    foreign_rows: int = 0
    hold: tuple[str, ...] = ()
    hold_s: float = 60.0

    def __post_init__(self) -> None:
        for name in ("fail_share", "expire_share"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ServeSimError(f"serve-sim: batch fault {name} must be in [0, 1]")
        for name in ("missing_rows", "duplicate_rows", "foreign_rows"):
            if getattr(self, name) < 0:
                raise ServeSimError(f"serve-sim: batch fault {name} must be >= 0")
        if unknown := set(self.hold) - set(HOLD_ACTIONS):
            raise ServeSimError(f"serve-sim: batch fault hold: unknown actions "
                                f"{sorted(unknown)} (known: {', '.join(HOLD_ACTIONS)})")
