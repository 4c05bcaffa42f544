"""The request journal: never pay twice for a model call (docs/design.md principle 5).

Every completed call is written to an SQLite database the moment it returns, keyed by a
hash of everything that determines the answer (backend, backend version, model, revision,
prompt text, image hashes and where each image sits in the text, sampling parameters incl.
seed). A job killed at any point
resumes by looking its requests up first; a rerun with unchanged inputs makes zero calls.

Only successful answers are reusable. Failed or empty answers are recorded in a separate
table (for the audit trail and retry counts) and are never returned as a cached success.

The journal lives in `journal_dir` (params.yaml), outside every Snakemake/DVC output, so
neither tool deletes it when it reruns a stage. Each answer is committed on its own, the
moment it returns. SQLite in WAL mode survives SIGKILL of the writer at any point: a
transaction is either complete or absent. synchronous=NORMAL keeps a commit cheap (no
fsync per answer); only a power loss could drop the last few commits, never corrupt them.

The `calls` table counts calls *started* per model: a budget (`max_requests`) is checked
and reserved atomically across concurrent jobs before any call is made, so a run never
exceeds it (a killed job's unfinished reservations count as spent, erring on the safe
side).
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from judgebias.io.sqlitewal import connect_wal
from judgebias.models.base import ChatRequest, ChatResponse

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    request TEXT NOT NULL,
    text TEXT NOT NULL,
    logprobs TEXT NOT NULL,
    usage TEXT NOT NULL,
    finish_reason TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS calls (
    model TEXT PRIMARY KEY,
    started INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS failures (
    key TEXT NOT NULL,
    model TEXT NOT NULL,
    status TEXT NOT NULL,
    error TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS batches (
    local_id INTEGER PRIMARY KEY AUTOINCREMENT,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    state TEXT NOT NULL,
    input_sha256 TEXT NOT NULL,
    n_items INTEGER NOT NULL,
    file_id TEXT,
    batch_id TEXT,
    output_file_id TEXT,
    error_file_id TEXT,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS batch_items (
    local_id INTEGER NOT NULL,
    key TEXT NOT NULL,
    PRIMARY KEY (local_id, key)
);
CREATE TABLE IF NOT EXISTS raw_responses (
    key TEXT PRIMARY KEY,
    raw TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS exported (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    request TEXT NOT NULL,
    created REAL NOT NULL
);
"""
BATCH_FIELDS = ("local_id", "provider", "model", "state", "input_sha256", "n_items",
                "file_id", "batch_id", "output_file_id", "error_file_id", "created")
BATCH_DONE = "ingested"  # a batch whose every key has a journal row (answer or failure)


class BudgetExceeded(RuntimeError):
    """A job would make more calls than the model's `max_requests` budget allows."""


class TooManyFailures(RuntimeError):
    """More of a job's calls failed than the model's `max_failures` share accepts
    (judgebias.models.runner.check_failures): the job stops without writing its output,
    so Snakemake (or DVC) runs it again, and since only successes are journaled, the rerun
    retries exactly the failed calls."""


def request_key(request: ChatRequest, backend: str, backend_version: str = "") -> str:
    """Stable hash of everything that determines a model's answer to `request`."""
    payload: dict[str, Any] = {
        "backend": backend,
        "backend_version": backend_version,
        "model": request.model,
        "revision": request.revision,
        "prompt": request.prompt,
        "images": request.image_hashes(),
        "sampling": request.sampling.as_dict(),
    }
    if request.system:  # absent when empty, so keys of system-less requests never change
        payload["system"] = request.system
    if request.image_at:  # where the images sit (absent: after the text, the default)
        payload["image_at"] = list(request.image_at)
    blob = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def request_summary(request: ChatRequest) -> str:
    """What is stored about a request: the prompts and image hashes, never credentials."""
    return json.dumps({"model": request.model, "revision": request.revision,
                       "system": request.system, "prompt": request.prompt,
                       "images": request.image_hashes(), "image_at": list(request.image_at),
                       "sampling": request.sampling.as_dict()}, sort_keys=True)


