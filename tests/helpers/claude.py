"""What Claude's tests share (tests/core/test_anthropic.py, test_anthropic_batch.py): a
panel with a Claude judge answered by serve-sim, and the sim's answers to the requests
Claude is sent."""

from __future__ import annotations

import dataclasses
from typing import Any

from helpers.api import api_params
from helpers.batch import sim_answers
from helpers.project import study_params
from judgebias.config import validate_params
from judgebias.devtools.serve_sim.anthropic_wire import thinking_tokens
from judgebias.models.base import ChatRequest, ChatResponse

THINKING = {"budget_tokens": 1024}


def philautia_parsed(params: dict) -> dict:
    """The default params running philautia alone on parsed scores: a study Claude can
    judge without log-probs (judgebias.abilities)."""
    params = study_params(params, "philautia")
    params["philautia"]["score"] = "parsed"
    return params


def claude(params: dict, url: str, **fields: Any) -> dict:
    """The philautia panel with corvid-pro answered by Claude's client at `url`, the
    panel entry's `fields` added (validated)."""
    params = api_params(philautia_parsed(params), "anthropic", url, models=["corvid-pro"])
    params["panel"]["corvid-pro"].update(fields)
    params.setdefault("backends", {})["anthropic"] = {"backoff_initial_s": 0.05,
                                                      "backoff_max_s": 0.2}
    return validate_params(params)


def as_claude_sees(request: ChatRequest, thinking: dict | None = None) -> ChatRequest:
    """The request serve-sim rebuilds from what Claude is sent: no seed, no log-probs (seed
    0, top_logprobs 0), and with thinking on, what the thinking left of max_tokens."""
    spent = thinking_tokens(thinking, request.parts()) if thinking else 0
    sampling = dataclasses.replace(request.sampling, seed=0, top_logprobs=0,
                                   max_tokens=request.sampling.max_tokens - spent)
    return dataclasses.replace(request, sampling=sampling)


def expected(config: dict, requests: list[ChatRequest], thinking: dict | None = None
             ) -> list[ChatResponse]:
    """The in-process sim's answers to what Claude is sent: what serve-sim answers."""
    return sim_answers(config, [as_claude_sees(r, thinking) for r in requests])
