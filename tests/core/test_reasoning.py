"""Reasoning and thinking judges (issue 41 items 2-3): OpenAI's reasoning models
(``panel.<m>.reasoning``) and Gemini's thinking models (``thinking_config``), through the
real ``openai`` and ``google-genai`` SDKs over HTTP on loopback, online and in batch mode,
against serve-sim acting each model as the clients' panel states it
(judgebias.devtools.serve_sim.hidden): an o3-like judge (effort medium, no sampling), a
GPT-5-like model at effort none (it takes temperature and log-probs there) and the same
model at medium (it does not), and a Gemini 2.5-like judge with a thinking budget and no
log-probs. serve-sim refuses what a provider refuses, so "no 400 recorded" proves that no
request a model refuses was sent. Hidden tokens are journaled, planned and priced as
output; an answer they leave no room for is truncated, journaled, and never paid twice.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path
from typing import Any

import openai
import pytest
from google.genai import errors as genai_errors
from google.genai import types
from helpers.api import KEY, KEY_ENV, api_params, gemini_client, openai_client
from helpers.batch import batch_requests
from helpers.claude import philautia_parsed
from helpers.project import BIN, PANEL, make_project, run, study_params

from judgebias.config import ConfigError, validate_params
from judgebias.devtools.serve_sim.hidden import DYNAMIC, ServedModels, hidden_tokens
from judgebias.devtools.serve_sim.panel import sim_panel
from judgebias.devtools.serve_sim.server import SimServer
from judgebias.io.artifacts import write_table
from judgebias.models.base import ChatRequest, ChatResponse
from judgebias.models.context import RunContext
from judgebias.models.journal import Journal, journal_path, request_key
from judgebias.models.openai_wire import openai_chat_messages
from judgebias.models.panel import PanelModel
from judgebias.models.registry import backend_version, build_backend
from judgebias.models.runner import run_requests
from judgebias.plan import plan_calls
from judgebias.studies.philautia import jobs
from judgebias.studies.philautia.data import build_synthetic_dataset
from judgebias.studies.philautia.params import PhilautiaParams
from judgebias.studies.philautia.tables import IMAGES

O3 = {"reasoning": {"effort": "medium"}}
GPT5_NONE = {"reasoning": {"effort": "none", "sampling": True}}
GPT5_MEDIUM = {"reasoning": {"effort": "medium"}}
BUDGET = 1024
GEMINI_25 = {"thinking_config": {"thinking_budget": BUDGET},
             "abilities": {"answer_logprobs": False}}
# panel key -> (backend, its settings); gpt-5-medium is lumen-large's model at medium
JUDGES = {"corvid-pro": ("openai", O3), "lumen-large": ("openai", GPT5_NONE),
          "gpt-5-medium": ("openai", GPT5_MEDIUM), "lumen-mini": ("gemini", GEMINI_25)}
MODEL_IDS = {"corvid-pro": "sim/corvid-pro", "lumen-large": "sim/lumen-large",
             "gpt-5-medium": "sim/lumen-large", "lumen-mini": "sim/lumen-mini"}
LIMIT = 1024  # each judge's max_tokens: room for its hidden tokens and its answer


def reasoning_panel(params: dict, url: str, max_tokens: int = LIMIT, batch: bool = False,
                    **pricing: Any) -> dict:
    """philautia on parsed scores (no judge here gives log-probs to every study), its
    judges answered by serve-sim at `url` as :data:`JUDGES` says (validated)."""
    api = api_params(philautia_parsed(params), "openai", url, ["corvid-pro", "lumen-large"])
    api = api_params(api, "gemini", url, ["lumen-mini"])
    api["panel"]["gpt-5-medium"] = copy.deepcopy(api["panel"]["lumen-large"])
    api["philautia"]["models"] = list(PANEL)
    for key, (_, settings) in JUDGES.items():
        entry = api["panel"][key]
        entry.update(copy.deepcopy(settings), batch=batch)
        entry["sampling"] = {"max_tokens": max_tokens, "seed": 0}
        if pricing:
            entry["pricing"] = {"input_per_mtok": 2.0, "output_per_mtok": 8.0, **pricing}
    api["backends"] = {name: {"batch_poll_s": 0.01, "backoff_initial_s": 0.05,
                              "backoff_max_s": 0.2} for name in ("openai", "gemini")}
    return validate_params(api)


class Seen(SimServer):
    """serve-sim keeping every chat or generateContent body it answers (online, and each
    line of a batch, which serve-sim answers through the same handlers)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.bodies: list[dict[str, Any]] = []

    def handle_openai(self, raw: bytes) -> Any:
        self.bodies.append(json.loads(raw))
        return super().handle_openai(raw)

    def handle_gemini(self, model: str, raw: bytes) -> Any:
        self.bodies.append(json.loads(raw))
        return super().handle_gemini(model, raw)


