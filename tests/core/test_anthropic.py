"""Claude (issue 41 item 4): the `anthropic` backend through the real ``anthropic`` SDK,
over HTTP on loopback, against serve-sim's Messages API; its config rules; its price.

serve-sim answers a Claude request exactly as the in-process sim answers the request
Claude is sent (no seed, no log-probs: seed 0, top_logprobs 0; with thinking on, within
what the thinking left of max_tokens), so every answer through the client must equal
that. Batch mode: tests/core/test_anthropic_batch.py; kill -9: test_batch_kill.py.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from typing import Any

import pytest
from helpers.api import KEY, KEY_ENV, api_params
from helpers.batch import MODEL, batch_requests
from helpers.claude import THINKING, claude, expected, philautia_parsed
from helpers.project import BIN, make_project, run, study_params

from judgebias.config import ConfigError, validate_params
from judgebias.devtools.serve_sim.faults import Faults
from judgebias.devtools.serve_sim.server import SimServer
from judgebias.models.anthropic_backend import AnthropicBackend
from judgebias.models.api import PermanentError
from judgebias.models.base import ChatRequest
from judgebias.models.context import RunContext
from judgebias.models.journal import Journal, journal_path, request_key
from judgebias.models.limits import ApiLimits
from judgebias.models.registry import backend_version, build_backend
from judgebias.models.runner import run_requests


class SeenServer(SimServer):
    """serve-sim keeping each Messages body it answers, with its API version header."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.bodies: list[tuple[dict[str, Any], str | None]] = []

    def handle_anthropic(self, raw: bytes, version: str | None) -> Any:
        self.bodies.append((json.loads(raw), version))
        return super().handle_anthropic(raw, version)


@pytest.fixture
def mixed() -> list[ChatRequest]:
    """Three one-image requests, and one with a system prompt and its image before the
    text."""
    one = batch_requests(3)
    placed = ChatRequest.from_parts(MODEL, [one[1].images[0], one[1].prompt],
                                    system="You are a careful judge.",
                                    sampling=one[1].sampling)
    return [*one, placed]


# --- online -----------------------------------------------------------------------------

def test_online_answers_equal_the_sims_and_ask_what_the_api_takes(config, params, mixed,
                                                                   monkeypatch):
    """Images as base64 blocks with their media type, in their places; the system prompt
    top-level; max_tokens; no sampling field, no seed (API 2026-10-21); no log-probs."""
    monkeypatch.setenv(KEY_ENV, KEY)
    with SeenServer(config, api_key=KEY) as server:
        backend, version = build_backend(RunContext(claude(params, server.url)), "corvid-pro",
                                         "evaluator")
        answers = backend.complete(mixed)
    assert version == "anthropic-messages-1"
    assert [a.text for a in answers] == [e.text for e in expected(config, mixed)]
    assert all(a.ok and a.tokens is None and a.finish_reason == "stop" for a in answers)
    usage = answers[0].usage
    assert usage["input_tokens"] == usage["prompt_tokens"] > 0
    assert usage["output_tokens"] == usage["completion_tokens"] > 0
    assert usage["thinking_tokens"] == 0
    bodies = sorted((b for b, _ in server.bodies), key=lambda b: "system" in b)
    assert {v for _, v in server.bodies} == {"2026-10-21"}
    for body in bodies:
        assert set(body) <= {"model", "max_tokens", "messages", "system"}
        assert body["max_tokens"] == 64 and body["model"] == MODEL
    placed = bodies[-1]
    assert placed["system"] == "You are a careful judge."
    blocks = placed["messages"][0]["content"]
    assert [b["type"] for b in blocks] == ["image", "text"]
    assert blocks[0]["source"]["type"] == "base64"
    assert blocks[0]["source"]["media_type"] == "image/png"
    assert [b["type"] for b in bodies[0]["messages"][0]["content"]] == ["text", "image"]


