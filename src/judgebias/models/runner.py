"""Running a job's requests through a backend, journaled (never lose, never pay twice),
and refusing to let failed calls stand in for answers (:func:`check_failures`)."""

from __future__ import annotations

import logging
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from judgebias.models.base import (
    FINISH_LENGTH,
    STATUS_FAILED,
    Backend,
    ChatRequest,
    ChatResponse,
)
from judgebias.models.batch import BatchBackend
from judgebias.models.journal import Journal, TooManyFailures, request_key
from judgebias.models.prefix import grouped

log = logging.getLogger(__name__)


@dataclass
class RunStats:
    """What a job did: answers from the journal, calls paid for, failures, retries."""

    total: int = 0
    journaled: int = 0
    called: int = 0
    failed: int = 0
    retries: dict[str, int] = field(default_factory=dict)


class Progress:
    """A progress bar with rate and ETA on a terminal, and a plain line in logs.

    Snakemake writes job logs to files, where a bar would be noise: the periodic line
    (every `every_s` seconds and at the end) is what a log reader sees.
    """

    def __init__(self, label: str, total: int, every_s: float = 10.0):
        self.label, self.total, self.every_s = label, total, every_s
        self.done = 0
        self.started = self.last_line = time.monotonic()
        self.bar = None
        if total and sys.stderr.isatty():
            from tqdm import tqdm

            self.bar = tqdm(total=total, desc=label, unit="call", file=sys.stderr)

    def update(self) -> None:
        self.done += 1
        if self.bar is not None:
            self.bar.update(1)
        now = time.monotonic()
        if now - self.last_line >= self.every_s or self.done == self.total:
            rate = self.done / max(now - self.started, 1e-9)
            eta = (self.total - self.done) / max(rate, 1e-9)
            log.info("%s: %d/%d new calls (%.1f/s, ETA %.0f s)", self.label, self.done,
                     self.total, rate, eta)
            self.last_line = now

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def check_failures(responses: Sequence[ChatResponse], max_share: float, label: str) -> int:
    """Raise TooManyFailures if more than `max_share` of `responses` failed; else return
    how many failed (accepted by the user: they stay rows with status "failed"). An answer
    the model did give -- empty, refused, truncated, unparseable -- is a result with its
    own status, never a failure.

    The message names the model, how many of how many failed, and the reasons counted.
    """
    failed = [r for r in responses if r.status == STATUS_FAILED]
    if len(failed) <= max_share * len(responses):
        return len(failed)
    reasons = Counter(r.error or "no reason given" for r in failed).most_common()
    shown = "; ".join(f"{n} x {reason[:160]}" for reason, n in reasons[:3])
    more = f"; and {len(reasons) - 3} other reasons" if len(reasons) > 3 else ""
    answered = len(responses) - len(failed)
    raise TooManyFailures(
        f"{label}: {len(failed)} of {len(responses)} calls failed ({shown}{more}); "
        f"max_failures accepts {max_share:g} of them. Nothing was written: run again to "
        f"retry the {len(failed)} failed calls (the {answered} answers are journaled and "
        "are not paid again), or accept failures with max_failures in the params file.")


def empty_as_failure(response: ChatResponse) -> ChatResponse:
    """An answer with no text is "empty", unless its output limit cut it off (hidden
    reasoning spent it all): that one stays an answer, truncated, journaled and never
    paid for again (judgebias.models.base.FINISH_LENGTH)."""
    if (response.ok and not response.text.strip()
            and response.finish_reason != FINISH_LENGTH):
        return ChatResponse(text="", status="empty", error="the model returned no text",
                            usage=response.usage)
    return response


def run_requests(backend: Backend, requests: Sequence[ChatRequest], journal: Journal, *,
                 backend_version: str = "", max_requests: int | None = None,
                 label: str = "") -> tuple[list[ChatResponse], RunStats]:
    """Answer `requests`, taking completed answers from the journal; the answers come
    back in the order of `requests`.

    Each new answer is journaled the moment the backend reports it, so a job killed at
    any point loses nothing that had completed. Duplicate requests within a job are
    called once. With `max_requests`, the new calls are reserved against the model's
    budget before the first one is made. The new calls go to the backend grouped by the
    prefix they share, each marked with how much of it it shares
    (judgebias.models.prefix.grouped; issue 45): a provider's prompt cache only helps
    requests that arrive together. Neither changes a journal key.
    """
    keys = [request_key(r, backend.name, backend_version) for r in requests]
    answers: dict[str, ChatResponse] = journal.lookup(keys)
    stats = RunStats(total=len(requests), journaled=sum(k in answers for k in keys))
    pending = grouped({k: r for k, r in zip(keys, requests, strict=True) if k not in answers})
    if pending:
        model = next(iter(pending.values())).model
        batched = isinstance(backend, BatchBackend) and backend.batch

        def reserve(n: int) -> None:
            journal.reserve_calls(model, n, max_requests)

        if not batched:  # batch mode reserves per batch sent (a resumed one is not again)
            reserve(len(pending))
        pending_keys, pending_requests = list(pending), list(pending.values())
        progress = Progress(label or model, len(pending))

        def on_response(index: int, response: ChatResponse) -> None:
            response = empty_as_failure(response)
            key = pending_keys[index]
            journal.record(key, pending_requests[index], response)
            answers[key] = response
            stats.called += 1
            stats.failed += not response.ok
            progress.update()

        try:
            if batched:  # the provider's batch API
                assert isinstance(backend, BatchBackend)
                index = {key: i for i, key in enumerate(pending_keys)}
                backend.complete_batched(
                    pending, journal, lambda key, response: on_response(index[key], response),
                    reserve)
            else:
                backend.complete(pending_requests, on_response=on_response)
        finally:
            progress.close()
            stats.retries = dict(getattr(backend, "retry_counts", {}))
        missing = [k for k in pending_keys if k not in answers]
        if missing:
            raise RuntimeError(f"backend {backend.name} returned no answer for "
                               f"{len(missing)} of {len(pending_keys)} requests")
    return [answers[k] for k in keys], stats