def asked(key: str, n: int = 3, max_tokens: int = LIMIT) -> list[ChatRequest]:
    """`n` captioning requests to judge `key`'s model, as its jobs build them."""
    return [dataclasses.replace(r, model=MODEL_IDS[key], sampling=dataclasses.replace(
        r.sampling, max_tokens=max_tokens)) for r in batch_requests(n)]


def spent(key: str, request: ChatRequest) -> int:
    """The hidden tokens serve-sim's model spends on `request` (serve_sim.hidden)."""
    _, settings = JUDGES[key]
    if "reasoning" in settings:
        return hidden_tokens(settings["reasoning"]["effort"], request)
    return min(BUDGET, hidden_tokens(DYNAMIC, request))


def gives_logprobs(key: str) -> bool:
    _, settings = JUDGES[key]
    if "reasoning" in settings:
        return bool(settings["reasoning"].get("sampling"))
    return bool(settings.get("abilities", {}).get("answer_logprobs", True))


def expected(config: dict, key: str, requests: list[ChatRequest]) -> list[ChatResponse]:
    """The sim's answers to what judge `key` is sent: within what its hidden tokens left
    of the limit, with log-probs only where the model gives them."""
    sim = sim_panel(config)
    return [sim.answer(dataclasses.replace(r, sampling=dataclasses.replace(
        r.sampling, max_tokens=r.sampling.max_tokens - spent(key, r),
        top_logprobs=r.sampling.top_logprobs if gives_logprobs(key) else 0)))
        for r in requests]


def kept(journal: Journal, key: str, version: str, requests: list[ChatRequest]
         ) -> list[ChatResponse]:
    """The journaled answers to `requests` of judge `key`, in their order."""
    keys = [request_key(r, JUDGES[key][0], version) for r in requests]
    found = journal.lookup(keys)
    return [found[k] for k in keys]


def refusals(server: SimServer) -> int:
    return sum(n for outcome, n in server.stats["outcomes"].items()
               if outcome.startswith("4"))


def check_answers(config: dict, key: str, requests: list[ChatRequest],
                  answers: list[ChatResponse], stored: list[ChatResponse]) -> None:
    """Each answer is the sim's to what the judge was sent; its usage bills the hidden
    tokens as output and counts them apart, and the journal keeps that usage."""
    for request, answer, sim, kept in zip(requests, answers, expected(config, key, requests),
                                          stored, strict=True):
        hidden = spent(key, request)
        assert answer.ok and answer.text == sim.text
        assert answer.tokens == (sim.tokens if gives_logprobs(key) else None)
        assert answer.usage["reasoning_tokens"] == hidden
        assert answer.usage["completion_tokens"] == sim.usage["completion_tokens"] + hidden
        assert kept.usage == answer.usage and kept.text == answer.text


def check_body(key: str, body: dict[str, Any]) -> None:
    """What the judge's request asks: only what its model takes."""
    backend, settings = JUDGES[key]
    if backend == "gemini":
        config = body["generationConfig"]
        assert config["thinkingConfig"] == {"thinking_budget": BUDGET}
        assert "responseLogprobs" not in config and config["maxOutputTokens"] == LIMIT
        return
    effort, sampling = settings["reasoning"]["effort"], settings["reasoning"].get("sampling")
    assert body["reasoning_effort"] == effort and body["max_completion_tokens"] == LIMIT
    assert "max_tokens" not in body
    taken = {"temperature", "top_p", "logprobs", "top_logprobs"}
    assert (taken <= set(body)) if sampling else not taken & set(body)


# --- online and batch ----------------------------------------------------------------------

