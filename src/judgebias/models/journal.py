"""The request journal: never pay twice for a model call (DESIGN.md principle 5).

Every completed call is written to an SQLite database the moment it returns, keyed by a
hash of everything that determines the answer (backend, backend version, model, revision,
prompt text, image hashes, sampling parameters incl. seed). A job killed at any point
resumes by looking its requests up first; a rerun with unchanged inputs makes zero calls.

Only successful answers are reusable. Failed or empty answers are recorded in a separate
table (for the audit trail and retry counts) and are never returned as a cached success.

The journal lives in `journal_dir` (params.yaml), outside every Snakemake/DVC output, so
neither tool deletes it when it reruns a stage. SQLite in WAL mode with synchronous=FULL
survives SIGKILL: a transaction is either durable or absent.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

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
CREATE TABLE IF NOT EXISTS failures (
    key TEXT NOT NULL,
    model TEXT NOT NULL,
    status TEXT NOT NULL,
    error TEXT NOT NULL,
    created REAL NOT NULL
);
"""


def request_key(request: ChatRequest, backend: str, backend_version: str = "") -> str:
    """Stable hash of everything that determines a model's answer to `request`."""
    payload = {
        "backend": backend,
        "backend_version": backend_version,
        "model": request.model,
        "revision": request.revision,
        "prompt": request.prompt,
        "images": request.image_hashes(),
        "sampling": request.sampling.as_dict(),
    }
    blob = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def request_summary(request: ChatRequest) -> str:
    """What is stored about a request: the prompt and image hashes, never credentials."""
    return json.dumps({"model": request.model, "revision": request.revision,
                       "prompt": request.prompt, "images": request.image_hashes(),
                       "sampling": request.sampling.as_dict()}, sort_keys=True)


def journal_path(journal_dir: str | Path, backend: str, model_id: str) -> Path:
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", model_id)
    return Path(journal_dir) / backend / f"{safe}.sqlite"


class Journal:
    """An append-only store of model responses, safe for concurrent jobs and kill -9."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, timeout=120, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def lookup(self, keys: Iterable[str]) -> dict[str, ChatResponse]:
        """The journaled successful responses among `keys`."""
        found: dict[str, ChatResponse] = {}
        keys = list(dict.fromkeys(keys))
        for start in range(0, len(keys), 500):
            chunk = keys[start:start + 500]
            rows = self._db.execute(
                "SELECT key, text, logprobs, usage, finish_reason FROM responses "
                f"WHERE key IN ({','.join('?' * len(chunk))})", chunk)
            for key, text, logprobs, usage, finish in rows:
                found[key] = ChatResponse(text=text,
                                          tokens=ChatResponse.tokens_from_json(logprobs),
                                          usage=json.loads(usage), finish_reason=finish)
        return found

    def record(self, items: Sequence[tuple[str, ChatRequest, ChatResponse]]) -> None:
        """Durably store a batch of answers: successes as reusable, the rest as failures."""
        now = time.time()
        with self._db:
            self._db.execute("BEGIN IMMEDIATE")
            for key, request, response in items:
                if response.ok:
                    self._db.execute(
                        "INSERT OR IGNORE INTO responses VALUES (?,?,?,?,?,?,?,?)",
                        (key, request.model, request_summary(request), response.text,
                         response.logprobs_json(), json.dumps(response.usage),
                         response.finish_reason, now))
                else:
                    self._db.execute("INSERT INTO failures VALUES (?,?,?,?,?)",
                                     (key, request.model, response.status, response.error,
                                      now))

    def count(self) -> int:
        return self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    def failure_count(self) -> int:
        return self._db.execute("SELECT COUNT(*) FROM failures").fetchone()[0]
