"""Requests that share a prefix go to the backend together (issue 45): the runner hands
every backend a job's new requests grouped by prefix, each marked with what it shares,
for the online path, a provider batch and vLLM alike; answers come back in the job's row
order and no journal key changes."""

from __future__ import annotations

import copy
import hashlib
import io
import json
import sys
import types
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import pandas as pd
from helpers.api import KEY, KEY_ENV, RecordingServer, api_params
from helpers.mmb import judge_inputs
from PIL import Image

from judgebias.config import validate_params
from judgebias.judging.tasks import build_requests, run_task
from judgebias.models.base import ChatRequest, ChatResponse, Sampling
from judgebias.models.batch import BatchRunner, BatchSettings, BatchStatus
from judgebias.models.context import RunContext
from judgebias.models.journal import Journal, request_key
from judgebias.models.openai_wire import openai_chat_messages
from judgebias.models.prefix import grouped, part_ids
from judgebias.models.registry import build_backend
from judgebias.models.runner import run_requests
from judgebias.models.sim import SimBackend
from judgebias.studies.mmb.jobs import judge_items, judge_task


def _png(colour: tuple[int, int, int]) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (2, 2), colour).save(out, format="PNG")
    return out.getvalue()


PNG = {"x": _png((255, 0, 0)), "y": _png((0, 255, 0)), "z": _png((0, 0, 255))}
NAMES = {data: name for name, data in PNG.items()}


def request(text: str, *images: str, system: str = "") -> ChatRequest:
    """A request with `images` before the text (the shared-first layout)."""
    data = tuple(PNG[i] for i in images)
    return ChatRequest("m", text, data, Sampling(), system=system, image_at=(0,) * len(data))


def job() -> list[ChatRequest]:
    """Two pairs' requests interleaved, as a job's rows come (instruction by instruction),
    and one with a system prompt of its own."""
    return [request("ask 1", "x", "y"), request("ask 1", "y", "z"),
            request("ask 2", "x", "y"), request("ask 2", "y", "z"),
            request("ask 3", "x", "y"), request("ask 1", "x", "y", system="other")]


def shares(r: ChatRequest) -> int:
    """What each request of :func:`job` shares with another: both images, but nothing
    under the system prompt no other request has."""
    return 0 if r.system else 2


def contiguous(requests: Sequence[ChatRequest], depth: int) -> bool:
    """Whether requests with the same first `depth` parts (system prompt first) are side
    by side."""
    seen: list[tuple[str, ...]] = []
    for r in requests:
        head = part_ids(r)[:depth]
        if seen and seen[-1] == head:
            continue
        if head in seen:
            return False
        seen.append(head)
    return True


def echo(r: ChatRequest) -> str:
    """An answer that names its request."""
    return f"{r.system}|{r.prompt}|{''.join(NAMES[i] for i in r.images)}"


def test_grouped_puts_a_prefix_together_and_marks_what_it_shares():
    requests = job()
    out = grouped(dict(enumerate(requests)))
    assert sorted(out) == list(range(len(requests)))  # each once, under its own key
    assert not contiguous(requests, 3) and contiguous(list(out.values()), 3)
    assert {i: r.shared_parts for i, r in out.items()} == {
        i: shares(r) for i, r in enumerate(requests)}
    for i, r in out.items():  # a hint, not part of the question
        assert r == requests[i]
        assert request_key(r, "sim") == request_key(requests[i], "sim")
    # the images after the text (MMB's paper layout): the instruction is what is shared
    later = list(grouped(dict(enumerate(replace(r, image_at=()) for r in requests[:5])
                          )).values())
    assert contiguous(later, 2)
    assert {r.prompt: r.shared_parts for r in later} == {"ask 1": 1, "ask 2": 1, "ask 3": 0}


class Recording:
    """An online backend that records the order it is handed requests in, and answers
    them in another (as concurrent calls complete)."""

    name = "sim"

    def __init__(self) -> None:
        self.received: list[ChatRequest] = []

    def complete(self, requests, on_response=None):
        self.received += requests
        answers = [ChatResponse(text=echo(r)) for r in requests]
        for i in reversed(range(len(answers))):
            if on_response is not None:
                on_response(i, answers[i])
        return answers


