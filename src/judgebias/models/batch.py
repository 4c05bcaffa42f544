"""OpenAI's Batch API for the ``openai`` backend: half the price, answered within 24 hours
(issue 23; specs/batch.md §1 and §4).

:class:`OpenAIBatchRunner` answers a job's pending requests through batches and writes
each answer to the journal exactly as an online call would (same key, raw text,
log-probs, usage, finish reason), so the rest of the pipeline cannot tell them apart and
a rerun finds them. The line of a request is the online body (``chat_body``) with the
journal key as its ``custom_id``; the output is matched by ``custom_id``, never by
position.

**Never lose, never pay twice.** The journal records a batch and the keys it carries
*before* each provider call, and moves its state after each:

========== ================================ ==========================================
state      written                          a job that finds it (after a kill) ...
========== ================================ ==========================================
uploading  before the file upload           looks for our file by name (``jb-<local
                                            id>.jsonl``); adopts it if its bytes are
                                            ours, else uploads
uploaded   after the upload (file id)       looks for a batch with our metadata
                                            (``{"jb": local id}``: the create may have
                                            landed); adopts it, else creates
submitted  after the create (batch id)      polls that batch
finished   provider state terminal          downloads output and error files, ingests
ingested   every key has a journal row      nothing: done
========== ================================ ==========================================

A key enters a new batch only if it has no answer in the journal and no live batch
(not ingested) holds it. Ingesting writes an answer for every 200 row of a key the batch
carried; a row for a key it never carried is counted and ignored; a repeated row is
written once (the journal keeps the first); a key with an error row (failed inside the
batch, ``batch_expired``), or no row at all, is recorded as a *failure* with the reason,
never as an answer, so the job's ``max_failures`` decides as for online failures and a
rerun sends exactly those keys again, in a new batch. A batch that ends ``failed``
(its file rejected) or ``cancelled`` counts all its keys failed the same way.

**Waiting.** A job polls its batches with backoff (``backends.openai.batch_poll_s``,
doubling to ``batch_poll_max_s``) and logs each one's state, requests done and an ETA.
Its Snakemake job holds no API slot meanwhile (workflow/rules/common.smk). With
``batch_wait_s`` it stops after that long (:class:`BatchPending`: the job fails, nothing
is written or lost), so a laptop can submit, be switched off, and collect on a later run,
and a Slurm job can end within its time limit: the next run polls the same batches.

The runner takes a synchronous ``openai.OpenAI`` client (the SDK's files and batches
resources, no hand-made HTTP), the job's journal and the model id. `on_state` is called
with each state as it is written (a test stops the job there, as a kill would).
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import openai
from openai.types.chat import ChatCompletion

from judgebias.models.base import STATUS_FAILED, ChatRequest, ChatResponse
from judgebias.models.journal import BATCH_DONE, Journal
from judgebias.models.openai_backend import chat_body, to_response

log = logging.getLogger(__name__)

PROVIDER = "openai"
ENDPOINT = "/v1/chat/completions"
TERMINAL = ("completed", "failed", "expired", "cancelled")


@dataclass(frozen=True)
class BatchSettings:
    """How batches are cut and waited for. The provider's limits are 50,000 requests and
    200 MB per file (specs/batch.md §1); the defaults stay under them."""

    max_requests: int = 50_000
    max_bytes: int = 190 * 1024 * 1024
    poll_s: float = 30.0  # the first wait between polls; it doubles up to poll_max_s
    poll_max_s: float = 600.0
    wait_s: float | None = None  # then stop (BatchPending) for a later run to collect


class BatchPending(RuntimeError):
    """The job waited ``wait_s`` and its batches still run. Nothing is lost: they are in
    the journal, and the job's next run polls the same batches and collects them."""


@dataclass
class BatchCounts:
    """What a run did, for the job's log."""

    submitted: int = 0  # batches created
    adopted: int = 0  # batches found after a kill and taken over
    answered: int = 0
    failed: int = 0
    foreign_rows: int = 0  # rows for a key the batch never carried
    duplicate_rows: int = 0


