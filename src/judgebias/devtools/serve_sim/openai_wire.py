"""The OpenAI wire protocol: chat-completions and images request bodies in, their JSON
answers and error bodies out.

Chat request -> :class:`ChatRequest`: ``prompt`` is the user text parts joined with
``"\\n"`` in order, ``system`` the system/developer messages' text, ``images`` the decoded
``data:`` URL image parts in order (nothing is fetched). ``Sampling(temperature, top_p,
max_tokens, top_logprobs, seed)`` with the sim's defaults for absent fields;
``top_logprobs`` is 0 unless ``logprobs: true`` (then ``top_logprobs``).

Images request (``POST /v1/images/generations``): a prompt, a size whose width is capped
at 256 px (for speed), and a ``seed`` field if the request has one (the real API takes
none; FRAME's ``send_seed`` option sends it), else a seed drawn from the prompt. Only
``b64_json`` answers and ``n: 1`` are served.
"""

from __future__ import annotations

import base64
import hashlib
import time
from typing import Any

from judgebias.devtools.serve_sim.errors import BadRequest
from judgebias.devtools.serve_sim.wire import (
    MAX_TOP_LOGPROBS,
    b64decode,
    integer,
    one_turn,
    request_id,
    sampling,
)
from judgebias.models.base import ChatRequest, ChatResponse
from judgebias.models.sim import SIM_VERSION

OPENAI_NO_LOGPROBS = "logprobs is not supported with this model."
IMAGE_MAX_PX = 256
# The messages of the errors serve-sim makes up (faults, quota, outage, a wrong key).
MESSAGES = {
    429: "Rate limit reached for requests (simulated by serve-sim).",
    500: "The server had an error while processing your request. "
         "Sorry about that! (simulated by serve-sim)",
    401: "Incorrect API key provided.",
    503: "The engine is currently overloaded, please try again later. "
         "(an outage simulated by serve-sim)",
}
_ERRORS = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    404: ("invalid_request_error", "model_not_found"),
    429: ("requests", "rate_limit_exceeded"),
    500: ("server_error", None),
    503: ("server_error", None),
}


def parse_openai(body: Any) -> tuple[ChatRequest, bool]:
    """An OpenAI chat-completions body -> (request, log-probs requested)."""
    if not isinstance(body, dict):
        raise BadRequest("request body must be a JSON object")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise BadRequest("'model' is required")
    if body.get("stream"):
        raise BadRequest("'stream' is not supported by serve-sim")
    if body.get("n", 1) != 1:
        raise BadRequest("only 'n': 1 is supported by serve-sim")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise BadRequest("'messages' must be a non-empty array")
    user: list[list[str | bytes]] = []  # each user message's text and image parts, in order
    system: list[str] = []
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in (
                "system", "developer", "user"):
            raise BadRequest(f"messages[{i}]: a system, developer or user message expected")
        content = message.get("content")
        into: list[Any] = system if message["role"] in ("system", "developer") else []
        if into is not system:
            user.append(into)
        if isinstance(content, str):
            into.append(content)
            continue
        if not isinstance(content, list):
            raise BadRequest(f"messages[{i}].content must be a string or an array")
        for j, part in enumerate(content):
            where = f"messages[{i}].content[{j}]"
            kind = part.get("type") if isinstance(part, dict) else None
            if kind == "text" and isinstance(part.get("text"), str):
                into.append(part["text"])
            elif (kind == "image_url" and isinstance(part.get("image_url"), dict)
                  and into is not system):
                into.append(_data_url(part["image_url"].get("url"), where))
            else:
                raise BadRequest(f"{where}: a text or image_url part expected")
    logprobs = body.get("logprobs") or False
    if not isinstance(logprobs, bool):
        raise BadRequest("'logprobs' must be a boolean")
    top = body.get("top_logprobs")
    if top is not None and not logprobs:
        raise BadRequest("'top_logprobs' requires 'logprobs' to be true")
    k = integer(top, "top_logprobs", 0, 0, MAX_TOP_LOGPROBS) if logprobs else 0
    max_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
    return ChatRequest.from_parts(
        model, one_turn(user), system="\n".join(system),
        sampling=sampling(body.get("temperature"), body.get("top_p"), max_tokens,
                          body.get("seed"), k)), logprobs