def test_the_runner_sends_new_requests_grouped_and_answers_in_row_order(tmp_path):
    requests = job()
    rows = [*requests, requests[0]]  # a duplicate row is asked once
    with Journal(tmp_path / "j.sqlite") as journal:
        # a row answered before is not sent, so it takes no part in the grouping
        journal.record(request_key(requests[4], "sim"), requests[4],
                       ChatResponse(text=echo(requests[4])))
        backend = Recording()
        answers, stats = run_requests(backend, rows, journal)
        keys = [request_key(r, "sim") for r in rows]
        assert journal.lookup(keys).keys() == set(keys)  # journaled under the row's keys
    assert [a.text for a in answers] == [echo(r) for r in rows]
    assert (stats.journaled, stats.called) == (1, 5)
    assert len(backend.received) == 5 and contiguous(backend.received, 3)
    assert all(r.shared_parts == shares(r) for r in backend.received)


def test_a_job_of_the_real_registry_sends_each_pair_together(default_params, tmp_path,
                                                              monkeypatch):
    """MMB's judge job in the shared-first layout, through the judging core and the sim
    backend the registry builds: each (pair, order shown) is one group, and every row
    keeps its own request's answer and key."""
    params = copy.deepcopy(default_params)
    params["journal_dir"] = str(tmp_path / "journal")
    params = validate_params(params)
    run = RunContext(params)
    items = judge_items(*judge_inputs(tmp_path), "both", 0)  # 3 instructions x 2 orders
    received: list[ChatRequest] = []
    answer = SimBackend.answer

    def recording(self: SimBackend, request: ChatRequest) -> ChatResponse:
        received.append(request)
        return answer(self, request)

    monkeypatch.setattr(SimBackend, "answer", recording)
    task = judge_task("mmb_pairwise_shared_first")
    rows = run_task(run, "corvid-pro", "judge", task, items)

    built, _ = build_requests(run, "corvid-pro", task, items)
    backend, version = build_backend(run, "corvid-pro", "judge")
    keys = [request_key(r, "sim", version) for r in built]
    assert list(rows["request_key"]) == keys
    assert list(rows["raw_text"]) == [answer(backend, r).text for r in built]
    # sent in another order than the rows': each order shown (its images) together
    assert [request_key(r, "sim", version) for r in received] != keys
    assert len(received) == 6 and contiguous(received, 3)
    assert all(r.shared_parts == 2 for r in received)
    again = run_task(run, "corvid-pro", "judge", task, items)
    assert len(received) == 6  # every answer from the journal
    pd.testing.assert_frame_equal(rows, again)


def test_an_api_job_dispatches_each_group_together(default_params, tmp_path, monkeypatch):
    """The online path: an OpenAI-compatible server (serve-sim, recording what arrives)
    receives the job's requests group by group, in the order the runner dispatches them
    (one at a time here, so arrival is dispatch), and each row keeps its answer."""
    monkeypatch.setenv(KEY_ENV, KEY)
    items = judge_items(*judge_inputs(tmp_path), "both", 0)
    task = judge_task("mmb_pairwise_shared_first")
    with RecordingServer(validate_params(copy.deepcopy(default_params)), api_key=KEY
                         ) as server:
        params = api_params(default_params, "openai", server.url)
        params.update(journal_dir=str(tmp_path / "journal"),
                      backends={"openai": {"concurrency": 1}})
        run = RunContext(validate_params(params))
        rows = run_task(run, "corvid-pro", "judge", task, items)
        arrived = list(server.answered)
    assert len(arrived) == 6 and contiguous(arrived, 3)
    built, _ = build_requests(run, "corvid-pro", task, items)
    assert [r.prompt for r in arrived] != [r.prompt for r in built]  # not the rows' order
    by_request = {(r.prompt, r.images): server.answer(r).text for r in arrived}
    assert list(rows["raw_text"]) == [by_request[(r.prompt, r.images)] for r in built]


