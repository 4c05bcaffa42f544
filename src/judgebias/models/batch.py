"""Providers' batch APIs: half the price, answered within a day (issue 23; specs/batch.md).

:class:`BatchRunner` answers a job's pending requests through a provider's batches and
writes each answer to the journal exactly as an online call would (same key, raw text,
log-probs, usage, finish reason), so the rest of the pipeline cannot tell them apart and
a rerun finds them. What differs between providers (the line format, the SDK's files and
batches calls, the states, the result rows) is a :class:`BatchProvider`:
:class:`judgebias.models.openai_batch.OpenAIBatches` (OpenAI's Batch API, and servers
that implement it) and :class:`judgebias.models.gemini_batch.GeminiBatches` (Gemini's
batch mode). Each backend's registry entry names its provider and its price
(``BackendSpec.batch``, judgebias.models.backends): the config accepts ``batch: true``
only for those, and `judgebias plan` prices them. Each line carries the request's journal
key (``custom_id`` / ``key``), and results are matched by it, never by position.

**Never lose, never pay twice.** The journal records a batch and the keys it carries
*before* each provider call, and moves its state after each:

========== ================================ ==========================================
state      written                          a job that finds it (after a kill) ...
========== ================================ ==========================================
uploading  before the file upload           looks for our file by name (``jb-<local
                                            id>.jsonl``); adopts it if its bytes are
                                            ours, else uploads
uploaded   after the upload (file id)       looks for a batch tagged with our local id
                                            on that file (the create may have landed);
                                            adopts it, else creates (a file the provider
                                            deleted since is uploaded again)
submitted  after the create (batch id)      polls that batch
finished   provider state terminal          downloads the result files, ingests
ingested   every key has a journal row      nothing: done
========== ================================ ==========================================

A key enters a new batch only if it has no answer in the journal and no live batch
(not ingested) holds it. Ingesting writes an answer for every successful row of a key
the batch carried; a row for a key it never carried is counted and ignored; a repeated
row is written once (the first); a key with an error row, or no row at all (an expired,
cancelled or failed batch, a provider that lost it), is a *failure* with its reason,
never an answer.

**Failures, retried as configured** (``backends.<provider>.batch_retry``): a failure that
another attempt may cure (no row, ``batch_expired``, a rate limit or server error, a
batch that expired, failed or was cancelled as a whole) is retried in the same run, up to
``batch_retry_rounds`` times, in a new batch (``batch``, the default: half price, one
more wait) or through the online endpoint (``online``: full price, now); ``none`` leaves
it to the next run. Each failed attempt is one row of the journal's failures table; the
last one, or a failure no retry can cure (a 4xx: the request itself is wrong), is what
the job sees, so its ``max_failures`` decides as for online failures, and a rerun sends
exactly those keys again.

**Budget.** ``max_requests`` is reserved (judgebias.models.journal.Journal.reserve_calls)
for the keys of each new batch and each retry, never for keys a live batch already holds,
so a resumed job does not count its batch twice.

**Waiting.** A job polls its batches with backoff (``batch_poll_s``, doubling to
``batch_poll_max_s``) and logs each one's state, requests done and an ETA. Its Snakemake
job holds no API slot meanwhile (workflow/rules/common.smk). With ``batch_wait_s`` it
stops after that long (:class:`BatchPending`: the job fails, nothing is written or
lost), so a laptop can submit, be switched off, and collect on a later run, and a Slurm
job can end within its time limit: the next run polls the same batches.

`on_state` is called with each state as it is written (a test stops the job there, as a
kill would).
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from judgebias.models.base import STATUS_FAILED, ChatRequest, ChatResponse
from judgebias.models.journal import BATCH_DONE, Journal
from judgebias.models.limits import ApiLimits

log = logging.getLogger(__name__)

RetryMode = Literal["batch", "online", "none"]
OnKeyResponse = Callable[[str, ChatResponse], None]
# The backend's online path: answer `requests`, calling back (index, response) for each.
Online = Callable[[Sequence[ChatRequest], Callable[[int, ChatResponse], None]], object]
NO_ROW = "batch: the provider returned no row for this request"


@dataclass(frozen=True)
class BatchSettings:
    """How batches are cut, waited for and retried. OpenAI's limits are 50,000 requests
    and 200 MB per file, Gemini's 2 GB per file (specs/batch.md §1-2); the defaults stay
    under both."""

    max_requests: int = 50_000
    max_bytes: int = 190 * 1024 * 1024
    poll_s: float = 30.0  # the first wait between polls; it doubles up to poll_max_s
    poll_max_s: float = 600.0
    wait_s: float | None = None  # then stop (BatchPending) for a later run to collect
    retry: RetryMode = "batch"
    retry_rounds: int = 1

    @classmethod
    def of(cls, limits: ApiLimits) -> BatchSettings:
        """The settings of ``backends.<provider>`` (params.yaml), provider limits kept
        (``batch_retry`` is one of RetryMode: ApiLimits, a typed view, checked it)."""
        return cls(poll_s=limits.batch_poll_s, poll_max_s=limits.batch_poll_max_s,
                   wait_s=limits.batch_wait_s, retry=limits.batch_retry,
                   retry_rounds=limits.batch_retry_rounds)


@dataclass(frozen=True)
class BatchStatus:
    """A provider batch as polled: its own state name (for the log), whether it ended,
    progress where the provider reports it, and the files holding its result rows."""

    state: str
    terminal: bool
    done: int | None = None
    total: int | None = None
    results: tuple[str, ...] = ()


class BatchProvider(Protocol):
    """One provider's batch API through its SDK (module docstring). `tag` is the batch's
    journal local id as text: the provider-side name (file name, metadata, display name)
    a stopped job finds its file and batch by."""

    name: str  # the journal's provider column

    def line(self, key: str, request: ChatRequest) -> bytes:
        """One JSONL line (ending in a newline) asking `request` under `key`."""
        ...

    def find_file(self, tag: str, digest: str) -> str | None:
        """The id of a file we uploaded for `tag` whose bytes have sha256 `digest`."""
        ...

    def upload(self, tag: str, payload: bytes) -> str: ...

    def has_file(self, file_id: str) -> bool:
        """Whether an uploaded file is still there (Gemini deletes files after 48 h,
        OpenAI after 30 days by default: a job resumed later must upload again)."""
        ...

    def find_batch(self, tag: str, file_id: str) -> str | None:
        """The id of a batch created for `tag` on `file_id` (a create that landed)."""
        ...

    def create(self, tag: str, file_id: str) -> str: ...

    def status(self, batch_id: str) -> BatchStatus: ...

    def rows(self, file_id: str) -> Iterator[tuple[str | None, ChatResponse]]:
        """(key, answer or failure) of each row of a result file, in file order."""
        ...


@runtime_checkable
class BatchBackend(Protocol):
    """A backend that can answer through a provider's batch API; `batch` says whether
    this model does (``panel.<m>.batch``). `complete_batched` answers `pending` (journal
    key -> request), journaling each batch before it is sent, calls `reserve(n)` before
    it sends `n` requests (the model's budget: never for a batch a stopped job already
    sent), and calls `on_response(key, response)` with each key's final outcome (an
    ApiBackend through :func:`answer_in_batches`). Here, not beside Backend in
    judgebias.models.base: it takes the journal, which imports base."""

    batch: bool

    def complete_batched(self, pending: Mapping[str, ChatRequest], journal: Journal,
                         on_response: Callable[[str, ChatResponse], None],
                         reserve: Callable[[int], object]) -> None: ...


class BatchPending(RuntimeError):
    """The job waited ``wait_s`` and its batches still run. Nothing is lost: they are in
    the journal, and the job's next run polls the same batches and collects them."""