def test_thinking_is_billed_journaled_and_kept_out_of_the_answer(config, params, requests,
                                                                 tmp_path, monkeypatch):
    """Thinking on: a thinking block before the text, output_tokens including it,
    thinking_tokens journaled apart, the thinking text and signature kept in the
    journal's raw response and not in the answer; the journal version names the budget.
    Off: none of it."""
    monkeypatch.setenv(KEY_ENV, KEY)
    asked = [dataclasses.replace(r, sampling=dataclasses.replace(r.sampling, max_tokens=2048))
             for r in requests[:3]]
    with SeenServer(config, api_key=KEY) as server:
        for thinking in (THINKING, None):
            fields = {"thinking": thinking} if thinking else {}
            config_ = claude(params, server.url, sampling={"max_tokens": 2048}, **fields)
            backend, version = build_backend(RunContext(config_), "corvid-pro", "evaluator")
            with Journal(tmp_path / f"{bool(thinking)}.sqlite") as journal:
                answers, _ = run_requests(backend, asked, journal, backend_version=version)
                keys = [request_key(r, "anthropic", version) for r in asked]
                raws = [json.loads(journal.raw(k) or "{}") for k in keys]
                stored = journal.lookup(keys)
            sims = expected(config, asked, thinking)
            assert [a.text for a in answers] == [s.text for s in sims]
            assert [stored[k].text for k in keys] == [s.text for s in sims]
            kinds = [[block["type"] for block in raw["content"]] for raw in raws]
            if thinking:
                assert version == "anthropic-messages-1+thinking-enabled-1024"
                assert server.bodies[-1][0]["thinking"] == {"type": "enabled",
                                                            "budget_tokens": 1024}
                assert kinds == [["thinking", "text"]] * 3
                thought = raws[0]["content"][0]
                assert thought["signature"] and thought["thinking"] not in answers[0].text
                for answer, sim in zip(answers, sims, strict=True):
                    spent = answer.usage["thinking_tokens"]
                    assert 0 < spent <= 1024
                    assert answer.usage["output_tokens"] == sim.usage["completion_tokens"] + \
                        spent == answer.usage["completion_tokens"]
                assert stored[keys[0]].usage == answers[0].usage  # journaled with it
            else:
                assert version == "anthropic-messages-1"
                assert "thinking" not in server.bodies[-1][0]
                assert kinds == [["text"]] * 3
                assert all(a.usage["thinking_tokens"] == 0 for a in answers)


def test_adaptive_thinking_and_the_older_api_version(config, params, requests, monkeypatch):
    """thinking {type: adaptive} is sent as such; anthropic_version 2023-06-01 sends the
    header and a temperature other than 1.0, which the sim then samples at."""
    monkeypatch.setenv(KEY_ENV, KEY)
    with SeenServer(config, api_key=KEY) as server:
        adaptive = claude(params, server.url, thinking={"type": "adaptive"})
        backend, version = build_backend(RunContext(adaptive), "corvid-pro", "evaluator")
        backend.complete(requests[:1])
        assert version == "anthropic-messages-1+thinking-adaptive"
        assert server.bodies[-1][0]["thinking"] == {"type": "adaptive"}
        older = claude(params, server.url, anthropic_version="2023-06-01",
                       sampling={"temperature": 0.5, "top_p": 1.0})
        backend, version = build_backend(RunContext(older), "corvid-pro", "evaluator")
        cool = [dataclasses.replace(r, sampling=dataclasses.replace(r.sampling,
                                                                    temperature=0.5))
                for r in requests[:2]]
        answers = backend.complete(cool)
        body, header = server.bodies[-1]
    assert version == "anthropic-messages-1+api-2023-06-01"
    assert header == "2023-06-01" and body["temperature"] == 0.5 and "top_p" not in body
    assert [a.text for a in answers] == [e.text for e in expected(config, cool)]


# --- errors -------------------------------------------------------------------------------

def _backend(url: str, key: str = KEY, **limits: Any) -> AnthropicBackend:
    return AnthropicBackend(MODEL, "panel.corvid-pro (anthropic sim/corvid-pro)",
                            ApiLimits(**{"backoff_initial_s": 0.05, "backoff_max_s": 0.2,
                                         **limits}), base_url=url, api_key=key)