@pytest.mark.parametrize("key", list(JUDGES))
def test_online_judges_ask_what_their_model_takes(key, config, params, tmp_path,
                                                  monkeypatch):
    """Each judge online: answers equal the sim's to what it is sent, no refusal, its
    usage and the journal's carry the hidden tokens; the journal version names the
    effort or the thinking config."""
    monkeypatch.setenv(KEY_ENV, KEY)
    requests = asked(key)
    with Seen(config, api_key=KEY) as server:
        panel = reasoning_panel(params, server.url)
        server.served = ServedModels.from_params(panel)  # the clients' panel
        backend, version = build_backend(RunContext(panel), key, "evaluator")
        with Journal(tmp_path / "j.sqlite") as journal:
            answers, _ = run_requests(backend, requests, journal, backend_version=version)
            stored = kept(journal, key, version, requests)
        assert refusals(server) == 0 and server.stats["outcomes"]["ok"] == len(requests)
        bodies = server.bodies
    check_answers(config, key, requests, answers, stored)
    assert len(bodies) == len(requests)
    for body in bodies:
        check_body(key, body)
    assert version == {"corvid-pro": "openai-chat-1+reasoning-medium",
                       "lumen-large": "openai-chat-1+reasoning-none+sampling",
                       "gpt-5-medium": "openai-chat-1+reasoning-medium",
                       "lumen-mini": "gemini-generate-1+thinking-budget-1024"}[key]
    if key == "lumen-large":  # at effort none: log-probs, and no hidden tokens
        assert all(a.tokens for a in answers) and {spent(key, r) for r in requests} == {0}
    else:
        assert all(a.tokens is None for a in answers)
        assert all(a.usage["reasoning_tokens"] > 0 for a in answers)


@pytest.mark.parametrize("key", list(JUDGES))
def test_batch_mode_sends_the_same_body_and_journals_the_same_answers(
        key, config, params, tmp_path, monkeypatch):
    """panel.<m>.batch: every request goes into a batch (a /v1/chat/completions line
    with the online body, a Gemini line with the online request), none is refused, the
    answers and their hidden tokens are journaled as online ones; a rerun pays nothing."""
    monkeypatch.setenv(KEY_ENV, KEY)
    requests = asked(key)
    with Seen(config, api_key=KEY) as server:
        panel = reasoning_panel(params, server.url, batch=True)
        server.served = ServedModels.from_params(panel)
        backend, version = build_backend(RunContext(panel), key, "evaluator")
        assert backend.batch  # type: ignore[attr-defined]
        with Journal(tmp_path / "j.sqlite") as journal:
            answers, _ = run_requests(backend, requests, journal, backend_version=version)
            again, stats = run_requests(backend, requests, journal, backend_version=version)
            stored = kept(journal, key, version, requests)
        outcomes = server.stats["outcomes"]
        assert refusals(server) == 0
        assert outcomes["batch"] == len(requests) and outcomes["ok"] == 0
        bodies = server.bodies
    assert stats.called == 0 and [a.text for a in again] == [a.text for a in answers]
    check_answers(config, key, requests, answers, stored)
    assert len(bodies) == len(requests)
    for body in bodies:
        check_body(key, body)


def test_serve_sim_refuses_what_a_reasoning_model_refuses(config, params):
    """OpenAI's 400s (the body of each, as the SDK raises it) for a reasoning model sent
    max_tokens, a temperature, log-probs; the GPT-5-like model takes sampling at none and
    not at medium; a model that is no reasoning model refuses reasoning_effort; Gemini
    refuses a budget and a level together. Each is counted as a 400."""
    with SimServer(config, api_key=KEY) as server:
        server.served = ServedModels.from_params(reasoning_panel(params, server.url))
        client = openai_client(server)
        base = {"messages": openai_chat_messages(asked("lumen-large", 1)[0])}

        def refused(**body: Any) -> dict[str, Any]:
            with pytest.raises(openai.BadRequestError) as raised:
                client.chat.completions.create(**base, **body)
            assert isinstance(raised.value.body, dict)
            return raised.value.body

        o3 = {"model": "sim/corvid-pro", "reasoning_effort": "medium"}
        assert refused(**o3, max_tokens=64) == {
            "message": "Unsupported parameter: 'max_tokens' is not supported with this "
                       "model. Use 'max_completion_tokens' instead.",
            "type": "invalid_request_error", "param": "max_tokens",
            "code": "unsupported_parameter"}
        cool = refused(**o3, max_completion_tokens=64, temperature=0.2)
        assert (cool["param"], cool["code"]) == ("temperature", "unsupported_value")
        assert "Only the default (1) value is supported" in cool["message"]
        logprobs = refused(**o3, max_completion_tokens=64, logprobs=True)
        assert (logprobs["param"], logprobs["code"]) == ("logprobs", "unsupported_parameter")
        gpt5 = {"model": "sim/lumen-large", "max_completion_tokens": 64}
        assert refused(**gpt5, reasoning_effort="medium", logprobs=True)["param"] == "logprobs"
        assert refused(model="sim/lumen-base", max_tokens=64,
                       reasoning_effort="low")["param"] == "reasoning_effort"
        ok = client.chat.completions.create(**base, **gpt5, reasoning_effort="none",
                                            temperature=0.2, logprobs=True, top_logprobs=2)
        assert ok.choices[0].message.content and ok.choices[0].logprobs is not None
        gemini = gemini_client(server)
        with pytest.raises(genai_errors.ClientError) as both:
            gemini.models.generate_content(
                model="sim/lumen-mini", contents="Describe nothing.",
                config=types.GenerateContentConfig(thinking_config=types.ThinkingConfig(
                    thinking_budget=64, thinking_level=types.ThinkingLevel.LOW)))
        assert both.value.code == 400
        assert server.stats["outcomes"]["400"] == 6