def journal_path(journal_dir: str | Path, backend: str, model_id: str) -> Path:
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", model_id)
    return Path(journal_dir) / backend / f"{safe}.sqlite"


class Journal:
    """An append-only store of model responses, safe for concurrent jobs and kill -9."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = connect_wal(self.path, timeout_s=120, isolation_level=None)
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _by_keys(self, select: str, keys: Iterable[str], order: str = ""
                 ) -> Iterator[tuple[Any, ...]]:
        """The rows of ``SELECT ... FROM ... WHERE key IN (keys)`` (`select` up to its
        WHERE), each key once, in chunks of 500 (SQLite's variable limit)."""
        keys = list(dict.fromkeys(keys))
        for start in range(0, len(keys), 500):
            chunk = keys[start:start + 500]
            yield from self._db.execute(
                f"{select} WHERE key IN ({','.join('?' * len(chunk))}) {order}", chunk)

    def lookup(self, keys: Iterable[str]) -> dict[str, ChatResponse]:
        """The journaled successful responses among `keys`."""
        return {key: ChatResponse(text=text, tokens=ChatResponse.tokens_from_json(logprobs),
                                  usage=json.loads(usage), finish_reason=finish)
                for key, text, logprobs, usage, finish in self._by_keys(
                    "SELECT key, text, logprobs, usage, finish_reason FROM responses", keys)}

    def record(self, key: str, request: ChatRequest, response: ChatResponse) -> None:
        """Commit one answer: a success as reusable, anything else as a failure."""
        with self._db:
            self._write(key, request.model, request_summary(request), response)

    def record_many(self, answers: Iterable[tuple[str, str, str, ChatResponse]]) -> None:
        """Commit (key, model, request summary, response) rows in one transaction: all or
        none, as a kill leaves it (an import of answers written elsewhere writes chunks of
        them: judgebias.exchange)."""
        with self._db:
            for key, model, summary, response in answers:
                self._write(key, model, summary, response)

    def _write(self, key: str, model: str, summary: str, response: ChatResponse) -> None:
        now = time.time()
        if response.ok:
            self._db.execute(
                "INSERT OR IGNORE INTO responses VALUES (?,?,?,?,?,?,?,?)",
                (key, model, summary, response.text, response.logprobs_json(),
                 json.dumps(response.usage), response.finish_reason, now))
            if response.raw:  # a table of its own: journals written before it stay valid
                self._db.execute("INSERT OR IGNORE INTO raw_responses VALUES (?,?)",
                                 (key, response.raw))
        else:
            self._db.execute("INSERT INTO failures VALUES (?,?,?,?,?)",
                             (key, model, response.status, response.error, now))

    def failures_of(self, keys: Iterable[str]) -> dict[str, list[ChatResponse]]:
        """Every failure recorded for each of `keys` that has one, oldest first, as the
        responses a job saw (status and reason kept)."""
        found: dict[str, list[ChatResponse]] = {}
        for key, status, error in self._by_keys("SELECT key, status, error FROM failures",
                                                keys, "ORDER BY rowid"):
            found.setdefault(key, []).append(ChatResponse(text="", status=status, error=error))
        return found

    # -- requests answered elsewhere (judgebias.exchange) -----------------------------------

    def mark_exported(self, requests: Iterable[tuple[str, ChatRequest]]) -> None:
        """Record (key, request) pairs as written out for answering elsewhere, with what
        the journal keeps of a request, so an imported answer is journaled as if called."""
        now = time.time()
        with self._db:
            self._db.executemany(
                "INSERT OR IGNORE INTO exported VALUES (?,?,?,?)",
                [(key, request.model, request_summary(request), now)
                 for key, request in requests])

    def exported(self, keys: Iterable[str]) -> dict[str, tuple[str, str]]:
        """key -> (model, request summary) of the `keys` ever exported from this journal."""
        return {key: (model, summary) for key, model, summary in self._by_keys(
            "SELECT key, model, request FROM exported", keys)}

    def unanswered_exports(self) -> dict[str, int]:
        """model -> how many of its exported requests have no answer yet."""
        return dict(self._db.execute(
            "SELECT model, COUNT(*) FROM exported WHERE key NOT IN (SELECT key FROM "
            "responses) GROUP BY model"))

    def raw(self, key: str) -> str | None:
        """The provider's raw answer journaled with the answer of `key`, if it kept one
        (ChatResponse.raw)."""
        row = self._db.execute("SELECT raw FROM raw_responses WHERE key=?", (key,)).fetchone()
        return row[0] if row else None

    def calls_started(self, model: str) -> int:
        row = self._db.execute("SELECT started FROM calls WHERE model=?", (model,)).fetchone()
        return row[0] if row else 0

    def reserve_calls(self, model: str, n: int, limit: int | None) -> int:
        """Atomically reserve `n` new calls of `model` under `limit`; returns the number
        started before. Raises BudgetExceeded (and reserves nothing) if it would exceed."""
        with self._db:
            self._db.execute("BEGIN IMMEDIATE")
            started = self.calls_started(model)
            if limit is not None and started + n > limit:
                raise BudgetExceeded(
                    f"{model}: {n} new calls would exceed the budget max_requests={limit} "
                    f"({started} already made); nothing was called. Raise the budget or "
                    "run `judgebias plan` to see what is still needed.")
            self._db.execute("INSERT INTO calls VALUES (?, ?) ON CONFLICT(model) "
                             "DO UPDATE SET started = started + ?", (model, n, n))
        return started

    def count(self) -> int:
        return self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    # -- provider batches (judgebias.models.batch) ------------------------------------------

    def open_batch(self, provider: str, model: str, keys: list[str], input_sha256: str
                   ) -> int:
        """Record a batch and the keys it carries *before* anything is sent to the
        provider (state ``uploading``), in one transaction; its local id."""
        with self._db:
            cursor = self._db.execute(
                "INSERT INTO batches (provider, model, state, input_sha256, n_items, "
                "created) VALUES (?,?,?,?,?,?)",
                (provider, model, "uploading", input_sha256, len(keys), time.time()))
            local_id = int(cursor.lastrowid or 0)
            self._db.executemany("INSERT INTO batch_items VALUES (?, ?)",
                                 [(local_id, k) for k in keys])
        return local_id

    def update_batch(self, local_id: int, **fields: str | None) -> None:
        """Set a batch's state and provider ids, committed at once."""
        unknown = set(fields) - set(BATCH_FIELDS[3:])
        if unknown:
            raise KeyError(f"batches has no columns {sorted(unknown)}")
        names = ", ".join(f"{name}=?" for name in fields)
        with self._db:
            self._db.execute(f"UPDATE batches SET {names} WHERE local_id=?",
                             (*fields.values(), local_id))

    def live_batches(self, provider: str, model: str) -> list[dict[str, Any]]:
        """The model's batches not yet ingested, oldest first, as dicts of BATCH_FIELDS."""
        rows = self._db.execute(
            f"SELECT {', '.join(BATCH_FIELDS)} FROM batches WHERE provider=? AND model=? "
            "AND state != ? ORDER BY local_id", (provider, model, BATCH_DONE))
        return [dict(zip(BATCH_FIELDS, row, strict=True)) for row in rows]

    def batch_ids(self, provider: str, model: str) -> set[str]:
        """The provider ids of every batch of the model this journal recorded, ingested
        ones included: a provider whose batches carry no tag of ours tells its own batches
        from a stopped job's by them (judgebias.models.anthropic_batch)."""
        return {i for (i,) in self._db.execute(
            "SELECT batch_id FROM batches WHERE provider=? AND model=? AND batch_id IS NOT "
            "NULL", (provider, model))}

    def batch_keys(self, local_id: int) -> list[str]:
        return [k for (k,) in self._db.execute(
            "SELECT key FROM batch_items WHERE local_id=? ORDER BY rowid", (local_id,))]

    def failure_count(self) -> int:
        return self._db.execute("SELECT COUNT(*) FROM failures").fetchone()[0]
