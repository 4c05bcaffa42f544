"""serve-sim serves the simulated panel over real HTTP, answers exactly as the sim backend
does, and injects the faults the client backends must survive.

Every test talks to an in-process server on loopback through the real ``openai`` and
``google-genai`` SDKs (or plain ``http.client`` where the raw bytes matter), with SDK
retries switched off wherever a fault is checked, and every wait is bounded.
"""

from __future__ import annotations

import argparse
import base64
import dataclasses
import http.client
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import openai
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types
from helpers.project import REPO

from judgebias import prompts
from judgebias.config import ConfigError
from judgebias.data.scenes import random_scene, reference_captions, render, to_png_bytes
from judgebias.devtools.serve_sim.args import add_arguments
from judgebias.devtools.serve_sim.errors import ServeSimError
from judgebias.devtools.serve_sim.faults import Faults
from judgebias.devtools.serve_sim.panel import NO_COMPUTE_TEXT
from judgebias.devtools.serve_sim.quotas import RequestQuota
from judgebias.devtools.serve_sim.server import SimServer, check_loopback
from judgebias.models.base import ChatRequest, ChatResponse, Sampling
from judgebias.models.context import RunContext
from judgebias.models.registry import build_backend

KEY = "test-key-7f3a9c"
CAPTION = "In this picture, a large red circle on the left, set on a vivid white background."


@pytest.fixture(scope="module")
def images() -> list[tuple[bytes, list[str]]]:
    """Four synthetic scenes as PNG bytes, each with its reference captions."""
    rng = np.random.default_rng(11)
    out = []
    for _ in range(4):
        scene = random_scene(rng)
        out.append((to_png_bytes(render(scene)), reference_captions(scene, rng, n=3)))
    return out


@pytest.fixture(scope="module")
def server(config: dict[str, Any]) -> Iterator[SimServer]:
    with SimServer(config, api_key=KEY) as srv:
        yield srv


def _requests(images: list[tuple[bytes, list[str]]]) -> list[ChatRequest]:
    """A mix of tasks, tokenizers and sampling settings across the panel."""
    caption_prompt = prompts.render("caption_llava_ov")
    out = []
    models = ["sim/lumen-large", "sim/lumen-base", "sim/corvid-pro", "sim/corvid-flash"]
    for i, ((png, refs), model) in enumerate(zip(images, models, strict=True)):
        free = prompts.render("gveval_ref_free", {"Caption": CAPTION})
        ref = prompts.render("gveval_ref", {"Caption": CAPTION, "Reference": refs})
        out += [
            ChatRequest(model, free, (png,), Sampling(1.0, 1.0, 512, 10, i)),
            ChatRequest(model, ref, (png,), Sampling(0.7, 0.9, 512, 5, 0)),
            ChatRequest(model, caption_prompt, (png,), Sampling(1.0, 1.0, 512, 3, 0)),
        ]
    out.append(ChatRequest(models[0], free, (images[0][0],), Sampling(1.0, 1.0, 6, 2, 0)))
    return out


def _openai_client(url: str, key: str = KEY, **kwargs: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=url + "/v1", api_key=key, max_retries=0, **kwargs)


def _openai_call(client: openai.OpenAI, request: ChatRequest, logprobs: bool = True,
                 **kwargs: Any) -> Any:
    data = base64.b64encode(request.images[0]).decode()
    s = request.sampling
    extra = {"logprobs": True, "top_logprobs": s.top_logprobs} if logprobs else {}
    return client.chat.completions.create(
        model=request.model,
        messages=[{"role": "user", "content": [
            {"type": "text", "text": request.prompt},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{data}"}},
        ]}],
        temperature=s.temperature, top_p=s.top_p, max_tokens=s.max_tokens, seed=s.seed,
        **extra, **kwargs)


def _genai_client(url: str, key: str = KEY) -> genai.Client:
    # attempts=1: no retries (also the default when retry_options is left unset)
    return genai.Client(api_key=key, http_options=types.HttpOptions(
        base_url=url, api_version="v1beta", retry_options=types.HttpRetryOptions(attempts=1)))