def test_serve_sim_reads_the_clients_panel_from_a_file(config, params, tmp_path):
    """`judgebias serve-sim --client-params FILE`: the models the clients' params file
    states as reasoning or thinking models are acted as such, per (model, effort)."""
    import argparse

    import yaml

    from judgebias.devtools.serve_sim.args import add_arguments
    from judgebias.devtools.serve_sim.server import server_from_args

    path = tmp_path / "clients.yaml"
    path.write_text(yaml.safe_dump(reasoning_panel(params, "http://127.0.0.1:9")))
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    served = server_from_args(config, parser.parse_args(["--client-params", str(path)])).served
    assert served.reasoning == {"sim/corvid-pro": {"medium": False},
                                "sim/lumen-large": {"none": True, "medium": False}}
    assert served.thinking == served.no_logprobs == {"sim/lumen-mini"}
    assert server_from_args(config, parser.parse_args([])).served == ServedModels()


# --- truncated by thinking --------------------------------------------------------------

def images_table(tmp_path: Path, n: int) -> str:
    path = tmp_path / "images.parquet"
    write_table(build_synthetic_dataset(tmp_path / "dataset", n, 3), path, IMAGES)
    return str(path)


def caption_images(params: dict, key: str, images: str) -> Any:
    """Philautia's caption job as its step runs it (the run context, the prompt id)."""
    return jobs.caption_images(RunContext(params), key, images,
                               prompt=PhilautiaParams.from_params(params).caption_prompt)


@pytest.mark.parametrize("key", ["corvid-pro", "lumen-mini"])
def test_an_answer_the_hidden_tokens_left_no_room_for_is_truncated(key, config, params,
                                                                   tmp_path, monkeypatch):
    """max_tokens 64, fewer than the hidden tokens: OpenAI answers finish_reason length
    with no content, Gemini MAX_TOKENS with no text. The caption job's rows say
    ``truncated`` (never parsed, no text), the answers are journaled with the hidden
    tokens billed, and the same job again makes no call."""
    monkeypatch.setenv(KEY_ENV, KEY)
    images = images_table(tmp_path, 3)
    with SimServer(config, api_key=KEY) as server:
        panel = reasoning_panel(params, server.url, max_tokens=64)
        panel["journal_dir"] = str(tmp_path / "journal")
        server.served = ServedModels.from_params(panel)
        rows = caption_images(panel, key, images)
        calls = server.stats["outcomes"]["ok"]
        again = caption_images(panel, key, images)
        assert server.stats["outcomes"]["ok"] == calls == 3 and refusals(server) == 0
    assert list(rows["status"]) == list(again["status"]) == ["truncated"] * 3
    assert (rows["raw_text"] == "").all() and (rows["finish_reason"] == "length").all()
    backend = JUDGES[key][0]
    with Journal(journal_path(panel["journal_dir"], backend, MODEL_IDS[key])) as journal:
        assert journal.count() == 3 and journal.failure_count() == 0
        usage = [json.loads(u) for (u,) in journal._db.execute("SELECT usage FROM responses")]
    assert all(u["reasoning_tokens"] == u["completion_tokens"] == 64 for u in usage)


# --- plan -----------------------------------------------------------------------------------

