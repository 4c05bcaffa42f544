"""Requests out, answers in (issue 44 item 1): the line formats, every rule of an import
(judgebias.exchange.ingest's table), the external backend's jobs, and an import killed
with SIGKILL midway. The whole round trip through Snakemake, answered by serve-sim's
Batch API, is tests/core/test_exchange_pipeline.py."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from PIL import Image

from judgebias.config import ConfigError
from judgebias.exchange.export import export_requests
from judgebias.exchange.formats import answer_row, request_line
from judgebias.exchange.ingest import AnswersFileError, import_answers
from judgebias.models.base import ChatRequest, ChatResponse, Sampling
from judgebias.models.external import PROTOCOL_VERSION, AwaitingAnswers, ExternalBackend
from judgebias.models.journal import Journal, journal_path, request_key
from judgebias.models.runner import run_requests

MODEL = "lab/judge-7b"


def _png(shade: int) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (4, 4), (shade, 0, 0)).save(out, format="PNG")
    return out.getvalue()


def _requests(n: int) -> list[ChatRequest]:
    return [ChatRequest(model=MODEL, prompt=f"Rate caption {i}: <image> 0-100",
                        images=(_png(i % 3),), image_at=(16,), system="You judge.",
                        sampling=Sampling(temperature=0.0, seed=i))
            for i in range(n)]


def _key(request: ChatRequest) -> str:
    return request_key(request, "external", PROTOCOL_VERSION)


@pytest.fixture
def exported(tmp_path):
    """A journal of the external model with 5 requests exported; (params, requests, keys)."""
    params = {"journal_dir": str(tmp_path / "journal")}
    requests = _requests(5)
    keys = [_key(r) for r in requests]
    with Journal(journal_path(tmp_path / "journal", "external", MODEL)) as journal:
        journal.mark_exported(zip(keys, requests, strict=True))
    return params, requests, keys


def _journal(params) -> Journal:
    return Journal(journal_path(params["journal_dir"], "external", MODEL))


def _plain(key: str, text: str | None = None, **fields) -> str:
    row = {"key": key, **({"text": text} if text is not None else {}), **fields}
    return json.dumps(row)


def _openai(key: str, text: str, status: int = 200) -> str:
    body = {"id": "c1", "object": "chat.completion", "created": 0, "model": MODEL,
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text},
                         "logprobs": {"content": [{"token": text, "logprob": -0.1, "bytes": None,
                                                   "top_logprobs": [{"token": text,
                                                                     "logprob": -0.1,
                                                                     "bytes": None}]}]}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11}}
    if status != 200:
        body = {"error": {"message": "content filter", "type": "invalid_request_error"}}
    return json.dumps({"id": "r1", "custom_id": key, "error": None,
                       "response": {"status_code": status, "request_id": "q", "body": body}})


def _write(path: Path, *lines: str) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


# --- the formats ---------------------------------------------------------------------------

def test_request_lines_carry_the_key_the_parts_in_order_and_the_images(tmp_path):
    request = _requests(1)[0]
    line = json.loads(request_line("k1", request, "openai"))
    assert line["custom_id"] == "k1" and line["url"] == "/v1/chat/completions"
    body = line["body"]
    assert body["model"] == MODEL and body["messages"][0] == {"role": "system",
                                                              "content": "You judge."}
    parts = body["messages"][1]["content"]
    assert [p["type"] for p in parts] == ["text", "image_url", "text"]
    assert parts[0]["text"] == request.prompt[:16]
    assert parts[1]["image_url"]["url"].startswith("data:image/png;base64,")
    assert body["temperature"] == 0.0 and body["seed"] == 0

    plain = json.loads(request_line("k1", request, "plain", ["images/abc.png"]))
    assert plain["key"] == "k1" and plain["system"] == "You judge."
    assert plain["parts"] == [{"text": request.prompt[:16]}, {"image": "images/abc.png"},
                              {"text": request.prompt[16:]}]
    assert plain["sampling"] == request.sampling.as_dict()
    files = json.loads(request_line("k1", request, "openai", ["images/abc.png"]))
    assert files["body"]["messages"][1]["content"][1]["image_url"]["url"] == "images/abc.png"


def test_answer_rows_in_both_formats_keep_text_logprobs_usage_and_the_raw_line():
    key, answer = answer_row(_openai("k1", "73"))
    assert key == "k1" and answer.ok and answer.text == "73"
    assert answer.tokens[0].top == (("73", -0.1),) and answer.usage["completion_tokens"] == 1
    assert json.loads(answer.raw)["custom_id"] == "k1"
    key, answer = answer_row(_plain("k2", "5", usage={"completion_tokens": 1},
                                    logprobs=[{"token": "5", "logprob": -0.5,
                                               "top_logprobs": [{"token": "5",
                                                                 "logprob": -0.5}]}]))
    assert (key, answer.text, answer.tokens[0].logprob) == ("k2", "5", -0.5)
    _, failed = answer_row(_openai("k3", "", status=400))
    assert not failed.ok and failed.error.startswith("batch: 400")
    _, failed = answer_row(_plain("k4", error="gateway timeout"))
    assert not failed.ok and failed.error == "imported: gateway timeout"


# --- the import's rules ------------------------------------------------------------------------

def test_an_import_journals_answers_under_their_keys_and_a_rerun_writes_nothing(
        exported, tmp_path):
    params, _, keys = exported
    answers = _write(tmp_path / "a.jsonl", _openai(keys[0], "71"), _plain(keys[1], "64"),
                     _plain(keys[1], "64"), "", _plain(keys[2], error="refused"),
                     _plain(keys[2], error="refused"), _plain(keys[3], ""))
    summary = import_answers(params, [answers])
    assert (summary.answers, summary.failures, summary.repeated) == (2, 2, 2)
    assert summary.waiting == {MODEL: 3}  # keys 2 and 3 failed, key 4 has no row
    with _journal(params) as journal:
        assert {k: r.text for k, r in journal.lookup(keys).items()} == {keys[0]: "71",
                                                                       keys[1]: "64"}
        failures = journal.failures_of(keys)
        assert [f.error for f in failures[keys[2]]] == ["imported: refused"]
        assert [f.status for f in failures[keys[3]]] == ["empty"]
        assert json.loads(journal.raw(keys[0]))["custom_id"] == keys[0]
        count, failed = journal.count(), journal.failure_count()
    again = import_answers(params, [answers])
    assert (again.answers, again.failures, again.already) == (0, 0, 4)  # 2 answers, 2 failures
    with _journal(params) as journal:
        assert (journal.count(), journal.failure_count()) == (count, failed)


@pytest.mark.parametrize("lines, message", [
    (["{not json"], "line 1: not JSON"),
    (['{"text": "5"}'], "line 1: neither an OpenAI batch output line"),
    (["{key}", '{"key": "k", "logprobs": 3, "text": "5"}'], "line 2: `logprobs` must be"),
    (["{key}", '{"key": "unknown-key", "text": "5"}'],
     "line 2: key unknown-key was never exported from this project"),
    (["{key}", "{key2}"], "line 2: key {k0} is answered again with a different text "
                          "(first at {file}, line 1)"),
], ids=["json", "format", "logprobs", "never-exported", "two-texts"])
def test_a_bad_file_names_its_line_and_writes_nothing(exported, tmp_path, lines, message):
    params, _, keys = exported
    path = tmp_path / "bad.jsonl"
    fill = {"{key}": _plain(keys[0], "5"), "{key2}": _plain(keys[0], "6")}
    _write(path, *(fill.get(line, line) for line in lines))
    with pytest.raises(AnswersFileError) as raised:
        import_answers(params, [path])
    assert str(raised.value).startswith(f"{path}, line")
    assert message.format(k0=keys[0], file=path) in str(raised.value)
    with _journal(params) as journal:
        assert journal.count() == 0 and journal.failure_count() == 0


def test_a_journaled_answer_is_never_replaced(exported, tmp_path):
    params, _, keys = exported
    import_answers(params, [_write(tmp_path / "a.jsonl", _plain(keys[0], "5"))])
    late = _write(tmp_path / "b.jsonl", _plain(keys[1], "7"), _plain(keys[0], "9"))
    with pytest.raises(AnswersFileError, match=r"b.jsonl, line 2: .* already answered in the "
                                               "journal with a different text"):
        import_answers(params, [late])
    with _journal(params) as journal:
        assert journal.count() == 1  # the whole file was refused, key 1 included
    later = import_answers(params, [_write(tmp_path / "c.jsonl", _plain(keys[0], error="x"))])
    assert (later.failures, later.already) == (0, 1)  # an error after an answer: moot


# --- the external backend ----------------------------------------------------------------------

def test_an_external_model_job_waits_for_answers_then_sees_failures_as_failures(
        exported, tmp_path):
    params, requests, keys = exported
    path = journal_path(params["journal_dir"], "external", MODEL)
    backend = ExternalBackend("panel.judge (external lab/judge-7b)", path)
    with Journal(path) as journal, pytest.raises(AwaitingAnswers, match="5 of this job's"):
        run_requests(backend, requests, journal, backend_version=PROTOCOL_VERSION)
    import_answers(params, [_write(tmp_path / "a.jsonl",
                                   *(_plain(k, str(60 + i)) for i, k in enumerate(keys[:4])),
                                   _plain(keys[4], error="content filter"))])
    with Journal(path) as journal:
        responses, stats = run_requests(backend, requests, journal,
                                        backend_version=PROTOCOL_VERSION)
    assert [r.text for r in responses[:4]] == ["60", "61", "62", "63"]
    assert responses[4] == ChatResponse(text="", status="failed",
                                        error="imported: content filter")
    assert (stats.journaled, stats.failed) == (4, 1)


def test_export_refuses_what_it_cannot_write(default_params, tmp_path):
    params = {**default_params, "journal_dir": str(tmp_path / "j")}
    with pytest.raises(ConfigError, match="no panel model has backend `external`"):
        export_requests(params, tmp_path / "out")
    with pytest.raises(ConfigError, match="--model nobody: not a panel model"):
        export_requests(params, tmp_path / "out", models=["nobody"])
    with pytest.raises(ConfigError, match="--study nothing: not an active study"):
        export_requests(params, tmp_path / "out", models=["corvid-pro"], studies=["nothing"])


# --- kill -9 ----------------------------------------------------------------------------------

@pytest.mark.slow  # a real import process, killed and run again (~15 s)
def test_an_import_killed_midway_loses_nothing_and_duplicates_nothing(default_params, tmp_path):
    n = 40_000
    params = {**default_params, "journal_dir": str(tmp_path / "journal")}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    requests = [ChatRequest(model=MODEL, prompt=f"item {i}") for i in range(n)]
    keys = [_key(r) for r in requests]
    path = journal_path(tmp_path / "journal", "external", MODEL)
    with Journal(path) as journal:
        journal.mark_exported(zip(keys, requests, strict=True))
    answers = _write(tmp_path / "answers.jsonl",
                     *(_plain(k, error="refused") if i % 10 == 0 else _plain(k, str(i % 100))
                       for i, k in enumerate(keys)))
    command = [str(Path(sys.executable).parent / "judgebias"), "--params",
               str(tmp_path / "params.yaml"), "answers", "import", str(answers)]
    job = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    with Journal(path) as journal:
        while journal.count() + journal.failure_count() == 0:
            assert job.poll() is None, job.stderr.read().decode()
            assert time.monotonic() < deadline
            time.sleep(0.005)
        os.kill(job.pid, signal.SIGKILL)
        job.wait()
        written = journal.count() + journal.failure_count()
    assert 0 < written < n, "the kill came after the import had finished"
    rerun = subprocess.run(command, capture_output=True, text=True)
    assert rerun.returncode == 0, rerun.stderr
    with Journal(path) as journal:
        assert journal.count() == n - n // 10 and journal.failure_count() == n // 10
        assert journal.lookup([keys[1]])[keys[1]].text == "1"
        assert journal.unanswered_exports() == {MODEL: n // 10}