def _genai_call(client: genai.Client, request: ChatRequest, logprobs: bool = True) -> Any:
    s = request.sampling
    extra = {"response_logprobs": True, "logprobs": s.top_logprobs} if logprobs else {}
    return client.models.generate_content(
        model=request.model,
        contents=[types.Part.from_bytes(data=request.images[0], mime_type="image/png"),
                  request.prompt],
        config=types.GenerateContentConfig(temperature=s.temperature, top_p=s.top_p,
                                           max_output_tokens=s.max_tokens, seed=s.seed,
                                           **extra))


def _direct(config: dict[str, Any], request: ChatRequest) -> ChatResponse:
    """What the pipeline's own sim backend for this judge answers."""
    key = next(k for k, m in config["panel"].items() if m["model_id"] == request.model)
    backend, _ = build_backend(RunContext(config), key, "evaluator")
    answer = backend.complete([request])[0]
    assert answer.ok, answer.error
    return answer


def _raw(url: str, method: str, path: str, body: bytes | None = None,
         headers: dict[str, str] | None = None, timeout: float = 10.0
         ) -> tuple[int, dict[str, str], bytes]:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
    try:
        conn.request(method, path, body=body, headers={
            "Content-Type": "application/json", **(headers or {})})
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()


def _gemini_body(png: bytes, text: str, logprobs: bool = False) -> bytes:
    config: dict[str, Any] = {"temperature": 1.0, "maxOutputTokens": 512}
    if logprobs:
        config |= {"responseLogprobs": True, "logprobs": 5}
    return json.dumps({"contents": [{"role": "user", "parts": [
        {"inlineData": {"mimeType": "image/png", "data": base64.b64encode(png).decode()}},
        {"text": text}]}], "generationConfig": config}).encode()


# ------------------------------------------------------------------------ round trips


def test_openai_sdk_round_trip_equals_sim(server, config, images):
    client = _openai_client(server.url)
    for request in _requests(images):
        expected = _direct(config, request)
        got = _openai_call(client, request)
        choice = got.choices[0]
        assert choice.message.content == expected.text
        assert choice.finish_reason == ("length" if expected.finish_reason == "length"
                                        else "stop")
        tokens = [(t.token, t.logprob, tuple((a.token, a.logprob) for a in t.top_logprobs))
                  for t in choice.logprobs.content]
        assert tokens == [(t.token, t.logprob, t.top) for t in expected.tokens]
        assert all(t.bytes == list(t.token.encode()) for t in choice.logprobs.content)
        assert got.usage.total_tokens == expected.usage["total_tokens"]
    # without log-probs: top_logprobs is 0 in the sampling, and no logprobs come back
    request = _requests(images)[0]
    plain = _openai_call(client, request, logprobs=False)
    expected = _direct(config, ChatRequest(request.model, request.prompt, request.images,
                                           Sampling(1.0, 1.0, 512, 0, 0)))
    assert plain.choices[0].message.content == expected.text
    assert plain.choices[0].logprobs is None


@pytest.mark.parametrize("backend", ["openai", "gemini"])
def test_system_prompt_round_trip_equals_sim(server, config, images, backend, monkeypatch):
    """A request with a system prompt (ChatRequest.system, sent as a system message or
    systemInstruction by the client backends) gets the sim backend's own answer."""
    import copy

    monkeypatch.setenv("SERVE_SIM_TEST_KEY", KEY)
    request = dataclasses.replace(_requests(images)[0], system="You are a strict judge.")
    api = copy.deepcopy(config)
    model = next(m for m in api["panel"].values() if m["model_id"] == request.model)
    model.pop("sim")
    model.update(backend=backend, api_key_env="SERVE_SIM_TEST_KEY",
                 base_url=server.url + ("/v1" if backend == "openai" else ""))
    key = next(k for k, m in api["panel"].items() if m["model_id"] == request.model)
    client, _ = build_backend(RunContext(api), key, "evaluator")
    assert client.complete([request])[0].text == _direct(config, request).text


