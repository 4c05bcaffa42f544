"""Gemini's batch mode on serve-sim: the Files API and the batches API (issue 23, item 3;
specs/batch.md §2).

Why: Gemini's batch mode is half the price at the papers' scale, and its client (upload,
create, poll, download, match by ``key``, resume after a kill) can only be tested honestly
against a server that speaks the wire the ``google-genai`` SDK speaks. Routes, as the SDK
(3.x ``files.py``, ``batches.py``, ``_api_client.py``) calls them, under ``v1`` (its
default; there ``/v1/files`` and ``/v1/batches`` are Gemini's when the request carries a
Gemini key, else OpenAI's), ``v1beta`` or ``v1alpha`` (``v1beta`` below):

* ``POST /upload/v1beta/files`` with ``X-Goog-Upload-Protocol: resumable`` and
  ``X-Goog-Upload-Command: start`` (body ``{"file": {"displayName", "mimeType"}}``, size
  in ``X-Goog-Upload-Header-Content-Length``) answers an ``x-goog-upload-url``; each
  ``POST`` there (``X-Goog-Upload-Command: upload`` or ``upload, finalize``, at
  ``X-Goog-Upload-Offset``) adds a chunk; the finalizing one answers ``{"file": File}``
  with ``x-goog-upload-status: final``. The upload URL carries an unguessable
  ``upload_id`` and is the only credential its chunks need (the SDK sends them without
  the API key, as Google's upload URLs allow);
* ``GET v1beta/files[?pageSize=&pageToken=]``, ``GET`` / ``DELETE v1beta/files/{id}``;
  ``GET v1beta/files/{id}:download?alt=media`` (and ``/download/v1beta/...``, the older
  SDKs' path): a generated file's bytes; an uploaded file cannot be downloaded, as on
  Gemini, so a client checks an upload by its ``sha256Hash`` (base64 of the hex digest,
  as Gemini sends it: googleapis/js-genai#381);
* ``POST v1beta/models/{model}:batchGenerateContent`` with
  ``{"batch": {"displayName", "inputConfig": {"fileName": "files/…"}}}`` (a JSONL file of
  ``{"key", "request"}`` lines) or ``{"inputConfig": {"requests": {"requests":
  [{"request", "metadata"}]}}}`` (inline, under 20 MB);
* ``GET v1beta/batches/{id}``, ``GET v1beta/batches[?pageSize=&pageToken=]``
  (``{"operations", "nextPageToken"}``), ``POST v1beta/batches/{id}:cancel``,
  ``DELETE v1beta/batches/{id}``.

A batch is ``BATCH_STATE_PENDING`` when created, ``RUNNING`` from its first poll, and
``SUCCEEDED`` at the first poll ``completion_s`` seconds after creation (0: the first).
Then every line is answered exactly as ``POST …:generateContent`` answers its
``request`` (the same sim answer, bit for bit), each answered line counted in the
server's stats as outcome ``batch`` for its model (what a test reads to prove a request
was paid for once). The responses file (``metadata.output.responsesFile``) holds a row per
line: ``{"key", "response": GenerateContentResponse}``, or ``{"key", "error": {"code",
"message", "status"}}`` where the online route would have refused the request (an unknown
model, log-probs a model does not offer), in *reverse* input order, so a client that
matches by position and not by ``key`` fails its test; inline requests answer in
``inlinedResponses`` with their ``metadata``. A file that is not JSONL of ``{"key",
"request"}`` objects (or repeats a key) ends the batch ``BATCH_STATE_FAILED``, its
``error`` naming the line. A cancelled batch answers nothing (``CANCELLED``, no output).

Faults (:class:`judgebias.devtools.serve_sim.faults.BatchFaults`, as for OpenAI): a
``fail_share`` of the lines fail inside the batch (a ``{"key", "status": {"code": 13,
…}}`` row: an internal error, as a ``google.rpc.Status``); ``expire_share`` > 0 (at least
one line of the batch left unfinished) ends the job ``BATCH_STATE_EXPIRED`` with **no
results at all**, nothing answered or counted (Gemini's expiry, unlike OpenAI's, keeps
nothing); output rows lost, repeated, or for keys never sent. Reassigning
:attr:`GeminiBatches.faults` changes the faults of batches that complete from then on.
With a ``state_dir`` every file and batch is kept on disk (under ``gemini/``) the moment
it changes, so a server restarted on the same folder knows them and a live batch goes on
where it was (an upload in progress is not kept: its client starts it again).
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.message import Message
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
from judgebias.devtools.serve_sim.gemini_wire import gemini_error, model_method
from judgebias.devtools.serve_sim.wire import Reply

VERSIONS = ("v1", "v1beta", "v1alpha")
MAX_FILE_BYTES = 2 * 1024**3  # per file (specs/batch.md §2)
MAX_INLINE_BYTES = 20 * 1024**2  # a create request with inline requests
FILE_TTL_S = 48 * 3600  # files are deleted 48 h after upload (reported, not enforced)
PENDING, RUNNING, SUCCEEDED, FAILED, CANCELLED, EXPIRED = (
    f"BATCH_STATE_{s}" for s in ("PENDING", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED",
                                 "EXPIRED"))
LIVE = (PENDING, RUNNING)
INTERNAL = {"code": 13, "message": "Internal error encountered. (simulated by serve-sim)"}
_BATCH_TYPE = "type.googleapis.com/google.ai.generativelanguage.v1beta.GenerateContentBatch"


@dataclass
class StoredFile:
    """A file of the Files API: uploaded (a batch's input) or generated (its results)."""

    id: str
    display_name: str | None
    mime_type: str
    content: bytes
    created_at: float
    source: str = "UPLOADED"  # or GENERATED

    def record(self, base: str) -> dict[str, Any]:
        """The ``File`` resource as the API sends it (int64 as a string, RFC 3339)."""
        name = f"files/{self.id}"
        out: dict[str, Any] = {
            "name": name, "mimeType": self.mime_type, "sizeBytes": str(len(self.content)),
            "createTime": _rfc3339(self.created_at), "updateTime": _rfc3339(self.created_at),
            "expirationTime": _rfc3339(self.created_at + FILE_TTL_S),
            "sha256Hash": base64.b64encode(
                hashlib.sha256(self.content).hexdigest().encode()).decode(),
            "uri": f"{base}/v1beta/{name}", "state": "ACTIVE", "source": self.source}
        if self.display_name:
            out["displayName"] = self.display_name
        if self.source == "GENERATED":
            out["downloadUri"] = f"{base}/download/v1beta/{name}:download?alt=media"
        return out


@dataclass
class Batch:
    """A batch job: its requests (``{"key", "request", "metadata"}`` each), state and
    results."""

    id: str
    model: str
    display_name: str | None
    created_at: float
    input_file: str | None  # "files/…", or None for inline requests
    lines: list[dict[str, Any]] = field(default_factory=list)
    state: str = PENDING
    error: dict[str, Any] | None = None
    responses_file: str | None = None
    inlined: list[dict[str, Any]] | None = None
    succeeded: int = 0
    failed: int = 0
    updated_at: float = 0.0
    ended_at: float | None = None

    def record(self) -> dict[str, Any]:
        """The batch as an operation: ``{"name", "metadata": GenerateContentBatch,
        "done", "error" | "response"}``."""
        name = f"batches/{self.id}"
        metadata: dict[str, Any] = {
            "@type": _BATCH_TYPE, "name": name, "model": f"models/{self.model}",
            "state": self.state, "createTime": _rfc3339(self.created_at),
            "updateTime": _rfc3339(self.updated_at or self.created_at),
            "inputConfig": ({"fileName": self.input_file} if self.input_file
                            else {"requests": {}}),  # inline requests are not echoed
            "batchStats": {"requestCount": str(len(self.lines)),
                           "successfulRequestCount": str(self.succeeded),
                           "failedRequestCount": str(self.failed),
                           "pendingRequestCount": str(len(self.lines) if self.state in LIVE
                                                      else 0)}}
        if self.display_name:
            metadata["displayName"] = self.display_name
        if self.ended_at is not None:
            metadata["endTime"] = _rfc3339(self.ended_at)
        output: dict[str, Any] = {}
        if self.responses_file:
            output = {"responsesFile": self.responses_file}
        elif self.inlined is not None:
            output = {"inlinedResponses": {"inlinedResponses": self.inlined}}
        if output:
            metadata["output"] = output
        out: dict[str, Any] = {"name": name, "metadata": metadata,
                               "done": self.state not in LIVE}
        if self.error:
            out["error"] = self.error
        elif output:
            out["response"] = {"@type": _BATCH_TYPE + "Output", **output}
        return out


@dataclass
class _Upload:
    """A resumable upload in progress (kept in memory only)."""

    display_name: str | None
    mime_type: str
    size: int
    data: bytearray = field(default_factory=bytearray)


class GeminiBatches(BatchStore[StoredFile, Batch]):
    """The files and batches one server holds, and their routes (module docstring).

    `answer(model, body) -> Reply` is the server's online generateContent answer for a
    request body; `count(model)` records one batch-answered request in the server's
    stats; `models` are the model ids the server answers.
    """

    def __init__(self, answer: Callable[[str, bytes], Reply],
                 count: Callable[[str | None], None], models: Collection[str],
                 completion_s: float = 0.0, faults: BatchFaults | None = None,
                 seed: int = 0, state_dir: Path | None = None) -> None:
        super().__init__(StoredFile, Batch, faults, seed,
                         Path(state_dir) / "gemini" if state_dir is not None else None)
        self.answer = answer
        self.count = count
        self.models = frozenset(models)
        self.completion_s = float(completion_s)
        self._uploads: dict[str, _Upload] = {}

    # -- routing ------------------------------------------------------------------------

    @staticmethod
    def owns(method: str, path: str, gemini_key: bool) -> bool:
        """Whether a request is one of these routes (the handler then routes it here).
        ``/v1/files`` and ``/v1/batches`` are OpenAI's too (google-genai 3.x sends ``v1``
        by default): they are Gemini's when the request carries a Gemini key
        (`gemini_key`: an ``x-goog-api-key`` header or a ``key`` query parameter)."""
        parts = path.strip("/").split("/")
        transfer = parts[0] in ("upload", "download")
        if transfer:
            parts = parts[1:]
        if len(parts) < 2 or parts[0] not in VERSIONS:
            return False
        if parts[1] in ("files", "batches"):
            return transfer or parts[0] != "v1" or gemini_key
        found = model_method(path) if method == "POST" else None
        return found is not None and found[1] == "batchGenerateContent"

    def upload_session(self, query: str) -> bool:
        """Whether `query` names an upload in progress (its URL is its credential)."""
        upload_id = first(query, "upload_id")
        return upload_id is not None and upload_id in self._uploads

    def route(self, method: str, path: str, query: str, body: bytes,
              headers: Message) -> Reply | None:
        """The reply to a files or batches request, or None if `path` is not one
        (`headers`: the request's, looked up case-insensitively); held back first where
        a fault says so (BatchStore._hold)."""
        reply = self._route(method, path, query, body, headers)
        if reply is not None and (action := _action(method, path, headers)) is not None:
            self._hold(action)
        return reply

    def _route(self, method: str, path: str, query: str, body: bytes,
               headers: Message) -> Reply | None:
        base = f"http://{headers.get('Host', '127.0.0.1')}"
        parts = path.strip("/").split("/")
        if parts[:1] == ["upload"] and parts[2:] == ["files"] and method == "POST":
            if first(query, "upload_id") is not None:
                return self._upload_chunk(query, body, headers, base)
            return self._upload_start(body, headers, base)
        if parts[:1] == ["download"] and len(parts) == 4 and parts[2] == "files":
            return self._download(parts[3]) if method == "GET" else None
        if len(parts) < 2 or parts[0] not in VERSIONS:
            return None
        if method == "POST" and (found := model_method(path)) is not None:
            return self.create(found[0], body) if found[1] == "batchGenerateContent" else None
        if parts[1] == "files":
            return self._files(method, parts[2:], query, base)
        if parts[1] == "batches":
            return self._batches(method, parts[2:], query)
        return None

    def _files(self, method: str, rest: list[str], query: str, base: str) -> Reply | None:
        if not rest:
            return self.list_files(query, base) if method == "GET" else None
        if len(rest) != 1:
            return None
        name, _, verb = rest[0].partition(":")
        if verb == "download" and method == "GET":
            return self._download(rest[0])
        if verb:
            return None
        if method == "GET":
            return self._with_file(name, lambda f: Reply(200, f.record(base)))
        if method == "DELETE":
            return self._with_file(name, self._delete_file)
        return None

    def _batches(self, method: str, rest: list[str], query: str) -> Reply | None:
        if not rest:
            return self.list_batches(query) if method == "GET" else None
        if len(rest) != 1:
            return None
        name, _, verb = rest[0].partition(":")
        if verb == "cancel" and method == "POST":
            return self._with_batch(name, self.cancel)
        if verb:
            return None
        if method == "GET":
            return self._with_batch(name, self.get)
        if method == "DELETE":
            return self._with_batch(name, self._delete_batch)
        return None

    def _file_key(self, file_id: str) -> str:
        return file_id.removeprefix("files/")

    def _missing(self, kind: str, name: str) -> Reply:
        what = f"File files/{name}" if kind == "file" else f"Batch batches/{name}"
        return Reply(404, gemini_error(404, f"{what} not found."))

    # -- files ----------------------------------------------------------------------------

    def _upload_start(self, body: bytes, headers: Message, base: str) -> Reply:
        """The resumable upload's ``start``: the file's metadata; answers its upload URL."""
        if (headers.get("X-Goog-Upload-Protocol") != "resumable"
                or headers.get("X-Goog-Upload-Command") != "start"):
            return Reply(400, gemini_error(400, "a resumable upload starts with "
                                                "X-Goog-Upload-Protocol: resumable and "
                                                "X-Goog-Upload-Command: start"))
        try:
            meta = json.loads(body or b"{}").get("file") or {}
            size = int(headers.get("X-Goog-Upload-Header-Content-Length", ""))
        except (ValueError, AttributeError):
            return Reply(400, gemini_error(400, "bad upload start: a JSON {'file': {...}} "
                                                "body and X-Goog-Upload-Header-Content-"
                                                "Length are required"))
        if not 0 <= size <= MAX_FILE_BYTES:
            return Reply(400, gemini_error(400, f"a file holds at most {MAX_FILE_BYTES} "
                                                f"bytes, this one {size}"))
        upload_id = secrets.token_urlsafe(18)
        with self._lock:
            self._uploads[upload_id] = _Upload(
                meta.get("displayName") or meta.get("display_name"),
                headers.get("X-Goog-Upload-Header-Content-Type")
                or meta.get("mimeType") or "application/octet-stream", size)
        url = f"{base}/upload/v1beta/files?upload_id={upload_id}&upload_protocol=resumable"
        return Reply(200, {}, headers=(("x-goog-upload-url", url),
                                       ("x-goog-upload-status", "active")))

    def _upload_chunk(self, query: str, body: bytes, headers: Message,
                      base: str) -> Reply:
        """One ``upload`` (or ``upload, finalize``) of an upload in progress. Every answer
        says ``x-goog-upload-status`` (the SDK retries a chunk answered without one)."""
        command = {c.strip() for c in headers.get("X-Goog-Upload-Command", "").split(",")}
        with self._lock:
            upload = self._uploads.get(first(query, "upload_id") or "")
            problem = None
            if upload is None:
                problem = "no upload in progress has this upload_id"
            elif "upload" not in command:
                problem = "X-Goog-Upload-Command must be 'upload' or 'upload, finalize'"
            elif headers.get("X-Goog-Upload-Offset") != str(len(upload.data)):
                problem = (f"X-Goog-Upload-Offset {headers.get('X-Goog-Upload-Offset')!r} "
                           f"is not the bytes received so far ({len(upload.data)})")
            elif len(upload.data) + len(body) > upload.size:
                problem = f"more bytes than the {upload.size} announced"
            if problem is not None or upload is None:
                return Reply(400, gemini_error(400, f"upload: {problem}"),
                             headers=(("x-goog-upload-status", "final"),))
            upload.data += body
            if "finalize" not in command:
                return Reply(200, {}, headers=(("x-goog-upload-status", "active"),))
            del self._uploads[first(query, "upload_id") or ""]
            if len(upload.data) != upload.size:
                return Reply(400, gemini_error(400, f"upload: {len(upload.data)} bytes "
                                                    f"received, {upload.size} announced"),
                             headers=(("x-goog-upload-status", "final"),))
            stored = StoredFile(self._new_id(), upload.display_name, upload.mime_type,
                                bytes(upload.data), time.time())
            self.files[stored.id] = stored
            self._save(stored)
        return Reply(200, {"file": stored.record(base)},
                     headers=(("x-goog-upload-status", "final"),))

    def list_files(self, query: str, base: str) -> Reply:
        """``files.list``: newest first, paged."""
        ordered = sorted(self.files.values(), key=lambda f: f.created_at, reverse=True)
        page, token = _page(ordered, query, default=10)
        if page is None:
            return Reply(400, gemini_error(400, "bad pageToken or pageSize"))
        body: dict[str, Any] = {"files": [f.record(base) for f in page]}
        if token:
            body["nextPageToken"] = token
        return Reply(200, body)

    def _download(self, name: str) -> Reply:
        """``files.download``: a generated file's bytes (an uploaded one's are refused)."""
        file_id, _, verb = name.partition(":")
        if verb != "download":
            return Reply(404, gemini_error(404, f"No route for {name}"))

        def send(found: StoredFile) -> Reply:
            if found.source != "GENERATED":
                return Reply(400, gemini_error(
                    400, f"files/{found.id} was uploaded: only generated files can be "
                    "downloaded"))
            return Reply(200, {}, raw=found.content, content_type="application/jsonl")

        return self._with_file(file_id, send)

    def _delete_file(self, found: StoredFile) -> Reply:
        with self._lock:
            self.files.pop(found.id, None)
            self._forget(found)
        return Reply(200, {})

    def _store(self, display_name: str, rows: list[dict[str, Any]]) -> str:
        content = b"".join(json.dumps(row).encode() + b"\n" for row in rows)
        stored = StoredFile(self._new_id(), display_name, "application/jsonl", content,
                            time.time(), "GENERATED")
        self.files[stored.id] = stored
        self._save(stored)
        return f"files/{stored.id}"

    # -- batches --------------------------------------------------------------------------

    def create(self, model: str, body: bytes) -> Reply:
        """``batches.create``: checks the request; a bad input file fails the batch."""
        model = model.removeprefix("models/")
        if model not in self.models:
            return Reply(404, gemini_error(
                404, f"models/{model} is not found for API version v1beta, or is not "
                "supported for batchGenerateContent."), model)
        try:
            batch_request = json.loads(body).get("batch")
            source = batch_request.get("inputConfig") or batch_request.get("input_config")
            display_name = batch_request.get("displayName")
        except (ValueError, AttributeError):
            return Reply(400, gemini_error(400, "expected a JSON {'batch': {'inputConfig': "
                                                "...}} body"), model)
        if not isinstance(source, dict):
            return Reply(400, gemini_error(400, "batch.inputConfig is required"), model)
        error = None
        if (file_name := source.get("fileName")) is not None:
            found = self.files.get(str(file_name).removeprefix("files/"))
            if found is None or found.source != "UPLOADED":
                return Reply(400, gemini_error(400, f"batch.inputConfig.fileName "
                                                    f"{file_name!r} is not an uploaded "
                                                    "file"), model)
            lines, error = _file_lines(found.content)
        elif isinstance(requests := (source.get("requests") or {}).get("requests"), list):
            if len(body) > MAX_INLINE_BYTES:
                return Reply(400, gemini_error(400, f"inline requests total {len(body)} "
                                                    f"bytes; at most {MAX_INLINE_BYTES}: "
                                                    "upload a file"), model)
            lines, error = _inline_lines(requests)
            file_name = None
        else:
            return Reply(400, gemini_error(400, "batch.inputConfig needs a fileName or "
                                                "requests.requests"), model)
        with self._lock:
            batch = Batch(self._new_id(), model, display_name, time.time(),
                          str(file_name) if file_name else None, lines)
            if error is not None:
                batch.state, batch.ended_at = FAILED, time.time()
                batch.error = {"code": 400, "message": error, "status": "INVALID_ARGUMENT"}
            self.batches[batch.id] = batch
            self._save(batch)
        return Reply(200, batch.record())

    def list_batches(self, query: str) -> Reply:
        """``batches.list``: newest first, paged by ``pageToken`` and ``pageSize``."""
        ordered = sorted(self.batches.values(), key=lambda b: b.created_at, reverse=True)
        page, token = _page(ordered, query, default=50)
        if page is None:
            return Reply(400, gemini_error(400, "bad pageToken or pageSize"))
        body: dict[str, Any] = {"operations": [b.record() for b in page]}
        if token:
            body["nextPageToken"] = token
        return Reply(200, body)

    def get(self, batch: Batch) -> Reply:
        """``batches.get``: moves a live batch on (module docstring)."""
        with self._lock:
            if batch.state == PENDING:
                batch.state = RUNNING
            if batch.state == RUNNING and time.time() - batch.created_at >= self.completion_s:
                self._complete(batch)
            batch.updated_at = time.time()
            self._save(batch)
        return Reply(200, batch.record())

    def cancel(self, batch: Batch) -> Reply:
        with self._lock:
            if batch.state in LIVE:
                batch.state, batch.ended_at = CANCELLED, time.time()
                self._save(batch)
        return Reply(200, {})

    def _delete_batch(self, batch: Batch) -> Reply:
        with self._lock:
            self.batches.pop(batch.id, None)
            self._forget(batch)
        return Reply(200, {})

    def _complete(self, batch: Batch) -> None:
        """Answer the lines as the online route does, acting out the faults; write the
        responses (module docstring)."""
        faults = self.faults
        batch.ended_at = time.time()
        n = len(batch.lines)
        if round(faults.expire_share * n) > 0:  # Gemini keeps nothing of an expired job
            batch.state = EXPIRED
            return
        rng = self._rng(batch.id)
        failing = set(rng.sample(range(n), round(faults.fail_share * n)))
        answered: list[dict[str, Any]] = []
        rejected: list[dict[str, Any]] = []
        for index, line in enumerate(batch.lines):
            row: dict[str, Any] = ({"key": line["key"]} if batch.input_file else
                                   {"metadata": line["metadata"]})
            if index in failing:  # a google.rpc.Status (the SDK reads an inline one as error)
                rejected.append({**row, ("error" if "metadata" in row else "status"): INTERNAL})
                continue
            reply = self.answer(batch.model, json.dumps(line["request"]).encode())
            if reply.status == 200:
                self.count(reply.model)
                answered.append({**row, "response": reply.body})
            else:
                rejected.append({**row, "error": reply.body.get("error", reply.body)})
        batch.succeeded, batch.failed = len(answered), len(rejected)
        rows = with_row_faults(answered, faults, rng, _foreign_file if batch.input_file
                               else _foreign_inline)
        rows = (rows + rejected)[::-1]
        if batch.input_file:
            batch.responses_file = self._store(f"{batch.id}-responses", rows)
        else:
            batch.inlined = rows
        batch.state = SUCCEEDED


def _action(method: str, path: str, headers: Message) -> str | None:
    """Which held action (BatchFaults.hold) a request is: the upload's finalizing chunk
    (the file exists then), a batch create, a batch poll, a download."""
    parts = path.strip("/").split("/")
    if parts[:1] == ["upload"]:
        return "upload" if "finalize" in headers.get("X-Goog-Upload-Command", "") else None
    if parts[:1] == ["download"] or path.endswith(":download"):
        return "content" if method == "GET" else None
    if method == "POST" and path.endswith(":batchGenerateContent"):
        return "create"
    if method == "GET" and len(parts) == 3 and parts[1] == "batches" and ":" not in parts[2]:
        return "retrieve"
    return None


def _foreign_file(template: dict[str, Any], key: str) -> dict[str, Any]:
    """A responses-file row for a key the batch never held (a row fault)."""
    return {"response": {}, **template, "key": key}


def _foreign_inline(template: dict[str, Any], key: str) -> dict[str, Any]:
    """An inlined response for a key the batch never held (a row fault)."""
    return {"response": {}, **template, "metadata": {"key": key}}


def _file_lines(content: bytes) -> tuple[list[dict[str, Any]], str | None]:
    """The input file's ``{"key", "request"}`` lines, or why the batch fails (naming the
    line, numbered from 1)."""
    lines: list[dict[str, Any]] = []
    seen: set[str] = set()
    for number, line in jsonl(content):
        if line is NOT_JSON:
            return [], f"input file line {number}: not valid JSON"
        if not isinstance(line, dict) or not isinstance(line.get("request"), dict):
            return [], (f"input file line {number}: expected a JSON object with a "
                        "'request' object")
        key = line.get("key")
        if not isinstance(key, str) or not key:
            return [], f"input file line {number}: 'key' must be a non-empty string"
        if key in seen:
            return [], f"input file line {number}: key {key!r} appears more than once"
        seen.add(key)
        lines.append({"key": key, "request": line["request"]})
    if not lines:
        return [], "the input file has no request"
    return lines, None


def _inline_lines(requests: list[Any]) -> tuple[list[dict[str, Any]], str | None]:
    lines = []
    for index, item in enumerate(requests):
        if not isinstance(item, dict) or not isinstance(item.get("request"), dict):
            return [], f"requests[{index}]: expected an object with a 'request' object"
        lines.append({"metadata": item.get("metadata") or {}, "request": item["request"]})
    if not lines:
        return [], "the batch has no request"
    return lines, None


def _page(items: list[Any], query: str, default: int) -> tuple[list[Any] | None, str]:
    """One page of `items` (None if the query is bad) and the next page's token ("" on
    the last page): the token is the next offset, opaque to clients."""
    try:
        size = min(int(first(query, "pageSize") or default), 1000)
        start = int(first(query, "pageToken") or 0)
    except ValueError:
        return None, ""
    if size < 1 or start < 0:
        return None, ""
    end = start + size
    return items[start:end], str(end) if end < len(items) else ""


def _rfc3339(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")
