"""Running a job's requests through a backend, journaled (never lose, never pay twice)."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass

from judgebias.models.base import Backend, ChatRequest, ChatResponse
from judgebias.models.journal import Journal, request_key

log = logging.getLogger(__name__)


@dataclass
class RunStats:
    """What a job did: how many answers came from the journal and how many were paid for."""

    total: int = 0
    journaled: int = 0
    called: int = 0
    failed: int = 0


def _empty_as_failure(response: ChatResponse) -> ChatResponse:
    if response.ok and not response.text.strip():
        return ChatResponse(text="", status="empty", error="the model returned no text")
    return response


def run_requests(backend: Backend, requests: Sequence[ChatRequest], journal: Journal, *,
                 backend_version: str = "", batch_size: int = 64,
                 progress_every: float = 10.0) -> tuple[list[ChatResponse], RunStats]:
    """Answer `requests` in order, taking completed answers from the journal.

    New answers are journaled batch by batch as they return, so a killed job loses at
    most the batch in flight. Duplicate requests within a job are called once.
    """
    keys = [request_key(r, backend.name, backend_version) for r in requests]
    answers: dict[str, ChatResponse] = journal.lookup(keys)
    stats = RunStats(total=len(requests), journaled=sum(k in answers for k in keys))
    pending = list({k: r for k, r in zip(keys, requests, strict=True) if k not in answers}.items())
    started = last_report = time.monotonic()
    for start in range(0, len(pending), batch_size):
        batch = pending[start:start + batch_size]
        responses = [_empty_as_failure(r) for r in backend.complete([r for _, r in batch])]
        journal.record([(k, r, resp) for (k, r), resp in zip(batch, responses, strict=True)])
        for (key, _), response in zip(batch, responses, strict=True):
            answers[key] = response
            stats.called += 1
            stats.failed += not response.ok
        now = time.monotonic()
        if now - last_report >= progress_every or start + batch_size >= len(pending):
            done = min(start + batch_size, len(pending))
            rate = done / max(now - started, 1e-9)
            log.info("%d/%d new calls done (%.1f/s, ETA %.0fs)", done, len(pending), rate,
                     (len(pending) - done) / max(rate, 1e-9))
            last_report = now
    return [answers[k] for k in keys], stats
