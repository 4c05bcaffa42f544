"""``serve-sim``: the simulated panel behind real HTTP APIs, with fault injection.

Why: the ``openai`` and ``gemini`` backends talk to providers over HTTP, and the only way
to test them honestly (request encoding, response parsing, retries, timeouts, rate limits,
connection reuse, concurrency) is to point them at a real server. This module serves the
``sim`` panel of ``params.yaml`` on loopback through

* the OpenAI chat-completions API: ``POST /v1/chat/completions``, ``GET /v1/models``;
* the Gemini API: ``POST /v1beta/models/{model}:generateContent``, ``GET /v1beta/models``
  (``/v1`` and ``/v1alpha`` are accepted too);
* the OpenAI images API: ``POST /v1/images/generations`` (``b64_json`` answers drawn by
  FRAME's offline renderer, judgebias.studies.frame.scene, at most 256 px, seeded by a
  ``seed`` field if the request has one, else by the prompt), so the ``openai``
  text-to-image backend of FRAME's benchmark construction is tested over HTTP.

The answers are exactly :meth:`SimBackend.answer` of the request the HTTP body encodes
(the sim depends only on seed, model id, prompt, image bytes and sampling), so a client
backend run against this server must reproduce the ``sim`` backend's answers bit for bit.

Request -> :class:`ChatRequest`
    ``prompt`` is the user text parts joined with ``"\\n"`` in order and ``system`` the
    system text (OpenAI: system/developer messages; Gemini: ``systemInstruction``), as the
    backends send ``ChatRequest.system``; ``images`` are the decoded image parts in order
    (OpenAI: ``data:`` URLs only, since nothing is fetched; Gemini: ``inlineData``,
    standard or URL-safe base64).
    ``Sampling(temperature, top_p, max_tokens, top_logprobs, seed)`` with the sim's
    defaults for absent fields; ``top_logprobs`` is 0 unless log-probs are requested
    (OpenAI ``logprobs: true`` + ``top_logprobs``; Gemini ``responseLogprobs: true`` +
    ``logprobs``).

Faults (:class:`Faults`) are drawn per HTTP request from one seeded RNG after the
authentication check, and apply to both APIs: 429 (with ``Retry-After``), 500, a stall
(sleep ``stall_s``, then answer normally), a dropped connection (closed without any
response) and a garbled 200 (a truncated JSON body). ``latency_s`` is slept by every
generation request that is not failed fast by a 429/500 fault, each in its own thread.
An outage of one model's endpoint (:attr:`SimServer.down_models`, ``--down-models``)
answers every generation request for those model ids with 503, counted as ``down``; it
can be switched on and off while the server runs.

A quota (:class:`RequestQuota`, ``--requests-per-minute``) limits generation requests as
providers do: a token bucket refilled at ``requests_per_minute / 60`` per second and
holding at most ``burst`` tokens (default one second's worth: OpenAI documents that its
per-minute limits are enforced over shorter intervals, so a minute's requests cannot be
sent at once). A request finding the bucket empty gets 429 with ``Retry-After`` (and
``retry-after-ms``) set to the time until the next token, counted as ``rate_limited``.

Only loopback addresses are served: this project never exposes a port to a network.
The API key is compared in constant time and never logged or echoed; the standard
library's per-request log line (which would include a ``?key=`` query) is switched off.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import contextlib
import hashlib
import hmac
import io
import ipaddress
import json
import logging
import os
import random
import signal
import socket
import sys
import threading
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from judgebias.config import ConfigError
from judgebias.devtools.serve_sim.args import add_arguments  # re-exported for callers
from judgebias.models.base import ChatRequest, ChatResponse, Sampling, TokenLogprob
from judgebias.models.registry import sim_traits
from judgebias.models.sim import SIM_VERSION, SimBackend, SimModel, score_logprobs, score_tokens

log = logging.getLogger("judgebias.serve_sim")

OUTCOMES = ("ok", "rate_limited", "429", "500", "stall", "drop", "garbled", "down", "401", "400",
            "404")
NO_COMPUTE_TEXT = "The caption is accurate. The final score is $80$."
MAX_BODY_BYTES = 64 * 1024 * 1024
MAX_TOP_LOGPROBS = 20
GEMINI_VERSIONS = ("v1beta", "v1", "v1alpha")
GEMINI_NO_LOGPROBS = "Logprobs is not supported for the current model."
OPENAI_NO_LOGPROBS = "logprobs is not supported with this model."


class ServeSimError(ConfigError):
    """serve-sim cannot start as asked (e.g. a non-loopback host, a missing key variable).

    A :class:`ConfigError`, so ``judgebias`` reports it as one line and exits 2.
    """


class BadRequest(ValueError):
    """The request body is malformed; answered with a 400 in the provider's format."""


# ------------------------------------------------------------------------------- faults