def test_gemini_sdk_round_trip_equals_sim(server, config, images):
    client = _genai_client(server.url)
    server.reset_stats()
    requests = _requests(images)
    for request in requests:
        expected = _direct(config, request)
        got = _genai_call(client, request)
        candidate = got.candidates[0]
        assert got.text == expected.text
        assert candidate.finish_reason == (types.FinishReason.MAX_TOKENS
                                           if expected.finish_reason == "length"
                                           else types.FinishReason.STOP)
        result = candidate.logprobs_result
        assert [(c.token, c.log_probability) for c in result.chosen_candidates] == [
            (t.token, t.logprob) for t in expected.tokens]
        assert [tuple((c.token, c.log_probability) for c in top.candidates)
                for top in result.top_candidates] == [t.top for t in expected.tokens]
        assert got.usage_metadata.total_token_count == expected.usage["total_tokens"]
    plain = _genai_call(client, requests[0], logprobs=False)
    assert plain.candidates[0].logprobs_result is None
    # the model id's "/" survives the URL (/v1beta/models/sim/lumen-large:generateContent)
    stats = server.stats
    assert stats["outcomes"]["ok"] == len(requests) + 1
    assert stats["models"]["sim/lumen-large"] == 5


def test_gemini_rest_shapes(server, config, images):
    """The camelCase REST JSON, with the model id percent-encoded in the path this time."""
    request = _requests(images)[0]
    body = _gemini_body(request.images[0], request.prompt, logprobs=True)
    status, _, raw = _raw(server.url, "POST", "/v1beta/models/sim%2Flumen-large:generateContent",
                          body, {"x-goog-api-key": KEY})
    assert status == 200
    reply = json.loads(raw)
    candidate = reply["candidates"][0]
    expected = _direct(config, ChatRequest(request.model, request.prompt, request.images,
                                           Sampling(1.0, 1.0, 512, 5, 0)))
    assert candidate["content"] == {"role": "model", "parts": [{"text": expected.text}]}
    assert candidate["finishReason"] == "STOP"
    chosen = candidate["logprobsResult"]["chosenCandidates"]
    assert chosen[0] == {"token": expected.tokens[0].token,
                         "logProbability": expected.tokens[0].logprob}
    assert len(candidate["logprobsResult"]["topCandidates"]) == len(chosen)
    assert set(reply["usageMetadata"]) == {"promptTokenCount", "candidatesTokenCount",
                                           "totalTokenCount"}
    assert reply["modelVersion"] == "sim/lumen-large"


def test_model_lists(server):
    ids = [m.id for m in _openai_client(server.url).models.list()]
    assert "sim/lumen-large" in ids and len(ids) == 6
    status, _, body = _raw(server.url, "GET", "/v1beta/models", headers={"x-goog-api-key": KEY})
    assert status == 200
    assert {m["name"] for m in json.loads(body)["models"]} == {f"models/{i}" for i in ids}


def test_no_compute_answers_fixed_text(config, images):
    with SimServer(config, no_compute=True) as srv:
        request = _requests(images)[0]
        got = _openai_call(_openai_client(srv.url), request)
        assert got.choices[0].message.content == NO_COMPUTE_TEXT
        score = next(t for t in got.choices[0].logprobs.content if t.token == "80")
        assert len(score.top_logprobs) == request.sampling.top_logprobs
        assert score.top_logprobs[0].token == "80" and -3 < score.logprob < 0
        gem = _genai_call(_genai_client(srv.url), request)
        assert gem.text == NO_COMPUTE_TEXT


# ------------------------------------------------------------------- auth and errors


