"""The gemini backend's batch mode (judgebias.models.gemini_batch, issue 23 items 1-3)
against serve-sim's Gemini batch API (serve_sim.gemini_batch) through the real
``google-genai`` SDK: a line asks what the online call sends, and its answer is journaled
as the online one (bit for bit the sim's); failed, lost, repeated and foreign rows and an
expired job each have their defined outcome; a server restarted mid-batch is resumed
without paying twice (a job stopped at each moment of specs/batch.md §4: the
provider-parametrized tests of test_batch_runner.py and test_batch_kill.py)
(serve-sim counts every line it answers); and the wire itself (resumable upload, paging,
cancel, delete, inline requests, a bad input file, the key) as the SDK speaks it."""

from __future__ import annotations

import hashlib
import io
import json
import urllib.request
from typing import Any

import pytest
from google.genai import errors as genai_errors
from google.genai import types
from helpers.api import KEY, KEY_ENV, api_params, gemini_client, openai_client, sim_server
from helpers.batch import (
    MODEL,
    Stop,
    keyed,
    on_provider,
    run_batches,
    sim_answers,
    stop_at,
)

from judgebias.config import validate_params
from judgebias.devtools.serve_sim.faults import BatchFaults
from judgebias.devtools.serve_sim.server import SimServer
from judgebias.models.base import ChatRequest, ChatResponse, Sampling
from judgebias.models.batch import NO_ROW, BatchSettings
from judgebias.models.context import RunContext
from judgebias.models.gemini_backend import GeminiBackend
from judgebias.models.gemini_batch import GeminiBatches
from judgebias.models.gemini_wire import generation
from judgebias.models.journal import Journal
from judgebias.models.registry import build_backend
from judgebias.models.runner import run_requests


def _keys(requests: list[ChatRequest]) -> dict[str, ChatRequest]:
    return keyed(requests, "gemini")


def _run(client: Any, journal: Journal, pending: dict[str, ChatRequest], on_state: Any = None,
         settings: BatchSettings | None = None) -> tuple[dict[str, ChatResponse], Any]:
    return run_batches(GeminiBatches(client, MODEL), journal, pending, on_state, settings)