@dataclass(frozen=True)
class Faults:
    """Per-request fault probabilities (each in [0, 1], summing to at most 1).

    ``retry_after_s`` is sent with every 429 (``Retry-After`` and ``retry-after-ms``);
    ``stall_s`` is how long a stalled request sleeps before answering normally.
    """

    rate_429: float = 0.0
    retry_after_s: float = 1.0
    rate_500: float = 0.0
    rate_stall: float = 0.0
    stall_s: float = 5.0
    rate_drop: float = 0.0
    rate_garbled: float = 0.0

    def __post_init__(self) -> None:
        rates = self.rates()
        for name, rate in rates.items():
            if not 0.0 <= rate <= 1.0:
                raise ServeSimError(f"serve-sim: fault rate {name} must be in [0, 1], "
                                    f"got {rate}")
        if sum(rates.values()) > 1.0 + 1e-9:
            raise ServeSimError("serve-sim: fault rates must sum to at most 1")
        if self.retry_after_s < 0 or self.stall_s < 0:
            raise ServeSimError("serve-sim: retry_after_s and stall_s must be >= 0")

    def rates(self) -> dict[str, float]:
        """Fault name (as counted in the stats) -> probability, in drawing order."""
        return {"429": self.rate_429, "500": self.rate_500, "stall": self.rate_stall,
                "drop": self.rate_drop, "garbled": self.rate_garbled}

    @property
    def any(self) -> bool:
        return any(rate > 0 for rate in self.rates().values())


class _FaultDrawer:
    """Thread-safe seeded draws: one uniform number per HTTP request picks its fault."""

    def __init__(self, faults: Faults, seed: int) -> None:
        self.faults = faults
        self._rng = random.Random(seed)
        self._lock = threading.Lock()

    def draw(self) -> str | None:
        if not self.faults.any:
            return None
        with self._lock:
            u = self._rng.random()
        edge = 0.0
        for name, rate in self.faults.rates().items():
            edge += rate
            if u < edge:
                return name
        return None


class RequestQuota:
    """A provider's requests-per-minute limit: a thread-safe token bucket.

    ``take()`` spends a token and returns None, or returns the seconds until one is
    available (the request is refused and spends nothing). The bucket starts full.
    """

    def __init__(self, requests_per_minute: float, burst: float | None = None) -> None:
        if requests_per_minute <= 0:
            raise ServeSimError("serve-sim: requests_per_minute must be > 0")
        self.rate = requests_per_minute / 60.0
        self.burst = max(1.0, self.rate) if burst is None else float(burst)
        if self.burst < 1:
            raise ServeSimError("serve-sim: the quota's burst must be >= 1 request")
        self._tokens = self.burst
        self._stamp = time.monotonic()
        self._lock = threading.Lock()

    def take(self) -> float | None:
        with self._lock:
            now = time.monotonic()
            self._tokens = min(self.burst, self._tokens + (now - self._stamp) * self.rate)
            self._stamp = now
            if self._tokens >= 1.0:
                self._tokens -= 1.0
                return None
            return (1.0 - self._tokens) / self.rate


# -------------------------------------------------------------------------------- stats


