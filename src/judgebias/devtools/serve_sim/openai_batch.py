"""OpenAI's Files and Batch APIs on serve-sim (issue 23, item 3; specs/batch.md §1).

Why: batch mode is half the price at the papers' scale, and its client (upload, create,
poll, download, match by ``custom_id``, resume after a kill) can only be tested honestly
against a server that speaks the wire the ``openai`` SDK speaks. Routes, as the SDK calls
them (openai-python ``resources/files.py``, ``resources/batches.py``):

* ``POST /v1/files`` (multipart: ``file``, ``purpose``), ``GET /v1/files[?purpose=]``,
  ``GET /v1/files/{id}``, ``GET /v1/files/{id}/content``;
* ``POST /v1/batches`` (``input_file_id``, ``endpoint``, ``completion_window``,
  ``metadata``), ``GET /v1/batches[?after=&limit=]``, ``GET /v1/batches/{id}``,
  ``POST /v1/batches/{id}/cancel``.

A batch is ``validating`` when created; its input is checked then (the JSONL lines, a
unique ``custom_id`` each, ``method`` POST, the batch's ``url``, one model per file), and
a bad file ends it ``failed`` with ``errors.data`` naming the line, as OpenAI does. A good
one is ``in_progress`` until ``completion_s`` seconds after creation (0: at the first
retrieve); then every line is answered exactly as ``POST /v1/chat/completions`` answers
its ``body`` (the same sim answer, bit for bit), each answered line counted in the
server's stats as outcome ``batch`` for its model (what a test reads to prove a request
was paid for once), and the batch is ``completed``: an output file with one line per
answered request (``{"id", "custom_id", "response": {"status_code", "request_id",
"body"}, "error": null}``, in *reverse* input order, so a client that matches by
position and not by ``custom_id`` fails its test) and an error file with the rejected
ones (status 4xx and the error body, as online). Cancelling before completion answers
nothing: ``cancelled``, no output file.

Faults (:class:`judgebias.devtools.serve_sim.faults.BatchFaults`): lines failing inside
the batch, expiry with the unfinished lines as ``batch_expired`` errors, output rows lost,
duplicated, or for keys never sent, and a reply held back after its action (the moment a
test kills the client). With a ``state_dir`` every file and batch is kept on
disk the moment it changes, so a server restarted on the same folder (a provider outage
mid-batch) knows every batch and file, and a live batch goes on where it was.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP
from pathlib import Path
from typing import Any

from judgebias.devtools.serve_sim.batch_store import (
    NOT_JSON,
    BatchStore,
    first,
    jsonl,
    with_row_faults,
)
from judgebias.devtools.serve_sim.faults import BatchFaults
from judgebias.devtools.serve_sim.openai_wire import openai_error
from judgebias.devtools.serve_sim.wire import Reply

ENDPOINT = "/v1/chat/completions"
WINDOW = "24h"
MAX_BATCH_REQUESTS = 50_000  # OpenAI's per-batch limit (specs/batch.md §1)
ANSWERED = "batch"  # the stats outcome of a line answered in a batch


@dataclass
class StoredFile:
    id: str
    filename: str
    purpose: str
    content: bytes
    created_at: int

    def record(self) -> dict[str, Any]:
        return {"id": self.id, "object": "file", "bytes": len(self.content),
                "created_at": self.created_at, "filename": self.filename,
                "purpose": self.purpose, "status": "processed"}


@dataclass
class Batch:
    id: str
    input_file_id: str
    metadata: dict[str, str] | None
    created_at: float
    lines: list[dict[str, Any]] = field(default_factory=list)
    status: str = "validating"
    errors: list[dict[str, Any]] = field(default_factory=list)
    output_file_id: str | None = None
    error_file_id: str | None = None
    completed: int = 0
    failed: int = 0
    finished_at: int | None = None

    def record(self) -> dict[str, Any]:
        return {
            "id": self.id, "object": "batch", "endpoint": ENDPOINT,
            "input_file_id": self.input_file_id, "completion_window": WINDOW,
            "status": self.status, "created_at": int(self.created_at),
            "output_file_id": self.output_file_id, "error_file_id": self.error_file_id,
            "errors": {"object": "list", "data": self.errors} if self.errors else None,
            "completed_at": self.finished_at if self.status == "completed" else None,
            "expired_at": self.finished_at if self.status == "expired" else None,
            "failed_at": self.finished_at if self.status == "failed" else None,
            "cancelled_at": self.finished_at if self.status == "cancelled" else None,
            "request_counts": {"total": len(self.lines), "completed": self.completed,
                               "failed": self.failed},
            "metadata": self.metadata,
        }


class OpenAIBatches(BatchStore[StoredFile, Batch]):
    """The files and batches one server holds, and their routes (module docstring).

    `answer(body) -> Reply` is the server's online chat answer for a request body;
    `count(model)` records one batch-answered request in the server's stats.
    """

    def __init__(self, answer: Callable[[bytes], Reply], count: Callable[[str | None], None],
                 completion_s: float = 0.0, faults: BatchFaults | None = None,
                 seed: int = 0, state_dir: Path | None = None) -> None:
        super().__init__(StoredFile, Batch, faults, seed, state_dir)
        self.answer = answer
        self.count = count
        self.completion_s = float(completion_s)

    # -- routing ------------------------------------------------------------------------

    def route(self, method: str, path: str, query: str, body: bytes, content_type: str
              ) -> Reply | None:
        """The reply to a files or batches request, or None if `path` is not one; held
        back first where a fault says so (:meth:`_hold`)."""
        reply = self._route(method, path, query, body, content_type)
        parts = path.strip("/").split("/")
        action = {("POST", 2, "files"): "upload", ("POST", 2, "batches"): "create",
                  ("GET", 3, "batches"): "retrieve", ("GET", 4, "files"): "content"}.get(
            (method, len(parts), parts[1] if len(parts) > 1 else ""))
        if reply is not None and action is not None:
            self._hold(action)
        return reply

    def _route(self, method: str, path: str, query: str, body: bytes, content_type: str
               ) -> Reply | None:
        parts = path.strip("/").split("/")
        if parts[:2] == ["v1", "files"]:
            if len(parts) == 2:
                return (self.upload(body, content_type) if method == "POST"
                        else self.list_files(query))
            if len(parts) == 3 and method == "GET":
                return self._with_file(parts[2], lambda f: Reply(200, f.record()))
            if len(parts) == 4 and parts[3] == "content" and method == "GET":
                return self._with_file(parts[2], lambda f: Reply(
                    200, {}, raw=f.content, content_type="application/jsonl"))
        if parts[:2] == ["v1", "batches"]:
            if len(parts) == 2:
                return self.create(body) if method == "POST" else self.list_batches(query)
            if len(parts) == 3 and method == "GET":
                return self._with_batch(parts[2], self.retrieve)
            if len(parts) == 4 and parts[3] == "cancel" and method == "POST":
                return self._with_batch(parts[2], self.cancel)
        return None

    def _missing(self, kind: str, name: str) -> Reply:
        return Reply(404, openai_error(404, f"No such File object: {name}" if kind == "file"
                                       else f"No batch found with id '{name}'."))

    # -- files ----------------------------------------------------------------------------

    def upload(self, body: bytes, content_type: str) -> Reply:
        """``files.create``: the multipart form's ``file`` and ``purpose``."""
        fields = _multipart(body, content_type)
        if "file" not in fields or "purpose" not in fields:
            return Reply(400, openai_error(400, "'file' and 'purpose' are required",
                                           param="file"))
        filename, content = fields["file"]
        with self._lock:
            stored = StoredFile(self._new_id("file-"), filename or "upload.jsonl",
                                fields["purpose"][1].decode(), content, int(time.time()))
            self.files[stored.id] = stored
            self._save(stored)
        return Reply(200, stored.record())

    def list_files(self, query: str) -> Reply:
        purpose = first(query, "purpose")
        data = [f.record() for f in self.files.values()
                if purpose is None or f.purpose == purpose]
        return Reply(200, {"object": "list", "data": data, "has_more": False})

    def _store(self, filename: str, lines: list[dict[str, Any]]) -> str:
        content = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
        stored = StoredFile(self._new_id("file-"), filename, "batch_output", content,
                            int(time.time()))
        self.files[stored.id] = stored
        self._save(stored)
        return stored.id

    # -- batches --------------------------------------------------------------------------

    def create(self, body: bytes) -> Reply:
        """``batches.create``: checks the request, then validates the input file."""
        try:
            request = json.loads(body)
        except ValueError:
            return Reply(400, openai_error(400, "request body is not valid JSON"))
        if not isinstance(request, dict):
            return Reply(400, openai_error(400, "request body must be a JSON object"))
        for name, wanted in (("endpoint", ENDPOINT), ("completion_window", WINDOW)):
            if request.get(name) != wanted:
                return Reply(400, openai_error(
                    400, f"'{name}' must be {wanted!r} here, got {request.get(name)!r}",
                    param=name))
        source = self.files.get(str(request.get("input_file_id")))
        if source is None or source.purpose != "batch":
            return Reply(400, openai_error(
                400, f"input_file_id {request.get('input_file_id')!r} is not an uploaded "
                "batch file", param="input_file_id"))
        metadata = request.get("metadata")
        with self._lock:
            batch = Batch(self._new_id("batch-"), source.id, metadata, time.time())
            batch.lines, batch.errors = _validated(source.content)
            if batch.errors:
                batch.status, batch.finished_at = "failed", int(time.time())
            self.batches[batch.id] = batch
            self._save(batch)
        return Reply(200, batch.record())

    def list_batches(self, query: str) -> Reply:
        """``batches.list``: newest first, paged by ``after`` (an id) and ``limit``."""
        limit = min(100, int(first(query, "limit") or 20))
        ordered = sorted(self.batches.values(), key=lambda b: b.created_at, reverse=True)
        if after := first(query, "after"):
            ids = [b.id for b in ordered]
            ordered = ordered[ids.index(after) + 1:] if after in ids else []
        page = ordered[:limit]
        return Reply(200, {"object": "list", "data": [b.record() for b in page],
                           "first_id": page[0].id if page else None,
                           "last_id": page[-1].id if page else None,
                           "has_more": len(ordered) > limit})

    def retrieve(self, batch: Batch) -> Reply:
        """``batches.retrieve``: moves a live batch on (module docstring)."""
        with self._lock:
            if batch.status == "validating":
                batch.status = "in_progress"
            if (batch.status == "in_progress"
                    and time.time() - batch.created_at >= self.completion_s):
                self._complete(batch)
            self._save(batch)
        return Reply(200, batch.record())

    def cancel(self, batch: Batch) -> Reply:
        with self._lock:
            if batch.status in ("validating", "in_progress"):
                batch.status, batch.finished_at = "cancelled", int(time.time())
                self._save(batch)
        return Reply(200, batch.record())

    def _complete(self, batch: Batch) -> None:
        """Answer the lines as the online route does, acting out the faults; write the
        output and error files (module docstring)."""
        faults = self.faults
        rng = self._rng(batch.id)
        n = len(batch.lines)
        unfinished = round(faults.expire_share * n)
        failing = set(rng.sample(range(n - unfinished),
                                 round(faults.fail_share * (n - unfinished))))
        answered: list[dict[str, Any]] = []
        rejected: list[dict[str, Any]] = []
        for index, line in enumerate(batch.lines):
            key = line["custom_id"]
            if index >= n - unfinished:
                rejected.append(_error_row(key, "batch_expired",
                                           "This request could not be executed before the "
                                           "completion window expired."))
            elif index in failing:
                rejected.append(_error_row(key, "server_error",
                                           "The server had an error processing the request."))
            else:
                reply = self.answer(json.dumps(line["body"]).encode())
                row = {"id": f"batch_req_{key}", "custom_id": key, "error": None,
                       "response": {"status_code": reply.status,
                                    "request_id": f"req-{batch.id}-{index}",
                                    "body": reply.body}}
                if reply.status == 200:
                    self.count(reply.model)
                    answered.append(row)
                else:
                    rejected.append(row)
        batch.completed, batch.failed = len(answered), len(rejected)
        output = with_row_faults(answered[::-1], faults, rng, _foreign)
        if output:
            batch.output_file_id = self._store(f"{batch.id}_output.jsonl", output)
        if rejected:
            batch.error_file_id = self._store(f"{batch.id}_error.jsonl", rejected)
        batch.status = "expired" if unfinished else "completed"
        batch.finished_at = int(time.time())