def test_wrong_key_is_401_and_never_echoed(server, images, capfd):
    request = _requests(images)[0]
    with pytest.raises(openai.AuthenticationError) as info:
        _openai_call(_openai_client(server.url, key="wrong-key-123"), request)
    assert info.value.status_code == 401
    assert info.value.body["code"] == "invalid_api_key"
    with pytest.raises(genai_errors.ClientError) as gem:
        _genai_call(_genai_client(server.url, key="wrong-key-123"), request)
    assert gem.value.code == 401 and gem.value.status == "UNAUTHENTICATED"
    body = _gemini_body(images[0][0], request.prompt)
    path = "/v1beta/models/sim/lumen-large:generateContent"
    status, _, raw = _raw(server.url, "POST", path, body)  # no key at all
    assert status == 401 and json.loads(raw)["error"]["status"] == "UNAUTHENTICATED"
    status, _, raw_ok = _raw(server.url, "POST", f"{path}?key={KEY}", body)  # ?key= works
    assert status == 200, raw_ok
    status, _, raw_bad = _raw(server.url, "POST", f"{path}?key=wrong-key-123", body)
    assert status == 401
    for text in (str(info.value.body), str(gem.value.details), raw.decode(), raw_bad.decode()):
        assert KEY not in text and "wrong-key-123" not in text
    out, err = capfd.readouterr()
    assert KEY not in out + err and "wrong-key-123" not in out + err


def test_unknown_model_is_404_in_provider_format(server, images):
    request = _requests(images)[0]
    missing = ChatRequest("sim/nope", request.prompt, request.images, request.sampling)
    with pytest.raises(openai.NotFoundError) as info:
        _openai_call(_openai_client(server.url), missing)
    assert info.value.body["code"] == "model_not_found"
    assert info.value.body["type"] == "invalid_request_error"
    assert "`sim/nope` does not exist" in info.value.body["message"]
    with pytest.raises(genai_errors.ClientError) as gem:
        _genai_call(_genai_client(server.url), missing)
    assert gem.value.code == 404 and gem.value.status == "NOT_FOUND"


def test_images_are_drawn_by_the_study_that_declares_them(config):
    """The images route draws with a study's ``sim_images`` hook (FRAME's, found through
    the registry even where the params do not run FRAME); with no such study, a 404."""
    without_frame = {key: value for key, value in config.items() if key != "frame"}
    body = json.dumps({"prompt": "Generate an image of two cats napping in a meadow.",
                       "size": "128x128"}).encode()
    with SimServer(without_frame) as srv:
        assert srv.image_study is not None and srv.image_study.name == "frame"
        status, _, raw = _raw(srv.url, "POST", "/v1/images/generations", body)
        assert status == 200 and json.loads(raw)["data"][0]["b64_json"]
        srv.image_study = None
        status, _, raw = _raw(srv.url, "POST", "/v1/images/generations", body)
        assert status == 404 and "sim_images" in json.loads(raw)["error"]["message"]
        assert srv.stats["outcomes"]["404"] == 1


def test_malformed_body_is_400(server, images):
    headers = {"Authorization": f"Bearer {KEY}"}
    status, _, body = _raw(server.url, "POST", "/v1/chat/completions", b"{not json", headers)
    assert status == 400 and json.loads(body)["error"]["type"] == "invalid_request_error"
    status, _, body = _raw(server.url, "POST", "/v1/chat/completions",
                           json.dumps({"model": "sim/lumen-large"}).encode(), headers)
    assert status == 400 and "messages" in json.loads(body)["error"]["message"]
    status, _, body = _raw(server.url, "POST", "/v1beta/models/sim/lumen-large:generateContent",
                           b'{"contents": 3}', {"x-goog-api-key": KEY})
    assert status == 400 and json.loads(body)["error"]["status"] == "INVALID_ARGUMENT"
    # a prompt the sim cannot answer is a 400 carrying the sim's reason
    bad = ChatRequest("sim/lumen-large", "hello there", (images[0][0],))
    with pytest.raises(openai.BadRequestError) as info:
        _openai_call(_openai_client(server.url), bad)
    assert ("none of the tasks it answers (gveval, mmb_pairwise, mmb_rephrase, frame_score, "
            "frame_pairwise, frame_instruction, birch_judge, birch_label, birch_reference, "
            "birch_anchor, birch_lengthen, caption)"
            in info.value.body["message"])


