"""serve-sim speaks OpenAI's Files and Batch APIs (issue 23, item 3; specs/batch.md §1),
through the real ``openai`` SDK: a batch's answers are the online route's, matched by
``custom_id`` (the output file comes back in another order), each line counted once as
paid; a bad input file fails the batch naming its line; a cancelled batch answers
nothing; the files and batches can be listed (what a resume after a kill searches); each
batch fault has its rows; a restarted server knows its batches and goes on."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import numpy as np
import openai
import pytest
from helpers.api import openai_client, sim_server
from openai.types.chat import ChatCompletion

from judgebias import prompts
from judgebias.data.scenes import random_scene, render, to_png_bytes
from judgebias.devtools.serve_sim.faults import BatchFaults

MODEL = "sim/corvid-pro"


def _bodies(n: int, model: str = MODEL) -> list[dict[str, Any]]:
    """n chat-completion bodies as the openai backend sends them: an image, the captioning
    prompt, sampling and log-probs."""
    rng = np.random.default_rng(3)
    out = []
    for i in range(n):
        png = base64.b64encode(to_png_bytes(render(random_scene(rng)))).decode()
        out.append({"model": model, "temperature": 1.0, "top_p": 1.0, "max_tokens": 64,
                    "seed": i, "logprobs": True, "top_logprobs": 3,
                    "messages": [{"role": "user", "content": [
                        {"type": "text", "text": prompts.render("caption_llava_ov")},
                        {"type": "image_url",
                         "image_url": {"url": f"data:image/png;base64,{png}"}}]}]})
    return out


def _jsonl(lines: list[dict[str, Any]]) -> bytes:
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


def _submit(client: openai.OpenAI, lines: list[dict[str, Any]], **metadata: str) -> Any:
    uploaded = client.files.create(file=("jb-test.jsonl", _jsonl(lines)), purpose="batch")
    return client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions",
                                 completion_window="24h", metadata=metadata or None)


def _wait(client: openai.OpenAI, batch_id: str) -> Any:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        batch = client.batches.retrieve(batch_id)
        if batch.status in ("completed", "failed", "expired", "cancelled"):
            return batch
        time.sleep(0.05)
    raise AssertionError(f"batch {batch_id} did not finish")


def test_a_batch_answers_as_online_by_custom_id_and_counts_each_line_once(server):
    client = openai_client(server)
    bodies = _bodies(5)
    online = [client.chat.completions.create(**body) for body in bodies]
    before = server.stats["model_outcomes"].get(MODEL, {}).get("batch", 0)
    lines = [{"custom_id": f"key-{i}", "method": "POST", "url": "/v1/chat/completions",
              "body": body} for i, body in enumerate(bodies)]
    lines.append({"custom_id": "bad", "method": "POST", "url": "/v1/chat/completions",
                  "body": {**bodies[0], "model": MODEL, "temperature": 9.0}})
    created = _submit(client, lines, jb="local-1")
    assert created.status == "validating" and created.metadata == {"jb": "local-1"}
    done = _wait(client, created.id)
    assert done.status == "completed"
    assert (done.request_counts.total, done.request_counts.completed,
            done.request_counts.failed) == (6, 5, 1)
    output = [json.loads(line) for line in
              client.files.content(done.output_file_id).text.splitlines()]
    assert [row["custom_id"] for row in output] != [f"key-{i}" for i in range(5)]  # order
    by_key = {row["custom_id"]: row for row in output}
    for i, expected in enumerate(online):
        row = by_key[f"key-{i}"]
        assert row["error"] is None and row["response"]["status_code"] == 200
        got = ChatCompletion.model_validate(row["response"]["body"])  # as the SDK reads it
        assert got.choices == expected.choices and got.usage == expected.usage
    errors = [json.loads(line) for line in
              client.files.content(done.error_file_id).text.splitlines()]
    assert [row["custom_id"] for row in errors] == ["bad"]
    assert errors[0]["response"]["status_code"] == 400
    assert "temperature" in errors[0]["response"]["body"]["error"]["message"]
    paid = server.stats["model_outcomes"][MODEL]["batch"] - before
    assert paid == 5  # each answered line once
    assert client.batches.retrieve(created.id).output_file_id == done.output_file_id
    assert server.stats["model_outcomes"][MODEL]["batch"] - before == 5  # not again


@pytest.mark.parametrize(("mutate", "code"), [
    (lambda lines: [*lines, dict(lines[0])], "duplicate_custom_id"),
    (lambda lines: [{**lines[0], "method": None}, *lines[1:]], "invalid_method"),
    (lambda lines: [lines[0], {**lines[1], "body": {**lines[1]["body"],
                                                     "model": "sim/lumen-mini"}}],
     "mismatched_model"),
])
def test_a_bad_input_file_fails_the_batch_naming_the_line(server, mutate, code):
    client = openai_client(server)
    lines = [{"custom_id": f"k{i}", "method": "POST", "url": "/v1/chat/completions",
              "body": body} for i, body in enumerate(_bodies(2))]
    batch = _wait(client, _submit(client, mutate(lines)).id)
    assert batch.status == "failed" and batch.output_file_id is None
    assert code in [error.code for error in batch.errors.data]
    assert server.stats["outcomes"]["batch"] == 0  # nothing answered, nothing paid


def test_a_cancelled_batch_answers_nothing_and_batches_are_listed(config):
    with sim_server(config, batch_completion_s=60) as server:
        client = openai_client(server)
        lines = [{"custom_id": "k0", "method": "POST", "url": "/v1/chat/completions",
                  "body": _bodies(1)[0]}]
        first = _submit(client, lines, jb="a")
        second = _submit(client, lines, jb="b")
        assert client.batches.retrieve(first.id).status == "in_progress"
        cancelled = client.batches.cancel(first.id)
        assert cancelled.status == "cancelled" and cancelled.output_file_id is None
        assert [b.id for b in client.batches.list()] == [second.id, first.id]  # newest
        page = client.batches.list(limit=1)
        assert [b.id for b in page.data] == [second.id] and page.has_more
        assert [b.id for b in client.batches.list(after=second.id)] == [first.id]
        assert [b.metadata for b in client.batches.list()] == [{"jb": "b"}, {"jb": "a"}]
        files = client.files.list(purpose="batch").data
        assert {f.filename for f in files} == {"jb-test.jsonl"} and len(files) == 2
        assert server.stats["outcomes"]["batch"] == 0
        with pytest.raises(openai.NotFoundError):
            client.batches.retrieve("batch-nope")


def test_batch_routes_need_the_key(server):
    anonymous = openai.OpenAI(base_url=server.url + "/v1", api_key="wrong", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        anonymous.batches.list()


def _lines(n: int) -> list[dict[str, Any]]:
    return [{"custom_id": f"key-{i}", "method": "POST", "url": "/v1/chat/completions",
             "body": body} for i, body in enumerate(_bodies(n))]


def _rows(client: openai.OpenAI, file_id: str | None) -> list[dict[str, Any]]:
    if file_id is None:
        return []
    return [json.loads(line) for line in client.files.content(file_id).text.splitlines()]


def test_batch_faults_each_have_their_rows(config):
    """Every fault of BatchFaults shows in the files as specs/batch.md describes it; what
    was answered is counted, what failed or expired is not."""
    faults = BatchFaults(fail_share=0.2, missing_rows=1, duplicate_rows=1, foreign_rows=1)
    with sim_server(config, batch_faults=faults, seed=4) as server:
        client = openai_client(server)
        done = _wait(client, _submit(client, _lines(10)).id)
        assert done.status == "completed"
        output, errors = _rows(client, done.output_file_id), _rows(client, done.error_file_id)
        failed = [row["custom_id"] for row in errors]
        assert len(failed) == 2 and all(row["error"]["code"] == "server_error"
                                        and row["response"] is None for row in errors)
        keys = [row["custom_id"] for row in output]
        answered = {f"key-{i}" for i in range(10)} - set(failed)
        assert set(keys) - answered == {"foreign-0"}  # a row for a key never sent
        assert len(answered - set(keys)) == 1  # one answered row lost
        assert len(keys) - len(set(keys)) == 1  # one row twice
        assert server.stats["outcomes"]["batch"] == 8  # answered (the lost one too)

    with sim_server(config, batch_faults=BatchFaults(expire_share=0.3)) as server:
        client = openai_client(server)
        done = _wait(client, _submit(client, _lines(10)).id)
        assert done.status == "expired" and done.request_counts.completed == 7
        expired = _rows(client, done.error_file_id)
        assert [row["custom_id"] for row in expired] == ["key-7", "key-8", "key-9"]
        assert {row["error"]["code"] for row in expired} == {"batch_expired"}
        assert len(_rows(client, done.output_file_id)) == 7
        assert server.stats["outcomes"]["batch"] == 7


def test_a_restarted_server_knows_its_files_and_batches(config, tmp_path):
    """A provider outage mid-batch: the server stops while a batch is in progress, a new
    one starts on the same state folder; the batch, its input file and the uploaded names
    are all there, and the batch completes, each line answered once in all."""
    state = tmp_path / "provider"
    with sim_server(config, batch_completion_s=0.5,
                   batch_state_dir=state) as first:
        client = openai_client(first)
        created = _submit(client, _lines(3), jb="local-7")
        assert client.batches.retrieve(created.id).status == "in_progress"
        paid_before = first.stats["outcomes"]["batch"]
    assert paid_before == 0
    time.sleep(0.5)
    with sim_server(config, batch_state_dir=state) as second:
        client = openai_client(second)
        found = [b for b in client.batches.list() if (b.metadata or {}).get("jb") == "local-7"]
        assert [b.id for b in found] == [created.id]
        assert [f.filename for f in client.files.list(purpose="batch").data] == [
            "jb-test.jsonl"]
        done = _wait(client, created.id)
        assert done.status == "completed" and len(_rows(client, done.output_file_id)) == 3
        assert second.stats["outcomes"]["batch"] == 3
        newer = _submit(client, _lines(1))
        assert newer.id != created.id  # ids go on after the restart
    with sim_server(config, batch_state_dir=state) as third:
        client = openai_client(third)
        assert client.batches.retrieve(created.id).status == "completed"
        assert third.stats["outcomes"]["batch"] == 0  # finished batches are not re-answered