class _BodySeen(SimServer):
    """serve-sim that keeps the body of each generateContent request it answers."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.bodies: list[bytes] = []

    def handle_gemini(self, model: str, raw: bytes) -> Any:
        self.bodies.append(raw)
        return super().handle_gemini(model, raw)


def test_a_line_asks_what_the_online_call_sends(config, requests):
    """The batch line's request is, once parsed, the body google-genai sends for the same
    request online (as serve-sim received it)."""
    with _BodySeen(config, api_key=KEY) as server:
        client = gemini_client(server)
        for request in requests[:2]:
            contents, generate = generation(request, logprobs=True)
            client.models.generate_content(model=MODEL, contents=contents, config=generate)
            line = json.loads(GeminiBatches(client, MODEL).line("k", request))
            assert line["key"] == "k" and line["request"] == json.loads(server.bodies[-1])
            assert line["request"]["generationConfig"]["responseLogprobs"] is True


def test_answers_are_journaled_as_online_ones(server, config, requests, tmp_path):
    pending = _keys(requests)
    with Journal(tmp_path / "j.sqlite") as journal:
        got, counts = _run(gemini_client(server), journal, pending)
        assert counts.submitted == 1 and counts.answered == 6 and counts.failed == 0
        stored = journal.lookup(pending)
        assert journal.live_batches("gemini", MODEL) == []  # ingested
    for key, expected in zip(pending, sim_answers(config, requests), strict=True):
        assert stored[key].text == expected.text and stored[key].tokens == expected.tokens
        assert expected.tokens and got[key].finish_reason == expected.finish_reason
    assert server.stats["outcomes"]["batch"] == 6
    assert server.stats["outcomes"]["ok"] == 0  # no online call


def test_a_split_batch_and_the_failures_of_a_batch(config, requests, tmp_path):
    """Over the per-file limit: two batches. A line failing inside a batch (an internal
    error, a gRPC status) and an answered row the provider lost are failures with their
    reason, never answers; a row twice is written once, a row for a key never sent is
    ignored; the next run sends exactly the failed keys again."""
    pending = _keys(requests)
    faults = BatchFaults(fail_share=0.34, missing_rows=1, duplicate_rows=1, foreign_rows=1)
    with (sim_server(config, batch_faults=faults) as faulty,
          Journal(tmp_path / "j.sqlite") as journal):
        got, counts = _run(gemini_client(faulty), journal, pending,
                           settings=BatchSettings(max_requests=3, poll_s=0.01, retry="none"))
        assert counts.submitted == 2 and len(got) == 6
        failed = {k for k, r in got.items() if not r.ok}
        assert counts.failed == len(failed) == 4  # 1 failing line + 1 lost row per batch
        reasons = {r.error for r in got.values() if not r.ok}
        assert reasons == {"batch: 500: Internal error encountered. (simulated by "
                           "serve-sim)", NO_ROW}
        assert counts.duplicate_rows == 2 and counts.foreign_rows == 2
        assert len(journal.lookup(pending)) == 2 and journal.failure_count() == 4
        paid_first = faulty.stats["outcomes"]["batch"]
    with sim_server(config) as server, Journal(tmp_path / "j.sqlite") as journal:
        again = {k: r for k, r in pending.items() if k in failed}
        got, counts = _run(gemini_client(server), journal, again)
        assert set(got) == failed and all(r.ok for r in got.values())
        assert server.stats["outcomes"]["batch"] == 4
        assert len(journal.lookup(pending)) == 6
    assert paid_first == 4  # answered: 2 good rows + 1 lost per batch


def test_an_expired_job_has_no_results_and_a_new_batch_answers_them(config, requests,
                                                                    tmp_path):
    """Gemini keeps nothing of an expired job: every key is a failure (no row), nothing
    was paid; with the default retry a new batch answers them in the same run, each line
    paid once."""
    pending = _keys(requests)
    with (sim_server(config, batch_faults=BatchFaults(expire_share=1.0)) as server,
          Journal(tmp_path / "j.sqlite") as journal):
        client = gemini_client(server)
        got, counts = _run(client, journal, pending,
                           settings=BatchSettings(poll_s=0.01, retry="none"))
        assert counts.failed == 6 and {r.error for r in got.values()} == {NO_ROW}
        assert server.stats["outcomes"]["batch"] == 0
        assert [j.state for j in client.batches.list()] == [types.JobState.JOB_STATE_EXPIRED]

        def recovers(state: str) -> None:  # the provider's next job goes through
            if state == "finished":
                server.gemini_batches.faults = BatchFaults()

        got, counts = _run(client, journal, pending, on_state=recovers)
        assert counts.submitted == 2 and counts.retried_batch == 6 and counts.answered == 6
        assert all(r.ok for r in got.values()) and len(journal.lookup(pending)) == 6
        assert server.stats["outcomes"]["batch"] == 6
        assert journal.failure_count() == 12  # 6 final failures, then 6 failed attempts


def test_a_server_restarted_mid_batch_goes_on(config, requests, tmp_path):
    """The provider restarts (--batch-state-dir) while the job waits: the job, stopped
    too, polls the same job on the new server, which knows its file and job and answers
    it once."""
    pending = _keys(requests)
    state = tmp_path / "state"
    with sim_server(config, batch_state_dir=state, batch_completion_s=60) as first:
        with Journal(tmp_path / "j.sqlite") as journal:
            with pytest.raises(Stop):
                _run(gemini_client(first), journal, pending, stop_at("submitted"))
            job = journal.live_batches("gemini", MODEL)[0]["batch_id"]
        client = gemini_client(first)  # held: a collected genai.Client closes its transport
        running = client.batches.get(name=job)  # the provider works on it
        assert running.state == types.JobState.JOB_STATE_RUNNING
        assert first.stats["outcomes"]["batch"] == 0
    with (sim_server(config, batch_state_dir=state) as second,
          Journal(tmp_path / "j.sqlite") as journal):
        client = gemini_client(second)
        got, counts = _run(client, journal, pending)
        assert counts.submitted == 0 and all(r.ok for r in got.values())
        assert len(journal.lookup(pending)) == 6
        assert second.stats["outcomes"]["batch"] == 6
        assert on_provider("gemini", client) == (1, 1)


def _gemini_params(params: dict[str, Any], url: str, tmp_path, **backend: Any
                   ) -> dict[str, Any]:
    """The panel answered by gemini clients of `url`, corvid-pro in batch mode."""
    api = api_params(params, "gemini", url)
    api["panel"]["corvid-pro"]["batch"] = True
    api["backends"] = {"gemini": {"batch_poll_s": 0.01, **backend}}
    api = validate_params(api)
    api["journal_dir"] = str(tmp_path / "journal")
    return api


def test_batch_mode_through_run_requests_and_a_rerun_pays_nothing(config, requests,
                                                                  tmp_path, monkeypatch):
    """panel.<m>.batch on a gemini model (issue 23): build_backend's backend answers
    run_requests' requests through the batch API, as the sim answers them online; no
    online call; the same requests again come from the journal."""
    monkeypatch.setenv(KEY_ENV, KEY)
    with sim_server(config) as server:
        params = _gemini_params(config, server.url, tmp_path)
        backend, version = build_backend(RunContext(params), "corvid-pro", "evaluator")
        assert isinstance(backend, GeminiBackend) and backend.batch
        with Journal(tmp_path / "j.sqlite") as journal:
            answers, stats = run_requests(backend, requests, journal, backend_version=version)
            assert stats.called == 6
            again, stats = run_requests(backend, requests, journal, backend_version=version)
            assert stats.called == 0 and stats.journaled == 6
        expect = sim_answers(config, requests)
        for mine, rerun, expected in zip(answers, again, expect, strict=True):
            assert mine.text == rerun.text == expected.text
            assert mine.tokens == expected.tokens
        assert server.stats["outcomes"]["batch"] == 6 and server.stats["outcomes"]["ok"] == 0


def test_a_model_without_logprobs_is_asked_again_without_them(config, requests, tmp_path,
                                                              monkeypatch):
    """Log-probs are asked for in a batch as online. A model that does not offer them
    answers each line with a 400 row: with batch_retry: none, a failure saying so (nothing
    paid); with the default retry, as online, they are switched off and a new batch asks
    without them, answered in the same run (the parsed score is used)."""
    monkeypatch.setenv(KEY_ENV, KEY)
    with sim_server(config, no_logprobs_models=frozenset({MODEL})) as server:
        params = _gemini_params(config, server.url, tmp_path, batch_retry="none")
        backend, version = build_backend(RunContext(params), "corvid-pro", "evaluator")
        with Journal(tmp_path / "j.sqlite") as journal:
            answers, _ = run_requests(backend, requests, journal, backend_version=version)
        assert {a.status for a in answers} == {"failed"}
        assert all(a.error and a.error.startswith(
            "batch: logprobs: 400: Logprobs is not supported") for a in answers)
        assert server.stats["outcomes"]["batch"] == 0
        params = _gemini_params(config, server.url, tmp_path)
        backend, version = build_backend(RunContext(params), "corvid-pro", "evaluator")
        with Journal(tmp_path / "j.sqlite") as journal:
            answers, _ = run_requests(backend, requests, journal, backend_version=version)
        assert all(a.ok and a.tokens is None for a in answers)
        expected = sim_answers(config, [ChatRequest(r.model, r.prompt, r.images, Sampling(
            1.0, 1.0, 64, 0, r.sampling.seed)) for r in requests])
        assert [a.text for a in answers] == [e.text for e in expected]
        client = gemini_client(server)
        assert len(list(client.batches.list())) == 3
        assert server.stats["outcomes"]["batch"] == 6 and server.stats["outcomes"]["ok"] == 0


# -- the wire ---------------------------------------------------------------------------


def _file(lines: list[Any]) -> io.BytesIO:
    return io.BytesIO(b"".join((line if isinstance(line, bytes) else json.dumps(line).encode())
                               + b"\n" for line in lines))


def _lines(requests: list[ChatRequest], client: Any) -> list[dict[str, Any]]:
    return [json.loads(GeminiBatches(client, MODEL).line(f"k{i}", r))
            for i, r in enumerate(requests)]


def test_the_wire_upload_jobs_paging_cancel_delete_and_the_key(server, config, requests):
    """What the SDK does on its own: a resumable upload (its chunks carry no key: the
    upload URL is the credential), an uploaded file's sha256Hash, paged lists of files and
    jobs, a job cancelled before it ran (no output, nothing paid), deletion, an uploaded
    file that cannot be downloaded, v1beta as well as the SDK's default v1, and every
    route but an upload's chunks needing the key. OpenAI's /v1/files on the same server
    are OpenAI's."""
    client = gemini_client(server)
    payload = _file(_lines(requests[:2], client))
    uploaded = client.files.upload(file=payload, config={"display_name": "jb-x",
                                                         "mime_type": "jsonl"})
    assert uploaded.size_bytes == len(payload.getvalue())
    digest = hashlib.sha256(payload.getvalue()).hexdigest()
    provider = GeminiBatches(client, MODEL)
    assert provider.find_file("x", digest) == uploaded.name
    assert provider.find_file("x", hashlib.sha256(b"other bytes").hexdigest()) is None
    other = client.batches.create(model=MODEL, src=uploaded.name,
                                  config={"display_name": "jb-x"})
    assert provider.find_batch("x", uploaded.name) is None  # another journal's batch x
    jobs = [client.batches.create(model=MODEL, src=uploaded.name,
                                  config={"display_name": f"job {i}"}) for i in range(3)]
    assert provider.find_batch("x", uploaded.name) is None
    client.batches.cancel(name=jobs[0].name)
    assert client.batches.get(name=jobs[0].name).state == types.JobState.JOB_STATE_CANCELLED
    assert client.batches.get(name=jobs[0].name).dest is None
    assert server.stats["outcomes"]["batch"] == 0
    assert [j.name for j in client.batches.list(config={"page_size": 2})] == [
        j.name for j in [*reversed(jobs), other]]  # newest first, over two pages
    done = client.batches.get(name=jobs[1].name)
    assert done.state == types.JobState.JOB_STATE_SUCCEEDED and done.dest.file_name
    assert {f.name for f in client.files.list(config={"page_size": 1})} == {
        uploaded.name, done.dest.file_name}
    with pytest.raises(genai_errors.ClientError, match="only generated files"):
        client.files.download(file=uploaded.name)
    beta = type(client)(api_key=KEY, http_options=types.HttpOptions(
        base_url=server.url, api_version="v1beta",
        retry_options=types.HttpRetryOptions(attempts=1)))
    rows = beta.files.download(file=done.dest.file_name).decode().splitlines()
    assert sorted(json.loads(r)["key"] for r in rows) == ["k0", "k1"]
    assert [json.loads(r)["key"] for r in rows] == ["k1", "k0"]  # not the input order
    client.batches.delete(name=jobs[2].name)
    client.files.delete(name=done.dest.file_name)
    with pytest.raises(genai_errors.ClientError, match="404"):
        client.batches.get(name=jobs[2].name)
    assert len(list(client.files.list())) == 1
    assert openai_client(server).files.list().data == []  # OpenAI's files are apart
    stranger = type(client)(api_key="wrong-key", http_options=types.HttpOptions(
        base_url=server.url, retry_options=types.HttpRetryOptions(attempts=1)))
    for call in (lambda: list(stranger.files.list()), lambda: list(stranger.batches.list()),
                 lambda: stranger.batches.get(name=jobs[1].name),
                 lambda: stranger.files.upload(file=_file([{}]),
                                               config={"mime_type": "jsonl"})):
        with pytest.raises(genai_errors.ClientError, match="401"):
            call()