def _foreign(template: dict[str, Any], key: str) -> dict[str, Any]:
    """An output row for a ``custom_id`` the batch never held (a row fault)."""
    return {"response": None, "error": None, **template,
            "id": f"batch_req_{key.replace('-', '')}", "custom_id": key}


def _error_row(key: str, code: str, message: str) -> dict[str, Any]:
    """An error-file row of a request that never got an HTTP response."""
    return {"id": f"batch_req_{key}", "custom_id": key, "response": None,
            "error": {"code": code, "message": message}}


def _validated(content: bytes) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The input file's request lines, or OpenAI-style errors naming the bad line."""
    lines: list[dict[str, Any]] = []
    errors: list[dict[str, Any]] = []
    seen: set[str] = set()
    models: set[str] = set()
    for number, line in jsonl(content):
        if line is NOT_JSON:
            errors.append(_line_error(number, "invalid_json", "line is not valid JSON"))
            continue
        problem = _line_problem(line, seen)
        if problem:
            errors.append(_line_error(number, *problem))
            continue
        seen.add(line["custom_id"])
        models.add(str(line["body"].get("model")))
        lines.append(line)
    if len(models) > 1:
        errors.append(_line_error(None, "mismatched_model",
                                  f"a batch file holds one model, this one {sorted(models)}"))
    if len(lines) > MAX_BATCH_REQUESTS:
        errors.append(_line_error(None, "too_many_requests",
                                  f"{len(lines)} requests; a batch takes at most "
                                  f"{MAX_BATCH_REQUESTS}"))
    if not lines and not errors:
        errors.append(_line_error(None, "empty_file", "the input file has no request"))
    return lines, errors