class ServerStats:
    """Thread-safe request counters: total, per model id, per outcome, and per model id
    and outcome."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._total = 0
        self._models: Counter[str] = Counter()
        self._outcomes: Counter[str] = Counter()
        self._model_outcomes: Counter[tuple[str, str]] = Counter()

    def record(self, model: str | None, outcome: str) -> None:
        with self._lock:
            self._total += 1
            if model is not None:
                self._models[model] += 1
                self._model_outcomes[model, outcome] += 1
            self._outcomes[outcome] += 1

    def reset(self) -> None:
        with self._lock:
            self._total = 0
            self._models.clear()
            self._outcomes.clear()
            self._model_outcomes.clear()

    def snapshot(self) -> dict[str, Any]:
        """``{"requests": N, "models": {id: n}, "outcomes": {outcome: n},
        "model_outcomes": {id: {outcome: n}}}``; every outcome in :data:`OUTCOMES` is
        present in ``outcomes`` (0 when none), so callers can index it directly."""
        with self._lock:
            outcomes = {name: 0 for name in OUTCOMES}
            outcomes.update(self._outcomes)
            by_model: dict[str, dict[str, int]] = {}
            for (model, outcome), n in self._model_outcomes.items():
                by_model.setdefault(model, {})[outcome] = n
            return {"requests": self._total, "models": dict(self._models),
                    "outcomes": outcomes, "model_outcomes": by_model}


# ------------------------------------------------------------------------------- world


def sim_panel(config: Mapping[str, Any]) -> SimBackend:
    """One ``SimBackend`` holding every ``sim`` model of the config, keyed by model id.

    Built like :func:`judgebias.models.registry.build_backend` builds a model's world, but
    with the whole panel and every family opener: the extra models and families only add
    zero bonuses, so each model answers exactly as its own ``build_backend`` world does.
    """
    world = {
        model["model_id"]: SimModel.from_params(key, model["family"], sim_traits(config, key))
        for key, model in config["panel"].items() if model["backend"] == "sim"
    }
    openers = {family: spec["sim"]["opener"] for family, spec in config["families"].items()
               if isinstance(spec.get("sim"), Mapping) and "opener" in spec["sim"]}
    return SimBackend(world, seed=config["seed"], family_openers=openers)


@lru_cache(maxsize=32)
def _no_compute_tokens(top_logprobs: int) -> tuple[TokenLogprob, ...]:
    """The fixed no-compute answer: plain words, then a score of 80 whose log-probs and
    top-k come from a normal around 80 (sd 8) exactly as a sim judge reports them."""
    words = ["The", " caption", " is", " accurate", ".", " The", " final", " score", " is"]
    tokens = [TokenLogprob(w, -0.05, ((w, -0.05),)) for w in words]
    tokens.append(TokenLogprob(" $", -0.0005, ((" $", -0.0005),)))
    tokens += score_tokens(80, score_logprobs(0.8, 0.08), "whole", top_logprobs)
    tokens.append(TokenLogprob(".", -0.0002, ((".", -0.0002),)))
    return tuple(tokens)


def no_compute_answer(request: ChatRequest) -> ChatResponse:
    """The fixed evaluator-style answer of ``no_compute`` mode (same truncation and usage
    rules as the sim), so a client benchmark measures HTTP and client cost only."""
    tokens = list(_no_compute_tokens(request.sampling.top_logprobs))
    if request.sampling.top_logprobs <= 0:
        tokens = [TokenLogprob(t.token, t.logprob, ()) for t in tokens]
    finish = "stop"
    if len(tokens) > request.sampling.max_tokens:
        tokens, finish = tokens[: request.sampling.max_tokens], "length"
    prompt_tokens = len(request.prompt.split()) + 256 * len(request.images)
    usage = {"prompt_tokens": prompt_tokens, "completion_tokens": len(tokens),
             "total_tokens": prompt_tokens + len(tokens)}
    return ChatResponse(text="".join(t.token for t in tokens), tokens=tuple(tokens),
                        usage=usage, finish_reason=finish)


# ------------------------------------------------------------------------------ parsing


def _get(body: Mapping[str, Any], *names: str) -> Any:
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


def _integer(value: Any, name: str, default: int, low: int, high: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadRequest(f"'{name}' must be an integer")
    if not low <= value <= high:
        raise BadRequest(f"'{name}' must be in [{low}, {high}], got {value}")
    return int(value)


def _sampling(temperature: Any, top_p: Any, max_tokens: Any, seed: Any,
              top_logprobs: int) -> Sampling:
    base = Sampling()
    return Sampling(
        temperature=_number(temperature, "temperature", base.temperature, 0.0, 2.0),
        top_p=_number(top_p, "top_p", base.top_p, 0.0, 1.0),
        max_tokens=_integer(max_tokens, "max_tokens", base.max_tokens, 1, 10**7),
        top_logprobs=top_logprobs,
        seed=_integer(seed, "seed", base.seed, -(2**63), 2**63 - 1),
    )


def _b64decode(data: Any, what: str) -> bytes:
    """Standard or URL-safe base64 (google-genai sends URL-safe, as the API accepts)."""
    if not isinstance(data, str):
        raise BadRequest(f"{what} must be a base64 string")
    text = "".join(data.split()).translate(str.maketrans("-_", "+/"))
    text += "=" * (-len(text) % 4)
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise BadRequest(f"{what} is not valid base64") from exc


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
    k = _integer(top, "top_logprobs", 0, 0, MAX_TOP_LOGPROBS) if logprobs else 0
    max_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
    sampling = _sampling(body.get("temperature"), body.get("top_p"), max_tokens,
                         body.get("seed"), k)
    return ChatRequest.from_parts(model, _one_turn(user), sampling=sampling,
                                  system="\n".join(system)), logprobs


def _data_url(url: Any, where: str) -> bytes:
    if not isinstance(url, str) or not url.startswith("data:") or "," not in url:
        raise BadRequest(f"{where}: only data: image URLs are supported (nothing is fetched)")
    header, data = url[5:].split(",", 1)
    if not header.endswith(";base64"):
        raise BadRequest(f"{where}: the data: URL must be base64-encoded")
    return _b64decode(data, f"{where} image data")


def parse_gemini(model: str, body: Any) -> tuple[ChatRequest, bool]:
    """A Gemini generateContent body -> (request, log-probs requested)."""
    if not isinstance(body, dict):
        raise BadRequest("request body must be a JSON object")
    user: list[list[str | bytes]] = []  # each user turn's text and image parts, in order
    system = _get(body, "systemInstruction", "system_instruction")
    contents = body.get("contents")
    if not isinstance(contents, list) or not contents:
        raise BadRequest("'contents' must be a non-empty array")
    system_texts: list[str] = []
    blocks = ([("systemInstruction", system)] if system is not None else []) + [
        (f"contents[{i}]", c) for i, c in enumerate(contents)]
    for where, content in blocks:
        into: list[Any] = system_texts if where == "systemInstruction" else []
        if where != "systemInstruction":
            user.append(into)
        parts = content.get("parts") if isinstance(content, dict) else None
        if not isinstance(parts, list):
            raise BadRequest(f"{where}.parts must be an array")
        for j, part in enumerate(parts):
            at = f"{where}.parts[{j}]"
            if not isinstance(part, dict):
                raise BadRequest(f"{at} must be an object")
            inline = _get(part, "inlineData", "inline_data")
            if isinstance(part.get("text"), str):
                into.append(part["text"])
            elif isinstance(inline, dict) and into is not system_texts:
                into.append(_b64decode(inline.get("data"), f"{at}.inlineData.data"))
            else:
                raise BadRequest(f"{at}: a text or inlineData part expected")
    config = _get(body, "generationConfig", "generation_config") or {}
    if not isinstance(config, dict):
        raise BadRequest("'generationConfig' must be an object")
    wants = _get(config, "responseLogprobs", "response_logprobs") or False
    if not isinstance(wants, bool):
        raise BadRequest("'responseLogprobs' must be a boolean")
    top = _get(config, "logprobs")
    k = _integer(top, "logprobs", 0, 0, MAX_TOP_LOGPROBS) if wants else 0
    sampling = _sampling(config.get("temperature"), _get(config, "topP", "top_p"),
                         _get(config, "maxOutputTokens", "max_output_tokens"),
                         config.get("seed"), k)
    return ChatRequest.from_parts(model, _one_turn(user), sampling=sampling,
                                  system="\n".join(system_texts)), wants


def _one_turn(turns: list[list[str | bytes]]) -> list[str | bytes]:
    """The user turns as one sequence of parts: within a turn the parts join as they are
    (how judgebias's backends split one prompt around its images), turns with a newline."""
    joined: list[str | bytes] = []
    for i, turn in enumerate(turns):
        joined += (["\n"] if i else []) + turn
    return joined


# ---------------------------------------------------------------------------- rendering


def _request_id(request: ChatRequest) -> str:
    blob = json.dumps([request.model, request.prompt, request.image_hashes(),
                       request.sampling.as_dict()], sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:24]


def openai_completion(request: ChatRequest, answer: ChatResponse, logprobs: bool
                      ) -> dict[str, Any]:
    """The ``chat.completion`` object for a successful answer."""
    content = None
    if logprobs:
        content = {"content": [
            {"token": t.token, "logprob": t.logprob, "bytes": list(t.token.encode()),
             "top_logprobs": [{"token": tok, "logprob": lp, "bytes": list(tok.encode())}
                              for tok, lp in t.top]}
            for t in answer.tokens or ()], "refusal": None}
    return {
        "id": f"chatcmpl-{_request_id(request)}",
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
        "usage": {name: int(answer.usage.get(name, 0))
                  for name in ("prompt_tokens", "completion_tokens", "total_tokens")},
    }


def gemini_response(request: ChatRequest, answer: ChatResponse, logprobs: bool
                    ) -> dict[str, Any]:
    """The ``GenerateContentResponse`` JSON (camelCase, as the REST API sends it)."""
    candidate: dict[str, Any] = {
        "content": {"role": "model", "parts": [{"text": answer.text}]},
        "finishReason": "MAX_TOKENS" if answer.finish_reason == "length" else "STOP",
        "index": 0,
    }
    tokens = answer.tokens or ()
    if logprobs:
        result: dict[str, Any] = {
            "chosenCandidates": [{"token": t.token, "logProbability": t.logprob}
                                 for t in tokens],
            "logProbabilitySum": sum(t.logprob for t in tokens),
        }
        if request.sampling.top_logprobs > 0:
            result["topCandidates"] = [
                {"candidates": [{"token": tok, "logProbability": lp} for tok, lp in t.top]}
                for t in tokens]
        candidate["logprobsResult"] = result
    if tokens:
        candidate["avgLogprobs"] = sum(t.logprob for t in tokens) / len(tokens)
    usage = answer.usage
    return {
        "candidates": [candidate],
        "usageMetadata": {"promptTokenCount": int(usage.get("prompt_tokens", 0)),
                          "candidatesTokenCount": int(usage.get("completion_tokens", 0)),
                          "totalTokenCount": int(usage.get("total_tokens", 0))},
        "modelVersion": request.model,
        "responseId": _request_id(request),
    }


_OPENAI_ERRORS = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    404: ("invalid_request_error", "model_not_found"),
    429: ("requests", "rate_limit_exceeded"),
    500: ("server_error", None),
    503: ("server_error", None),
}
_GEMINI_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 404: "NOT_FOUND",
                  429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}


