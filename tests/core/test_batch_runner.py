"""Batch mode's runner (judgebias.models.batch, issue 23 items 1-2) against serve-sim's
batch APIs through the real SDKs (``openai``; ``google-genai`` too where a test is
parametrized by provider; the rest of Gemini's in test_gemini_batch.py): answers
journaled as online ones (bit for bit the sim's), failures inside a batch retried or
recorded as failures and sent again by the next run, and a job stopped at each moment of
specs/batch.md §4 resumed without paying twice (serve-sim counts every line it answers)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from helpers.api import KEY, KEY_ENV, api_params, gemini_client, openai_client, sim_server
from helpers.batch import (
    MODEL,
    Landing,
    Stop,
    keyed,
    on_provider,
    recorded,
    run_batches,
    sim_answers,
    stop_at,
)

from judgebias.devtools.serve_sim.faults import BatchFaults
from judgebias.models.base import ChatRequest, ChatResponse, Sampling
from judgebias.models.batch import BatchPending, BatchRunner, BatchSettings
from judgebias.models.context import RunContext
from judgebias.models.gemini_batch import GeminiBatches
from judgebias.models.gemini_wire import PROTOCOL_VERSION as GEMINI_PROTOCOL
from judgebias.models.journal import BATCH_DONE, BudgetExceeded, Journal, request_key
from judgebias.models.openai_batch import OpenAIBatches
from judgebias.models.openai_wire import PROTOCOL_VERSION
from judgebias.models.registry import build_backend
from judgebias.models.runner import run_requests


def _keys(requests: list[ChatRequest]) -> dict[str, ChatRequest]:
    return keyed(requests, "openai")


def _run(client: Any, journal: Journal, pending: dict[str, ChatRequest],
         on_state: Any = None) -> tuple[dict[str, ChatResponse], Any]:
    return run_batches(OpenAIBatches(client), journal, pending, on_state)


def test_answers_are_journaled_as_online_ones(server, config, requests, tmp_path):
    pending = _keys(requests)
    with Journal(tmp_path / "j.sqlite") as journal:
        got, counts = _run(openai_client(server), journal, pending)
        assert counts.submitted == 1 and counts.answered == 6 and counts.failed == 0
        stored = journal.lookup(pending)
        assert journal.live_batches("openai", MODEL) == []  # ingested
    for (key, _), expected in zip(pending.items(), sim_answers(config, requests), strict=True):
        assert stored[key].text == expected.text and stored[key].tokens == expected.tokens
        assert got[key].finish_reason == expected.finish_reason
    assert server.stats["outcomes"]["batch"] == 6


def test_a_split_batch_and_the_failures_of_a_batch(config, requests, tmp_path):
    """Over the per-file limit: two batches. Lines failing inside a batch, and an answered
    row the provider lost, are failures with their reason, never answers; a row twice is
    written once, a row for a key never sent is ignored; the next run sends exactly the
    failed keys again."""
    pending = _keys(requests)
    faults = BatchFaults(fail_share=0.34, missing_rows=1, duplicate_rows=1, foreign_rows=1)
    with (sim_server(config, batch_faults=faults) as faulty,
          Journal(tmp_path / "j.sqlite") as journal):
        runner = BatchRunner(OpenAIBatches(openai_client(faulty)), journal, MODEL,
                             BatchSettings(max_requests=3, poll_s=0.01, retry="none"),
                             sleep=lambda s: None)
        got = recorded(runner, journal, pending)
        counts = runner.counts
        assert counts.submitted == 2 and len(got) == 6
        failed = {k for k, r in got.items() if not r.ok}
        assert counts.failed == len(failed) == 4  # 1 failing line + 1 lost row per batch
        reasons = {r.error for r in got.values() if not r.ok}
        assert any("server_error" in e for e in reasons)
        assert any("no row" in e for e in reasons)
        assert counts.duplicate_rows == 2 and counts.foreign_rows == 2
        assert len(journal.lookup(pending)) == 2 and journal.failure_count() == 4
        paid_first = faulty.stats["outcomes"]["batch"]
    with sim_server(config) as server, Journal(tmp_path / "j.sqlite") as journal:
        again = {k: r for k, r in pending.items() if k in failed}
        got, counts = _run(openai_client(server), journal, again)
        assert set(got) == failed and all(r.ok for r in got.values())
        assert server.stats["outcomes"]["batch"] == 4
        assert len(journal.lookup(pending)) == 6
    assert paid_first == 4  # answered: 2 good rows + 1 lost per batch


PROVIDERS = {  # provider: (SDK client of a server, its BatchProvider, key version, upload)
    "openai": (openai_client, OpenAIBatches, PROTOCOL_VERSION, "create"),
    "gemini": (gemini_client, lambda client: GeminiBatches(client, MODEL), GEMINI_PROTOCOL,
               "upload"),
}


@pytest.mark.slow  # 12 cases; `make test-fast` keeps the other providers' tests
@pytest.mark.parametrize("provider", sorted(PROVIDERS))
@pytest.mark.parametrize("moment", ["opened", "upload landed", "uploaded", "create landed",
                                    "submitted", "finished"])
def test_a_job_stopped_at_any_moment_resumes_without_paying_twice(server, requests, tmp_path,
                                                                   moment, provider):
    """specs/batch.md §4's moments: the journal's batch row before anything is sent; the
    upload on the provider before its id is recorded (found again by name and bytes); the
    file recorded; the batch created before its id is recorded (found by its tag); the
    batch recorded; the batch finished before its rows are ingested. The next run answers
    everything, one file and one batch on the provider, each line answered once (the
    process-level kill -9 of each moment: tests/core/test_batch_kill.py)."""
    client_of, provider_of, version, upload = PROVIDERS[provider]
    pending = {request_key(r, provider, version): r for r in requests}
    client = client_of(server)
    stopping, on_state = client, stop_at(moment)
    if moment.endswith("landed"):
        resource, call = ("files", upload) if moment == "upload landed" else ("batches",
                                                                              "create")
        stopping, on_state = Landing(client, resource, call), stop_at("")

    def runner(journal: Journal, client: Any, on_state: Any = None) -> BatchRunner:
        return BatchRunner(provider_of(client), journal, MODEL, BatchSettings(poll_s=0.01),
                           on_state=on_state, sleep=lambda s: None)

    with Journal(tmp_path / "j.sqlite") as journal, pytest.raises(Stop):
        runner(journal, stopping, on_state).run(pending, lambda k, r: None)
    with Journal(tmp_path / "j.sqlite") as journal:
        resumed = runner(journal, client)
        got = recorded(resumed, journal, pending)
        assert len(journal.lookup(pending)) == 6 and all(r.ok for r in got.values())
        assert journal.live_batches(provider, MODEL) == []
        states = journal._db.execute("SELECT state FROM batches").fetchall()
        assert states == [(BATCH_DONE,)]  # one batch in the journal, ingested
    assert on_provider(provider, client) == (1, 1)
    assert server.stats["outcomes"]["batch"] == 6  # every line answered once
    assert resumed.counts.adopted == (1 if moment == "create landed" else 0)


def test_a_job_stops_after_its_wait_and_a_later_run_collects(config, requests, tmp_path):
    """batch_wait_s: the job stops (BatchPending, a failed job: nothing written) while the
    provider still works; the next run polls the same batch and collects it."""
    pending = _keys(requests)
    with sim_server(config, batch_completion_s=1.0) as server:
        client = openai_client(server)
        with Journal(tmp_path / "j.sqlite") as journal:
            runner = BatchRunner(OpenAIBatches(client), journal, MODEL,
                                 BatchSettings(poll_s=0.05, wait_s=0.2))
            with pytest.raises(BatchPending, match="run the job again later"):
                runner.run(pending, lambda k, r: journal.record(k, pending[k], r))
            assert [b["state"] for b in journal.live_batches("openai", MODEL)] == [
                "submitted"]
        time.sleep(1.0)
        with Journal(tmp_path / "j.sqlite") as journal:
            _, counts = _run(client, journal, pending)
            assert counts.submitted == 0 and len(journal.lookup(pending)) == 6
        assert len(list(client.batches.list())) == 1
        assert server.stats["outcomes"]["batch"] == 6


def test_a_stopped_jobs_unsent_batch_for_other_requests_is_dropped(server, requests,
                                                                   tmp_path):
    """A job stopped before its upload, rerun with other requests (a params edit): the
    unsent batch cannot be rebuilt and was never sent, so it is closed, and the requests
    asked now go in a new batch."""
    first = _keys(requests)
    with Journal(tmp_path / "j.sqlite") as journal, pytest.raises(Stop):
        _run(openai_client(server), journal, first, stop_at("opened"))
    now = _keys(requests[:4] + [ChatRequest(MODEL, r.prompt, r.images, Sampling(
        1.0, 1.0, 64, 3, 100)) for r in requests[4:5]])
    with Journal(tmp_path / "j.sqlite") as journal:
        got, counts = _run(openai_client(server), journal, now)
        assert set(got) == set(now) and all(r.ok for r in got.values())
        assert counts.submitted == 1 and journal.live_batches("openai", MODEL) == []
    assert server.stats["outcomes"]["batch"] == 5


def test_failed_rows_are_retried_in_new_batches_in_the_same_run(config, requests, tmp_path):
    """batch_retry: batch (the default). serve-sim fails round(0.34 n) of each batch's
    lines: 2 of 6, then 1 of the 2 sent again, then none of the last 1. Each round's
    failures are a failed attempt in the journal; only the last round's is final."""
    pending = _keys(requests)
    faults = BatchFaults(fail_share=0.34)
    for rounds, left in ((1, 1), (2, 0)):
        with (sim_server(config, batch_faults=faults) as faulty,
              Journal(tmp_path / f"j{rounds}.sqlite") as journal):
            runner = BatchRunner(OpenAIBatches(openai_client(faulty)), journal, MODEL,
                                 BatchSettings(poll_s=0.01, retry_rounds=rounds),
                                 sleep=lambda s: None)
            got = recorded(runner, journal, pending)
            assert set(got) == set(pending)  # each key once: its final outcome
            counts = runner.counts
            assert counts.failed == left and counts.answered == 6 - left
            assert counts.submitted == rounds + 1 and counts.retried_batch == 2 + (rounds > 1)
            assert journal.failure_count() == 3  # 2 failed in the first batch, 1 in the next
            assert faulty.stats["outcomes"]["batch"] == 6 - left  # each answer paid once