def _line_problem(line: Any, seen: set[str]) -> tuple[str, str] | None:
    if not isinstance(line, dict):
        return "invalid_request", "line is not a JSON object"
    custom_id = line.get("custom_id")
    if not isinstance(custom_id, str) or not custom_id:
        return "missing_custom_id", "custom_id is required"
    if custom_id in seen:
        return "duplicate_custom_id", f"custom_id {custom_id!r} appears more than once"
    if line.get("method") != "POST":
        return "invalid_method", "method must be POST"
    if line.get("url") != ENDPOINT:
        return "invalid_url", f"url must be {ENDPOINT}"
    if not isinstance(line.get("body"), dict):
        return "invalid_body", "body must be a JSON object"
    return None


def _line_error(number: int | None, code: str, message: str) -> dict[str, Any]:
    return {"code": code, "line": number, "message": message, "param": None}


def _multipart(body: bytes, content_type: str) -> dict[str, tuple[str | None, bytes]]:
    """The parts of a ``multipart/form-data`` body, by field name: (filename, bytes)."""
    message = BytesParser(policy=HTTP).parsebytes(
        f"Content-Type: {content_type}\r\n\r\n".encode() + body)
    out: dict[str, tuple[str | None, bytes]] = {}
    if not message.is_multipart():
        return out
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if isinstance(name, str):
            payload = part.get_payload(decode=True)
            out[name] = (part.get_filename(), payload if isinstance(payload, bytes) else b"")
    return out