def openai_error(status: int, message: str, code: str | None = None,
                 param: str | None = None) -> dict[str, Any]:
    kind, default_code = _OPENAI_ERRORS.get(status, ("invalid_request_error", None))
    return {"error": {"message": message, "type": kind, "param": param,
                      "code": code if code is not None else default_code}}


def gemini_error(status: int, message: str) -> dict[str, Any]:
    return {"error": {"code": status, "message": message,
                      "status": _GEMINI_STATUS.get(status, "UNKNOWN")}}


_FAULT_MESSAGES = {
    ("openai", 429): "Rate limit reached for requests (simulated by serve-sim).",
    ("openai", 500): "The server had an error while processing your request. "
                     "Sorry about that! (simulated by serve-sim)",
    ("openai", 401): "Incorrect API key provided.",
    ("gemini", 429): "Resource has been exhausted (e.g. check quota). "
                     "(simulated by serve-sim)",
    ("gemini", 500): "An internal error has occurred. (simulated by serve-sim)",
    ("openai", 503): "The engine is currently overloaded, please try again later. "
                     "(an outage simulated by serve-sim)",
    ("gemini", 503): "The model is overloaded. Please try again later. "
                     "(an outage simulated by serve-sim)",
    ("gemini", 401): "API key not valid. Please pass a valid API key.",
}