def test_no_logprobs_models_reject_only_logprob_requests(config, images):
    request = _requests(images)[0]
    with SimServer(config, no_logprobs_models=frozenset({request.model})) as srv:
        client = _genai_client(srv.url)
        with pytest.raises(genai_errors.ClientError) as info:
            _genai_call(client, request)
        assert info.value.code == 400 and info.value.status == "INVALID_ARGUMENT"
        assert info.value.message == "Logprobs is not supported for the current model."
        assert _genai_call(client, request, logprobs=False).text
        with pytest.raises(openai.BadRequestError):
            _openai_call(_openai_client(srv.url), request)
        assert _openai_call(_openai_client(srv.url), request, logprobs=False).choices
        other = ChatRequest("sim/corvid-pro", request.prompt, request.images, request.sampling)
        assert _genai_call(client, other).candidates[0].logprobs_result is not None


# ------------------------------------------------------------------------------ faults


def test_fault_429_sends_retry_after(config, images):
    request = _requests(images)[0]
    with SimServer(config, faults=Faults(rate_429=1.0, retry_after_s=2)) as srv:
        with pytest.raises(openai.RateLimitError) as info:
            _openai_call(_openai_client(srv.url), request)
        assert info.value.response.headers["retry-after"] == "2"
        assert info.value.response.headers["retry-after-ms"] == "2000"
        with pytest.raises(genai_errors.ClientError) as gem:
            _genai_call(_genai_client(srv.url), request)
        assert gem.value.code == 429 and gem.value.status == "RESOURCE_EXHAUSTED"
        assert srv.stats["outcomes"]["429"] == 2
        assert srv.stats["models"] == {request.model: 2}


def test_quota_refuses_beyond_its_rate_with_the_time_to_the_next_token(config, images):
    """A provider's requests-per-minute limit: a token bucket (burst 2, 60/min = 1/s)."""
    request = _requests(images)[0]
    with SimServer(config, quota=RequestQuota(60, burst=2), no_compute=True) as srv:
        client = _openai_client(srv.url)
        _openai_call(client, request)
        _openai_call(client, request)
        with pytest.raises(openai.RateLimitError) as info:
            _openai_call(client, request)
        seconds = float(info.value.response.headers["retry-after"])
        assert 0.5 < seconds <= 1.0  # the bucket refills one request a second
        assert abs(int(info.value.response.headers["retry-after-ms"]) - seconds * 1000) <= 1
        with pytest.raises(genai_errors.ClientError) as gem:
            _genai_call(_genai_client(srv.url), request)
        assert gem.value.code == 429
        client.models.list()  # listing models spends no quota
        outcomes = srv.stats["outcomes"]
        assert outcomes["rate_limited"] == 2 and outcomes["429"] == 0
        assert outcomes["ok"] == 3  # two answers and the model list
        time.sleep(seconds)
        _openai_call(client, request)  # refilled


def test_quota_bucket_arithmetic():
    quota = RequestQuota(120)  # 2/s; burst defaults to one second's worth
    assert quota.burst == 2.0
    assert quota.take() is None and quota.take() is None
    wait = quota.take()
    assert wait is not None and 0.45 < wait <= 0.5
    assert RequestQuota(6).burst == 1.0  # never below one request
    with pytest.raises(ServeSimError, match="requests_per_minute must be > 0"):
        RequestQuota(0)
    with pytest.raises(ServeSimError, match="burst must be >= 1"):
        RequestQuota(60, burst=0.5)


def test_fault_500(config, images):
    with SimServer(config, faults=Faults(rate_500=1.0)) as srv:
        with pytest.raises(openai.InternalServerError):
            _openai_call(_openai_client(srv.url), _requests(images)[0])
        with pytest.raises(genai_errors.ServerError):
            _genai_call(_genai_client(srv.url), _requests(images)[0])
        assert srv.stats["outcomes"]["500"] == 2


