"""What the batch-mode tests share: their requests, a job stopped at a given moment (as a
kill would stop it), and a runner's final outcomes recorded as a job records them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from judgebias import prompts
from judgebias.data.scenes import random_scene, render, to_png_bytes
from judgebias.models.base import ChatRequest, ChatResponse, Sampling
from judgebias.models.batch import BatchCounts, BatchProvider, BatchRunner, BatchSettings
from judgebias.models.context import RunContext
from judgebias.models.journal import Journal, request_key
from judgebias.models.registry import build_backend

MODEL = "sim/corvid-pro"


def batch_requests(n: int = 6) -> list[ChatRequest]:
    """`n` captioning requests of corvid-pro, each with its own image and seed."""
    rng = np.random.default_rng(5)
    text = prompts.render("caption_llava_ov")
    return [ChatRequest(MODEL, text, (to_png_bytes(render(random_scene(rng))),),
                        Sampling(1.0, 1.0, 64, 3, i)) for i in range(n)]


def sim_answers(config: dict[str, Any], requests: list[ChatRequest]) -> list[ChatResponse]:
    """The in-process sim's answers: what a batch's answers must equal."""
    backend, _ = build_backend(RunContext(config), "corvid-pro", "evaluator")
    return backend.complete(requests)


def recorded(runner: BatchRunner, journal: Journal, pending: dict[str, ChatRequest]
             ) -> dict[str, ChatResponse]:
    """Run `runner` as a job does (each final outcome journaled); the outcomes by key."""
    got: dict[str, ChatResponse] = {}

    def record(key: str, response: ChatResponse) -> None:
        journal.record(key, pending[key], response)
        got[key] = response

    runner.run(pending, record)
    return got


class Stop(Exception):
    """A job stopped at a given moment (what kill -9 does to the process)."""


def stop_at(moment: str) -> Callable[[str], None]:
    """An ``on_state`` that stops the job when the runner writes state `moment`."""

    def on_state(state: str) -> None:
        if state == moment:
            raise Stop(state)

    return on_state


class _Landed:
    """An SDK resource whose `name` call stops the job right after it reached the
    provider, before its answer could be recorded."""

    def __init__(self, resource: Any, name: str) -> None:
        self._resource, self._name = resource, name

    def __getattr__(self, attribute: str) -> Any:
        method = getattr(self._resource, attribute)
        if attribute != self._name:
            return method

        def landed(*args: Any, **kwargs: Any) -> Any:
            method(*args, **kwargs)
            raise Stop(f"stopped after {self._name}")

        return landed


class Landing:
    """An SDK client (openai or google-genai) whose `resource`.`name` call stops the job
    once it landed, e.g. ``Landing(client, "batches", "create")``."""

    def __init__(self, client: Any, resource: str, name: str) -> None:
        self._client = client
        setattr(self, resource, _Landed(getattr(client, resource), name))

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self._client, attribute)


def on_provider(provider: str, client: Any) -> tuple[int, int]:
    """(input files, batches) the provider holds for the client's key: what a resumed job
    must not have made twice. A Message Batch carries its requests (Anthropic has no input
    file): each counts as both."""
    if provider == "anthropic":
        made = len(list(client.messages.batches.list()))
        return made, made
    if provider == "openai":
        return (len(client.files.list(purpose="batch").data),
                len(list(client.batches.list())))
    from google.genai import types

    uploaded = [f for f in client.files.list() if f.source == types.FileSource.UPLOADED]
    return len(uploaded), len(list(client.batches.list()))


def keyed(requests: list[ChatRequest], provider: str, version: str | None = None
          ) -> dict[str, ChatRequest]:
    """The requests by their journal key on `provider`'s backend (openai, gemini, or
    anthropic with its `version`, which depends on the panel entry)."""
    from judgebias.models.gemini_wire import PROTOCOL_VERSION as GEMINI
    from judgebias.models.openai_wire import PROTOCOL_VERSION as OPENAI

    version = version or (OPENAI if provider == "openai" else GEMINI)
    return {request_key(r, provider, version): r for r in requests}


def run_batches(batches: BatchProvider, journal: Journal, pending: dict[str, ChatRequest],
                on_state: Callable[[str], None] | None = None,
                settings: BatchSettings | None = None
                ) -> tuple[dict[str, ChatResponse], BatchCounts]:
    """A job's batch run without waits between polls: its outcomes by key, its counts."""
    runner = BatchRunner(batches, journal, MODEL, settings or BatchSettings(poll_s=0.01),
                         on_state=on_state, sleep=lambda s: None)
    return recorded(runner, journal, pending), runner.counts