@dataclass
class BatchCounts:
    """What a run did, for the job's log."""

    submitted: int = 0  # batches created
    adopted: int = 0  # batches found after a kill and taken over
    answered: int = 0
    failed: int = 0  # keys whose last attempt failed (what the job sees)
    retried_batch: int = 0  # keys sent again in a new batch in this run
    retried_online: int = 0  # keys sent again online in this run
    foreign_rows: int = 0  # rows for a key the batch never carried
    duplicate_rows: int = 0


def retryable(response: ChatResponse) -> bool:
    """Whether another attempt may answer: anything but an HTTP 4xx other than a rate
    limit or timeout (the request itself is wrong; sending it again pays for nothing)."""
    code = (response.error or "").removeprefix("batch: ").split(":", 1)[0].strip()
    return not (code.isdigit() and 400 <= int(code) < 500 and int(code) not in (408, 429))


class BatchRunner:
    """Answer requests through a provider's batches, journaled (module docstring).

    `reserve(n)` reserves `n` new calls against the model's budget (raising when over);
    `online` is the backend's online path, used by ``retry: online``.
    """

    def __init__(self, provider: BatchProvider, journal: Journal, model: str,
                 settings: BatchSettings | None = None, *,
                 reserve: Callable[[int], object] = lambda n: None,
                 online: Online | None = None,
                 on_state: Callable[[str], None] | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.provider = provider
        self.journal = journal
        self.model = model
        self.settings = settings or BatchSettings()
        self.reserve = reserve
        self.online = online
        self.on_state = on_state or (lambda state: None)
        self.sleep = sleep
        self.counts = BatchCounts()
        self._started = time.monotonic()
        if self.settings.retry == "online" and online is None:
            raise ValueError("batch retry 'online' needs the backend's online path")

    # -- the run ------------------------------------------------------------------------

    def run(self, pending: Mapping[str, ChatRequest],
            on_response: OnKeyResponse) -> BatchCounts:
        """Answer every request of `pending` (journal key -> request) that no journal
        row answers yet; `on_response(key, response)` records each final outcome (the
        job's journal writer). Returns the counts."""
        stopped = self.journal.live_batches(self.provider.name, self.model)
        carried = {batch["local_id"]: set(self.journal.batch_keys(batch["local_id"]))
                   for batch in stopped}
        # another job's batch is that job's to finish
        live = [batch for batch in stopped if not carried[batch["local_id"]].isdisjoint(pending)]
        for batch in live:  # what a stopped job left, first
            self._send(batch, pending)
        held = {key for batch in live if batch["state"] != BATCH_DONE
                for key in carried[batch["local_id"]]}
        fresh = [key for key in pending if key not in held]
        batches = [b for b in live if b["state"] != BATCH_DONE] + self._submit(fresh, pending)
        for attempt in range(self.settings.retry_rounds + 1):
            last = attempt == self.settings.retry_rounds or self.settings.retry == "none"
            failed = self._wait_and_ingest(batches, pending, on_response, last)
            if not failed:
                break
            if self.settings.retry == "online":
                self._online(failed, pending, on_response)
                break
            self.counts.retried_batch += len(failed)
            log.info("%s: %d failed requests go in a new batch (retry %d of %d)",
                     self.model, len(failed), attempt + 1, self.settings.retry_rounds)
            batches = self._submit(failed, pending)
        return self.counts

    def _submit(self, keys: Sequence[str], pending: Mapping[str, ChatRequest]
                ) -> list[dict[str, Any]]:
        """Open, upload and create batches for `keys` (reserved against the budget)."""
        if not keys:
            return []
        self.reserve(len(keys))
        batches = []
        for group, payload in self._new_files(keys, pending):  # one file in memory at a time
            local_id = self.journal.open_batch(self.provider.name, self.model, group,
                                               _sha256(payload))
            batch = {"local_id": local_id, "state": "uploading", "file_id": None,
                     "batch_id": None}
            self.on_state("opened")
            self._send(batch, pending, payload)
            batches.append(batch)
        return batches

    def _new_files(self, keys: Iterable[str], pending: Mapping[str, ChatRequest]
                   ) -> Iterator[tuple[list[str], bytes]]:
        """(keys, JSONL bytes) of consecutive groups under the per-file request and byte
        limits, built one at a time."""
        group: list[str] = []
        lines: list[bytes] = []
        size = 0
        for key in keys:
            line = self.provider.line(key, pending[key])
            if group and (len(group) >= self.settings.max_requests
                          or size + len(line) > self.settings.max_bytes):
                yield group, b"".join(lines)
                group, lines, size = [], [], 0
            group.append(key)
            lines.append(line)
            size += len(line)
        if group:
            yield group, b"".join(lines)

    def _online(self, keys: list[str], pending: Mapping[str, ChatRequest],
                on_response: OnKeyResponse) -> None:
        assert self.online is not None
        log.info("%s: %d failed requests are sent online (batch_retry: online)",
                 self.model, len(keys))
        self.reserve(len(keys))
        self.counts.retried_online += len(keys)

        def record(index: int, response: ChatResponse) -> None:
            self._final(keys[index], response, on_response)

        self.online([pending[k] for k in keys], record)

    def _final(self, key: str, response: ChatResponse, on_response: OnKeyResponse) -> None:
        on_response(key, response)
        self.counts.answered += response.ok
        self.counts.failed += not response.ok

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
        tag = str(batch["local_id"])
        # Only a stopped job's batch (no `payload` in hand) can have a file on the provider
        # that the journal does not name yet, and only one it left ``uploaded`` a batch:
        # only then are they searched for.
        resumed, entered = payload is None, batch["state"]
        if batch["state"] == "uploading":
            if payload is None:  # a stopped job's: the same lines again from the requests
                keys = self.journal.batch_keys(batch["local_id"])
                if not all(k in pending for k in keys):  # never sent: nothing to lose
                    self._set(batch, state=BATCH_DONE)
                    return
                payload = b"".join(self.provider.line(k, pending[k]) for k in keys)
            file_id = self.provider.find_file(tag, _sha256(payload)) if resumed else None
            if file_id is not None:
                log.info("%s: batch %s's file %s was uploaded before the job stopped; "
                         "adopted", self.model, tag, file_id)
            else:
                file_id = self.provider.upload(tag, payload)
            self._set(batch, file_id=file_id, state="uploaded")
        elif batch["state"] == "uploaded" and not self.provider.has_file(batch["file_id"]):
            # a stopped job's file, deleted by the provider since: upload it again
            log.info("%s: batch %s's file %s is gone from the provider; uploading it again",
                     self.model, tag, batch["file_id"])
            self._set(batch, file_id=None, state="uploading")
            self._send(batch, pending)
            return
        if batch["state"] == "uploaded":
            # the create may have landed before a stopped job recorded it
            batch_id = (self.provider.find_batch(tag, batch["file_id"])
                        if resumed and entered == "uploaded" else None)
            if batch_id is not None:
                log.info("%s: batch %s was created before the job stopped (%s); adopted",
                         self.model, tag, batch_id)
                self.counts.adopted += 1
            else:
                batch_id = self.provider.create(tag, batch["file_id"])
                self.counts.submitted += 1
            self._set(batch, batch_id=batch_id, state="submitted")

    # -- waiting and ingesting ------------------------------------------------------------

    def _wait_and_ingest(self, batches: list[dict[str, Any]],
                         pending: Mapping[str, ChatRequest], on_response: OnKeyResponse,
                         last: bool) -> list[str]:
        """Poll until every batch is ingested; returns the failed keys to retry (none
        when `last`: then every failure is final)."""
        wait = self.settings.poll_s
        retry: list[str] = []
        while batches:
            still = []
            for batch in batches:
                if batch["state"] == "submitted":
                    found = self.provider.status(batch["batch_id"])
                    log.info("%s: batch %s (%s) %s%s", self.model, batch["local_id"],
                             batch["batch_id"], found.state, self._progress(found))
                    if found.terminal:
                        results = [*found.results, None, None][:2]
                        self._set(batch, output_file_id=results[0],
                                  error_file_id=results[1], state="finished")
                if batch["state"] == "finished":
                    retry += self._ingest(batch, pending, on_response, last)
                elif batch["state"] == "submitted":
                    still.append(batch)
            batches = still
            waited = time.monotonic() - self._started
            if batches and self.settings.wait_s is not None and waited >= self.settings.wait_s:
                raise BatchPending(
                    f"{self.model}: {len(batches)} batch(es) still running after "
                    f"{waited:.0f} s ({', '.join(str(b['batch_id']) for b in batches)}); "
                    "nothing is lost: run the job again later to collect them (they are "
                    "in the journal, and will not be submitted again)")
            if batches:
                self.sleep(wait)
                wait = min(wait * 2, self.settings.poll_max_s)
        return retry

    def _ingest(self, batch: dict[str, Any], pending: Mapping[str, ChatRequest],
                on_response: OnKeyResponse, last: bool) -> list[str]:
        """Every key of the batch gets one journal row: its answer, or why not. Returns
        the failed keys left to a retry (recorded as a failed attempt, not as final)."""
        keys = self.journal.batch_keys(batch["local_id"])
        carried = set(keys)
        results: dict[str, ChatResponse] = {}
        for file_id in (batch["output_file_id"], batch["error_file_id"]):
            for key, response in self.provider.rows(file_id) if file_id else ():
                if key not in carried:
                    self.counts.foreign_rows += 1
                elif key in results:
                    self.counts.duplicate_rows += 1
                else:
                    results[key] = response
        retry = []
        for key in keys:
            response = results.get(key) or ChatResponse(text="", status=STATUS_FAILED,
                                                         error=NO_ROW)
            if key not in pending:
                continue
            if not response.ok and not last and retryable(response):
                self.journal.record(key, pending[key], response)  # a failed attempt
                retry.append(key)
            else:
                self._final(key, response, on_response)
        # keys another job asked for stay that job's to record: the batch is done only
        # when each of them has an answer already (else that job downloads it again)
        rest = [k for k in keys if k not in pending]
        if len(self.journal.lookup(rest)) == len(rest):
            self._set(batch, state=BATCH_DONE)
        return retry

    def _progress(self, status: BatchStatus) -> str:
        """", 120 of 400 done, ETA 410 s" (ETA from the pace since this job began)."""
        if not status.total or status.done is None:
            return ""
        elapsed = time.monotonic() - self._started
        eta = (f", ETA {elapsed * (status.total - status.done) / status.done:.0f} s"
               if 0 < status.done < status.total and elapsed > 0 else "")
        return f", {status.done} of {status.total} done{eta}"


def answer_in_batches(provider: BatchProvider, label: str, limits: ApiLimits,
                      online: Online, pending: Mapping[str, ChatRequest], journal: Journal,
                      on_response: OnKeyResponse, reserve: Callable[[int], object]) -> None:
    """A backend's batch mode (its ``complete_batched``): run `pending` through
    `provider` with the backend's settings and online path, and log what happened."""
    model = next(iter(pending.values())).model if pending else label
    counts = BatchRunner(provider, journal, model, BatchSettings.of(limits), reserve=reserve,
                         online=online).run(pending, on_response)
    log.info("%s: %d batches submitted, %d adopted after a stop; %d answered, %d failed "
             "(%d sent again in a new batch, %d online); %d foreign and %d repeated rows "
             "ignored", label, counts.submitted, counts.adopted, counts.answered,
             counts.failed, counts.retried_batch, counts.retried_online, counts.foreign_rows,
             counts.duplicate_rows)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