@pytest.mark.parametrize(("bad", "message"), [
    (b"{not json", "line 2: not valid JSON"),
    ({"key": "k0", "request": {"contents": []}}, "line 2: key 'k0' appears more than once"),
    ({"request": {"contents": []}}, "line 2: 'key' must be a non-empty string"),
])
def test_a_bad_input_file_fails_the_job_naming_the_line(server, requests, bad, message):
    """The job ends FAILED with its operation's error naming the line (the SDK drops an
    operation's error in Gemini-API mode: read here as the REST API sends it)."""
    client = gemini_client(server)
    good = _lines(requests[:1], client)
    uploaded = client.files.upload(file=_file([*good, bad]), config={"mime_type": "jsonl"})
    job = client.batches.create(model=MODEL, src=uploaded.name)
    assert client.batches.get(name=job.name).state == types.JobState.JOB_STATE_FAILED
    asked = urllib.request.Request(f"{server.url}/v1beta/{job.name}",
                                   headers={"x-goog-api-key": KEY})
    with urllib.request.urlopen(asked) as answer:
        raw = json.loads(answer.read())
    assert raw["done"] is True and message in raw["error"]["message"]
    assert server.stats["outcomes"]["batch"] == 0


def test_inline_requests_answer_as_online_by_metadata(server, config, requests):
    """``src=[…]`` (inline requests): each answered as online, with its metadata, in
    another order (match by metadata, never position: python-genai#1909)."""
    client = gemini_client(server)
    src = []
    for i, request in enumerate(requests[:3]):
        contents, generate = generation(request, logprobs=True)
        src.append({"contents": contents, "config": generate, "metadata": {"key": f"k{i}"}})
    job = client.batches.create(model=MODEL, src=src)
    done = client.batches.get(name=job.name)
    assert done.state == types.JobState.JOB_STATE_SUCCEEDED
    inlined = done.dest.inlined_responses
    assert [r.metadata["key"] for r in inlined] == ["k2", "k1", "k0"]
    expected = sim_answers(config, requests[:3])
    for row in inlined:
        assert row.response.text == expected[int(row.metadata["key"][1:])].text
    assert server.stats["outcomes"]["batch"] == 3
