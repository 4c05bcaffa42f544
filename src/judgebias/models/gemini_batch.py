"""Gemini's batch mode as a :class:`judgebias.models.batch.BatchProvider` (specs/batch.md
§2), through the ``google-genai`` SDK's files and batches resources, never a hand-made
HTTP client.

A line is ``{"key": <journal key>, "request": <GenerateContentRequest>}``, the request
being the JSON the online call sends (:func:`judgebias.models.gemini_wire.request_json`),
so batch and online ask the same (the model's thinking config included). Log-probs are
asked for as online (where the sampling wants them and the model's abilities do not say it
gives none). A model that does not offer them answers each such line with a 400 row
(``"Logprobs is not supported …"``), and then, as online (gemini_backend), log-probs are
switched off for the rest of the job (logged once) and the request is sent again without
them: the row is a failure whose reason begins ``logprobs: 400: …`` (not a bare 4xx, which
judgebias.models.batch.retryable would never send again), so the runner's retry
(``batch_retry``: a new batch, whose lines now ask no log-probs, or the online path) answers
it in the same run; with ``batch_retry: none`` it stays a failure for the next run.

**Finding our things after a stop.** The file's ``display_name`` is ``jb-<local id>``, and
a file of that name is adopted only if its ``sha256Hash`` is our bytes' (Gemini does not
let a client download an uploaded file). The batch's ``display_name`` is ``jb-<local id>
<file name>``: the local id alone is not unique (every model's journal numbers its
batches from 1, under one API key), the file is. ``filter`` raises in Gemini-API mode, so
both lists are matched here.

**States.** ``JOB_STATE_SUCCEEDED``, ``FAILED``, ``CANCELLED`` and ``EXPIRED`` end a job;
only a job with a responses file has results (an expired one has none on Gemini: every key
is then a failure, retried as configured). Rows are matched by ``key`` (their order is
not the input's). A row's ``error`` (or ``status``, a ``google.rpc.Status``) is a failure
whose reason begins with an HTTP status (a gRPC code is mapped to its HTTP one, as Google's
APIs do), so judgebias.models.batch.retryable reads a 4xx as not worth another attempt.
The SDK drops ``batchStats``, so a poll reports no progress counts.
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import logging
from collections.abc import Iterator, Mapping
from typing import Any, Final

from google import genai
from google.genai import errors as genai_errors

from judgebias.models.base import STATUS_FAILED, ChatRequest, ChatResponse
from judgebias.models.batch import BatchStatus
from judgebias.models.gemini_wire import (
    refuses_logprobs,
    request_json,
    response_from_json,
    to_response,
)
from judgebias.models.reasoning import Thinking

log = logging.getLogger(__name__)

TERMINAL: Final = frozenset({"JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED",
                             "JOB_STATE_CANCELLED", "JOB_STATE_EXPIRED",
                             "JOB_STATE_PARTIALLY_SUCCEEDED"})
PAGE_SIZE: Final = 100
# google.rpc.Code -> HTTP status, as Google's APIs map them (google/rpc/code.proto).
_GRPC_HTTP: Final = {1: 499, 2: 500, 3: 400, 4: 504, 5: 404, 6: 409, 7: 403, 8: 429, 9: 400,
                     10: 409, 11: 400, 12: 501, 13: 500, 14: 503, 15: 500, 16: 401}
_STATUS_HTTP: Final = {"CANCELLED": 499, "UNKNOWN": 500, "INVALID_ARGUMENT": 400,
                       "DEADLINE_EXCEEDED": 504, "NOT_FOUND": 404, "ALREADY_EXISTS": 409,
                       "PERMISSION_DENIED": 403, "RESOURCE_EXHAUSTED": 429,
                       "FAILED_PRECONDITION": 400, "ABORTED": 409, "OUT_OF_RANGE": 400,
                       "UNIMPLEMENTED": 501, "INTERNAL": 500, "UNAVAILABLE": 503,
                       "DATA_LOSS": 500, "UNAUTHENTICATED": 401}


class GeminiBatches:
    """Gemini's batch mode for `model` through a synchronous ``genai.Client``."""

    name = "gemini"

    def __init__(self, client: genai.Client, model: str, thinking: Thinking | None = None
                 ) -> None:
        self.client = client
        self.model = model
        self.thinking = thinking  # panel.<m>.thinking_config: the line asks as online
        self.logprobs = True  # until a row says the model refuses them (module docstring)

    def line(self, key: str, request: ChatRequest) -> bytes:
        if request.model != self.model:
            raise ValueError(f"a Gemini batch asks one model ({self.model}); this request "
                             f"is for {request.model}")
        body = request_json(self.client, request, logprobs=self.logprobs,
                            thinking=self.thinking)
        return json.dumps({"key": key, "request": body},
                          separators=(",", ":")).encode() + b"\n"

    def find_file(self, tag: str, digest: str) -> str | None:
        for found in self.client.files.list(config={"page_size": PAGE_SIZE}):
            if (found.display_name == _name(tag) and found.name
                    and _hex_digest(found.sha256_hash) == digest):
                return found.name
        return None

    def upload(self, tag: str, payload: bytes) -> str:
        uploaded = self.client.files.upload(
            file=io.BytesIO(payload), config={"display_name": _name(tag), "mime_type": "jsonl"})
        if not uploaded.name:
            raise RuntimeError(f"Gemini's Files API returned no name for {_name(tag)}")
        return uploaded.name

    def has_file(self, file_id: str) -> bool:
        try:
            self.client.files.get(name=file_id)
        except genai_errors.ClientError as exc:
            if exc.code == 404:
                return False
            raise
        return True

    def find_batch(self, tag: str, file_id: str) -> str | None:
        for found in self.client.batches.list(config={"page_size": PAGE_SIZE}):
            if found.display_name == _batch_name(tag, file_id) and found.name:
                return found.name
        return None

    def create(self, tag: str, file_id: str) -> str:
        job = self.client.batches.create(model=self.model, src=file_id,
                                         config={"display_name": _batch_name(tag, file_id)})
        if not job.name:
            raise RuntimeError(f"Gemini's batches API returned no name for "
                               f"{_batch_name(tag, file_id)}")
        return job.name

    def status(self, batch_id: str) -> BatchStatus:
        job = self.client.batches.get(name=batch_id)
        state = job.state.value if job.state is not None else "JOB_STATE_UNSPECIFIED"
        results = job.dest.file_name if job.dest is not None else None
        return BatchStatus(state=state, terminal=state in TERMINAL,
                           results=(results,) if results and state != "JOB_STATE_EXPIRED"
                           else ())

    def rows(self, file_id: str) -> Iterator[tuple[str | None, ChatResponse]]:
        for line in self.client.files.download(file=file_id).decode().splitlines():
            if line.strip():
                row = json.loads(line)
                response = _result(row)
                if (response.error or "").startswith("batch: logprobs:") and self.logprobs:
                    self.logprobs = False
                    log.warning("%s: the model rejects log-probs (%s); asking without them "
                                "from now on, the parsed score is used", self.model,
                                response.error)
                yield row.get("key"), response