def test_a_wrong_key_and_a_bad_request_stop_at_once(config, requests):
    with SimServer(config, api_key=KEY) as server:
        with pytest.raises(PermanentError) as wrong:
            _backend(server.url, key="sk-wrong-key-123").complete(requests[:1])
        bad = _backend(server.url)
        bad.thinking = THINKING  # over the requests' max_tokens (64): the API's 400
        with pytest.raises(PermanentError) as refused:
            bad.complete(requests[:2])
        calls = server.stats["requests"]
    assert "Anthropic" in str(wrong.value) and "(401)" in str(wrong.value)
    assert "authentication_error" in str(wrong.value) and "sk-wrong" not in str(wrong.value)
    assert "(400)" in str(refused.value) and "budget_tokens" in str(refused.value)
    assert calls <= 3  # no retry of either


def test_429_with_retry_after_and_529_overloaded_are_retried(config, requests):
    """429s (with retry-after) pace the job and spend no retry; 529 (the model overloaded,
    serve-sim's outage for Anthropic) is retried until it recovers. Every answer comes,
    each paid once."""
    with SimServer(config, api_key=KEY, faults=Faults(rate_429=0.4, retry_after_s=0.05),
                   seed=3) as server:
        backend = _backend(server.url, concurrency=2, max_retries=0)
        answers = backend.complete(requests)
        limited = server.stats["outcomes"]
    assert all(a.ok for a in answers) and limited["ok"] == len(requests)
    assert limited["429"] == backend.retry_counts["429"] > 0
    with SimServer(config, api_key=KEY, down_models=frozenset({MODEL})) as server:
        threading.Timer(0.4, lambda: setattr(server, "down_models", frozenset())).start()
        backend = _backend(server.url, max_retries=20)
        answers = backend.complete(requests[:2])
        outcomes = server.stats["outcomes"]
    assert all(a.ok for a in answers) and outcomes["ok"] == 2
    assert outcomes["down"] == backend.retry_counts["529"] > 0


# --- config and plan --------------------------------------------------------------------------

def _refused(params: dict, **fields: Any) -> str:
    """The config error of corvid-pro on Claude with `fields` (None: the field left out)."""
    params = philautia_parsed(params)
    entry = params["panel"]["corvid-pro"]
    entry.pop("sim")
    entry.update({"backend": "anthropic", "api_key_env": KEY_ENV, **fields})
    for name in [k for k, v in entry.items() if v is None]:
        del entry[name]
    with pytest.raises(ConfigError) as raised:
        validate_params(params)
    return str(raised.value)


@pytest.mark.parametrize(("fields", "message"), [
    ({"sampling": {"temperature": 0.0}}, "panel.corvid-pro.sampling.temperature: Claude's "
     "Messages API (2026-10-21"),
    ({"sampling": {"top_p": 0.9}}, "panel.corvid-pro.sampling.top_p: Claude's"),
    ({"anthropic_version": "2023-06-01", "thinking": THINKING,
      "sampling": {"temperature": 0.5, "max_tokens": 2048}},
     "panel.corvid-pro.sampling.temperature: with thinking on, Claude takes no temperature"),
    ({"anthropic_version": "2023-06-01", "thinking": {"type": "adaptive"},
      "sampling": {"top_p": 0.9}}, "panel.corvid-pro.sampling.top_p: with thinking on"),
    ({"thinking": THINKING}, "panel.corvid-pro.thinking.budget_tokens: 1024 must be below "
     "panel.corvid-pro.sampling.max_tokens (512)"),
    ({"thinking": {"type": "enabled"}}, "panel.corvid-pro.thinking.budget_tokens: required"),
    ({"thinking": {"type": "adaptive", "budget_tokens": 2000}},
     "panel.corvid-pro.thinking.budget_tokens: only for thinking type enabled"),
    ({"thinking": {"budget_tokens": 512}}, "panel.corvid-pro.thinking.budget_tokens"),
    ({"api_key_env": None}, "panel.corvid-pro.api_key_env: required"),
    ({"top_k": 5}, "panel.corvid-pro.top_k"),
])
def test_config_errors_name_the_key(params, fields, message):
    assert message in _refused(params, **fields)


def test_what_the_config_accepts(params):
    params = philautia_parsed(params)
    entry = params["panel"]["corvid-pro"]
    entry.pop("sim")
    entry.update(backend="anthropic", model_id="claude-sonnet-4-5", api_key_env=KEY_ENV,
                 thinking={"budget_tokens": 2048}, anthropic_version="2023-06-01",
                 sampling={"max_tokens": 4096, "top_p": 0.95}, batch=True)
    config = validate_params(params)
    from judgebias.models.panel import PanelModel

    model = PanelModel.from_params(config, "corvid-pro")
    assert model.fields == {"thinking": {"budget_tokens": 2048}, "api_key_env": KEY_ENV,
                            "anthropic_version": "2023-06-01"}
    assert backend_version(model) == ("anthropic-messages-1+thinking-enabled-2048"
                                      "+api-2023-06-01")


