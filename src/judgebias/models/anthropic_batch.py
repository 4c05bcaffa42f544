"""Anthropic's Message Batches as a :class:`judgebias.models.batch.BatchProvider`, through
the ``anthropic`` SDK's ``messages.batches`` resource (checked against anthropic 2.17.0
and 2.0.0), never a hand-made HTTP client.

* **A batch takes its requests inline** (``batches.create(requests=[{"custom_id",
  "params"}])``; at most 100,000 requests or 256 MB, within BatchSettings' defaults):
  there is no file to upload. A "file" here is the batch's lines held by this process
  (``jb-<local id>-<sha256>``); uploading it sends nothing. ``params`` is the online
  request body (:func:`judgebias.models.anthropic_wire.message_params`), so batch and
  online ask the same; ``custom_id`` is the journal key: a sha256 hex digest, 64
  characters of ``[a-zA-Z0-9_-]``, exactly what Anthropic allows (1 to 64 of those,
  unique within a batch).
* **Finding a batch after a stop.** A Message Batch carries no name or metadata, and its
  requests can be read only once it has ended (``results_url``, results kept 29 days). A
  job stopped between the create and the journal's record of its id (state ``uploaded``)
  rebuilds its lines from the journal's keys and the job's requests, then lists the
  batches (newest first) created since the journal opened the batch (less a margin for
  the clocks), leaves out those the journal knows, and takes one with as many requests
  as ours whose results carry exactly our custom ids. One still running cannot be read
  yet: the job waits for it to end (polled as a batch is, ``batch_wait_s`` honoured:
  :class:`BatchPending`), as it would have waited for its own batch anyway; a create
  that never landed costs that wait and nothing else. Paying twice is never the cheaper
  error here.
* **Results** (``batches.results``: one per custom id, in any order, matched by it):
  ``succeeded`` is the answer (:func:`~judgebias.models.anthropic_wire.to_response`);
  ``errored`` a failure whose reason begins with the HTTP status of its error type (400
  ``invalid_request_error`` ... 529 ``overloaded_error``), so
  :func:`judgebias.models.batch.retryable` sends a 4xx never again and a 5xx, 529 or 429
  again; ``canceled`` and ``expired`` (the 24-hour limit) failures the runner retries as
  configured. A batch ``ended`` whose results are gone (archived) yields no row: every
  key a failure, retried.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final

import anthropic

from judgebias.models.anthropic_wire import message_params, to_response
from judgebias.models.base import STATUS_FAILED, ChatRequest, ChatResponse
from judgebias.models.batch import BatchPending, BatchStatus
from judgebias.models.journal import Journal
from judgebias.models.limits import ApiLimits

log = logging.getLogger(__name__)

CUSTOM_ID: Final = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
CLOCK_MARGIN_S: Final = 300.0  # the provider's clock against ours
PAGE: Final = 100
# error.type -> the HTTP status the API answers it with (its errors page)
STATUS_OF: Final = {"invalid_request_error": 400, "authentication_error": 401,
                    "billing_error": 402, "permission_error": 403, "not_found_error": 404,
                    "request_too_large": 413, "rate_limit_error": 429, "api_error": 500,
                    "gateway_timeout_error": 504, "overloaded_error": 529}
UNANSWERED: Final = {
    "canceled": "the batch was canceled before this request was processed",
    "expired": "the batch reached its 24-hour limit before this request was processed"}


class AnthropicBatches:
    """Message Batches through a synchronous ``anthropic.Anthropic`` client. `journal`
    and `pending` (the job's keys and requests) let a stopped job rebuild a batch's
    requests and find the batch (module docstring)."""

    name = "anthropic"

    def __init__(self, client: anthropic.Anthropic, journal: Journal,
                 pending: Mapping[str, ChatRequest], limits: ApiLimits | None = None, *,
                 thinking: Mapping[str, Any] | None = None, api_version: str | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.client, self.journal, self.pending = client, journal, pending
        self.limits = limits or ApiLimits()
        self.thinking, self.api_version, self.sleep = thinking, api_version, sleep
        self._files: dict[str, bytes] = {}  # "uploaded" lines, by file id

    # -- lines and the local "files" ------------------------------------------------------

    def line(self, key: str, request: ChatRequest) -> bytes:
        if not CUSTOM_ID.match(key):
            raise ValueError(f"custom_id {key!r}: Anthropic takes 1 to 64 of [a-zA-Z0-9_-]")
        params = message_params(request, self.thinking, self.api_version)
        return json.dumps({"custom_id": key, "params": params},
                          separators=(",", ":")).encode() + b"\n"

    def find_file(self, tag: str, digest: str) -> str | None:
        return None  # nothing is ever uploaded: "uploading" it again sends nothing

    def upload(self, tag: str, payload: bytes) -> str:
        file_id = f"jb-{tag}-{hashlib.sha256(payload).hexdigest()}"
        self._files[file_id] = payload
        return file_id

    def has_file(self, file_id: str) -> bool:
        """Whether the lines can be had: held, or rebuilt from the journal's keys and the
        job's requests (a job stopped after its "upload")."""
        return self._lines(file_id) is not None

    def _lines(self, file_id: str) -> bytes | None:
        if file_id not in self._files:
            tag, _, digest = file_id.removeprefix("jb-").partition("-")
            keys = self.journal.batch_keys(int(tag)) if tag.isdigit() else []
            if not keys or not all(k in self.pending for k in keys):
                return None
            payload = b"".join(self.line(k, self.pending[k]) for k in keys)
            if hashlib.sha256(payload).hexdigest() != digest:
                return None  # other lines now (a params edit): not the batch that was sent
            self._files[file_id] = payload
        return self._files[file_id]

    # -- batches ------------------------------------------------------------------------

    def create(self, tag: str, file_id: str) -> str:
        payload = self._lines(file_id)
        if payload is None:
            raise RuntimeError(f"batch {tag}: its requests cannot be rebuilt ({file_id})")
        requests = [json.loads(line) for line in payload.splitlines() if line.strip()]
        once = self.client.with_options(max_retries=0)  # not idempotent: never resent blindly
        return once.messages.batches.create(requests=requests).id

    def find_batch(self, tag: str, file_id: str) -> str | None:
        """A batch a stopped job created for `tag` before recording it (module docstring)."""
        keys = set(self.journal.batch_keys(int(tag)))
        opened = next((b["created"] for b in self.journal.live_batches(self.name, self._model())
                       if b["local_id"] == int(tag)), time.time())
        known = self.journal.batch_ids(self.name, self._model())
        running: list[str] = []
        for found in self.client.messages.batches.list(limit=PAGE):
            if found.created_at.timestamp() < opened - CLOCK_MARGIN_S:
                break  # newest first: older ones cannot be ours
            if found.id in known or _total(found) != len(keys):
                continue
            if found.processing_status != "ended":
                running.append(found.id)
            elif self._carries(found, keys):
                return found.id
        return self._wait_for(tag, running, keys) if running else None

    def _model(self) -> str:
        return next(iter(self.pending.values())).model if self.pending else ""

    def _carries(self, found: Any, keys: set[str]) -> bool:
        if found.results_url is None:  # archived: unreadable, and no longer ours to ingest
            return False
        return {row.custom_id for row in self.client.messages.batches.results(found.id)} == keys

    def _wait_for(self, tag: str, running: list[str], keys: set[str]) -> str | None:
        """Poll the running candidates until each has ended and can be read."""
        log.info("batch %s: %d running batch(es) may be the one a stopped job created "
                 "(%s); their requests can be read once they end: waiting for them",
                 tag, len(running), ", ".join(running))
        started, wait = time.monotonic(), self.limits.batch_poll_s
        while running:
            still = []
            for batch_id in running:
                found = self.client.messages.batches.retrieve(batch_id)
                if found.processing_status != "ended":
                    still.append(batch_id)
                elif self._carries(found, keys):
                    return batch_id
            running = still
            waited = time.monotonic() - started
            if running and self.limits.batch_wait_s is not None and \
                    waited >= self.limits.batch_wait_s:
                raise BatchPending(f"batch {tag}: {', '.join(running)} still running after "
                                   f"{waited:.0f} s (one may be ours); nothing is lost: run "
                                   "the job again later")
            if running:
                self.sleep(wait)
                wait = min(wait * 2, self.limits.batch_poll_max_s)
        return None

    def status(self, batch_id: str) -> BatchStatus:
        found = self.client.messages.batches.retrieve(batch_id)
        ended = found.processing_status == "ended"
        total = _total(found)
        return BatchStatus(state=found.processing_status, terminal=ended,
                           done=total - found.request_counts.processing, total=total,
                           results=(batch_id,) if ended and found.results_url else ())

    def rows(self, file_id: str) -> Iterator[tuple[str | None, ChatResponse]]:
        for row in self.client.messages.batches.results(file_id):
            yield row.custom_id, _result(row.result)


def _total(batch: Any) -> int:
    counts = batch.request_counts
    return (counts.processing + counts.succeeded + counts.errored + counts.canceled
            + counts.expired)


def _result(result: Any) -> ChatResponse:
    """One result as the answer, or a failure whose reason the runner reads (module
    docstring)."""
    if result.type == "succeeded":
        return to_response(result.message)
    if result.type == "errored":
        error = result.error.error
        reason = f"{STATUS_OF.get(error.type, error.type)}: {error.type}: {error.message}"
    else:
        reason = f"{result.type}: {UNANSWERED.get(result.type, 'not processed')}"
    return ChatResponse(text="", status=STATUS_FAILED, error=f"batch: {reason}")