def _name(tag: str) -> str:
    return f"jb-{tag}"


def _batch_name(tag: str, file_id: str) -> str:
    return f"jb-{tag} {file_id}"


def _hex_digest(sha256_hash: str | None) -> str | None:
    """A file's ``sha256Hash`` as a hex digest: Gemini sends base64 of the hex digest
    (googleapis/js-genai#381); base64 of the raw digest is read too."""
    if not sha256_hash:
        return None
    try:
        decoded = base64.b64decode(sha256_hash, validate=True)
    except (binascii.Error, ValueError):
        return None
    return decoded.hex() if len(decoded) == 32 else decoded.decode("ascii", "replace")


def _result(row: Mapping[str, Any]) -> ChatResponse:
    """One result row as a response: the answer, or a failure with its reason (the HTTP
    status first: judgebias.models.batch.retryable reads it)."""
    if isinstance(row.get("response"), dict) and not (row.get("error") or row.get("status")):
        return to_response(response_from_json(row["response"]))
    error = row.get("error") or row.get("status") or {}
    if not isinstance(error, dict):
        error = {"message": str(error)}
    reason = f"{_http_code(error)}: {error.get('message')}"
    if refuses_logprobs(_http_code(error), str(error.get("message"))):
        reason = f"logprobs: {reason}"  # sent again without them (module docstring)
    return ChatResponse(text="", status=STATUS_FAILED, error=f"batch: {reason}")


def _http_code(error: Mapping[str, Any]) -> int | str:
    """The HTTP status of an error row: its ``code`` if HTTP-like, else the HTTP status of
    its gRPC code or ``status`` name, else the name (or "error")."""
    code, status = error.get("code"), error.get("status")
    if isinstance(code, int) and 100 <= code < 600:
        return code
    if isinstance(code, int) and code in _GRPC_HTTP:
        return _GRPC_HTTP[code]
    if isinstance(status, str):
        return _STATUS_HTTP.get(status, status)
    return "error"