def test_plan_prices_claude_online_and_at_half_in_batches(params, tmp_path, monkeypatch):
    from judgebias.plan import plan_calls

    monkeypatch.chdir(tmp_path)
    for study in ("pomms", "mmb", "frame", "birch", "leaderboard"):
        del params[study]
    params["philautia"]["models"] = ["lumen-large", "lumen-mini", "corvid-pro"]
    params["philautia"]["dataset"]["synthetic"]["n_images"] = 5
    params["philautia"]["score"] = "parsed"
    params["journal_dir"] = str(tmp_path / "journal")
    entry = params["panel"]["corvid-pro"]
    entry.pop("sim")
    entry.update(backend="anthropic", model_id="claude-sonnet-4-5", api_key_env=KEY_ENV,
                 pricing={"input_per_mtok": 3.0, "output_per_mtok": 15.0})
    for batch in (False, True):
        entry["batch"] = batch
        plan = next(p for p in plan_calls(validate_params(params)).models
                    if p.model == "corvid-pro")
        assert plan.backend == "anthropic" and plan.needed == 35
        assert plan.cost and plan.cost_batch == pytest.approx(plan.cost / 2)
        assert plan.cost_configured == (plan.cost_batch if batch else plan.cost)


@pytest.mark.slow  # the small philautia pipeline through Snakemake over HTTP (about a minute)
def test_claude_judges_a_study_through_the_pipeline(default_params, tmp_path, monkeypatch):
    """Two Claude judges on philautia's parsed scores: corvid-pro online with thinking,
    lumen-mini through Message Batches. Every job runs through the real SDK; the thinking
    is in the journal and not in the answers; every batched request was answered (paid)
    once; Snakemake then has nothing left to do."""
    monkeypatch.setenv(KEY_ENV, KEY)  # the jobs' processes inherit it
    base = study_params(default_params, "philautia", small=True)
    base["philautia"]["score"] = "parsed"
    with SimServer(validate_params(default_params), api_key=KEY) as server:
        params = api_params(base, "anthropic", server.url, ["corvid-pro", "lumen-mini"])
        params["panel"]["corvid-pro"].update(thinking=THINKING)
        params["panel"]["corvid-pro"]["sampling"]["max_tokens"] = 2048
        params["panel"]["lumen-mini"]["batch"] = True
        params["backends"] = {"anthropic": {"batch_poll_s": 0.2, "batch_poll_max_s": 1.0}}
        project = make_project(tmp_path, params)
        run([str(BIN / "snakemake"), "--cores", "2", "--quiet"], project)
        outcomes = server.stats["outcomes"]
    metrics = json.loads((project / "results/philautia/ref_free/metrics.json").read_text())
    assert set(metrics["philautia"]) == set(base["philautia"]["models"])
    journals = project / ".judgebias/journal"
    with Journal(journal_path(journals, "anthropic", "sim/corvid-pro")) as journal:
        thought = [json.loads(raw)["content"][0] for (raw,) in
                   journal._db.execute("SELECT raw FROM raw_responses")]
        usage = [json.loads(u) for (u,) in journal._db.execute("SELECT usage FROM responses")]
        texts = [t for (t,) in journal._db.execute("SELECT text FROM responses")]
    assert len(thought) == len(usage) == outcomes["ok"] > 0
    assert all(t["type"] == "thinking" and t["thinking"] not in x
               for t, x in zip(thought, texts, strict=True))
    assert all(0 < u["thinking_tokens"] < u["output_tokens"] for u in usage)
    with Journal(journal_path(journals, "anthropic", "sim/lumen-mini")) as journal:
        assert journal.count() == outcomes["batch"] > 0  # every request answered once
        assert journal.live_batches("anthropic", "sim/lumen-mini") == []
    assert "Nothing to be done" in run([str(BIN / "snakemake"), "-n", "--cores", "1"],
                                       project).stdout