def test_a_request_the_provider_rejects_is_not_sent_again(server, config, requests,
                                                          tmp_path):
    """A 400 row (here: more top log-probs than the API allows) is final at once: sending
    the same request again pays for nothing."""
    wrong = ChatRequest(MODEL, requests[0].prompt, requests[0].images,
                        Sampling(1.0, 1.0, 64, 21, 0))
    pending = _keys([*requests[:2], wrong])
    with Journal(tmp_path / "j.sqlite") as journal:
        got, counts = _run(openai_client(server), journal, pending)
    bad = got[next(iter(_keys([wrong])))]
    assert not bad.ok and bad.error.startswith("batch: 400:")
    assert counts.retried_batch == 0 and counts.submitted == 1 and counts.failed == 1


def test_failed_rows_go_online_when_configured(config, requests, tmp_path, monkeypatch):
    """batch_retry: online, through run_requests and the openai backend as a job calls
    it: the batch's failed lines are answered by the online endpoint in the same run."""
    with sim_server(config, batch_faults=BatchFaults(fail_share=0.34)) as faulty:
        params = api_params(config, "openai", faulty.url, models=["corvid-pro"])
        params["panel"]["corvid-pro"]["batch"] = True
        params.setdefault("backends", {}).setdefault("openai", {}).update(
            batch_retry="online", batch_poll_s=0.01)
        monkeypatch.setenv(KEY_ENV, KEY)
        backend, version = build_backend(RunContext(params), "corvid-pro", "evaluator")
        with Journal(tmp_path / "j.sqlite") as journal:
            answers, stats = run_requests(backend, requests, journal,
                                          backend_version=version, max_requests=8)
            assert all(a.ok for a in answers) and stats.failed == 0
            assert journal.calls_started(MODEL) == 6 + 2  # the batch, then 2 online
            assert journal.failure_count() == 2  # the failed batch attempts, kept
        assert faulty.stats["outcomes"]["batch"] == 4 and faulty.stats["outcomes"]["ok"] == 2
    for answer, expected in zip(answers, sim_answers(config, requests), strict=True):
        assert answer.text == expected.text


