"""What serve-sim answers: the whole ``sim`` panel as one backend, or, in ``no_compute``
mode (client benchmarks), a fixed evaluator-style answer."""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from judgebias.models.base import ChatRequest, ChatResponse, TokenLogprob
from judgebias.models.context import RunContext
from judgebias.models.registry import sim_traits
from judgebias.models.sim import SimBackend, SimModel, score_logprobs, score_tokens

NO_COMPUTE_TEXT = "The caption is accurate. The final score is $80$."


def sim_panel(params: Mapping[str, Any]) -> SimBackend:
    """One ``SimBackend`` holding every ``sim`` model of `params`, keyed by model id.

    Built like :func:`judgebias.models.registry.build_backend` builds a model's world, but
    with the whole panel and every family opener: the extra models and families only add
    zero bonuses, so each model answers exactly as its own ``build_backend`` world does.
    """
    run = RunContext(params)
    world = {
        model["model_id"]: SimModel.from_params(key, model["family"], sim_traits(run, key))
        for key, model in params["panel"].items() if model["backend"] == "sim"
    }
    openers = {family: spec["sim"]["opener"] for family, spec in params["families"].items()
               if isinstance(spec.get("sim"), Mapping) and "opener" in spec["sim"]}
    return SimBackend(world, seed=params["seed"], family_openers=openers)


@lru_cache(maxsize=32)
def _no_compute_tokens(top_logprobs: int) -> tuple[TokenLogprob, ...]:
    """The fixed no-compute answer: plain words, then a score of 80 whose log-probs and
    top-k come from a normal around 80 (sd 8) exactly as a sim judge reports them."""
    words = ["The", " caption", " is", " accurate", ".", " The", " final", " score", " is"]
    tokens = [TokenLogprob(w, -0.05, ((w, -0.05),)) for w in words]
    tokens.append(TokenLogprob(" $", -0.0005, ((" $", -0.0005),)))
    tokens += score_tokens(80, score_logprobs(0.8, 0.08), "whole", top_logprobs)
    tokens.append(TokenLogprob(".", -0.0002, ((".", -0.0002),)))
    return tuple(tokens)


def no_compute_answer(request: ChatRequest) -> ChatResponse:
    """The fixed evaluator-style answer of ``no_compute`` mode (same truncation and usage
    rules as the sim), so a client benchmark measures HTTP and client cost only."""
    tokens = list(_no_compute_tokens(request.sampling.top_logprobs))
    if request.sampling.top_logprobs <= 0:
        tokens = [TokenLogprob(t.token, t.logprob, ()) for t in tokens]
    finish = "stop"
    if len(tokens) > request.sampling.max_tokens:
        tokens, finish = tokens[: request.sampling.max_tokens], "length"
    prompt_tokens = len(request.prompt.split()) + 256 * len(request.images)
    usage = {"prompt_tokens": prompt_tokens, "completion_tokens": len(tokens),
             "total_tokens": prompt_tokens + len(tokens)}
    return ChatResponse(text="".join(t.token for t in tokens), tokens=tuple(tokens),
                        usage=usage, finish_reason=finish)
