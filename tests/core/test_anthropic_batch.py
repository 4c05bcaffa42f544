"""Claude's Message Batches (judgebias.models.anthropic_batch) against serve-sim's
(serve_sim.anthropic_batch) through the real ``anthropic`` SDK: a request asks what the
online call sends and its answer is journaled as the online one; errored, expired,
canceled, lost, repeated and foreign results each have their defined outcome under the
runner's rules; a job stopped at each moment resumes without paying twice, the create
that landed unrecorded found again by its requests (serve-sim counts every request it
answers); the wire's own rules (custom ids, results before the end)."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import anthropic
import pytest
from helpers.api import KEY, KEY_ENV, anthropic_client, sim_server
from helpers.batch import MODEL, Stop, keyed, on_provider, recorded, stop_at
from helpers.claude import THINKING, claude, expected

from judgebias.devtools.serve_sim.faults import BatchFaults
from judgebias.models.anthropic_batch import AnthropicBatches
from judgebias.models.anthropic_wire import message_params
from judgebias.models.base import ChatRequest, Sampling
from judgebias.models.batch import BatchRunner, BatchSettings, retryable
from judgebias.models.context import RunContext
from judgebias.models.journal import BATCH_DONE, Journal
from judgebias.models.limits import ApiLimits
from judgebias.models.registry import build_backend
from judgebias.models.runner import run_requests

VERSION = "anthropic-messages-1"


def _keys(requests: list[ChatRequest]) -> dict[str, ChatRequest]:
    return keyed(requests, "anthropic", VERSION)


def _runner(client: Any, journal: Journal, pending: dict[str, ChatRequest],
            settings: BatchSettings | None = None, on_state: Any = None, **options: Any
            ) -> BatchRunner:
    batches = AnthropicBatches(client, journal, pending, ApiLimits(batch_poll_s=0.05),
                               **options)
    return BatchRunner(batches, journal, MODEL, settings or BatchSettings(poll_s=0.01),
                       on_state=on_state, sleep=lambda s: None)


def test_a_request_asks_what_the_online_call_sends(requests, tmp_path):
    with Journal(tmp_path / "j.sqlite") as journal:
        batches = AnthropicBatches(anthropic.Anthropic(api_key=KEY), journal, {},
                                   thinking=THINKING)
        line = json.loads(batches.line("k" * 64, requests[0]))
    assert line == {"custom_id": "k" * 64, "params": message_params(requests[0], THINKING)}
    with pytest.raises(ValueError, match="custom_id"):
        batches.line("not a custom id", requests[0])
    with pytest.raises(ValueError, match="custom_id"):
        batches.line("k" * 65, requests[0])


def test_batch_answers_are_journaled_as_online_ones(config, params, requests, tmp_path,
                                                    monkeypatch):
    """batch: true through run_requests, as a job: one batch, every request answered in
    it (half price) and none online, each answer the online one (the sim's), the raw
    message kept; a rerun pays nothing."""
    monkeypatch.setenv(KEY_ENV, KEY)
    with sim_server(config) as server:
        api = claude(params, server.url, batch=True)
        api["backends"]["anthropic"].update(batch_poll_s=0.05)
        backend, version = build_backend(RunContext(api), "corvid-pro", "evaluator")
        with Journal(tmp_path / "j.sqlite") as journal:
            answers, stats = run_requests(backend, requests, journal, backend_version=version)
            again, rerun = run_requests(backend, requests, journal, backend_version=version)
            keys = list(keyed(requests, "anthropic", version))
            raw = json.loads(journal.raw(keys[0]) or "{}")
            assert journal.live_batches("anthropic", MODEL) == []
        outcomes = server.stats["outcomes"]
        made = on_provider("anthropic", anthropic_client(server))
    assert [a.text for a in answers] == [e.text for e in expected(config, requests)]
    assert [a.text for a in again] == [a.text for a in answers] and rerun.called == 0
    assert stats.called == 6 and outcomes["batch"] == 6 and outcomes["ok"] == 0
    assert made == (1, 1)
    assert raw["usage"]["service_tier"] == "batch" and raw["content"][0]["type"] == "text"


def test_errored_lost_repeated_and_foreign_results(config, requests, tmp_path):
    """An errored result (500) and a lost one are failures with their reason, retried by
    no one here (batch_retry: none); a repeated result is written once, a foreign one
    ignored; the next run sends exactly the failed keys again."""
    pending = _keys(requests)
    faults = BatchFaults(fail_share=0.34, missing_rows=1, duplicate_rows=1, foreign_rows=1)
    with sim_server(config, batch_faults=faults) as faulty, \
            Journal(tmp_path / "j.sqlite") as journal:
        runner = _runner(anthropic_client(faulty), journal, pending,
                         BatchSettings(poll_s=0.01, retry="none"))
        got = recorded(runner, journal, pending)
        failed = {k for k, r in got.items() if not r.ok}
        reasons = sorted(got[k].error for k in failed)
        assert runner.counts.failed == len(failed) == 3
        assert runner.counts.duplicate_rows == 1 and runner.counts.foreign_rows == 1
    assert sum(e.startswith("batch: 500: api_error:") for e in reasons) == 2
    assert sum("no row" in e for e in reasons) == 1
    assert all(retryable(got[k]) for k in failed)
    with sim_server(config) as server, Journal(tmp_path / "j.sqlite") as journal:
        again = {k: r for k, r in pending.items() if k in failed}
        got = recorded(_runner(anthropic_client(server), journal, again), journal, again)
        assert set(got) == failed and all(r.ok for r in got.values())
        assert server.stats["outcomes"]["batch"] == 3


def test_expired_results_are_retried_in_a_new_batch(config, requests, tmp_path):
    """The runner's default (a new batch, one round): half the first batch expires (3),
    then 2 of those 3 again; what the last round leaves is the final failure."""
    pending = _keys(requests)
    with sim_server(config, batch_faults=BatchFaults(expire_share=0.5)) as faulty, \
            Journal(tmp_path / "j.sqlite") as journal:
        runner = _runner(anthropic_client(faulty), journal, pending)
        got = recorded(runner, journal, pending)
        counts = runner.counts
        assert journal.failure_count() == 3 + 2  # each failed attempt kept
    assert counts.submitted == 2 and counts.retried_batch == 3 and counts.failed == 2
    assert {r.error.split(":")[1] for r in got.values() if not r.ok} == {" expired"}
    assert faulty.stats["outcomes"]["batch"] == 4


def test_an_errored_400_is_final_at_once(config, requests, tmp_path):
    """A request the API refuses (thinking's budget over its max_tokens) is errored with
    invalid_request_error, its reason a 400: never sent again; the others answered."""
    small = ChatRequest(MODEL, requests[0].prompt, requests[0].images,
                        Sampling(1.0, 1.0, 64, 0, 0))
    big = [ChatRequest(MODEL, r.prompt, r.images, Sampling(1.0, 1.0, 2048, 0, 0))
           for r in requests[1:3]]
    pending = _keys([small, *big])
    with sim_server(config) as server, Journal(tmp_path / "j.sqlite") as journal:
        runner = _runner(anthropic_client(server), journal, pending, thinking=THINKING)
        got = recorded(runner, journal, pending)
    bad = got[next(iter(pending))]
    assert bad.error.startswith("batch: 400: invalid_request_error:") and not retryable(bad)
    assert runner.counts.retried_batch == 0 and runner.counts.failed == 1
    assert [got[k].text for k in list(pending)[1:]] == [
        e.text for e in expected(config, big, THINKING)]


def test_a_canceled_batch_is_retried(config, requests, tmp_path):
    """A batch cancelled while it runs ends with every request canceled; a job that
    resumes it retries them in a new batch and answers each once."""
    pending = _keys(requests[:3])
    with sim_server(config, batch_completion_s=60.0) as server:
        client = anthropic_client(server)
        with Journal(tmp_path / "j.sqlite") as journal, pytest.raises(Stop):
            _runner(client, journal, pending, on_state=stop_at("submitted")).run(
                pending, lambda k, r: None)
        [batch] = client.messages.batches.list()
        assert client.messages.batches.cancel(batch.id).processing_status == "canceling"
        server.anthropic_batches.completion_s = 0.0
        with Journal(tmp_path / "j.sqlite") as journal:
            runner = _runner(client, journal, pending)
            got = recorded(runner, journal, pending)
            failures = [e for (e,) in journal._db.execute("SELECT error FROM failures")]
        ended = client.messages.batches.retrieve(batch.id)
    assert ended.processing_status == "ended" and ended.request_counts.canceled == 3
    assert all(e.startswith("batch: canceled:") for e in failures) and len(failures) == 3
    assert all(r.ok for r in got.values()) and runner.counts.retried_batch == 3
    assert server.stats["outcomes"]["batch"] == 3


class _CreateLands:
    """An anthropic client whose batch create stops the job once it reached the provider,
    before its id could be recorded."""

    def __init__(self, client: anthropic.Anthropic) -> None:
        self._client = client
        self.messages = self

    @property
    def batches(self) -> Any:
        return self

    def with_options(self, **options: Any) -> _CreateLands:
        return _CreateLands(self._client.with_options(**options))

    def create(self, **kwargs: Any) -> Any:
        self._client.messages.batches.create(**kwargs)
        raise Stop("stopped after create")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client.messages.batches, name)


@pytest.mark.parametrize(("moment", "completion_s"), [
    ("opened", 0.0), ("uploaded", 0.0), ("create landed", 0.0),
    ("create landed", 0.5), ("submitted", 0.0), ("finished", 0.0)])
def test_a_job_stopped_at_any_moment_resumes_without_paying_twice(config, requests,
                                                                   tmp_path, moment,
                                                                   completion_s):
    """specs/batch.md §4's moments; a create that landed unrecorded is found by its
    requests, once it has ended if it was still running (completion 0.5 s). One batch on
    the provider, every request answered once."""
    pending = _keys(requests)
    with sim_server(config, batch_completion_s=completion_s) as server:
        client = anthropic_client(server)
        stopping: Any = _CreateLands(client) if moment == "create landed" else client
        with Journal(tmp_path / "j.sqlite") as journal, pytest.raises(Stop):
            _runner(stopping, journal, pending, on_state=stop_at(moment)).run(
                pending, lambda k, r: None)
        with Journal(tmp_path / "j.sqlite") as journal:
            resumed = _runner(client, journal, pending)
            got = recorded(resumed, journal, pending)
            assert len(journal.lookup(pending)) == 6 and all(r.ok for r in got.values())
            states = journal._db.execute("SELECT state FROM batches").fetchall()
            assert states == [(BATCH_DONE,)]
        assert on_provider("anthropic", client) == (1, 1)
        assert server.stats["outcomes"]["batch"] == 6
    assert resumed.counts.adopted == (1 if moment == "create landed" else 0)
    assert [got[k].text for k in pending] == [e.text for e in expected(config, requests)]


def test_a_job_never_adopts_a_batch_it_recorded_or_one_of_other_requests(config, requests,
                                                                        tmp_path):
    """After a create that never landed, the provider's other batches of the same size
    (one the journal recorded, one of other requests) are not taken for ours: a new
    batch is created."""
    pending = _keys(requests[:3])
    other = _keys(requests[3:])
    with sim_server(config) as server:
        client = anthropic_client(server)
        with Journal(tmp_path / "j.sqlite") as journal:
            recorded(_runner(client, journal, pending), journal, pending)  # recorded, done
            client.messages.batches.create(requests=[  # someone else's, same size
                {"custom_id": k, "params": message_params(r)} for k, r in other.items()])
            again = {k: ChatRequest(r.model, r.prompt, r.images, Sampling(
                1.0, 1.0, 64, 3, 7)) for k, r in pending.items()}
            fresh = _keys(list(again.values()))
            with pytest.raises(Stop):  # stopped after "uploaded": nothing was created
                _runner(client, journal, fresh, on_state=stop_at("uploaded")).run(
                    fresh, lambda k, r: None)
            resumed = _runner(client, journal, fresh)
            got = recorded(resumed, journal, fresh)
        assert resumed.counts.adopted == 0 and resumed.counts.submitted == 1
        assert all(r.ok for r in got.values())
        assert len(list(client.messages.batches.list())) == 3


def test_the_wire_refuses_what_anthropic_refuses(server, requests):
    client = anthropic_client(server)
    params = message_params(requests[0])
    for custom_id in ("x" * 65, "has space", ""):
        with pytest.raises(anthropic.BadRequestError, match="custom_id"):
            client.messages.batches.create(requests=[{"custom_id": custom_id,
                                                      "params": params}])
    with pytest.raises(anthropic.BadRequestError, match="not unique"):
        client.messages.batches.create(requests=[{"custom_id": "a", "params": params}] * 2)
    with anthropic.Anthropic(base_url=server.url, api_key="wrong", max_retries=0) as wrong, \
            pytest.raises(anthropic.AuthenticationError):
        wrong.messages.batches.list()
    # the x-api-key header (the 1.x SDKs', and the API's first choice) is a key too
    listing = urllib.request.Request(f"{server.url}/v1/messages/batches", headers={
        "x-api-key": KEY, "Authorization": "Bearer wrong", "anthropic-version": "2023-06-01"})
    with urllib.request.urlopen(listing) as answer:
        assert json.loads(answer.read())["data"] == []
    batch = client.messages.batches.create(requests=[{"custom_id": "a", "params": params}])
    with pytest.raises(anthropic.NotFoundError):
        client.messages.batches.retrieve("msgbatch_nope")
    assert client.messages.batches.retrieve(batch.id).processing_status == "ended"
    [row] = list(client.messages.batches.results(batch.id))
    assert row.custom_id == "a" and row.result.type == "succeeded"
    assert client.messages.batches.delete(batch.id).type == "message_batch_deleted"
    assert list(client.messages.batches.list()) == []