def test_a_resumed_batch_is_not_counted_twice_against_the_budget(server, requests,
                                                                 tmp_path):
    """max_requests is reserved for the lines of each batch sent; a job stopped after
    submitting resumes by polling, with no second reservation (the budget of exactly six
    calls holds)."""
    pending = _keys(requests)

    def runner(journal: Journal, on_state: Any = None) -> BatchRunner:
        return BatchRunner(OpenAIBatches(openai_client(server)), journal, MODEL,
                           BatchSettings(poll_s=0.01), on_state=on_state,
                           reserve=lambda n: journal.reserve_calls(MODEL, n, 6),
                           sleep=lambda s: None)

    with Journal(tmp_path / "j.sqlite") as journal, pytest.raises(Stop):
        runner(journal, stop_at("submitted")).run(pending, lambda k, r: None)
    with Journal(tmp_path / "j.sqlite") as journal:
        runner(journal).run(pending, lambda k, r: journal.record(k, pending[k], r))
        assert len(journal.lookup(pending)) == 6 and journal.calls_started(MODEL) == 6
        with pytest.raises(BudgetExceeded):
            journal.reserve_calls(MODEL, 1, 6)


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_a_file_the_provider_deleted_before_the_create_is_uploaded_again(
        server, requests, tmp_path, provider):
    """A job stopped after its upload and resumed after the provider deleted the file
    (Gemini keeps files 48 h, OpenAI 30 days; specs/batch.md §4): the lines are uploaded
    again and the batch created on the new file, each line answered once."""
    client_of, provider_of, version, _ = PROVIDERS[provider]
    batches = provider_of(client_of(server))
    store = server.batches if provider == "openai" else server.gemini_batches
    pending = {request_key(r, provider, version): r for r in requests}

    def runner(journal: Journal, on_state: Any = None) -> BatchRunner:
        return BatchRunner(batches, journal, MODEL, BatchSettings(poll_s=0.01),
                           on_state=on_state, sleep=lambda s: None)

    with Journal(tmp_path / "j.sqlite") as journal, pytest.raises(Stop):
        runner(journal, stop_at("uploaded")).run(pending, lambda k, r: None)
    store.files.clear()  # the provider deleted it
    with Journal(tmp_path / "j.sqlite") as journal:
        got = recorded(runner(journal), journal, pending)
        assert all(r.ok for r in got.values()) and len(journal.lookup(pending)) == 6
    assert server.stats["outcomes"]["batch"] == 6 and len(store.batches) == 1


def test_a_file_over_the_byte_limit_is_split(server, requests, tmp_path):
    """Above ``max_bytes`` (OpenAI's 200 MB per file) a new file begins: with the limit
    just over the longest line (an image each, ~8-12 kB), each file holds one line, and
    every line is answered once."""
    pending = _keys(requests)
    batches = OpenAIBatches(openai_client(server))
    limit = max(len(batches.line(key, request)) for key, request in pending.items()) + 1
    with Journal(tmp_path / "j.sqlite") as journal:
        got, counts = run_batches(batches, journal, pending,
                                  settings=BatchSettings(poll_s=0.01, max_bytes=limit))
        assert counts.submitted == 6 and all(r.ok for r in got.values())
    assert all(len(f.content) <= limit for f in server.batches.files.values()
               if f.purpose == "batch")
    assert server.stats["outcomes"]["batch"] == 6
