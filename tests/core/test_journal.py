"""The request journal and runner: zero repeated calls, failures never cached as success."""

from __future__ import annotations

import json
from collections.abc import Sequence

from judgebias.models.base import ChatRequest, ChatResponse, Sampling, TokenLogprob
from judgebias.models.journal import Journal, request_key
from judgebias.models.runner import run_requests


class CountingBackend:
    """A deterministic backend that records every request it receives."""

    name = "counting"

    def __init__(self, fail: set[str] = frozenset(), empty: set[str] = frozenset()):
        self.calls: list[str] = []
        self.fail, self.empty = fail, empty

    def complete(self, requests: Sequence[ChatRequest], on_response=None) -> list[ChatResponse]:
        out = []
        for r in requests:
            self.calls.append(r.prompt)
            if r.prompt in self.fail:
                out.append(ChatResponse(text="", status="failed", error="HTTP 500"))
            elif r.prompt in self.empty:
                out.append(ChatResponse(text="  "))
            else:
                token = TokenLogprob("answer", -0.5, (("answer", -0.5),))
                out.append(ChatResponse(text=f"answer to {r.prompt}", tokens=(token,)))
            if on_response is not None:
                on_response(len(out) - 1, out[-1])
        return out


def _requests(n: int) -> list[ChatRequest]:
    return [ChatRequest(model="m", prompt=f"p{i}", images=(b"img",)) for i in range(n)]


def test_key_depends_on_everything_that_determines_the_answer():
    base = ChatRequest(model="m", prompt="p", images=(b"a",))
    variants = [ChatRequest(model="m2", prompt="p", images=(b"a",)),
                ChatRequest(model="m", prompt="q", images=(b"a",)),
                ChatRequest(model="m", prompt="p", images=(b"b",)),
                ChatRequest(model="m", prompt="p", images=(b"a",), sampling=Sampling(seed=1)),
                ChatRequest(model="m", prompt="p", images=(b"a",), revision="r2")]
    keys = {request_key(r, "sim") for r in [base, *variants]}
    assert len(keys) == 6
    assert request_key(base, "sim") != request_key(base, "openai")
    assert request_key(base, "sim", "1") != request_key(base, "sim", "2")


def test_system_prompt_is_part_of_the_key_only_when_given():
    """ChatRequest.system (default "") joins the key only when set: keys of requests
    without a system prompt are the ones journaled before the field existed."""
    request = ChatRequest(model="sim/m", prompt="Provide a caption.", images=(b"a", b"b"),
                          sampling=Sampling(0.7, 0.9, 256, 5, 3), revision="1")
    assert request.system == ""
    # computed with judgebias before ChatRequest had a system field (commit e4363a4)
    assert request_key(request, "sim", "v1") == (
        "03f096d437b3a1a0e98b089946dbdf01d57e30bf19c0707dfcfc724f0d09b681")
    strict = ChatRequest(**{**request.__dict__, "system": "You are a strict judge."})
    lenient = ChatRequest(**{**request.__dict__, "system": "You are a lenient judge."})
    keys = {request_key(r, "sim", "v1") for r in (request, strict, lenient)}
    assert len(keys) == 3


def test_journal_stores_the_system_prompt(tmp_path):
    backend = CountingBackend()
    request = ChatRequest(model="m", prompt="p0", images=(b"img",), system="Be brief.")
    with Journal(tmp_path / "j.sqlite") as journal:
        run_requests(backend, [request], journal)
        (stored,) = journal._db.execute("SELECT request FROM responses").fetchone()
        again, stats = run_requests(backend, [request], journal)
    assert json.loads(stored)["system"] == "Be brief."
    assert stats.called == 0 and again[0].text == "answer to p0"


def test_rerun_makes_zero_calls(tmp_path):
    backend = CountingBackend()
    with Journal(tmp_path / "j.sqlite") as journal:
        first, stats = run_requests(backend, _requests(10), journal)
        assert stats.called == 10 and len(backend.calls) == 10
    with Journal(tmp_path / "j.sqlite") as journal:
        again, stats = run_requests(backend, _requests(10), journal)
    assert stats.called == 0 and stats.journaled == 10 and len(backend.calls) == 10
    assert [r.text for r in again] == [r.text for r in first]
    assert again[0].tokens == first[0].tokens  # log-probs survive the journal


def test_duplicates_in_a_job_are_called_once(tmp_path):
    backend = CountingBackend()
    with Journal(tmp_path / "j.sqlite") as journal:
        responses, _ = run_requests(backend, _requests(3) + _requests(3), journal)
    assert len(backend.calls) == 3 and len(responses) == 6


def test_failed_and_empty_answers_are_not_cached(tmp_path):
    backend = CountingBackend(fail={"p1"}, empty={"p2"})
    with Journal(tmp_path / "j.sqlite") as journal:
        responses, stats = run_requests(backend, _requests(4), journal)
        assert [r.status for r in responses] == ["ok", "failed", "empty", "ok"]
        assert stats.failed == 2 and journal.failure_count() == 2 and journal.count() == 2
        backend.fail, backend.empty = set(), set()
        responses, stats = run_requests(backend, _requests(4), journal)
    assert stats.called == 2 and all(r.ok for r in responses)


def test_budget_is_checked_before_any_call(tmp_path):
    import pytest

    from judgebias.models.journal import BudgetExceeded

    backend = CountingBackend()
    with Journal(tmp_path / "j.sqlite") as journal:
        run_requests(backend, _requests(6), journal, max_requests=8)
        with pytest.raises(BudgetExceeded, match="max_requests=8"):
            run_requests(backend, _requests(10), journal, max_requests=8)  # 4 new > 2 left
        assert len(backend.calls) == 6  # nothing was called
        run_requests(backend, _requests(8), journal, max_requests=8)  # exactly at the cap
        assert journal.calls_started("m") == 8


def test_progress_logs_rate_and_eta_and_draws_a_bar_on_a_terminal(monkeypatch, caplog):
    import io
    import logging

    from judgebias.models import runner

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    with caplog.at_level(logging.INFO, logger="judgebias.models.runner"):
        plain = runner.Progress("caption m", 3, every_s=0.0)
        for _ in range(3):
            plain.update()
        plain.close()
    lines = [r.message for r in caplog.records]
    assert lines[-1].startswith("caption m: 3/3 new calls (") and "/s, ETA 0 s)" in lines[-1]
    assert plain.bar is None  # a log file gets lines, not a bar

    terminal = Terminal()
    monkeypatch.setattr(runner.sys, "stderr", terminal)
    bar = runner.Progress("score m", 2, every_s=60.0)
    bar.update()
    bar.update()
    bar.close()
    assert "score m" in terminal.getvalue() and "2/2" in terminal.getvalue()


def test_sampling_as_dict_has_every_field():
    """as_dict is spelled out for speed; it must still carry every field (journal keys)."""
    from dataclasses import asdict

    from judgebias.models.base import Sampling

    sampling = Sampling(temperature=0.3, top_p=0.9, max_tokens=12, top_logprobs=3, seed=7)
    assert sampling.as_dict() == asdict(sampling)