class Provider:
    """A provider's batch API in memory: the uploaded files, every row answered with
    :func:`echo`."""

    name = "memory"

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.requests: dict[str, ChatRequest] = {}

    def line(self, key: str, request: ChatRequest) -> bytes:
        self.requests[key] = request
        return (json.dumps({"key": key}) + "\n").encode()

    def find_file(self, tag: str, digest: str) -> str | None:
        return None

    def upload(self, tag: str, payload: bytes) -> str:
        self.files[f"file-{tag}"] = payload
        return f"file-{tag}"

    def has_file(self, file_id: str) -> bool:
        return file_id in self.files

    def find_batch(self, tag: str, file_id: str) -> str | None:
        return None

    def create(self, tag: str, file_id: str) -> str:
        return file_id

    def status(self, batch_id: str) -> BatchStatus:
        return BatchStatus("completed", True, results=(batch_id,))

    def rows(self, file_id: str):
        for line in self.files[file_id].splitlines():
            key = json.loads(line)["key"]
            yield key, ChatResponse(text=echo(self.requests[key]))


class Batched(Recording):
    """A backend in batch mode, its batches sent to :class:`Provider`."""

    batch = True

    def complete_batched(self, pending: Mapping[str, ChatRequest], journal: Journal,
                         on_response, reserve) -> None:
        self.provider = Provider()
        BatchRunner(self.provider, journal, "m", BatchSettings(poll_s=0), reserve=reserve,
                    sleep=lambda seconds: None).run(pending, on_response)


def test_a_batch_file_lists_the_requests_grouped(tmp_path):
    requests = job()
    backend = Batched()
    with Journal(tmp_path / "j.sqlite") as journal:
        answers, stats = run_requests(backend, requests, journal)
    assert [a.text for a in answers] == [echo(r) for r in requests]
    assert stats.called == len(requests)
    [payload] = backend.provider.files.values()
    sent = [backend.provider.requests[json.loads(line)["key"]]
            for line in payload.splitlines()]
    assert len(sent) == len(requests) and contiguous(sent, 3)
    assert all(r.shared_parts == shares(r) for r in sent)


class _Output:
    """A vLLM output: the fields set, and None for any other the backend reads."""

    def __init__(self, **fields: Any) -> None:
        self.__dict__.update(fields)

    def __getattr__(self, name: str) -> Any:
        return None


def _digest(conversation: list[dict[str, Any]]) -> str:
    return hashlib.sha256(json.dumps(conversation, sort_keys=True).encode()).hexdigest()


def fake_vllm(conversations: list[list[dict[str, Any]]]) -> types.ModuleType:
    """A ``vllm`` module whose engine records the conversations of every ``LLM.chat``
    call and answers each with its digest."""
    module = types.ModuleType("vllm")

    class LLM:
        def __init__(self, **kwargs: Any) -> None:
            pass

        def chat(self, batch, sampling_params=None, use_tqdm=False, **kwargs):
            conversations.extend(batch)
            return [_Output(prompt_token_ids=[1, 2], outputs=[_Output(
                text=_digest(c), token_ids=[3], logprobs=None, finish_reason="stop")])
                for c in batch]

    module.LLM = LLM  # type: ignore[attr-defined]
    module.SamplingParams = lambda **kwargs: kwargs  # type: ignore[attr-defined]
    module.EngineArgs = type("EngineArgs", (), {})  # type: ignore[attr-defined]
    module.__version__ = "0.0-fake"  # type: ignore[attr-defined]
    return module


def test_vllm_gets_the_requests_as_one_grouped_list(tmp_path, monkeypatch):
    conversations: list[list[dict[str, Any]]] = []
    monkeypatch.setitem(sys.modules, "vllm", fake_vllm(conversations))
    from judgebias.models.vllm_backend import VllmBackend

    requests = job()
    with Journal(tmp_path / "j.sqlite") as journal:
        answers, _ = run_requests(VllmBackend("m"), requests, journal)
    messages = [openai_chat_messages(r) for r in requests]
    assert [a.text for a in answers] == [_digest(m) for m in messages]
    sent = [requests[messages.index(c)] for c in conversations]  # one chat call, in order
    assert len(sent) == len(requests) and contiguous(sent, 3)
