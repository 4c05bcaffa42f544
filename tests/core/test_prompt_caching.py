"""Prompt caching (issue 45, part "caching-aware requests"): each wire reads the cached
input its provider reports and journals it as ``cached_tokens``; serve-sim reports cached
tokens as each provider does (OpenAI by itself in 128-token steps from 1,024, Gemini by
itself, Anthropic only what ``cache_control`` marks: written first, read after), online
and in batches, through the real SDKs over loopback; Claude's requests mark the prefix they
share and nothing else; requests sharing a long prefix sent side by side read it, the same
requests interleaved with others find it evicted; `judgebias plan` costs the needed calls
with and without caching (hand-computed below) and shows the cached share the journal
measured."""

from __future__ import annotations

import dataclasses
import json
import time
from types import SimpleNamespace
from typing import Any

import pytest
from anthropic.types import Message
from helpers.api import KEY, KEY_ENV, anthropic_client, api_params, gemini_client, openai_client
from helpers.batch import MODEL, batch_requests
from helpers.claude import claude, philautia_parsed
from openai.types.chat import ChatCompletion

from judgebias.config import validate_params
from judgebias.devtools.serve_sim.prefix_cache import PrefixCache, prompt_of
from judgebias.devtools.serve_sim.server import SimServer
from judgebias.models.anthropic_batch import AnthropicBatches
from judgebias.models.anthropic_wire import message_params
from judgebias.models.anthropic_wire import to_response as anthropic_response
from judgebias.models.base import CACHED_TOKENS, ChatRequest, ChatResponse
from judgebias.models.context import RunContext
from judgebias.models.gemini_wire import generation, response_from_json
from judgebias.models.gemini_wire import to_response as gemini_response
from judgebias.models.journal import Journal, journal_path, request_key
from judgebias.models.openai_batch import result_row
from judgebias.models.openai_wire import chat_body
from judgebias.models.openai_wire import to_response as openai_response
from judgebias.models.panel import panel_models
from judgebias.models.registry import backend_version, build_backend
from judgebias.models.vllm_backend import map_output
from judgebias.plan import PlannedCalls, cache_estimate, plan_calls, plan_json, plan_text

CAPTION = " Provide a one-sentence caption for the provided image."
WORDS = 1300  # a shared preamble of 1,300 words: 1,300 sim tokens, the caption's 8 more


def preamble(tag: str, words: int = WORDS) -> str:
    """A long text every request of a group begins with (the sim counts a word a token)."""
    return " ".join(f"{tag}{i}" for i in range(words))


def sharing(tag: str, n: int, seed_from: int = 0, **fields: Any) -> list[ChatRequest]:
    """`n` caption requests of corvid-pro that share a long text part and differ in their
    image (which comes last): prompt tokens 1,308 + 256 each."""
    return [dataclasses.replace(r, prompt=preamble(tag) + CAPTION, **fields)
            for r in batch_requests(n + seed_from)[seed_from:]]


# --- each wire reads what its provider sends ---------------------------------------------

def _completion(usage: dict[str, Any]) -> dict[str, Any]:
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "gpt-4o",
            "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                         "message": {"role": "assistant", "content": "80"}}],
            "usage": usage}


def test_openai_wire_journals_cached_tokens_from_prompt_tokens_details():
    """OpenAI's usage as its API sends it (openai 3.63.0 ``CompletionUsage``): the cached
    part of the prompt is nested; it is journaled flat, the nested object is not."""
    usage = {"prompt_tokens": 2006, "completion_tokens": 300, "total_tokens": 2306,
             "prompt_tokens_details": {"cached_tokens": 1920, "audio_tokens": 0},
             "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0}}
    got = openai_response(ChatCompletion.model_validate(_completion(usage))).usage
    assert got == {"prompt_tokens": 2006, "completion_tokens": 300, "total_tokens": 2306,
                   "reasoning_tokens": 0, "cached_tokens": 1920}
    writes = {**usage, "prompt_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 1900}}
    got = openai_response(ChatCompletion.model_validate(_completion(writes))).usage
    assert (got["cached_tokens"], got["cache_write_tokens"]) == (0, 1900)
    # vllm serve without --enable-prompt-tokens-details: null details, nothing known
    bare = {"prompt_tokens": 20, "completion_tokens": 3, "total_tokens": 23,
            "prompt_tokens_details": None}
    assert CACHED_TOKENS not in openai_response(
        ChatCompletion.model_validate(_completion(bare))).usage
    # a Batch API output row carries the same body
    row = {"id": "batch_req_1", "custom_id": "k", "error": None,
           "response": {"status_code": 200, "request_id": "r", "body": _completion(usage)}}
    assert result_row(row).usage["cached_tokens"] == 1920


def test_anthropic_wire_journals_cache_reads_and_writes():
    """Claude's usage (anthropic 2.17.0 ``Usage``): input_tokens is what follows the last
    breakpoint, so prompt_tokens adds the three; the read is cached_tokens, the write
    cache_write_tokens."""
    message = Message.model_validate({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "80"}], "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 50, "output_tokens": 10, "cache_creation_input_tokens": 248,
                  "cache_read_input_tokens": 1800, "service_tier": "standard"}})
    usage = anthropic_response(message).usage
    assert usage["prompt_tokens"] == 50 + 248 + 1800
    assert (usage["cached_tokens"], usage["cache_write_tokens"]) == (1800, 248)
    assert (usage["cache_read_input_tokens"], usage["input_tokens"]) == (1800, 50)


