"""`judgebias probe MODEL` (issue 41 item 6): one cheap real call per ability, through the
journal, and a record of what the provider did, which `validate` then takes over the
backend's table.

Against serve-sim through the real SDKs on loopback: an OpenAI model's log-probs are found
and a second probe asks the server nothing; a model whose provider refuses log-probs
(OpenAI: a 400 with its words; Gemini: the backend's fallback, an answer without them)
is then refused by validate where a study needs them, until the user states otherwise or
the settings the record was made for change; a provider that takes one image sets the
limit; a reasoning model's hidden tokens and Claude's thinking are counted; a dead
endpoint stops the probe within seconds with the backend's one line. The sim backend is
probed offline, and `judgebias plan` shows each API model's probe or the calls one would
make.
"""

from __future__ import annotations

import copy
import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers.api import KEY, KEY_ENV, RecordingServer, api_params
from helpers.project import BIN
from test_fail_fast import FAST_S, dead_port

from judgebias.abilities import model_abilities
from judgebias.cli import main
from judgebias.config import ConfigError, validate_params
from judgebias.devtools.serve_sim.openai_wire import OPENAI_NO_LOGPROBS, openai_error
from judgebias.devtools.serve_sim.wire import Reply, json_body
from judgebias.models.api import PermanentError
from judgebias.models.backends import registered_backends
from judgebias.probe import SYSTEM, probe_model, probe_summaries, probe_text
from judgebias.probe_record import read_record, record_path

MODEL = "lumen-large"
NO_LOGPROBS = "philautia (evaluator): panel.lumen-large cannot give the answer token's log-probs"
PRICING = {"input_per_mtok": 2.5, "output_per_mtok": 10.0}


@pytest.fixture
def key_env(monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)


def project(params: dict, tmp_path: Path, backend: str | None = None, url: str = "",
            key: str = MODEL, **entry: Any) -> dict:
    """The raw params: `key` answered by `backend` at `url` (the sim if None), with
    `entry` fields, journaled under `tmp_path`."""
    params = api_params(params, backend, url, [key]) if backend else copy.deepcopy(params)
    params["panel"][key].update(entry)
    params["journal_dir"] = str(tmp_path / "journal")
    return params


def probed(params: dict, key: str = MODEL) -> dict:
    """Probe `key` as the command does (the studies' needs unchecked: it measures them)."""
    return probe_model(validate_params(params, needs=False), key)


def results(record: dict) -> dict[str, str]:
    return {o["probe"]: o["result"] for o in record["probes"]}


def test_a_sim_model_is_probed_offline_and_a_second_probe_asks_nothing(params, tmp_path):
    raw = project(params, tmp_path)
    record = probed(raw)
    assert results(record) == dict.fromkeys(
        ["answer", "log-probs", "system prompt", "temperature 1", "1 image", "2 images"],
        "accepted")
    assert record["abilities"] == {"answer_logprobs": True, "system_prompt": True,
                                   "temperature": True}
    assert record["images_accepted"] == 2
    # the temperature probe of a model sampling at 1.0 is the plain answer's request
    assert (record["calls"], record["new_calls"]) == (5, 5)
    config = validate_params(raw)
    assert json.loads(record_path(config, MODEL).read_text()) == record
    again = probed(raw)
    assert (again["calls"], again["new_calls"]) == (5, 0)
    assert again["abilities"] == record["abilities"]
    text = probe_text(config, again)
    assert "validate now takes: answer log-probs yes; system prompt yes" in text
    assert "not priced (no panel.lumen-large.pricing)" in text


