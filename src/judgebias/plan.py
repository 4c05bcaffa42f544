"""`judgebias plan`: how many calls each model still needs, before paying for any.

Each active study lists the requests its jobs would send (its `plan` function, built with
the same judging-core code the jobs use); the core looks their keys up in the journal and
counts what is left (identical requests within a job are called once, so `needed` is an
upper bound). Requests that depend on artifacts that do not exist yet (scores of
captions not yet written) cannot be keyed; they are counted as needed and shown as
waiting on upstream outputs. Where a model has `pricing`,
it estimates tokens and cost: input from the prompt length (about 4 characters a token)
plus `image_tokens` per image, output from the mean completion length already journaled
for that model (or `max_tokens`, an upper bound, when nothing is journaled yet).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from judgebias.models.base import ChatRequest
from judgebias.models.journal import Journal, journal_path, request_key
from judgebias.models.registry import backend_version


@dataclass
class ModelPlan:
    model: str
    backend: str
    requests: int = 0
    journaled: int = 0
    needed: int = 0
    waiting_on_captions: int = 0
    prompt_chars: int = 0
    images: int = 0
    budget_left: int | None = None
    output_tokens_each: float | None = None
    output_is_upper_bound: bool = False
    cost: float | None = None
    notes: list[str] = field(default_factory=list)


@dataclass
class PlannedCalls:
    """What a study will ask one panel model: the requests it can build now, and how
    many more it cannot key yet because an upstream artifact (captions) is missing."""

    model: str
    requests: list[ChatRequest] = field(default_factory=list)
    waiting: int = 0
    note: str = ""


def _mean_output_tokens(path: Path) -> float | None:
    if not path.exists():
        return None
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT usage FROM responses ORDER BY rowid DESC LIMIT 2000")
        counts = [json.loads(u).get("completion_tokens") for (u,) in rows]
    counts = [c for c in counts if isinstance(c, int)]
    return sum(counts) / len(counts) if counts else None


def _add(plan: ModelPlan, journal: Journal | None, name: str, version: str,
         calls: PlannedCalls) -> None:
    keys = [request_key(r, name, version) for r in calls.requests]
    done = journal.lookup(keys) if journal is not None else {}
    plan.requests += len(calls.requests) + calls.waiting
    plan.journaled += sum(key in done for key in keys)
    plan.needed += calls.waiting
    plan.waiting_on_captions += calls.waiting
    if calls.note and calls.note not in plan.notes:
        plan.notes.append(calls.note)
    for key, request in zip(keys, calls.requests, strict=True):
        if key not in done:
            plan.needed += 1
            plan.prompt_chars += len(request.prompt) + len(request.system)
            plan.images += len(request.images)


def plan_calls(config: Mapping[str, Any]) -> list[ModelPlan]:
    """Per panel model: requests every active study makes, journaled, still needed."""
    from judgebias.study import active

    planned: dict[str, list[PlannedCalls]] = {}
    for study in active(config):
        plan_study = study.load("plan")
        for calls in plan_study(config) if plan_study is not None else []:
            planned.setdefault(calls.model, []).append(calls)
    plans = []
    for key in (k for k in config["panel"] if k in planned):
        model = config["panel"][key]
        name, version = model["backend"], backend_version(config, key)
        plan = ModelPlan(key, name)
        path = journal_path(config["journal_dir"], name, model["model_id"])
        journal = Journal(path) if path.exists() else None
        try:
            for calls in planned[key]:
                _add(plan, journal, name, version, calls)
            if model.get("max_requests") is not None:
                started = journal.calls_started(model["model_id"]) if journal else 0
                plan.budget_left = model["max_requests"] - started
        finally:
            if journal is not None:
                journal.close()
        _estimate_cost(plan, model, path)
        plans.append(plan)
    return plans


def _estimate_cost(plan: ModelPlan, model: Mapping[str, Any], path: Path) -> None:
    plan.output_tokens_each = _mean_output_tokens(path)
    if plan.output_tokens_each is None:
        plan.output_tokens_each = float(model["sampling"]["max_tokens"])
        plan.output_is_upper_bound = True
    pricing = model.get("pricing")
    if pricing is None or not plan.needed:
        return
    known = plan.needed - plan.waiting_on_captions
    chars_each = plan.prompt_chars / known if known else 0
    input_tokens = plan.needed * chars_each / 4 + plan.images * pricing.get("image_tokens", 765)
    output_tokens = plan.needed * plan.output_tokens_each
    plan.cost = (input_tokens * pricing["input_per_mtok"]
                 + output_tokens * pricing["output_per_mtok"]) / 1e6


def plan_table(plans: list[ModelPlan]) -> pd.DataFrame:
    return pd.DataFrame([{
        "model": p.model, "backend": p.backend, "requests": p.requests,
        "journaled": p.journaled, "needed": p.needed,
        "waiting_on_captions": p.waiting_on_captions,
        "budget_left": "-" if p.budget_left is None else p.budget_left,
        "over_budget": p.budget_left is not None and p.needed > p.budget_left,
        "est_output_tokens": round(p.needed * (p.output_tokens_each or 0)),
        "est_cost_usd": "-" if p.cost is None else round(p.cost, 2),
    } for p in plans])
