"""OpenAI's Batch API as a :class:`judgebias.models.batch.BatchProvider` (specs/batch.md §1),
through the ``openai`` SDK's files and batches resources, never a hand-made HTTP client.

A line is the online request body (:func:`judgebias.models.openai_wire.chat_body`,
a reasoning model's effort and ``max_completion_tokens`` included) with the journal key as
its ``custom_id``, so batch and online ask the same. A stopped
job finds its file by name (``jb-<local id>.jsonl``, adopted only if its bytes are ours)
and its batch by metadata ``{"jb": local id}`` on that file (the API has no metadata
filter: the list is matched here). Output and error rows are matched by ``custom_id``
(the order may differ); an HTTP-level rejection inside the batch keeps its status code
in the failure's reason (``"400: ..."``), which decides whether a retry may cure it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from typing import Any, Final

import openai
from openai.types.chat import ChatCompletion

from judgebias.models.base import STATUS_FAILED, ChatRequest, ChatResponse
from judgebias.models.batch import BatchStatus
from judgebias.models.openai_wire import chat_body, to_response
from judgebias.models.reasoning import Reasoning

ENDPOINT: Final = "/v1/chat/completions"
TERMINAL = ("completed", "failed", "expired", "cancelled")


class OpenAIBatches:
    """The Batch API of an ``openai.OpenAI`` client (OpenAI or a compatible server)."""

    name = "openai"

    def __init__(self, client: openai.OpenAI, reasoning: Reasoning | None = None) -> None:
        self.client = client
        self.reasoning = reasoning  # panel.<m>.reasoning: the body asks as online

    def line(self, key: str, request: ChatRequest) -> bytes:
        return json.dumps({"custom_id": key, "method": "POST", "url": ENDPOINT,
                           "body": chat_body(request, self.reasoning)},
                          separators=(",", ":")).encode() + b"\n"

    def find_file(self, tag: str, digest: str) -> str | None:
        for found in self.client.files.list(purpose="batch"):
            if found.filename == _filename(tag) and hashlib.sha256(
                    self.client.files.content(found.id).read()).hexdigest() == digest:
                return found.id
        return None

    def upload(self, tag: str, payload: bytes) -> str:
        return self.client.files.create(file=(_filename(tag), payload), purpose="batch").id

    def has_file(self, file_id: str) -> bool:
        try:
            self.client.files.retrieve(file_id)
        except openai.NotFoundError:
            return False
        return True

    def find_batch(self, tag: str, file_id: str) -> str | None:
        for found in self.client.batches.list():
            if (found.metadata or {}).get("jb") == tag and found.input_file_id == file_id:
                return found.id
        return None

    def create(self, tag: str, file_id: str) -> str:
        return self.client.batches.create(input_file_id=file_id, endpoint=ENDPOINT,
                                          completion_window="24h", metadata={"jb": tag}).id

    def status(self, batch_id: str) -> BatchStatus:
        found = self.client.batches.retrieve(batch_id)
        counts = found.request_counts
        return BatchStatus(
            state=found.status, terminal=found.status in TERMINAL,
            done=None if counts is None else counts.completed + counts.failed,
            total=None if counts is None else counts.total,
            results=tuple(f for f in (found.output_file_id, found.error_file_id) if f))

    def rows(self, file_id: str) -> Iterator[tuple[str | None, ChatResponse]]:
        for line in self.client.files.content(file_id).text.splitlines():
            if line.strip():
                row = json.loads(line)
                yield row.get("custom_id"), result_row(row)


def _filename(tag: str) -> str:
    return f"jb-{tag}.jsonl"


def result_row(row: Mapping[str, Any]) -> ChatResponse:
    """One output or error row as a response: the answer, or a failure with its reason
    (the HTTP status or the error code first: judgebias.models.batch.retryable reads it)."""
    response = row.get("response") or {}
    if response.get("status_code") == 200 and not row.get("error"):
        return to_response(ChatCompletion.model_validate(response["body"]))
    error = row.get("error") or (response.get("body") or {}).get("error") or {}
    reason = f"{response.get('status_code') or error.get('code')}: {error.get('message')}"
    return ChatResponse(text="", status=STATUS_FAILED, error=f"batch: {reason}")
