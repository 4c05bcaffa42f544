"""The two file formats requests leave in and answers come back in (issue 44 item 1).

**Requests** (`judgebias requests export`), one JSON object per line, keyed by the
request's journal key:

* ``openai``: the OpenAI Batch API's input line, ``{"custom_id": KEY, "method": "POST",
  "url": "/v1/chat/completions", "body": ...}``, the body exactly as the openai backend
  sends it online (judgebias.models.openai_wire.chat_body), so a file goes to OpenAI's
  Batch API, vLLM's ``run-batch`` or any server implementing it unchanged.
* ``plain``: ``{"key": KEY, "model": ID, "system": TEXT, "parts": [{"text": ...},
  {"image": ...}, ...], "sampling": {...}}``: the user message's parts in their order
  (judgebias.models.base.ChatRequest.parts) and the sampling settings, for a gateway that
  takes neither.

An image travels inline (a ``data:`` URL, in the line) or as a file beside the requests
(``images/<sha256>.<ext>``, the path relative to the export folder, where the OpenAI line
puts it in ``image_url.url`` and the plain one in ``image``); content-addressed, so an
image shown in a thousand requests is written once.

**Answers** (`judgebias answers import`), also one object per line; each line's format is
read from its keys:

* the OpenAI Batch API's output or error line (``custom_id``, ``response`` with
  ``status_code`` and a chat-completion ``body``, ``error``), read by the same code as the
  openai backend's batches (judgebias.models.openai_batch), log-probs included;
* plain: ``{"key": KEY, "text": ..., "logprobs": [...], "usage": {...},
  "finish_reason": ..., "error": ...}``, ``logprobs`` in OpenAI's per-token form
  (``[{"token", "logprob", "top_logprobs": [{"token", "logprob"}]}]``), every field but
  ``key`` and one of ``text`` / ``error`` optional. A non-empty ``error`` makes the row a
  failure with that reason.

The line itself is kept as the answer's raw response (the journal's ``raw_responses``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from judgebias.io.atomicfile import atomic_path
from judgebias.models.base import STATUS_FAILED, ChatRequest, ChatResponse, TokenLogprob
from judgebias.models.openai_batch import ENDPOINT, result_row
from judgebias.models.openai_wire import chat_body, image_data_url
from judgebias.models.reasoning import Reasoning
from judgebias.models.wire import image_mime_type

RequestFormat = Literal["openai", "plain"]
ImageMode = Literal["inline", "files"]
IMAGES = "images"  # the folder of image files beside the requests
_EXTENSIONS = {"image/png": ".png", "image/jpeg": ".jpg", "image/gif": ".gif",
               "image/webp": ".webp"}


class AnswerRowError(ValueError):
    """A line of an answers file that is no answer in either format."""


def image_file(image: bytes, digest: str, folder: Path) -> str:
    """The path, relative to `folder`, of the file holding `image` there (written once:
    the name is its content's digest)."""
    name = f"{IMAGES}/{digest}{_EXTENSIONS.get(image_mime_type(image), '.bin')}"
    path = folder / name
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(path, durable=False) as tmp:
            tmp.write_bytes(image)
    return name


def request_line(key: str, request: ChatRequest, fmt: RequestFormat,
                 image_files: list[str] | None = None,
                 reasoning: Reasoning | None = None) -> str:
    """One request as a line of `fmt` (module docstring): its images inline, or named by
    `image_files` (:func:`image_file` of each, in order)."""
    if fmt == "openai":
        body = chat_body(request, reasoning)
        if image_files is not None:
            files = iter(image_files)
            for part in body["messages"][-1]["content"]:
                if part["type"] == "image_url":
                    part["image_url"]["url"] = next(files)
        line: dict[str, Any] = {"custom_id": key, "method": "POST", "url": ENDPOINT,
                                "body": body}
    else:
        files = iter(image_files if image_files is not None
                     else [image_data_url(image) for image in request.images])
        parts = [{"text": part} if isinstance(part, str) else {"image": next(files)}
                 for part in request.parts()]
        line = {"key": key, "model": request.model, "system": request.system,
                "parts": parts, "sampling": request.sampling.as_dict()}
    return json.dumps(line, separators=(",", ":"), ensure_ascii=False)


def answer_row(line: str) -> tuple[str, ChatResponse]:
    """(journal key, answer or failure) of one answers line, in either format; the line
    is kept as the answer's raw response. AnswerRowError says what is wrong."""
    try:
        row = json.loads(line)
    except json.JSONDecodeError as exc:
        raise AnswerRowError(f"not JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(row, dict):
        raise AnswerRowError("not a JSON object")
    if "custom_id" in row:
        key, response = row["custom_id"], _openai_row(row)
    elif "key" in row:
        key, response = row["key"], _plain_row(row)
    else:
        raise AnswerRowError("neither an OpenAI batch output line (custom_id) nor a plain "
                             "answer (key)")
    if not isinstance(key, str) or not key:
        raise AnswerRowError("its key is not a non-empty string")
    if response.ok:
        response = ChatResponse(text=response.text, tokens=response.tokens,
                                usage=response.usage, finish_reason=response.finish_reason,
                                raw=line.strip())
    return key, response


def _openai_row(row: Mapping[str, Any]) -> ChatResponse:
    try:
        return result_row(row)
    except (KeyError, TypeError, ValueError) as exc:  # pydantic's ValidationError included
        raise AnswerRowError(f"its response is no chat completion: {exc}") from None


def _plain_row(row: Mapping[str, Any]) -> ChatResponse:
    error = row.get("error")
    if error:
        return ChatResponse(text="", status=STATUS_FAILED, error=f"imported: {error}")
    text = row.get("text")
    if not isinstance(text, str):
        raise AnswerRowError("a plain answer needs `text` (a string) or `error`")
    usage = row.get("usage") or {}
    if not isinstance(usage, dict) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in usage.values()):
        raise AnswerRowError("`usage` must map names to token counts (integers)")
    finish = row.get("finish_reason") or "stop"
    if not isinstance(finish, str):
        raise AnswerRowError("`finish_reason` must be a string")
    return ChatResponse(text=text, tokens=_plain_logprobs(row.get("logprobs")),
                        usage=dict(usage), finish_reason=finish)


def _plain_logprobs(value: Any) -> tuple[TokenLogprob, ...] | None:
    """OpenAI's per-token log-probs (``choices[0].logprobs.content``) as journaled."""
    if value is None:
        return None
    try:
        return tuple(TokenLogprob(str(t["token"]), float(t["logprob"]),
                                  tuple((str(a["token"]), float(a["logprob"]))
                                        for a in t.get("top_logprobs") or ()))
                     for t in value)
    except (KeyError, TypeError, ValueError, AttributeError):
        raise AnswerRowError("`logprobs` must be a list of {token, logprob, top_logprobs: "
                             "[{token, logprob}]} (OpenAI's per-token form)") from None