def test_an_openai_models_log_probs_are_found_and_a_second_probe_pays_nothing(
        params, tmp_path, key_env):
    """Through the command (a subprocess) first, then again: the server answers five
    requests once; `plan` shows the probe's calls and cost."""
    with RecordingServer(validate_params(params), api_key=KEY) as server:
        raw = project(params, tmp_path, "openai", server.url, pricing=PRICING)
        config = validate_params(raw)
        assert probe_summaries(config, [MODEL, "corvid-pro"]) == {
            MODEL: {"state": "not probed", "calls": 5}}  # API models only
        file = tmp_path / "params.yaml"
        file.write_text(yaml.safe_dump(raw))
        shown = subprocess.run([str(BIN / "judgebias"), "--params", str(file), "probe",
                                MODEL], cwd=tmp_path, capture_output=True, text=True,
                               timeout=120)
        assert shown.returncode == 0, shown.stderr
        assert "'4', top-k log-probs" in shown.stdout
        asked = list(server.answered)
        assert len(asked) == 5
        assert [len(r.images) for r in asked] == [0, 0, 0, 1, 2]
        assert asked[1].sampling.top_logprobs == 10 and asked[0].sampling.top_logprobs == 0
        assert [r.system for r in asked].count(SYSTEM) == 1
        record = probed(raw)
        assert len(server.answered) == 5  # the journal answered every probe
    assert record["abilities"]["answer_logprobs"] is True and record["new_calls"] == 0
    used = record["tokens"]
    assert used["input"] > 0 and used["output"] == 5
    assert record["cost_usd"] == pytest.approx((used["input"] * 2.5 + 5 * 10.0) / 1e6)
    plan = subprocess.run([str(BIN / "judgebias"), "--params", str(file), "plan", "--json"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert plan.returncode == 0, plan.stderr
    row = json.loads(plan.stdout)["probes"][MODEL]
    assert (row["state"], row["calls"], row["tokens"]) == ("probed", 5, used)


@pytest.mark.parametrize("backend", ["openai", "gemini"])
def test_a_judge_whose_provider_gives_no_log_probs_is_refused_by_validate(
        backend, params, tmp_path, key_env):
    config = validate_params(params)
    with RecordingServer(config, api_key=KEY,
                         no_logprobs_models=frozenset({f"sim/{MODEL}"})) as server:
        raw = project(params, tmp_path, backend, server.url)
        validate_params(raw)  # the table says the backend gives log-probs
        record = probed(raw)
    log_probs = record["probes"][1]
    if backend == "openai":  # a 400: the provider's words, and the probe goes on
        assert log_probs["result"] == "refused" and OPENAI_NO_LOGPROBS in log_probs["words"]
    else:  # the backend asks again without them (gemini_backend): none came back
        assert (log_probs["result"], log_probs["logprobs"]) == ("accepted", False)
    assert results(record)["2 images"] == "accepted"
    assert record["abilities"]["answer_logprobs"] is False
    with pytest.raises(ConfigError) as refused:
        validate_params(raw)
    assert NO_LOGPROBS in str(refused.value)
    stated = copy.deepcopy(raw)  # the user's word has the last say
    stated["panel"][MODEL]["abilities"] = {"answer_logprobs": True}
    validate_params(stated)
    other = copy.deepcopy(raw)  # a record made for other settings is not used
    other["panel"][MODEL]["sampling"]["seed"] = 1
    assert model_abilities(validate_params(other), MODEL).answer_logprobs
    assert probe_summaries(validate_params(other), [MODEL])[MODEL]["state"] == "stale"


def test_a_dead_endpoint_stops_a_probe_whose_plain_answer_is_journaled(params, tmp_path,
                                                                       key_env):
    """Probed again, only the refused log-probs request is sent: the endpoint being dead
    then stops the probe, it is not taken for a refusal of log-probs."""
    with RecordingServer(validate_params(params), api_key=KEY,
                         no_logprobs_models=frozenset({f"sim/{MODEL}"})) as server:
        raw = project(params, tmp_path, "openai", server.url)
        first = probed(raw)
    with dead_port() as port:
        raw["panel"][MODEL]["base_url"] = f"http://127.0.0.1:{port}/v1"
        with pytest.raises(PermanentError, match="cannot reach base_url"):
            probed(raw)
    assert read_record(validate_params(raw, needs=False), MODEL) == first


def test_a_reasoning_models_hidden_tokens_are_counted(params, tmp_path, key_env):
    """An OpenAI reasoning model (``reasoning`` in its panel entry; serve-sim reads the
    clients' params as a provider knows its models): its answers carry no log-probs, and
    the probe counts the hidden tokens it spent."""
    raw = project(params, tmp_path, "openai", "", reasoning={"effort": "low"})
    with RecordingServer(validate_params(params), api_key=KEY, client_params=raw) as server:
        raw["panel"][MODEL]["base_url"] = f"{server.url}/v1"
        record = probed(raw)
    assert set(results(record).values()) == {"accepted"}
    assert (record["probes"][1]["logprobs"], record["abilities"]["answer_logprobs"]) == \
        (False, False)
    assert 0 < record["tokens"]["reasoning"] < record["tokens"]["output"]


class OneImageServer(RecordingServer):
    """serve-sim refusing a chat request with more than one image, as a provider with a
    limit of one does (a 400 in OpenAI's error format)."""

    def handle_openai(self, raw: bytes) -> Reply:
        messages = json_body(raw).get("messages", [])
        images = sum(part.get("type") == "image_url" for m in messages
                     if isinstance(m.get("content"), list) for part in m["content"])
        if images > 1:
            return Reply(400, openai_error(400, "Too many images: at most 1 per request."))
        return super().handle_openai(raw)


def test_a_provider_that_takes_one_image_sets_the_limit(params, tmp_path, key_env):
    judge = "corvid-pro"  # FRAME's analysis judge, shown two images at once
    with OneImageServer(validate_params(params), api_key=KEY) as server:
        raw = project(params, tmp_path, "openai", server.url, key=judge)
        record = probed(raw, judge)
    assert results(record)["2 images"] == "refused"
    assert "Too many images: at most 1 per request." in record["probes"][-1]["words"]
    assert record["abilities"]["images_per_request"] == 1
    with pytest.raises(ConfigError) as refused:
        validate_params(raw)
    assert ("frame (analysis judge): panel.corvid-pro cannot give 2 images in one request "
            "(it takes 1)") in str(refused.value)


@pytest.mark.skipif("anthropic" not in registered_backends(), reason="no anthropic backend")
def test_claude_gives_no_log_probs_and_its_thinking_is_counted(params, tmp_path, key_env):
    judge = "corvid-pro"
    with RecordingServer(validate_params(params), api_key=KEY) as server:
        raw = project(params, tmp_path, "anthropic", server.url, key=judge,
                      thinking={"budget_tokens": 1024})
        raw["panel"][judge]["sampling"]["max_tokens"] = 2048
        record = probed(raw, judge)
    assert set(results(record).values()) == {"accepted"}
    assert record["abilities"] == {"answer_logprobs": False, "system_prompt": True,
                                   "temperature": True}
    assert record["tokens"]["reasoning"] > 0  # thinking, billed as output
    # two images accepted: the table's limit (100) stands
    assert model_abilities(validate_params(raw, needs=False), judge).images_per_request == 100


def test_a_dead_endpoint_stops_the_probe_within_seconds(params, tmp_path, key_env):
    """The command, as a person runs it: the backend's one line, a non-zero exit, no
    record."""
    with dead_port() as port:
        raw = project(params, tmp_path, "openai", f"http://127.0.0.1:{port}")
        file = tmp_path / "params.yaml"
        file.write_text(yaml.safe_dump(raw))
        start = time.monotonic()
        stopped = subprocess.run([str(BIN / "judgebias"), "--params", str(file), "probe",
                                  MODEL], cwd=tmp_path, capture_output=True, text=True,
                                 timeout=120)
        elapsed = time.monotonic() - start
    assert stopped.returncode != 0 and elapsed < FAST_S, (elapsed, stopped.stderr)
    errors = [line for line in stopped.stderr.splitlines() if " ERROR " in line]
    assert len(errors) == 1, stopped.stderr
    assert (f"stopped: panel.{MODEL} (openai sim/{MODEL}): cannot reach base_url "
            f"http://127.0.0.1:{port}/v1: connection refused") in errors[0]
    assert not (tmp_path / "journal" / "probes" / f"{MODEL}.json").exists()


def test_an_unknown_model_is_named(params, tmp_path, capsys):
    file = tmp_path / "params.yaml"
    file.write_text(yaml.safe_dump(project(params, tmp_path)))
    assert main(["--params", str(file), "probe", "nobody"]) == 2
    said = capsys.readouterr().err
    assert "probe: no panel model 'nobody' (panel: " in said and f"{MODEL}, " in said
