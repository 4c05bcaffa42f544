"""Anthropic's Message Batches API on serve-sim (issue 41 item 4), as the ``anthropic`` SDK
calls it (checked against anthropic 2.17.0, ``resources/messages/batches.py`` and
``types/messages/``):

* ``POST /v1/messages/batches`` (``{"requests": [{"custom_id", "params"}]}``: 1 to
  100,000 requests, each ``custom_id`` 1 to 64 of ``[a-zA-Z0-9_-]`` and unique),
  ``GET /v1/messages/batches[?limit=&after_id=&before_id=]`` (newest first),
  ``GET /v1/messages/batches/{id}``, ``POST .../{id}/cancel``, ``DELETE .../{id}`` (an
  ended batch) and ``GET .../{id}/results`` (JSONL; the SDK follows the batch's
  ``results_url``, which points back at this server).

A batch is ``in_progress`` (every request counted ``processing``) until ``completion_s``
seconds after its create (0: at the first read of it, a retrieve or a list); then each
request's ``params`` is answered exactly as ``POST /v1/messages`` answers it under the
create's ``anthropic-version`` (the same sim answer, bit for bit, usage tier ``batch``),
each answered request counted in the server's stats as outcome ``batch`` for its model,
and the batch is ``ended`` with one result per ``custom_id``: ``succeeded`` with the
message, or ``errored`` with the error body the online route would have sent (a request
whose params are wrong is errored, never the whole create). Results come in *reverse*
order (a client must match them by ``custom_id``). Cancelling before the end makes the
batch ``canceling``; its next read ends it with every request ``canceled``.

Faults (:class:`judgebias.devtools.serve_sim.faults.BatchFaults`): ``fail_share`` of the
requests ``errored`` with ``api_error`` (500); ``expire_share``: the last share
``expired`` (the 24-hour limit); answered results lost, repeated or for custom ids never
sent; and a reply held back after its action (``create``, ``retrieve``, and ``content``:
the results download), the moment a kill test stops the client. With a ``state_dir``
(under ``anthropic/``) every batch is kept on disk the moment it changes.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.message import Message
from pathlib import Path
from typing import Any

from judgebias.devtools.serve_sim.anthropic_wire import anthropic_error
from judgebias.devtools.serve_sim.batch_store import BatchStore, first, with_row_faults
from judgebias.devtools.serve_sim.faults import BatchFaults
from judgebias.devtools.serve_sim.wire import Reply, json_body

PREFIX = "/v1/messages/batches"
CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
MAX_REQUESTS = 100_000
DAY_S = 24 * 3600
ANSWERED = "batch"  # the stats outcome of a request answered in a batch
KINDS = ("succeeded", "errored", "canceled", "expired")


@dataclass
class _NoFile:
    """Message Batches take their requests inline: the store never holds a file."""

    id: str
    content: bytes


@dataclass
class Batch:
    id: str
    created_at: float
    version: str  # the create's anthropic-version: every request is answered under it
    requests: list[dict[str, Any]]
    status: str = "in_progress"  # in_progress | canceling | ended
    results: list[dict[str, Any]] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    ended_at: float | None = None
    cancel_initiated_at: float | None = None

    def record(self, base: str) -> dict[str, Any]:
        ended = self.status == "ended"
        counts = {kind: self.counts.get(kind, 0) for kind in KINDS}
        counts["processing"] = 0 if ended else len(self.requests)
        return {"id": self.id, "type": "message_batch", "processing_status": self.status,
                "request_counts": counts, "created_at": _stamp(self.created_at),
                "expires_at": _stamp(self.created_at + DAY_S),
                "ended_at": _stamp(self.ended_at), "archived_at": None,
                "cancel_initiated_at": _stamp(self.cancel_initiated_at),
                "results_url": f"{base}{PREFIX}/{self.id}/results" if ended else None}


def _stamp(seconds: float | None) -> str | None:
    """RFC 3339, as the API writes its times."""
    if seconds is None:
        return None
    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")


class AnthropicBatches(BatchStore[_NoFile, Batch]):
    """The batches one server holds, and their routes (module docstring).

    `answer(body, version) -> Reply` is the server's online Messages answer; `count(model)`
    records one batch-answered request in the server's stats.
    """

    def __init__(self, answer: Callable[[bytes, str | None], Reply],
                 count: Callable[[str | None], None], completion_s: float = 0.0,
                 faults: BatchFaults | None = None, seed: int = 0,
                 state_dir: Path | None = None) -> None:
        super().__init__(_NoFile, Batch, faults, seed,
                         Path(state_dir) / "anthropic" if state_dir is not None else None)
        self.answer, self.count = answer, count
        self.completion_s = float(completion_s)

    @staticmethod
    def owns(path: str) -> bool:
        return path == PREFIX or path.startswith(PREFIX + "/")

    def _missing(self, kind: str, name: str) -> Reply:
        return Reply(404, anthropic_error(404, f"No message batch found with id '{name}'"))

    def route(self, method: str, path: str, query: str, body: bytes,
              headers: Message) -> Reply | None:
        """The reply to a Message Batches request (None: no such route), held back first
        where a fault says so."""
        parts = path[len(PREFIX):].strip("/").split("/") if path != PREFIX else []
        base = f"http://{headers.get('Host', '127.0.0.1')}"
        action = None
        if not parts:
            reply = (self.create(body, headers.get("anthropic-version")) if method == "POST"
                     else self.list_batches(query, base) if method == "GET" else None)
            action = "create" if method == "POST" else None
        elif len(parts) == 1 and method in ("GET", "DELETE"):
            reply = self._with_batch(parts[0], lambda b: self.retrieve(b, base)
                                     if method == "GET" else self.delete(b))
            action = "retrieve" if method == "GET" else None
        elif len(parts) == 2 and (method, parts[1]) == ("POST", "cancel"):
            reply = self._with_batch(parts[0], lambda b: self.cancel(b, base))
        elif len(parts) == 2 and (method, parts[1]) == ("GET", "results"):
            reply = self._with_batch(parts[0], self.download)
            action = "content"
        else:
            return None
        if reply is not None and action is not None:
            self._hold(action)
        return reply

    # -- the routes -----------------------------------------------------------------------

    def create(self, body: bytes, version: str | None) -> Reply:
        try:
            request = json_body(body)
            requests = _validated(request)
        except ValueError as exc:  # BadRequest is a ValueError
            return Reply(400, anthropic_error(400, str(exc)))
        if version is None:
            return Reply(400, anthropic_error(400, "anthropic-version: header is required"))
        with self._lock:
            batch = Batch(self._new_id("msgbatch_"), time.time(), version, requests)
            self.batches[batch.id] = batch
            self._save(batch)
            return Reply(200, batch.record(""))

    def list_batches(self, query: str, base: str) -> Reply:
        limit = max(1, min(1000, int(first(query, "limit") or 20)))
        with self._lock:
            for batch in self.batches.values():
                self._advance(batch)
        ordered = sorted(self.batches.values(), key=lambda b: b.created_at, reverse=True)
        ids = [b.id for b in ordered]
        if (after := first(query, "after_id")) in ids:
            ordered = ordered[ids.index(after) + 1:]
        elif (before := first(query, "before_id")) in ids:
            ordered = ordered[:ids.index(before)][-limit:]
        page = ordered[:limit]
        return Reply(200, {"data": [b.record(base) for b in page],
                           "has_more": len(ordered) > limit,
                           "first_id": page[0].id if page else None,
                           "last_id": page[-1].id if page else None})

    def retrieve(self, batch: Batch, base: str) -> Reply:
        with self._lock:
            self._advance(batch)
        return Reply(200, batch.record(base))

    def cancel(self, batch: Batch, base: str) -> Reply:
        with self._lock:
            if batch.status == "in_progress":
                batch.status, batch.cancel_initiated_at = "canceling", time.time()
                self._save(batch)
        return Reply(200, batch.record(base))

    def delete(self, batch: Batch) -> Reply:
        if batch.status != "ended":
            return Reply(400, anthropic_error(400, f"Message batch {batch.id} is still "
                                              "processing: cancel it first"))
        with self._lock:
            self.batches.pop(batch.id, None)
            self._forget(batch)
        return Reply(200, {"id": batch.id, "type": "message_batch_deleted"})

    def download(self, batch: Batch) -> Reply:
        if batch.status != "ended":
            return Reply(400, anthropic_error(400, f"Message batch {batch.id} has not ended: "
                                              "its results are not ready"))
        content = b"".join(json.dumps(row).encode() + b"\n" for row in batch.results)
        return Reply(200, {}, raw=content, content_type="application/binary")

    # -- the batch's life ---------------------------------------------------------------

    def _advance(self, batch: Batch) -> None:
        """End a batch whose time has come, or a cancelled one (with the lock held)."""
        if batch.status == "canceling":
            batch.results = [{"custom_id": r["custom_id"], "result": {"type": "canceled"}}
                             for r in batch.requests]
            self._end(batch, {"canceled": len(batch.requests)})
        elif (batch.status == "in_progress"
              and time.time() - batch.created_at >= self.completion_s):
            self._complete(batch)

    def _end(self, batch: Batch, counts: dict[str, int]) -> None:
        batch.counts, batch.status, batch.ended_at = counts, "ended", time.time()
        self._save(batch)

    def _complete(self, batch: Batch) -> None:
        """Answer the requests as the online route does, acting out the faults."""
        rng = self._rng(batch.id)
        n = len(batch.requests)
        unfinished = round(self.faults.expire_share * n)
        failing = set(rng.sample(range(n - unfinished),
                                 round(self.faults.fail_share * (n - unfinished))))
        answered: list[dict[str, Any]] = []
        others: list[dict[str, Any]] = []
        for index, request in enumerate(batch.requests):
            if index >= n - unfinished:
                result: dict[str, Any] = {"type": "expired"}
            elif index in failing:
                result = {"type": "errored", "error": anthropic_error(
                    500, "Internal server error (a batch fault of serve-sim)")}
            else:
                reply = self.answer(json.dumps(request["params"]).encode(), batch.version)
                if reply.status == 200:
                    self.count(reply.model)
                    reply.body["usage"]["service_tier"] = "batch"
                    result = {"type": "succeeded", "message": reply.body}
                else:
                    result = {"type": "errored", "error": reply.body}
            row = {"custom_id": request["custom_id"], "result": result}
            (answered if result["type"] == "succeeded" else others).append(row)
        counts = {kind: sum(r["result"]["type"] == kind for r in answered + others)
                  for kind in KINDS}
        batch.results = with_row_faults(answered[::-1], self.faults, rng, _foreign) + others
        self._end(batch, counts)


def _foreign(template: dict[str, Any], key: str) -> dict[str, Any]:
    """A result for a ``custom_id`` the batch never held (a row fault)."""
    return {**template, "custom_id": key}


def _validated(request: Any) -> list[dict[str, Any]]:
    """The create's requests, or a ValueError naming the first wrong one."""
    if not isinstance(request, dict) or set(request) - {"requests"}:
        raise ValueError("the body takes one field, requests")
    requests = request.get("requests")
    if not isinstance(requests, list) or not 1 <= len(requests) <= MAX_REQUESTS:
        raise ValueError(f"requests: 1 to {MAX_REQUESTS} requests expected")
    seen: set[str] = set()
    for i, item in enumerate(requests):
        custom_id = item.get("custom_id") if isinstance(item, dict) else None
        if not isinstance(custom_id, str) or not CUSTOM_ID.match(custom_id):
            raise ValueError(f"requests.{i}.custom_id: String should match pattern "
                             f"'{CUSTOM_ID.pattern}'")
        if custom_id in seen:
            raise ValueError(f"requests.{i}.custom_id: {custom_id!r} is not unique in the "
                             "batch")
        if not isinstance(item.get("params"), dict):
            raise ValueError(f"requests.{i}.params: an object expected")
        seen.add(custom_id)
    return requests