def _format_seconds(seconds: float) -> str:
    return str(int(seconds)) if float(seconds).is_integer() else f"{seconds:g}"


def _retry_after_headers(seconds: float) -> tuple[tuple[str, str], ...]:
    """``Retry-After`` (seconds; fractional, as OpenAI sends it) and ``retry-after-ms``."""
    seconds = round(seconds, 3)
    return (("Retry-After", _format_seconds(seconds)),
            ("retry-after-ms", str(round(seconds * 1000))))


# ------------------------------------------------------------------------------ handler


@dataclass
class _Reply:
    status: int
    body: dict[str, Any]
    model: str | None = None
    headers: tuple[tuple[str, str], ...] = ()


class _Handler(BaseHTTPRequestHandler):
    """One thread per connection; keep-alive; every reply has a Content-Length."""

    protocol_version = "HTTP/1.1"
    server_version = "judgebias-serve-sim"
    sys_version = ""
    wbufsize = 64 * 1024  # headers and body leave in one send (no Nagle/delayed-ACK stall)
    server: _HTTPServer

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server.track(self.connection, True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.track(self.connection, False)

    def log_message(self, format: str, *args: Any) -> None:
        """Silenced: the default line holds the request path, which may carry ``?key=``."""

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    # -- routing ------------------------------------------------------------------------

    def _dispatch(self, method: str) -> None:
        sim: SimServer = self.server.sim
        parts = urlsplit(self.path)
        path = parts.path
        body = self._read_body() if method == "POST" else b""
        if body is None:
            return
        gemini_like = path.startswith(("/v1beta/", "/v1alpha/")) or ":generate" in path
        api = "gemini" if gemini_like else "openai"
        if path == "/v1/chat/completions" and method == "POST":
            api, route = "openai", "chat"
        elif path == "/v1/images/generations" and method == "POST":
            api, route = "openai", "images"
        elif path == "/v1/models" and method == "GET":
            api, route = "openai", "models"
        elif self._gemini_route(path, method) is not None:
            api, route = "gemini", "generate" if method == "POST" else "models"
        else:
            self._send(api, _Reply(404, self._error(api, 404, f"No route for {method} "
                                                    f"{path}", "unknown_url")), "404")
            return
        if not self._authorised(api, parts.query):
            message = _FAULT_MESSAGES[(api, 401)]
            self._send(api, _Reply(401, self._error(api, 401, message)), "401")
            return
        if route == "models":
            self._send(api, _Reply(200, sim.model_list(api)), "ok")
            return
        if sim.down_models and (down := self._peek_model(api, path, body)) in sim.down_models:
            self._send(api, _Reply(503, self._error(api, 503, _FAULT_MESSAGES[(api, 503)]),
                                   down), "down")
            return
        wait = sim.quota.take() if sim.quota is not None else None
        if wait is not None:
            reply = _Reply(429, self._error(api, 429, _FAULT_MESSAGES[(api, 429)]),
                           headers=_retry_after_headers(wait))
            reply.model = self._peek_model(api, path, body)
            self._send(api, reply, "rate_limited")
            return
        fault = sim._drawer.draw()
        if fault in ("429", "500"):
            status = int(fault)
            reply = _Reply(status, self._error(api, status, _FAULT_MESSAGES[(api, status)]),
                           headers=_retry_after_headers(sim.faults.retry_after_s)
                           if status == 429 else ())
            reply.model = self._peek_model(api, path, body)
            self._send(api, reply, fault)
            return
        if sim.latency_s > 0:
            time.sleep(sim.latency_s)
        if fault == "drop":
            sim.stats_.record(self._peek_model(api, path, body), "drop")
            self._drop()
            return
        if fault == "stall":
            time.sleep(sim.faults.stall_s)
        if route == "chat":
            reply = sim.handle_openai(body)
        elif route == "images":
            reply = sim.handle_images(body)
        else:
            reply = sim.handle_gemini(self._gemini_route(path, method) or "", body)
        outcome = fault or ("ok" if reply.status == 200 else str(reply.status))
        if fault == "garbled" and reply.status != 200:
            outcome = str(reply.status)
        self._send(api, reply, outcome, garble=fault == "garbled" and reply.status == 200)

    @staticmethod
    def _gemini_route(path: str, method: str) -> str | None:
        """The model id of a Gemini route ("" for the model list), else None.

        google-genai sends ``models/{model}`` with the model id's "/" unescaped
        (``/v1beta/models/sim/lumen-large:generateContent``); "%2F" is accepted too.
        """
        for version in GEMINI_VERSIONS:
            prefix = f"/{version}/models"
            if method == "GET" and path.rstrip("/") == prefix and version != "v1":
                return ""
            if method == "POST" and path.startswith(prefix + "/"):
                name, sep, verb = path[len(prefix) + 1:].rpartition(":")
                if sep and verb == "generateContent" and name:
                    return unquote(name)
        return None

    def _peek_model(self, api: str, path: str, body: bytes) -> str | None:
        """The model id a failed-fast request was for (for the per-model counts)."""
        if api == "gemini":
            return self._gemini_route(path, "POST")
        try:
            model = json.loads(body).get("model")
        except (ValueError, AttributeError):
            return None
        return model if isinstance(model, str) else None

    def _authorised(self, api: str, query: str) -> bool:
        key = self.server.sim.api_key
        if key is None:
            return True
        if api == "openai":
            header = self.headers.get("Authorization", "")
            given = header[7:] if header[:7].lower() == "bearer " else ""
        else:
            given = self.headers.get("x-goog-api-key") or ""
            if not given:
                given = (parse_qs(query).get("key") or [""])[0]
        return hmac.compare_digest(given.encode(), key.encode())

    @staticmethod
    def _error(api: str, status: int, message: str, code: str | None = None
               ) -> dict[str, Any]:
        if api == "openai":
            return openai_error(status, message, code)
        return gemini_error(status, message)

    # -- I/O ------------------------------------------------------------------------------

    def _read_body(self) -> bytes | None:
        """The request body, or None after answering an unreadable one (and closing)."""
        length = self.headers.get("Content-Length")
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked" or length is None:
            self.close_connection = True
            self._send("openai", _Reply(400, openai_error(
                400, "a Content-Length request body is required")), "400")
            return None
        try:
            size = int(length)
        except ValueError:
            size = -1
        if not 0 <= size <= MAX_BODY_BYTES:
            self.close_connection = True
            self._send("openai", _Reply(400, openai_error(
                400, "request body too large or bad Content-Length")), "400")
            return None
        return self.rfile.read(size)

    def _drop(self) -> None:
        """Close the connection without a byte of response."""
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    def _send(self, api: str, reply: _Reply, outcome: str, *, garble: bool = False) -> None:
        self.server.sim.stats_.record(reply.model, outcome)
        data = json.dumps(reply.body, separators=(",", ":")).encode()
        if garble:  # a 200 whose JSON stops halfway: what a torn proxy response looks like
            data = data[: max(1, len(data) // 2)]
        self.send_response(reply.status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        for name, value in reply.headers:
            self.send_header(name, value)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)


class _HTTPServer(ThreadingHTTPServer):
    """ThreadingHTTPServer with daemon threads, a deep accept backlog (a 64-connection
    client pool connects at once) and a registry of open connections so that ``stop``
    can close idle keep-alive connections instead of leaving their threads blocked."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 1024

    def __init__(self, address: tuple[str, int], sim: SimServer, family: int) -> None:
        self.address_family = family
        self.sim = sim
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()
        super().__init__(address, _Handler)

    def track(self, conn: socket.socket, opened: bool) -> None:
        with self._open_lock:
            if opened:
                self._open.add(conn)
            else:
                self._open.discard(conn)

    def close_connections(self) -> None:
        with self._open_lock:
            conns = list(self._open)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away (timeout, reset) is normal here; anything else is
        logged by type only, never with request contents (which may hold the key)."""
        exc = sys.exc_info()[1]
        if isinstance(exc, OSError):
            return
        log.warning("serve-sim: error while handling a request: %s", type(exc).__name__)


# ------------------------------------------------------------------------------- server


def check_loopback(host: str) -> str:
    """The address to bind for ``host``; a non-loopback host raises :class:`ServeSimError`."""
    if host == "localhost":
        return "127.0.0.1"
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        address = None
    if address is None or not address.is_loopback:
        raise ServeSimError(
            f"serve-sim: refusing to listen on {host!r}: this project only serves on "
            "loopback (127.0.0.0/8, ::1 or localhost)")
    return str(address)


class SimServer:
    """The simulated panel served over HTTP on loopback (OpenAI and Gemini APIs).

    Start with :meth:`start` (or ``with SimServer(config) as server:``), point a client
    at :attr:`url`, read :attr:`stats`. Each HTTP request runs in its own thread; the sim
    itself is guarded by a lock (its perception cache is not thread-safe), while latency
    and stalls are slept outside it, so concurrent requests overlap.
    """

    def __init__(self, config: Mapping[str, Any], *, host: str = "127.0.0.1", port: int = 0,
                 api_key: str | None = None, latency_s: float = 0.0, no_compute: bool = False,
                 faults: Faults = Faults(), no_logprobs_models: frozenset[str] = frozenset(),
                 quota: RequestQuota | None = None, seed: int = 0,
                 down_models: frozenset[str] = frozenset()) -> None:
        self.host = check_loopback(host)
        if not 0 <= int(port) <= 65535:
            raise ServeSimError(f"serve-sim: bad port {port}")
        if latency_s < 0:
            raise ServeSimError("serve-sim: latency must be >= 0")
        self.port = int(port)
        self.api_key = api_key or None
        self.latency_s = float(latency_s)
        self.no_compute = bool(no_compute)
        self.faults = faults
        self.no_logprobs_models = frozenset(no_logprobs_models)
        # Model ids whose endpoint is down (503); reassign to switch an outage on or off.
        self.down_models = frozenset(down_models)
        self.backend = sim_panel(config)
        self.model_ids = tuple(self.backend.models)
        self.stats_ = ServerStats()
        self._drawer = _FaultDrawer(faults, seed)
        self.quota = quota
        self._sim_lock = threading.Lock()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ----------------------------------------------------------------------

    def start(self) -> SimServer:
        """Bind and serve in a background daemon thread; returns self."""
        if self._httpd is not None:
            return self
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        self._httpd = _HTTPServer((self.host, self.port), self, family)
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever,
                                        kwargs={"poll_interval": 0.1},
                                        name="serve-sim", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop accepting, close the listening socket and every open connection."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        httpd.shutdown()
        httpd.server_close()
        httpd.close_connections()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> SimServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """``http://HOST:PORT`` (the bound port once started)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def stats(self) -> dict[str, Any]:
        """A snapshot of the counters (see :meth:`ServerStats.snapshot`)."""
        return self.stats_.snapshot()

    def reset_stats(self) -> None:
        self.stats_.reset()

    # -- answering ----------------------------------------------------------------------

    def answer(self, request: ChatRequest) -> ChatResponse:
        """What the panel answers to ``request`` (the fixed text in no-compute mode)."""
        if self.no_compute:
            return no_compute_answer(request)
        with self._sim_lock:
            return self.backend.answer(request)

    def model_list(self, api: str) -> dict[str, Any]:
        if api == "openai":
            return {"object": "list", "data": [
                {"id": m, "object": "model", "created": 0, "owned_by": "judgebias-sim"}
                for m in self.model_ids]}
        return {"models": [
            {"name": f"models/{m}", "version": SIM_VERSION, "displayName": m,
             "supportedGenerationMethods": ["generateContent"]} for m in self.model_ids]}

    def handle_openai(self, raw: bytes) -> _Reply:
        try:
            request, logprobs = parse_openai(_json(raw))
        except BadRequest as exc:
            return _Reply(400, openai_error(400, str(exc)))
        if request.model not in self.backend.models:
            return _Reply(404, openai_error(
                404, f"The model `{request.model}` does not exist or you do not have access "
                "to it.", "model_not_found"), request.model)
        if logprobs and request.model in self.no_logprobs_models:
            return _Reply(400, openai_error(400, OPENAI_NO_LOGPROBS, param="logprobs"),
                          request.model)
        answer = self.answer(request)
        if not answer.ok:
            return _Reply(400, openai_error(400, answer.error), request.model)
        return _Reply(200, openai_completion(request, answer, logprobs), request.model)

    def handle_images(self, raw: bytes) -> _Reply:
        """An OpenAI images answer: the offline renderer's picture of the prompt, at the
        asked width capped at 256 px (for speed), seeded by a ``seed`` field if the request
        has one (the real API takes none; FRAME's ``send_seed`` option sends it), else by
        the prompt. Only ``b64_json`` answers and ``n: 1`` are served."""
        from judgebias.studies.frame.scene import render

        body: Any = None
        try:
            body = _json(raw)
            if not isinstance(body, dict):
                raise BadRequest("the request body must be a JSON object")
            prompt, size = body["prompt"], str(body.get("size") or "256x256")
            if not isinstance(prompt, str) or not prompt.strip():
                raise BadRequest("'prompt' must be a non-empty string")
            if body.get("response_format", "b64_json") not in ("b64_json", None):
                raise BadRequest("serve-sim answers response_format 'b64_json' only")
            if body.get("n", 1) not in (1, None):
                raise BadRequest("serve-sim answers n = 1 only")
            width = min(int(size.lower().split("x")[0]), 256)
            if width < 16:
                raise BadRequest(f"size {size!r} is too small")
            seed = body.get("seed")
            if isinstance(seed, bool) or not isinstance(seed, int):
                seed = int.from_bytes(hashlib.sha256(prompt.encode("utf-8")).digest()[:4],
                                      "big")
            picture = render(prompt, size=width, seed=seed).image
        except (BadRequest, KeyError, TypeError, ValueError, AttributeError) as exc:
            return _Reply(400, openai_error(400, f"bad images request: {exc}"),
                          body.get("model") if isinstance(body, dict) else None)
        buffer = io.BytesIO()
        picture.save(buffer, format="PNG")
        data = base64.b64encode(buffer.getvalue()).decode("ascii")
        return _Reply(200, {"created": int(time.time()), "data": [{"b64_json": data}]},
                      body.get("model"))

    def handle_gemini(self, model: str, raw: bytes) -> _Reply:
        model = model.removeprefix("models/")
        try:
            request, logprobs = parse_gemini(model, _json(raw))
        except BadRequest as exc:
            return _Reply(400, gemini_error(400, str(exc)), model or None)
        if model not in self.backend.models:
            return _Reply(404, gemini_error(
                404, f"models/{model} is not found for API version v1beta, or is not "
                "supported for generateContent."), model)
        if logprobs and model in self.no_logprobs_models:
            return _Reply(400, gemini_error(400, GEMINI_NO_LOGPROBS), model)
        answer = self.answer(request)
        if not answer.ok:
            return _Reply(400, gemini_error(400, answer.error), model)
        return _Reply(200, gemini_response(request, answer, logprobs), model)


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, ValueError) as exc:
        raise BadRequest("request body is not valid JSON") from exc


# ---------------------------------------------------------------------------------- CLI
# The options live in serve_sim_args (cheap to import: every `judgebias` command builds
# its parser, and only `serve-sim` needs this module's sim imports).


def server_from_args(config: Mapping[str, Any], args: argparse.Namespace) -> SimServer:
    """A (not yet started) :class:`SimServer` configured from the CLI options."""
    api_key = None
    if args.api_key_env:
        api_key = os.environ.get(args.api_key_env)
        if not api_key:
            raise ServeSimError(f"serve-sim: environment variable {args.api_key_env} "
                                "(--api-key-env) is not set or empty")
    faults = Faults(rate_429=args.rate_429, retry_after_s=args.retry_after,
                    rate_500=args.rate_500, rate_stall=args.rate_stall, stall_s=args.stall_s,
                    rate_drop=args.rate_drop, rate_garbled=args.rate_garbled)
    no_logprobs = frozenset(m.strip() for m in args.no_logprobs_models.split(",") if m.strip())
    down = frozenset(m.strip() for m in args.down_models.split(",") if m.strip())
    quota = (RequestQuota(args.requests_per_minute, args.burst)
             if args.requests_per_minute is not None else None)
    return SimServer(config, host=args.host, port=args.port, api_key=api_key,
                     latency_s=args.latency, no_compute=args.no_compute, faults=faults,
                     no_logprobs_models=no_logprobs, quota=quota, seed=args.fault_seed,
                     down_models=down)


def run_from_args(config: Mapping[str, Any], args: argparse.Namespace) -> int:
    """Serve until SIGINT/SIGTERM; print the listening line first and the stats last."""
    server = server_from_args(config, args)
    done = threading.Event()
    previous: dict[int, Any] = {}
    in_main = threading.current_thread() is threading.main_thread()
    if in_main:
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.signal(sig, lambda *_: done.set())
    try:
        server.start()
        print(f"serve-sim listening on {server.url}", flush=True)
        try:
            while not done.wait(0.5):
                pass
        except KeyboardInterrupt:
            pass
    finally:
        server.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    print("serve-sim stats " + json.dumps(server.stats, sort_keys=True), flush=True)
    return 0


__all__ = [
    "NO_COMPUTE_TEXT", "OUTCOMES", "Faults", "RequestQuota", "ServeSimError", "ServerStats",
    "SimServer",
    "add_arguments", "check_loopback", "gemini_response", "no_compute_answer",
    "openai_completion", "parse_gemini", "parse_openai", "run_from_args",
    "server_from_args", "sim_panel",
]
