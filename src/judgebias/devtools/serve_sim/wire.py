"""What both wire protocols share: the reply the handler sends, and the pieces of a
request body both APIs encode alike (JSON, sampling numbers, base64 images, the user
turns joined into one prompt, a stable response id, ``Retry-After`` headers)."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from judgebias.devtools.serve_sim.errors import BadRequest
from judgebias.models.base import ChatRequest, Sampling

MAX_TOP_LOGPROBS = 20


@dataclass
class Reply:
    """An HTTP answer: status, JSON body, the model id it counts for, extra headers; a
    file download sends `raw` bytes of `content_type` instead of the JSON body."""

    status: int
    body: dict[str, Any]
    model: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    raw: bytes | None = None
    content_type: str = "application/json; charset=utf-8"


def json_body(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, ValueError) as exc:
        raise BadRequest("request body is not valid JSON") from exc


def first_of(body: Mapping[str, Any], *names: str) -> Any:
    """The first present key of ``names`` (Gemini's JSON accepts camelCase and snake_case,
    and google-genai sends e.g. ``inlineData`` with a snake_case ``mime_type`` inside)."""
    for name in names:
        if name in body and body[name] is not None:
            return body[name]
    return None


def _number(value: Any, name: str, default: float, low: float, high: float) -> float:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BadRequest(f"'{name}' must be a number")
    if not low <= float(value) <= high:
        raise BadRequest(f"'{name}' must be in [{low}, {high}], got {value}")
    return float(value)


def integer(value: Any, name: str, default: int, low: int, high: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadRequest(f"'{name}' must be an integer")
    if not low <= value <= high:
        raise BadRequest(f"'{name}' must be in [{low}, {high}], got {value}")
    return int(value)


def sampling(temperature: Any, top_p: Any, max_tokens: Any, seed: Any,
             top_logprobs: int) -> Sampling:
    base = Sampling()
    return Sampling(
        temperature=_number(temperature, "temperature", base.temperature, 0.0, 2.0),
        top_p=_number(top_p, "top_p", base.top_p, 0.0, 1.0),
        max_tokens=integer(max_tokens, "max_tokens", base.max_tokens, 1, 10**7),
        top_logprobs=top_logprobs,
        seed=integer(seed, "seed", base.seed, -(2**63), 2**63 - 1),
    )


def b64decode(data: Any, what: str) -> bytes:
    """Standard or URL-safe base64 (google-genai sends URL-safe, as the API accepts)."""
    if not isinstance(data, str):
        raise BadRequest(f"{what} must be a base64 string")
    text = "".join(data.split()).translate(str.maketrans("-_", "+/"))
    text += "=" * (-len(text) % 4)
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise BadRequest(f"{what} is not valid base64") from exc


def one_turn(turns: list[list[str | bytes]]) -> list[str | bytes]:
    """The user turns as one sequence of parts: within a turn the parts join as they are
    (how judgebias's backends split one prompt around its images), turns with a newline."""
    joined: list[str | bytes] = []
    for i, turn in enumerate(turns):
        joined += (["\n"] if i else []) + turn
    return joined


def request_id(request: ChatRequest) -> str:
    blob = json.dumps([request.model, request.prompt, request.image_hashes(),
                       request.sampling.as_dict()], sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:24]


def _format_seconds(seconds: float) -> str:
    return str(int(seconds)) if float(seconds).is_integer() else f"{seconds:g}"


def retry_after_headers(seconds: float) -> tuple[tuple[str, str], ...]:
    """``Retry-After`` (seconds; fractional, as OpenAI sends it) and ``retry-after-ms``."""
    seconds = round(seconds, 3)
    return (("Retry-After", _format_seconds(seconds)),
            ("retry-after-ms", str(round(seconds * 1000))))