def _data_url(url: Any, where: str) -> bytes:
    if not isinstance(url, str) or not url.startswith("data:") or "," not in url:
        raise BadRequest(f"{where}: only data: image URLs are supported (nothing is fetched)")
    header, data = url[5:].split(",", 1)
    if not header.endswith(";base64"):
        raise BadRequest(f"{where}: the data: URL must be base64-encoded")
    return b64decode(data, f"{where} image data")


def openai_completion(request: ChatRequest, answer: ChatResponse, logprobs: bool,
                      reasoning: int | None = None, cached: int = 0) -> dict[str, Any]:
    """The ``chat.completion`` object for a successful answer; a reasoning model's hidden
    tokens (`reasoning`, serve_sim.hidden) are in its completion tokens and their
    ``completion_tokens_details``, as OpenAI bills and reports them; the prompt's `cached`
    tokens (serve_sim.prefix_cache) in ``prompt_tokens_details``, as OpenAI sends it with
    every answer (0 without a hit)."""
    content = None
    if logprobs:
        content = {"content": [
            {"token": t.token, "logprob": t.logprob, "bytes": list(t.token.encode()),
             "top_logprobs": [{"token": tok, "logprob": lp, "bytes": list(tok.encode())}
                              for tok, lp in t.top]}
            for t in answer.tokens or ()], "refusal": None}
    return {
        "id": f"chatcmpl-{request_id(request)}",
        "object": "chat.completion",
        "created": 0,
        "model": request.model,
        "system_fingerprint": SIM_VERSION,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": answer.text, "refusal": None},
            "finish_reason": "length" if answer.finish_reason == "length" else "stop",
            "logprobs": content,
        }],
        "usage": _usage(answer, reasoning, cached),
    }


def _usage(answer: ChatResponse, reasoning: int | None, cached: int) -> dict[str, Any]:
    usage: dict[str, Any] = {name: int(answer.usage.get(name, 0)) for name in
                             ("prompt_tokens", "completion_tokens", "total_tokens")}
    usage["prompt_tokens_details"] = {"cached_tokens": cached, "audio_tokens": 0}
    if reasoning is not None:
        usage["completion_tokens"] += reasoning
        usage["total_tokens"] += reasoning
        usage["completion_tokens_details"] = {"reasoning_tokens": reasoning}
    return usage


def parse_images(body: Any) -> tuple[str, int, int]:
    """An OpenAI images body -> (prompt, width in px, seed) (module docstring)."""
    if not isinstance(body, dict):
        raise BadRequest("the request body must be a JSON object")
    prompt, size = body["prompt"], str(body.get("size") or "256x256")
    if not isinstance(prompt, str) or not prompt.strip():
        raise BadRequest("'prompt' must be a non-empty string")
    if body.get("response_format", "b64_json") not in ("b64_json", None):
        raise BadRequest("serve-sim answers response_format 'b64_json' only")
    if body.get("n", 1) not in (1, None):
        raise BadRequest("serve-sim answers n = 1 only")
    width = min(int(size.lower().split("x")[0]), IMAGE_MAX_PX)
    if width < 16:
        raise BadRequest(f"size {size!r} is too small")
    seed = body.get("seed")
    if isinstance(seed, bool) or not isinstance(seed, int):
        seed = int.from_bytes(hashlib.sha256(prompt.encode("utf-8")).digest()[:4], "big")
    return prompt, width, seed


def images_response(png: bytes) -> dict[str, Any]:
    """The images API's answer holding one ``b64_json`` picture."""
    return {"created": int(time.time()),
            "data": [{"b64_json": base64.b64encode(png).decode("ascii")}]}


def openai_error(status: int, message: str, code: str | None = None,
                 param: str | None = None) -> dict[str, Any]:
    kind, default_code = _ERRORS.get(status, ("invalid_request_error", None))
    return {"error": {"message": message, "type": kind, "param": param,
                      "code": code if code is not None else default_code}}