@pytest.mark.parametrize("key", ["corvid-pro", "lumen-mini"])
def test_plan_counts_and_prices_hidden_tokens(key, config, params, tmp_path, monkeypatch):
    """Before any call, the estimates: pricing.answer_tokens + pricing.reasoning_tokens a
    call, the hidden ones priced as output. After calls, the journal's measure: the
    billed output (hidden included) and the hidden tokens, per call."""
    monkeypatch.setenv(KEY_ENV, KEY)
    monkeypatch.chdir(tmp_path)

    def planned(panel: dict) -> Any:
        panel["journal_dir"] = str(tmp_path / "journal")
        panel["philautia"]["dataset"]["synthetic"]["n_images"] = 4
        return next(p for p in plan_calls(panel).models if p.model == key)

    with SimServer(config, api_key=KEY) as server:
        before = planned(reasoning_panel(params, server.url, answer_tokens=20,
                                         reasoning_tokens=300))
        unpriced = planned(reasoning_panel(params, server.url, answer_tokens=20,
                                           reasoning_tokens=0))
        assert (before.output_tokens_each, before.reasoning_tokens_each) == (320.0, 300.0)
        assert not before.output_is_upper_bound and before.needed > 0
        assert before.cost is not None and unpriced.cost is not None
        assert before.cost - unpriced.cost == pytest.approx(before.needed * 300 * 8 / 1e6)
        bound = planned(reasoning_panel(params, server.url, reasoning_tokens=300))
        assert bound.output_is_upper_bound and bound.output_tokens_each == LIMIT
        panel = reasoning_panel(params, server.url, answer_tokens=20, reasoning_tokens=300)
        server.served = ServedModels.from_params(panel)
        panel["journal_dir"] = str(tmp_path / "journal")
        images = images_table(tmp_path, 3)
        caption_images(panel, key, images)
        after = planned(panel)
    with Journal(journal_path(tmp_path / "journal", JUDGES[key][0], MODEL_IDS[key])) as j:
        usage = [json.loads(u) for (u,) in j._db.execute("SELECT usage FROM responses")]
    hidden = sum(u["reasoning_tokens"] for u in usage) / len(usage)
    assert hidden > 0 and after.reasoning_tokens_each == pytest.approx(hidden)
    assert after.output_tokens_each == pytest.approx(
        sum(u["completion_tokens"] for u in usage) / len(usage))
    assert after.output_tokens_each > hidden  # the answer's own tokens besides


# --- config -------------------------------------------------------------------------------

def _entry(params: dict, backend: str, **fields: Any) -> dict:
    params = philautia_parsed(params)
    entry = params["panel"]["corvid-pro"]
    entry.pop("sim")
    entry.update(backend=backend, api_key_env=KEY_ENV, base_url="http://127.0.0.1:9/v1",
                 **fields)
    return params


@pytest.mark.parametrize(("backend", "fields", "message"), [
    ("openai", {**O3, "sampling": {"temperature": 0.0}},
     "panel.corvid-pro.sampling.temperature: 0.0 is refused by a reasoning model (effort "
     "medium) that takes only the default (1)"),
    ("openai", {**O3, "sampling": {"top_p": 0.9}}, "panel.corvid-pro.sampling.top_p: 0.9"),
    ("openai", {**O3, "abilities": {"answer_logprobs": True}},
     "panel.corvid-pro.abilities.answer_logprobs: true, but panel.corvid-pro.reasoning"),
    ("openai", {"reasoning": {"effort": "extreme"}}, "panel.corvid-pro.reasoning.effort"),
    ("openai", {"reasoning": {"sampling": True}}, "panel.corvid-pro.reasoning"),
    ("openai", {"thinking_config": {"thinking_budget": 8}},
     "panel.corvid-pro.thinking_config: only for the gemini backend"),
    ("gemini", O3, "panel.corvid-pro.reasoning: only for the openai backend"),
    ("gemini", {"thinking_config": {"thinking_budget": 8, "thinking_level": "low"}},
     "panel.corvid-pro.thinking_config: give one of thinking_budget and thinking_level"),
    ("gemini", {"thinking_config": {}}, "panel.corvid-pro.thinking_config: give one"),
    ("gemini", {"thinking_config": {"thinking_level": "huge"}},
     "panel.corvid-pro.thinking_config.thinking_level"),
])
def test_config_errors_name_the_key(params, backend, fields, message):
    with pytest.raises(ConfigError) as raised:
        validate_params(_entry(params, backend, **fields))
    assert message in str(raised.value)