def test_a_down_model_gets_503_until_it_is_back(config, images):
    """An outage of one model's endpoint: 503 for that model id only, on both APIs, counted
    per model; switched off while the server runs."""
    down, up = (dataclasses.replace(_requests(images)[0], model=m) for m in ("sim/lumen-large",
                                                                 "sim/corvid-pro"))
    with SimServer(config, down_models=frozenset({down.model})) as srv:
        with pytest.raises(openai.InternalServerError, match="overloaded") as caught:
            _openai_call(_openai_client(srv.url), down)
        assert caught.value.status_code == 503
        with pytest.raises(genai_errors.ServerError, match="UNAVAILABLE"):
            _genai_call(_genai_client(srv.url), down)
        _openai_call(_openai_client(srv.url), up)
        srv.down_models = frozenset()
        _openai_call(_openai_client(srv.url), down)
        stats = srv.stats
    assert stats["model_outcomes"] == {down.model: {"down": 2, "ok": 1}, up.model: {"ok": 1}}
    assert stats["outcomes"]["down"] == 2


def test_fault_garbled_body_does_not_parse(config, images):
    request = _requests(images)[0]
    with SimServer(config, faults=Faults(rate_garbled=1.0)) as srv:
        status, _, body = _raw(srv.url, "POST", "/v1beta/models/sim/lumen-large:generateContent",
                               _gemini_body(images[0][0], request.prompt))
        assert status == 200 and body.startswith(b'{"candidates"')
        with pytest.raises(json.JSONDecodeError):
            json.loads(body)
        with pytest.raises(json.JSONDecodeError):  # openai parses a 200 lazily, no retry
            _openai_call(_openai_client(srv.url), request)
        with pytest.raises(json.JSONDecodeError):
            _genai_call(_genai_client(srv.url), request)
        assert srv.stats["outcomes"]["garbled"] == 3


def test_fault_drop_closes_connection(config, images):
    request = _requests(images)[0]
    with SimServer(config, faults=Faults(rate_drop=1.0)) as srv:
        with pytest.raises((http.client.RemoteDisconnected, ConnectionError)):
            _raw(srv.url, "POST", "/v1/chat/completions", b"{}")
        with pytest.raises(openai.APIConnectionError):
            _openai_call(_openai_client(srv.url), request)
        assert srv.stats["outcomes"]["drop"] == 2


def test_fault_stall_delays_then_answers(config, images):
    """A stalled answer: a client's timeout fires long before the stall ends (the bound
    leaves seconds for a loaded CI machine to schedule the client), a patient client gets
    the answer after it."""
    request = _requests(images)[0]
    with SimServer(config, faults=Faults(rate_stall=1.0, stall_s=3.0)) as srv:
        start = time.monotonic()
        with pytest.raises(openai.APITimeoutError):
            _openai_call(_openai_client(srv.url, timeout=0.3), request)
        assert time.monotonic() - start < 2.5
        start = time.monotonic()
        got = _openai_call(_openai_client(srv.url, timeout=10), request)
        assert time.monotonic() - start >= 3.0
        assert got.choices[0].message.content == srv.answer(request).text


def test_fault_draws_are_seeded_and_mixed(config):
    faults = Faults(rate_429=0.3, rate_500=0.2)

    def sequence(seed: int) -> list[int]:
        with SimServer(config, faults=faults, seed=seed) as srv:
            return [_raw(srv.url, "POST", "/v1/chat/completions", b"{}")[0]
                    for _ in range(200)]

    first = sequence(3)
    assert first == sequence(3) and first != sequence(4)
    share = {code: first.count(code) / len(first) for code in (429, 500, 400)}
    assert 0.2 < share[429] < 0.4 and 0.1 < share[500] < 0.3 and share[400] > 0.35


def test_faults_must_be_probabilities():
    with pytest.raises(ConfigError):
        Faults(rate_429=0.7, rate_500=0.6)
    with pytest.raises(ConfigError):
        Faults(rate_drop=-0.1)


# ------------------------------------------------------------------ concurrency, host