def test_gemini_wire_journals_cached_content_tokens_zero_when_left_out():
    """Gemini's REST JSON leaves a zero count out: a usage without it read nothing."""
    body = {"candidates": [{"content": {"role": "model", "parts": [{"text": "80"}]},
                            "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 2100, "candidatesTokenCount": 5,
                              "totalTokenCount": 2105, "cachedContentTokenCount": 2048}}
    assert gemini_response(response_from_json(body)).usage["cached_tokens"] == 2048
    del body["usageMetadata"]["cachedContentTokenCount"]
    assert gemini_response(response_from_json(body)).usage["cached_tokens"] == 0


def test_vllm_journals_num_cached_tokens_and_the_sim_reports_none(config):
    """vLLM's RequestOutput.num_cached_tokens where it is counted; the sim models no
    cache, so its usage leaves cached_tokens out (unknown, not 0)."""
    completion = SimpleNamespace(text="80", token_ids=[5, 6], logprobs=None,
                                 finish_reason="stop")
    output = SimpleNamespace(outputs=[completion], prompt_token_ids=list(range(40)),
                             num_cached_tokens=32)
    assert map_output(output, 0).usage == {"prompt_tokens": 40, "completion_tokens": 2,
                                           "total_tokens": 42, "cached_tokens": 32}
    output.num_cached_tokens = None
    assert CACHED_TOKENS not in map_output(output, 0).usage
    sim, _ = build_backend(RunContext(config), "corvid-pro", "evaluator")
    assert CACHED_TOKENS not in sim.complete(batch_requests(1))[0].usage


# --- serve-sim reports as each provider does, through the real SDKs ------------------

def test_serve_sim_openai_caches_by_itself_in_128_token_steps(server):
    first, second = sharing("p", 2)
    client = openai_client(server)
    got = [client.chat.completions.create(**chat_body(r)).usage for r in (first, second)]
    assert [u.prompt_tokens for u in got] == [1308 + 256] * 2
    # the shared 1,308 tokens, rounded down to 128s; the image differs
    assert [u.prompt_tokens_details.cached_tokens for u in got] == [0, 1280]
    again = client.chat.completions.create(**chat_body(second)).usage
    assert again.prompt_tokens_details.cached_tokens == 1536  # all 1,564, in 128s
    short = batch_requests(1)[0]  # 264 tokens: below 1,024, never cached
    twice = [client.chat.completions.create(**chat_body(short)).usage for _ in range(2)]
    assert [u.prompt_tokens_details.cached_tokens for u in twice] == [0, 0]


def test_serve_sim_openai_batch_rows_report_cached_tokens(server):
    """A batch's lines are answered in order, so the second line of a shared prefix reads
    what the first left; the output file (in another order) carries it by custom_id."""
    client = openai_client(server)
    lines = [{"custom_id": f"k{i}", "method": "POST", "url": "/v1/chat/completions",
              "body": chat_body(r)} for i, r in enumerate(sharing("b", 3))]
    file = client.files.create(file=("jb-1.jsonl", b"".join(
        json.dumps(line).encode() + b"\n" for line in lines)), purpose="batch")
    batch = client.batches.create(input_file_id=file.id, endpoint="/v1/chat/completions",
                                  completion_window="24h")
    deadline = time.monotonic() + 30
    while (batch := client.batches.retrieve(batch.id)).status != "completed":
        assert time.monotonic() < deadline, batch.status
        time.sleep(0.05)
    rows = {row["custom_id"]: row for row in map(
        json.loads, client.files.content(batch.output_file_id).text.splitlines())}
    assert [result_row(rows[f"k{i}"]).usage["cached_tokens"] for i in range(3)] == \
        [0, 1280, 1280]


def test_serve_sim_anthropic_writes_a_marked_prefix_then_reads_it(server):
    """Claude's requests that share their first part carry a breakpoint there (and on the
    system prompt): the first writes the marked prefix (1.25x), the second reads it; an
    unmarked request caches nothing, however often it is sent."""
    client = anthropic_client(server)
    marked = sharing("a", 2, shared_parts=1, system="You are a careful judge.")
    got = [client.messages.create(**message_params(r)).usage for r in marked]
    assert [(u.cache_creation_input_tokens, u.cache_read_input_tokens, u.input_tokens)
            for u in got] == [(1308, 0, 256), (0, 1308, 256)]
    plain = sharing("u", 1)[0]  # shared_parts 0: no marker
    got = [client.messages.create(**message_params(plain)).usage for _ in range(2)]
    assert [(u.cache_creation_input_tokens, u.cache_read_input_tokens, u.input_tokens)
            for u in got] == [(0, 0, 1564)] * 2


def test_serve_sim_gemini_caches_implicitly(server):
    client = gemini_client(server)
    counts = []
    for request in sharing("g", 2):
        contents, config = generation(request, logprobs=False)
        usage = client.models.generate_content(model=request.model, contents=contents,
                                               config=config).usage_metadata
        counts.append((usage.prompt_token_count, usage.cached_content_token_count))
    assert counts == [(1564, None), (1564, 1308)]  # a zero count is left out


def test_the_cache_forgets_after_its_ttl_and_beyond_its_capacity():
    now = [0.0]
    cache = PrefixCache(ttl_s=300, capacity_tokens=10_000, clock=lambda: now[0])
    a, b = (prompt_of("", [preamble(tag) + CAPTION]) for tag in "ab")
    assert [cache.gemini("m", a), cache.gemini("m", a)] == [0, a.tokens]
    now[0] += 301  # unused past its time to live
    assert cache.gemini("m", a) == 0
    assert cache.openai("m", a) == 0 and cache.gemini("other", a) == 0  # per API, model
    interleaved = PrefixCache(capacity_tokens=2000)  # room for about one prompt
    assert [interleaved.gemini("m", p) for p in (a, b, a, b)] == [0, 0, 0, 0]
    side_by_side = PrefixCache(capacity_tokens=2000)
    assert [side_by_side.gemini("m", p) for p in (a, a, b, b)] == [0, a.tokens, 0, b.tokens]
    assert PrefixCache(capacity_tokens=0).gemini("m", a) == 0  # caches nothing


def test_prompt_units_count_as_the_sim_counts(config):
    """The cache's tokens add up to the prompt_tokens serve-sim reports (the system
    prompt compared, not counted; a word split by an image counted once)."""
    request = ChatRequest.from_parts(MODEL, ["Provide a cap", batch_requests(1)[0].images[0],
                                             "tion for the provided image."],
                                     system="Be brief.")
    sim, _ = build_backend(RunContext(config), "corvid-pro", "evaluator")
    units = prompt_of(request.system, request.parts())
    # "Provide a caption for the provided image.": 7 words, the image between "cap" and
    # "tion" counted after the word it splits
    assert units.tokens == sim.complete([request])[0].usage["prompt_tokens"] == 256 + 7
    assert len(units.blocks) == 1 + len(request.parts())


# --- Claude's requests mark what they share -------------------------------------------

def test_claude_marks_the_shared_prefix_and_nothing_without_one():
    request = ChatRequest.from_parts(MODEL, [batch_requests(1)[0].images[0], "Score it."],
                                     system="You are a careful judge.")
    plain = message_params(request)
    assert "cache_control" not in json.dumps(plain)
    assert plain["system"] == "You are a careful judge."  # as before markers existed
    marked = message_params(dataclasses.replace(request, shared_parts=1))
    assert marked["system"] == [{"type": "text", "text": "You are a careful judge.",
                                 "cache_control": {"type": "ephemeral"}}]
    blocks = marked["messages"][0]["content"]
    assert blocks[0]["cache_control"] == {"type": "ephemeral"} and "cache_control" not in \
        blocks[1]
    assert {k: v for k, v in blocks[0].items() if k != "cache_control"} == \
        plain["messages"][0]["content"][0]
    every = message_params(dataclasses.replace(request, shared_parts=5))  # past the end
    assert every["messages"][0]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    # a Message Batch request's params are the online body, markers included
    batches = AnthropicBatches(None, None, {})  # type: ignore[arg-type]
    line = json.loads(batches.line("k" * 64, dataclasses.replace(request, shared_parts=1)))
    assert line["params"] == marked
    assert request_key(request, "anthropic") == request_key(
        dataclasses.replace(request, shared_parts=1), "anthropic")


# --- the backend path: journaled, and the order matters -------------------------------

def _journaled(backend: Any, journal: Journal, requests: list[ChatRequest]) -> list[int]:
    """Send `requests` in this order through `backend`, journal each answer as a job does,
    and read back each one's journaled cached tokens."""
    keys = [request_key(r, backend.name, "v") for r in requests]
    backend.complete(requests, lambda i, answer: journal.record(keys[i], requests[i], answer))
    found = journal.lookup(keys)
    return [found[k].usage["cached_tokens"] for k in keys]


def test_shared_prefixes_side_by_side_are_read_interleaved_they_are_evicted(
        config, params, tmp_path, monkeypatch):
    """Two groups of three requests, each group sharing 1,308 tokens, sent one at a time
    through the openai backend and journaled: side by side the second and third of each
    group read 1,280 tokens; interleaved (a b a b a b) through a cache that holds about one
    prompt, every one finds the other group's prompt in its place and reads nothing."""
    monkeypatch.setenv(KEY_ENV, KEY)
    a, b = sharing("a", 3), sharing("b", 3, seed_from=3)
    with SimServer(config, api_key=KEY, cache_tokens=2000) as server:
        panel = api_params(params, "openai", server.url, models=["corvid-pro"])
        panel["backends"] = {"openai": {"concurrency": 1}}
        backend, _ = build_backend(RunContext(validate_params(panel)), "corvid-pro",
                                   "evaluator")
        with Journal(tmp_path / "grouped.sqlite") as journal:
            assert _journaled(backend, journal, a + b) == [0, 1280, 1280, 0, 1280, 1280]
        server.prefix_cache.clear()
        with Journal(tmp_path / "shuffled.sqlite") as journal:
            mixed = [r for pair in zip(a, b, strict=True) for r in pair]
            assert _journaled(backend, journal, mixed) == [0] * 6


def test_claude_jobs_journal_their_cache_reads_and_writes(config, params, tmp_path,
                                                         monkeypatch):
    """Through the runner (the job's path) and the anthropic backend: the requests of one
    job sharing a prefix are marked, the first writes it, the others read it, and the
    journal keeps both counts under the request's own key."""
    from judgebias.models.runner import run_requests

    monkeypatch.setenv(KEY_ENV, KEY)
    requests = sharing("c", 3, shared_parts=1)
    with SimServer(config, api_key=KEY) as server:
        panel = claude(params, server.url)
        panel["backends"]["anthropic"]["concurrency"] = 1
        run = RunContext(validate_params(panel))
        backend, version = build_backend(run, "corvid-pro", "evaluator")
        with Journal(tmp_path / "claude.sqlite") as journal:
            run_requests(backend, requests, journal, backend_version=version)
            found = journal.lookup([request_key(r, "anthropic", version) for r in requests])
    usage = sorted((u["cache_write_tokens"], u["cached_tokens"], u["input_tokens"])
                   for u in (a.usage for a in found.values()))
    assert usage == [(0, 1308, 256), (0, 1308, 256), (1308, 0, 256)]
    assert all(u.usage["prompt_tokens"] == 1564 for u in found.values())


# --- plan: with and without caching ---------------------------------------------------

TEXT = "x" * 8000  # 2,000 plan tokens (4 characters a token)
PRICING = {"input_per_mtok": 2.0, "output_per_mtok": 8.0, "image_tokens": 1000,
           "answer_tokens": 10}


def _job(n: int, system: str = "", first: int = 0) -> list[ChatRequest]:
    """`n` requests sharing an 8,000-character text part, each with its own image after
    it: 3,000 plan tokens each (2,000 shared)."""
    images = [r.images[0] for r in batch_requests(first + n)[first:]]
    return [ChatRequest.from_parts(MODEL, [TEXT, image], system=system) for image in images]


def _plan(params: dict, tmp_path, monkeypatch, backend: str, jobs: list[list[ChatRequest]],
          **pricing: Any) -> Any:
    panel = api_params(philautia_parsed(params), backend, "http://127.0.0.1:9",
                       models=["corvid-pro"])
    panel["panel"]["corvid-pro"]["pricing"] = {**PRICING, **pricing}
    panel["journal_dir"] = str(tmp_path / "journal")
    config = validate_params(panel)
    monkeypatch.setattr("judgebias.plan.collect_calls", lambda _: (
        {"corvid-pro": {"philautia": [PlannedCalls("corvid-pro", job) for job in jobs]}},
        [], []))
    plan = plan_calls(config)
    return plan, next(p for p in plan.models if p.model == "corvid-pro"), config


def test_cache_estimate_by_hand():
    """One job of three requests sharing 2,000 tokens, then a separate job of one more:
    OpenAI reads 1,920 tokens (2,000 in 128-token steps) twice, nothing in the other job;
    Claude writes the marked 2,000 once and reads them twice; Gemini's minimum (2,048) is
    more than they share."""
    from judgebias.models.backends import (
        ANTHROPIC_CACHING,
        GEMINI_CACHING,
        OPENAI_CACHING,
    )

    jobs = [_job(3), _job(1, first=3)]
    assert cache_estimate(jobs, OPENAI_CACHING, 1000) == (2 * 1920, 0)
    assert cache_estimate(jobs, ANTHROPIC_CACHING, 1000) == (2 * 2000, 2000)
    assert cache_estimate(jobs, GEMINI_CACHING, 1000) == (0, 0)
    assert cache_estimate(jobs, GEMINI_CACHING, 1000, min_tokens=1024) == (2 * 2000, 0)
    # Claude caches only a marked prefix: a lone request of its job marks nothing
    assert cache_estimate([_job(1)], ANTHROPIC_CACHING, 1000) == (0, 0)


def test_plan_costs_with_and_without_caching(params, tmp_path, monkeypatch):
    """3 requests x 3,000 input tokens, 10 output tokens each, at 2 and 8 USD/MTok:
    without caching 9,000 x 2 + 30 x 8 = 18,240 micro-USD. OpenAI with caching: 3,840
    tokens read at half price, 18,240 - 3,840 x 1 = 14,400; in batches half of each.
    Claude: 4,000 read at 0.2, 2,000 written at 2.5, 3,000 at 2, plus output: 6,000 + 800
    + 5,000 + 240 = 12,040; with cached_input_per_mtok 0.1 stated: 11,640."""
    _, openai, _ = _plan(params, tmp_path, monkeypatch, "openai", [_job(3)])
    assert openai.input_tokens == 9000 and openai.cached_tokens == 3840
    assert openai.cost == pytest.approx(18_240e-6)
    assert openai.cost_cached == pytest.approx(14_400e-6)
    assert openai.cost_batch_cached == pytest.approx(7_200e-6)
    plan, claude_plan, _ = _plan(params, tmp_path, monkeypatch, "anthropic", [_job(3)])
    assert (claude_plan.cached_tokens, claude_plan.cache_write_tokens) == (4000, 2000)
    assert claude_plan.cost_cached == pytest.approx(12_040e-6)
    _, stated, _ = _plan(params, tmp_path, monkeypatch, "anthropic", [_job(3)],
                         cached_input_per_mtok=0.1)
    assert stated.cost_cached == pytest.approx(11_640e-6)
    row = next(r for r in plan_json(plan)["models"] if r["model"] == "corvid-pro")
    assert (row["cost_online_usd"], row["cost_online_cached_usd"], row["est_cached_tokens"]) \
        == (0.02, 0.01, 4000)
    total = plan_json(plan)["total"]
    assert (total["input_tokens"], total["cached_input_tokens"],
            total["cache_write_tokens"]) == (9000, 4000, 2000)
    assert {"cost_online_cached_usd", "cost_batch_cached_usd", "cost_cached_usd"} <= set(total)
    assert "with prompt caching" in plan_text(plan)


def test_plan_reports_the_cached_share_the_journal_measured(params, tmp_path, monkeypatch):
    """Of the journaled answers, only those whose usage reports cached_tokens count:
    1,000 of 2,000 prompt tokens; the sim's answers (no key) are left out."""
    jobs = [_job(3)]
    _, before, config = _plan(params, tmp_path, monkeypatch, "openai", jobs)
    assert before.measured_cached_share is None
    model = panel_models(config)["corvid-pro"]
    path = journal_path(config["journal_dir"], "openai", model.model_id)
    version = backend_version(model)
    usages = [{"prompt_tokens": 1500, "completion_tokens": 10, "cached_tokens": 1000},
              {"prompt_tokens": 500, "completion_tokens": 10, "cached_tokens": 0},
              {"prompt_tokens": 9999, "completion_tokens": 10}]
    with Journal(path) as journal:
        for request, usage in zip(jobs[0], usages, strict=True):
            journal.record(request_key(request, "openai", version), request,
                           ChatResponse(text="80", usage=usage))
    plan, after, _ = _plan(params, tmp_path, monkeypatch, "openai", jobs)
    assert after.measured_cached_share == pytest.approx(0.5)
    assert after.journaled == 3 and after.needed == 0
    assert "input read from the provider's cache: corvid-pro 50%" in plan_text(plan)