def test_a_study_needing_log_probs_refuses_a_judge_that_gives_none(params):
    """philautia's expected score needs log-probs: an o3-like judge is refused before any
    call (judgebias.abilities), the GPT-5-like one at effort none with sampling is not."""
    for fields, refused in ((O3, True), (GPT5_NONE, False)):
        entry = _entry(params, "openai", **fields)
        entry["philautia"]["score"] = "expected"
        if refused:
            with pytest.raises(ConfigError, match=r"panel\.corvid-pro cannot give the "
                                                  r"answer token's log-probs"):
                validate_params(entry)
        else:
            validate_params(entry)


def test_versions_change_only_where_a_setting_is_set(params):
    """Journal keys of a model without reasoning or thinking are as before; each effort,
    the sampling flag and each thinking config has its own."""
    model = PanelModel.from_params(validate_params(_entry(params, "openai")), "corvid-pro")

    def version(backend: str, **fields: Any) -> str:
        return backend_version(dataclasses.replace(model, backend=backend, fields=fields))

    assert version("openai") == "openai-chat-1" and version("gemini") == "gemini-generate-1"
    assert version("openai", **O3) == "openai-chat-1+reasoning-medium"
    assert version("openai", **GPT5_NONE) == "openai-chat-1+reasoning-none+sampling"
    assert version("gemini", thinking_config={"thinking_level": "low"}) == \
        "gemini-generate-1+thinking-level-low"
    assert version("gemini", thinking_config={"thinking_budget": 0}) == \
        "gemini-generate-1+thinking-budget-0"


# --- the pipeline -----------------------------------------------------------------------

@pytest.mark.slow  # the small philautia pipeline through Snakemake over HTTP (about a minute)
def test_reasoning_judges_run_a_study_through_the_pipeline(default_params, tmp_path,
                                                           monkeypatch):
    """philautia on parsed scores with corvid-pro an o3-like judge (online) and lumen-mini
    a Gemini thinking judge (batch mode): every job through the real SDKs, nothing
    refused, every journaled answer bills its hidden tokens; Snakemake then has nothing
    left to do."""
    monkeypatch.setenv(KEY_ENV, KEY)
    base = study_params(default_params, "philautia", small=True)
    base["philautia"]["score"] = "parsed"
    with SimServer(validate_params(default_params), api_key=KEY) as server:
        params = api_params(base, "openai", server.url, ["corvid-pro"])
        params = api_params(params, "gemini", server.url, ["lumen-mini"])
        params["panel"]["corvid-pro"].update(copy.deepcopy(O3))
        params["panel"]["lumen-mini"].update(copy.deepcopy(GEMINI_25), batch=True)
        for key in ("corvid-pro", "lumen-mini"):
            params["panel"][key]["sampling"] = {"max_tokens": LIMIT, "seed": 0}
        params["backends"] = {"gemini": {"batch_poll_s": 0.2, "batch_poll_max_s": 1.0}}
        server.served = ServedModels.from_params(params)
        project = make_project(tmp_path, params)
        run([str(BIN / "snakemake"), "--cores", "2", "--quiet"], project)
        outcomes = server.stats["outcomes"]
    assert refusals_in(outcomes) == 0 and outcomes["ok"] > 0 and outcomes["batch"] > 0
    metrics = json.loads((project / "results/philautia/ref_free/metrics.json").read_text())
    assert set(metrics["philautia"]) == set(base["philautia"]["models"])
    journals = project / ".judgebias/journal"
    for backend, model, answered in (("openai", "sim/corvid-pro", outcomes["ok"]),
                                     ("gemini", "sim/lumen-mini", outcomes["batch"])):
        with Journal(journal_path(journals, backend, model)) as journal:
            usage = [json.loads(u) for (u,) in
                     journal._db.execute("SELECT usage FROM responses")]
        assert len(usage) == answered
        assert all(0 < u["reasoning_tokens"] < u["completion_tokens"] for u in usage)
    assert "Nothing to be done" in run([str(BIN / "snakemake"), "-n", "--cores", "1"],
                                       project).stdout


def refusals_in(outcomes: dict[str, int]) -> int:
    return sum(n for outcome, n in outcomes.items() if outcome.startswith("4"))