class OpenAIBatchRunner:
    """Answer requests through OpenAI batches, journaled (module docstring)."""

    def __init__(self, client: openai.OpenAI, journal: Journal, model: str,
                 settings: BatchSettings | None = None,
                 on_state: Callable[[str], None] | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.client = client
        self.journal = journal
        self.model = model
        self.settings = settings or BatchSettings()
        self.on_state = on_state or (lambda state: None)
        self.sleep = sleep
        self.counts = BatchCounts()

    # -- the run ------------------------------------------------------------------------

    def run(self, pending: Mapping[str, ChatRequest],
            on_response: Callable[[str, ChatResponse], None]) -> BatchCounts:
        """Answer every request of `pending` (journal key -> request) that no journal
        row answers yet; `on_response(key, response)` records each (the job's journal
        writer). Returns the counts."""
        live = [batch for batch in self.journal.live_batches(PROVIDER, self.model)
                # another job's batch is that job's to finish
                if set(self.journal.batch_keys(batch["local_id"])) & set(pending)]
        for batch in live:  # what a stopped job left, first
            self._send(batch, pending)
        held = {key for batch in live if batch["state"] != BATCH_DONE
                for key in self.journal.batch_keys(batch["local_id"])}
        fresh = {k: r for k, r in pending.items() if k not in held}
        for keys, payload in self._new_files(fresh):  # one file in memory at a time
            local_id = self.journal.open_batch(PROVIDER, self.model, keys, _sha256(payload))
            batch = {"local_id": local_id, "state": "uploading", "file_id": None,
                     "batch_id": None}
            self.on_state("opened")
            self._send(batch, pending, payload)
            live.append(batch)
        self._wait_and_ingest([b for b in live if b["state"] != BATCH_DONE], pending,
                              on_response)
        return self.counts

    def _new_files(self, requests: Mapping[str, ChatRequest]
                   ) -> Iterator[tuple[list[str], bytes]]:
        """(keys, JSONL bytes) of consecutive groups under the per-file request and byte
        limits, built one at a time."""
        keys: list[str] = []
        lines: list[bytes] = []
        size = 0
        for key, request in requests.items():
            line = _line(key, request)
            if keys and (len(keys) >= self.settings.max_requests
                         or size + len(line) > self.settings.max_bytes):
                yield keys, b"".join(lines)
                keys, lines, size = [], [], 0
            keys.append(key)
            lines.append(line)
            size += len(line)
        if keys:
            yield keys, b"".join(lines)

    # -- sending ------------------------------------------------------------------------

    def _set(self, batch: dict[str, Any], **fields: str | None) -> None:
        self.journal.update_batch(batch["local_id"], **fields)
        batch.update(fields)
        if "state" in fields:
            self.on_state(str(fields["state"]))

    def _send(self, batch: dict[str, Any], pending: Mapping[str, ChatRequest],
              payload: bytes | None = None) -> None:
        """Take a batch from wherever it is (a stopped job's, or just opened with its
        `payload`) up to ``submitted``."""
        if batch["state"] == "uploading":
            if payload is None:  # a stopped job's: the same lines again from the requests
                keys = self.journal.batch_keys(batch["local_id"])
                if not all(k in pending for k in keys):  # never sent: nothing to lose
                    self._set(batch, state=BATCH_DONE)
                    return
                payload = b"".join(_line(k, pending[k]) for k in keys)
            self._upload(batch, payload)
        if batch["state"] == "uploaded":
            self._create(batch)

    def _upload(self, batch: dict[str, Any], payload: bytes) -> None:
        name = f"jb-{batch['local_id']}.jsonl"
        digest = _sha256(payload)
        for found in self.client.files.list(purpose="batch"):
            if found.filename == name and _sha256(
                    self.client.files.content(found.id).read()) == digest:
                log.info("%s: batch %d's file %s was uploaded before the job stopped; "
                         "adopted", self.model, batch["local_id"], found.id)
                self._set(batch, file_id=found.id, state="uploaded")
                return
        uploaded = self.client.files.create(file=(name, payload), purpose="batch")
        self._set(batch, file_id=uploaded.id, state="uploaded")

    def _create(self, batch: dict[str, Any]) -> None:
        tag = str(batch["local_id"])
        for found in self.client.batches.list():
            if (found.metadata or {}).get("jb") == tag and found.input_file_id == batch[
                    "file_id"]:
                log.info("%s: batch %d was created before the job stopped (%s); adopted",
                         self.model, batch["local_id"], found.id)
                self.counts.adopted += 1
                self._set(batch, batch_id=found.id, state="submitted")
                return
        created = self.client.batches.create(input_file_id=batch["file_id"],
                                             endpoint="/v1/chat/completions",
                                             completion_window="24h", metadata={"jb": tag})
        self.counts.submitted += 1
        self._set(batch, batch_id=created.id, state="submitted")

    # -- waiting and ingesting ------------------------------------------------------------

    def _wait_and_ingest(self, batches: list[dict[str, Any]],
                         pending: Mapping[str, ChatRequest],
                         on_response: Callable[[str, ChatResponse], None]) -> None:
        wait = self.settings.poll_s
        started = time.monotonic()
        while batches:
            still = []
            for batch in batches:
                if batch["state"] == "submitted":
                    found = self.client.batches.retrieve(batch["batch_id"])
                    log.info("%s: batch %d (%s) %s%s", self.model, batch["local_id"],
                             found.id, found.status,
                             _progress(found.request_counts, time.monotonic() - started))
                    if found.status in TERMINAL:
                        self._set(batch, output_file_id=found.output_file_id,
                                  error_file_id=found.error_file_id, state="finished")
                if batch["state"] == "finished":
                    self._ingest(batch, pending, on_response)
                elif batch["state"] == "submitted":
                    still.append(batch)
            batches = still
            waited = time.monotonic() - started
            if batches and self.settings.wait_s is not None and waited >= self.settings.wait_s:
                raise BatchPending(
                    f"{self.model}: {len(batches)} batch(es) still running after "
                    f"{waited:.0f} s ({', '.join(str(b['batch_id']) for b in batches)}); "
                    "nothing is lost: run the job again later to collect them (they are "
                    "in the journal, and will not be submitted again)")
            if batches:
                self.sleep(wait)
                wait = min(wait * 2, self.settings.poll_max_s)

    def _rows(self, file_id: str | None) -> list[dict[str, Any]]:
        if not file_id:
            return []
        text = self.client.files.content(file_id).text
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    def _ingest(self, batch: dict[str, Any], pending: Mapping[str, ChatRequest],
                on_response: Callable[[str, ChatResponse], None]) -> None:
        """Every key of the batch gets one journal row: its answer, or why not."""
        keys = self.journal.batch_keys(batch["local_id"])
        carried = set(keys)
        results: dict[str, ChatResponse] = {}
        for row in [*self._rows(batch["output_file_id"]), *self._rows(batch["error_file_id"])]:
            key = row.get("custom_id")
            if key not in carried:
                self.counts.foreign_rows += 1
                continue
            if key in results:
                self.counts.duplicate_rows += 1
                continue
            results[str(key)] = _result(row)
        for key in keys:
            response = results.get(key) or ChatResponse(
                text="", status=STATUS_FAILED,
                error="batch: the provider returned no row for this request")
            if key in pending:
                on_response(key, response)
                self.counts.answered += response.ok
                self.counts.failed += not response.ok
        # keys another job asked for stay that job's to record: the batch is done only
        # when each of them has an answer already (else that job downloads it again)
        rest = [k for k in keys if k not in pending]
        if len(self.journal.lookup(rest)) == len(rest):
            self._set(batch, state=BATCH_DONE)


def _progress(counts: Any, elapsed: float) -> str:
    """", 120 of 400 done, ETA 410 s" from a batch's request counts (ETA from the pace
    since this job began waiting)."""
    if counts is None or not counts.total:
        return ""
    done = counts.completed + counts.failed
    eta = (f", ETA {elapsed * (counts.total - done) / done:.0f} s"
           if 0 < done < counts.total and elapsed > 0 else "")
    return f", {done} of {counts.total} done{eta}"


def _result(row: Mapping[str, Any]) -> ChatResponse:
    """One output or error row as a response: the answer, or a failure with its reason."""
    response = row.get("response") or {}
    if response.get("status_code") == 200 and not row.get("error"):
        return to_response(ChatCompletion.model_validate(response["body"]))
    error = row.get("error") or (response.get("body") or {}).get("error") or {}
    reason = f"{error.get('code') or response.get('status_code')}: {error.get('message')}"
    return ChatResponse(text="", status=STATUS_FAILED, error=f"batch: {reason}")


def _line(key: str, request: ChatRequest) -> bytes:
    return json.dumps({"custom_id": key, "method": "POST", "url": ENDPOINT,
                       "body": chat_body(request)}, separators=(",", ":")).encode() + b"\n"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
