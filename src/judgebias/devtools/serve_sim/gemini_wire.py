"""The Gemini wire protocol: generateContent routes and request bodies in, the
``GenerateContentResponse`` JSON and error bodies out.

Request -> :class:`ChatRequest`: ``prompt`` is the user text parts joined with ``"\\n"`` in
order, ``system`` the ``systemInstruction`` text, ``images`` the decoded ``inlineData``
parts in order (standard or URL-safe base64). ``Sampling(temperature, top_p, max_tokens,
top_logprobs, seed)`` with the sim's defaults for absent fields; ``top_logprobs`` is 0
unless ``responseLogprobs: true`` (then ``logprobs``). camelCase and snake_case keys are
both accepted, as the API does.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from judgebias.devtools.serve_sim.errors import BadRequest
from judgebias.devtools.serve_sim.wire import (
    MAX_TOP_LOGPROBS,
    b64decode,
    first_of,
    integer,
    one_turn,
    request_id,
    sampling,
)
from judgebias.models.base import ChatRequest, ChatResponse

GEMINI_VERSIONS = ("v1beta", "v1", "v1alpha")
GEMINI_NO_LOGPROBS = "Logprobs is not supported for the current model."
# The messages of the errors serve-sim makes up (faults, quota, outage, a wrong key).
MESSAGES = {
    429: "Resource has been exhausted (e.g. check quota). (simulated by serve-sim)",
    500: "An internal error has occurred. (simulated by serve-sim)",
    503: "The model is overloaded. Please try again later. (an outage simulated by serve-sim)",
    401: "API key not valid. Please pass a valid API key.",
}
_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 404: "NOT_FOUND",
           429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}


def gemini_route(path: str, method: str) -> str | None:
    """The model id of a Gemini generateContent route ("" for the model list), else None.

    google-genai sends ``models/{model}`` with the model id's "/" unescaped
    (``/v1beta/models/sim/lumen-large:generateContent``); "%2F" is accepted too.
    """
    if method == "GET" and path.rstrip("/") in (f"/{v}/models" for v in GEMINI_VERSIONS
                                                if v != "v1"):
        return ""
    found = model_method(path) if method == "POST" else None
    return found[0] if found is not None and found[1] == "generateContent" else None


def model_method(path: str) -> tuple[str, str] | None:
    """(model id, method) of a ``POST /{version}/models/{model}:{method}`` path, else None:
    ``generateContent`` here, ``batchGenerateContent`` in serve_sim.gemini_batch."""
    for version in GEMINI_VERSIONS:
        prefix = f"/{version}/models/"
        if path.startswith(prefix):
            name, sep, verb = path[len(prefix):].rpartition(":")
            if sep and name:
                return unquote(name), verb
    return None


def parse_gemini(model: str, body: Any) -> tuple[ChatRequest, bool]:
    """A Gemini generateContent body -> (request, log-probs requested)."""
    if not isinstance(body, dict):
        raise BadRequest("request body must be a JSON object")
    user: list[list[str | bytes]] = []  # each user turn's text and image parts, in order
    system = first_of(body, "systemInstruction", "system_instruction")
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
            inline = first_of(part, "inlineData", "inline_data")
            if isinstance(part.get("text"), str):
                into.append(part["text"])
            elif isinstance(inline, dict) and into is not system_texts:
                into.append(b64decode(inline.get("data"), f"{at}.inlineData.data"))
            else:
                raise BadRequest(f"{at}: a text or inlineData part expected")
    config = first_of(body, "generationConfig", "generation_config") or {}
    if not isinstance(config, dict):
        raise BadRequest("'generationConfig' must be an object")
    wants = first_of(config, "responseLogprobs", "response_logprobs") or False
    if not isinstance(wants, bool):
        raise BadRequest("'responseLogprobs' must be a boolean")
    top = first_of(config, "logprobs")
    k = integer(top, "logprobs", 0, 0, MAX_TOP_LOGPROBS) if wants else 0
    return ChatRequest.from_parts(
        model, one_turn(user), system="\n".join(system_texts),
        sampling=sampling(config.get("temperature"), first_of(config, "topP", "top_p"),
                          first_of(config, "maxOutputTokens", "max_output_tokens"),
                          config.get("seed"), k)), wants


def gemini_response(request: ChatRequest, answer: ChatResponse, logprobs: bool,
                    thoughts: int | None = None, cached: int = 0) -> dict[str, Any]:
    """The ``GenerateContentResponse`` JSON (camelCase, as the REST API sends it). A
    thinking model's `thoughts` (serve_sim.hidden) are reported apart and in the total;
    an answer they left no room for has no parts. The prompt's `cached` tokens
    (serve_sim.prefix_cache) are ``cachedContentTokenCount``, left out when 0 as the API
    leaves a zero count out."""
    parts = [{"text": answer.text}] if answer.text or answer.finish_reason != "length" else []
    candidate: dict[str, Any] = {
        "content": {"role": "model", **({"parts": parts} if parts else {})},
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
    metadata = {"promptTokenCount": int(usage.get("prompt_tokens", 0)),
                "candidatesTokenCount": int(usage.get("completion_tokens", 0)),
                "totalTokenCount": int(usage.get("total_tokens", 0)) + (thoughts or 0)}
    if thoughts is not None:
        metadata["thoughtsTokenCount"] = thoughts
    if cached:
        metadata["cachedContentTokenCount"] = cached
    return {
        "candidates": [candidate],
        "usageMetadata": metadata,
        "modelVersion": request.model,
        "responseId": request_id(request),
    }


def gemini_error(status: int, message: str) -> dict[str, Any]:
    return {"error": {"code": status, "message": message,
                      "status": _STATUS.get(status, "UNKNOWN")}}