def test_64_concurrent_requests_overlap(config, images):
    requests = _requests(images)
    with SimServer(config, latency_s=0.2) as srv:
        client = _openai_client(srv.url, timeout=30)
        start = time.monotonic()
        with ThreadPoolExecutor(max_workers=64) as pool:
            answers = list(pool.map(lambda i: _openai_call(client, requests[i % len(requests)]),
                                    range(64)))
        elapsed = time.monotonic() - start
        assert elapsed < 64 * 0.2 / 4, elapsed
        assert srv.stats["outcomes"]["ok"] == 64
        assert all(a.choices[0].message.content for a in answers)


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.10", "example.com", "::", "10.0.0.1"])
def test_non_loopback_host_refused(config, host):
    with pytest.raises(ServeSimError, match="only serves on loopback"):
        SimServer(config, host=host)


def test_loopback_hosts_accepted():
    assert check_loopback("localhost") == "127.0.0.1"
    assert check_loopback("127.0.0.5") == "127.0.0.5"
    assert check_loopback("::1") == "::1"


# -------------------------------------------------------------------------------- CLI


def test_cli_arguments_and_missing_key_env(config):
    from judgebias.devtools.serve_sim.server import server_from_args

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["--port", "0", "--rate-429", "0.1", "--retry-after", "3",
                              "--no-logprobs-models", "sim/lumen-mini, sim/corvid-lite",
                              "--down-models", "sim/corvid-pro",
                              "--api-key-env", "JUDGEBIAS_TEST_UNSET_VAR_XYZ"])
    assert args.host == "127.0.0.1" and args.fault_seed == 0
    os.environ.pop("JUDGEBIAS_TEST_UNSET_VAR_XYZ", None)
    with pytest.raises(ServeSimError, match="JUDGEBIAS_TEST_UNSET_VAR_XYZ"):
        server_from_args(config, args)
    args.api_key_env = None
    srv = server_from_args(config, args)
    assert srv.no_logprobs_models == {"sim/lumen-mini", "sim/corvid-lite"}
    assert srv.down_models == {"sim/corvid-pro"}
    assert srv.faults.rate_429 == 0.1 and srv.faults.retry_after_s == 3
    assert srv.quota is None
    assert srv.batches.completion_s == 0
    args = parser.parse_args(["--requests-per-minute", "600", "--burst", "4",
                              "--batch-completion", "2.5", "--batch-fail-share", "0.1",
                              "--batch-foreign-rows", "2", "--batch-state-dir", "state"])
    srv = server_from_args(config, args)
    assert srv.quota.rate == 10 and srv.quota.burst == 4
    assert srv.batches.completion_s == 2.5 and str(srv.batches.state_dir) == "state"
    assert (srv.batches.faults.fail_share, srv.batches.faults.foreign_rows) == (0.1, 2)
    args.batch_expire_share = 2.0
    with pytest.raises(ServeSimError, match="expire_share"):
        server_from_args(config, args)


def test_cli_serves_until_sigterm(tmp_path):
    script = (
        "import argparse, sys\n"
        "from judgebias.config import load_config\n"
        "from judgebias.devtools.serve_sim.args import add_arguments\n"
        "from judgebias.devtools.serve_sim.server import run_from_args\n"
        "p = argparse.ArgumentParser(); add_arguments(p)\n"
        f"sys.exit(run_from_args(load_config({str(REPO / 'params.yaml')!r}), "
        "p.parse_args(sys.argv[1:])))\n"
    )
    env = {**os.environ, "SERVE_SIM_TEST_KEY": KEY}
    proc = subprocess.Popen([sys.executable, "-c", script, "--port", "0", "--api-key-env",
                             "SERVE_SIM_TEST_KEY"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    try:
        line = proc.stdout.readline().strip()
        assert line.startswith("serve-sim listening on http://127.0.0.1:"), line
        url = line.rsplit(" ", 1)[1]
        ids = [m.id for m in _openai_client(url).models.list()]
        assert "sim/corvid-pro" in ids
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert '"requests": 1' in out and KEY not in out + err + line
