"""`judgebias plan`: how many calls each model still needs, before paying for any.

Each active study lists the calls its model jobs will make (its ``plan`` hook, built with
the same judging-core code the jobs use). Calls whose inputs exist are *keyed*: the core
builds their journal keys, drops duplicates (the journal answers an identical request
once, across jobs and studies) and looks them up, so "journaled" and "needed" are exact.
Calls whose inputs are not built yet (captions not written, a pair table not imported, an
anchor a judge has not written) cannot be keyed: the study counts them from params and
data sizes, and they are reported as *estimated*, with a note saying what each estimate
assumes (an upper bound where an earlier model answer can fail or be dropped). What no
study counts (text-to-image generation, CLIP embeddings) is listed as not counted.

Where a model has `pricing`, it estimates tokens and cost: input from the prompt length
(about 4 characters a token) plus `image_tokens` per image, output from the mean billed
output already journaled for that model's calls (its journal's last answers where none of
them is journaled yet), else from `pricing.answer_tokens` plus `pricing.reasoning_tokens`
where stated, else `max_tokens`, an upper bound. Output is every token billed as output:
a reasoning or thinking model's hidden tokens (issue 41) count against `max_tokens` and
are billed as output, so they are inside the bound and inside the journaled
``completion_tokens``; their share is shown apart (``est_reasoning_tokens``: journaled
``reasoning_tokens``, else `pricing.reasoning_tokens`). Calls not keyed yet take the
prompt size of their task's template with its fields empty, where the study names the task
(a lower bound: the fields' text is not known yet), else the mean of the model's other
calls.

Every priced model of a provider with a batch API (OpenAI's Batch API, Gemini's batch
mode) is costed twice, side by side: at online prices and at batch prices (the backend
registry's batch price, half for both; judgebias.models.backends); the cost "as
configured" takes the batch price where the panel entry sets `batch: true`. A model of a
backend whose jobs take GPUs (vllm) is counted in calls, with the GPUs its jobs take; no
GPU-hours are estimated (they depend on the GPU, the batch and the answers' lengths).

**Prompt caching** (issue 45). A model of a provider that caches prompt prefixes (the
registry's ``caching``: OpenAI and Gemini by themselves, Anthropic where a request marks
its shared prefix; judgebias.models.backends says each price and minimum and where it is
documented) is costed again with caching, online and at batch prices (the discounts
stack: OpenAI's batch price list halves the cached price too; Anthropic's caching guide:
the discounts "can stack"; Gemini's batch mode is assumed alike). The estimate reads each
job's needed requests (one ``PlannedCalls`` is what one job asks: the requests that can be
sent side by side) in the order judgebias.models.prefix.grouped_order sends them; a request
reads from the cache the longest prefix, in whole parts (the system prompt, then each
text and image part of the user message: judgebias.models.prefix.part_ids), that an
earlier request of its job left there, if that prefix is at least the provider's minimum
(``pricing.cache_min_tokens``, else the registry's) and, for OpenAI, in 128-token steps.
What is left there: every prompt of at least the minimum, whole (OpenAI, Gemini), or the
prefixes a request marks (Anthropic: the system prompt and its first
:func:`~judgebias.models.prefix.shared_parts` parts, judgebias.models.anthropic_wire),
each write billed at ``cache_write_per_mtok`` (1.25 x input). So the first request of a
shared prefix pays it in full (or the write price), the later ones the cached price
(``cached_input_per_mtok``, else the registry's share of the input price). Tokens are
counted as above (4 characters a token, ``image_tokens`` an image). It is an upper bound
on the saving, in three ways: the provider's cache may evict an entry before the job's
next request reads it (a cache lives minutes: OpenAI's "5-10 minutes of inactivity",
Anthropic's 5-minute TTL, and an entry "only becomes available after the first response
begins", so requests sent at once all miss); each job is one run (nothing is counted as
cached across jobs, or from answers already journaled); and a text part that only begins
alike shares no token here (the provider would cache those tokens too: that part of the
estimate is low). Calls not keyed yet are counted uncached. How much a layout shares
depends on what comes first: with the papers' layouts most shared parts (an image, an
instruction) come after a part that differs, so the saving is small; a study's
``layout: shared_first`` puts them first.

The journal's answers of a model (its planned calls' answers, else its last ones) also
give what its provider reported: ``measured_cached_share``, the cached input tokens over
the prompt tokens of the answers that report them (judgebias.models.base.CACHED_TOKENS;
none: "-").

Why this module is long: counting, pricing (online, batch, cached) and the table the
command prints all read one `Plan` of `ModelPlan` rows, each price from the same tallies;
the prompt-caching estimate is the only part that could stand apart, and it prices the
same rows. Splitting it out is a follow-up (issue 45's note).
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from judgebias import prompts
from judgebias.config import ConfigError, load_config
from judgebias.models.backends import PromptCaching, backend_spec, registered_backends
from judgebias.models.base import ChatRequest, cached_tokens, hidden_tokens
from judgebias.models.journal import Journal, journal_path, request_key
from judgebias.models.panel import PanelModel, panel_models
from judgebias.models.prefix import part_ids, shared_parts
from judgebias.models.registry import backend_version
from judgebias.stats.power import POWER_COLUMNS, PowerSettings, power_table, power_text
from judgebias.study import active, study_models

if TYPE_CHECKING:
    from judgebias.judging.tasks import JudgeTask

@dataclass
class PlannedCalls:
    """What one job (or a group of jobs) of a study will ask one panel model: the requests
    it can build now, and how many more it cannot key yet because an input they depend on
    does not exist (`estimated`, counted from params and data sizes; `note` says how).
    `task`, where the study gives it, is what the estimated calls will ask: their prompt
    size is estimated from its template (`template_size`)."""

    model: str
    requests: list[ChatRequest] = field(default_factory=list)
    estimated: int = 0
    note: str = ""
    task: JudgeTask | None = None


@dataclass(frozen=True)
class NotCounted:
    """Work a study does that `judgebias plan` does not count (not a panel-model call, or
    nothing it can count yet), said in one line."""

    what: str


@dataclass
class Tally:
    """Calls of one model: by one study (a `by study` row) or by all (a model row)."""

    requests: int = 0
    journaled: int = 0
    needed: int = 0
    estimated: int = 0


@dataclass
class ModelPlan:
    model: str
    backend: str
    requests: int = 0
    journaled: int = 0
    needed: int = 0
    estimated: int = 0
    prompt_chars: int = 0
    images: int = 0
    budget_left: int | None = None
    output_tokens_each: float | None = None  # billed output per call, hidden included
    output_is_upper_bound: bool = False
    reasoning_tokens_each: float = 0.0  # of which hidden (reasoning, thinking)
    measured: tuple[float, float] | None = None  # (output, hidden) of its journaled calls
    sized: int = 0  # estimated calls whose prompt size comes from their task's template
    cost: float | None = None  # the needed calls at online prices (USD)
    cost_batch: float | None = None  # at the provider's batch prices (None: no batch API)
    batch: bool = False  # panel.<m>.batch: the run answers through the batch API
    gpus: int = 0  # GPUs each job takes (a backend whose jobs take GPUs: vllm)
    by_study: dict[str, Tally] = field(default_factory=dict)
    # prompt caching (module docstring): each job's needed requests, the input tokens of
    # the needed calls, of which read from and written to the cache, and the costs with it
    needed_groups: list[list[ChatRequest]] = field(default_factory=list, repr=False)
    input_tokens: float = 0.0
    cached_tokens: float = 0.0
    cache_write_tokens: float = 0.0
    cost_cached: float | None = None
    cost_batch_cached: float | None = None
    measured_cached_share: float | None = None  # of its journaled answers' prompt tokens

    @property
    def cost_configured(self) -> float | None:
        """The cost as the panel entry runs: at batch prices where it sets `batch`."""
        return self.cost_batch if self.batch and self.cost_batch is not None else self.cost

    @property
    def cost_configured_cached(self) -> float | None:
        """The cost as the panel entry runs, with prompt caching (None: not estimated)."""
        return (self.cost_batch_cached if self.batch and self.cost_batch_cached is not None
                else self.cost_cached)


@dataclass
class Plan:
    """Every model's plan, the notes the studies gave, and what is not counted."""

    models: list[ModelPlan]
    notes: list[tuple[str, str, str]]  # (study, model, note)
    not_counted: list[tuple[str, str]]  # (study, what)


def _means(usages: list[dict[str, Any]]) -> tuple[float, float] | None:
    """The mean billed output and hidden tokens of answers' usage (None if none counts)."""
    counted = [u for u in usages if isinstance(u.get("completion_tokens"), int)]
    if not counted:
        return None
    return (sum(u["completion_tokens"] for u in counted) / len(counted),
            sum(hidden_tokens(u) for u in counted) / len(counted))


def _cached_share(usages: list[dict[str, Any]]) -> float | None:
    """The cached input tokens over the prompt tokens of the answers whose usage reports
    them (judgebias.models.base.CACHED_TOKENS; None if none does)."""
    counted = [u for u in usages
               if cached_tokens(u) is not None and isinstance(u.get("prompt_tokens"), int)]
    prompt = sum(u["prompt_tokens"] for u in counted)
    return sum(u["cached_tokens"] for u in counted) / prompt if prompt else None


def _journal_usages(path: Path) -> list[dict[str, Any]]:
    """The usage of the journal's last 2,000 answers (any request of the model)."""
    if not path.exists():
        return []
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT usage FROM responses ORDER BY rowid DESC LIMIT 2000")
        return [json.loads(u) for (u,) in rows]


def _journal_means(path: Path) -> tuple[float, float] | None:
    """:func:`_means` of the journal's last 2,000 answers (any request of the model)."""
    return _means(_journal_usages(path))


def collect_calls(params: Mapping[str, Any]) -> tuple[dict[str, dict[str, list[PlannedCalls]]],
                                                 list[tuple[str, str, str]],
                                                 list[tuple[str, str]]]:
    """The active studies' planned calls, by model then study, with their notes."""

    planned: dict[str, dict[str, list[PlannedCalls]]] = {}
    notes: list[tuple[str, str, str]] = []
    not_counted: list[tuple[str, str]] = []
    for study in active(params):
        plan_study = study.load("plan")
        if plan_study is None:
            not_counted.append((study.name, "every call: the study declares no plan hook"))
            continue
        for calls in plan_study(params):
            if isinstance(calls, NotCounted):
                not_counted.append((study.name, calls.what))
                continue
            planned.setdefault(calls.model, {}).setdefault(study.name, []).append(calls)
            if calls.note and (study.name, calls.model, calls.note) not in notes:
                notes.append((study.name, calls.model, calls.note))
    return planned, notes, not_counted


def _plan_model(plan: ModelPlan, journal: Journal | None, version: str,
                studies: Mapping[str, list[PlannedCalls]]) -> None:
    """Key every request once per model (identical requests are one call, whichever job
    or study makes them), look the keys up, and tally by study and in all."""
    requests: dict[str, ChatRequest] = {}
    study_keys: dict[str, set[str]] = {}
    jobs: list[list[str]] = []  # each job's keys, a key in the first job that asks it
    for study, groups in studies.items():
        keys = study_keys.setdefault(study, set())
        tally = plan.by_study.setdefault(study, Tally())
        for calls in groups:
            tally.estimated += calls.estimated
            if calls.task is not None and calls.estimated:
                chars, images = template_size(calls.task)
                plan.prompt_chars += calls.estimated * chars
                plan.images += calls.estimated * images
                plan.sized += calls.estimated
            job: list[str] = []
            for request in calls.requests:
                key = request_key(request, plan.backend, version)
                keys.add(key)
                if key not in requests:
                    requests[key] = request
                    job.append(key)
            jobs.append(job)
    answers = journal.lookup(requests) if journal is not None and requests else {}
    done = set(answers)
    plan.measured = _means([a.usage for a in answers.values()])
    plan.measured_cached_share = _cached_share([a.usage for a in answers.values()])
    plan.needed_groups = [[requests[k] for k in job if k not in done] for job in jobs]
    for study, keys in study_keys.items():
        tally = plan.by_study[study]
        tally.journaled = len(keys & done)
        tally.requests = len(keys) + tally.estimated
        tally.needed = tally.requests - tally.journaled
    plan.estimated = sum(t.estimated for t in plan.by_study.values())
    plan.requests = len(requests) + plan.estimated
    plan.journaled = len(done)
    plan.needed = plan.requests - plan.journaled
    for key, request in requests.items():
        if key not in done:
            plan.prompt_chars += len(request.prompt) + len(request.system)
            plan.images += len(request.images)


def plan_calls(params: Mapping[str, Any]) -> Plan:
    """Per panel model: the calls every active study makes, journaled, still needed."""
    planned, notes, not_counted = collect_calls(params)
    plans = []
    for key, model in panel_models(params).items():
        if key not in planned:
            continue
        plan = ModelPlan(key, model.backend, batch=model.batch, gpus=model.gpus)
        path = journal_path(params["journal_dir"], model.backend, model.model_id)
        journal = Journal(path) if path.exists() else None
        try:
            _plan_model(plan, journal, backend_version(model), planned[key])
            if model.max_requests is not None:
                started = journal.calls_started(model.model_id) if journal else 0
                plan.budget_left = model.max_requests - started
        finally:
            if journal is not None:
                journal.close()
        estimate_cost(plan, model, path)
        plan.needed_groups = []  # the requests: not kept past their estimate
        plans.append(plan)
    return Plan(plans, notes, not_counted)


def template_size(task: JudgeTask) -> tuple[int, int]:
    """The prompt characters (its template and system prompt, every field empty: a lower
    bound) and the images of one call of `task`, for calls not keyed yet."""
    text = prompts.render(task.prompt, dict.fromkeys(task.fields, ""))
    system = prompts.render(task.system) if task.system else ""
    return len(text) + len(system), len(task.images)


def estimate_output(plan: ModelPlan, model: PanelModel, path: Path) -> None:
    """Output tokens per call, and the hidden ones among them: measured on the model's
    journaled calls (else its journal's last answers), else `pricing`'s estimates, else
    the `max_tokens` bound (hidden tokens count against it: the answer gets what they
    leave)."""
    usages: list[dict[str, Any]] = []
    if plan.measured is None or plan.measured_cached_share is None:
        usages = _journal_usages(path)  # the model's last answers stand in
        if plan.measured_cached_share is None:
            plan.measured_cached_share = _cached_share(usages)
    measured = plan.measured or _means(usages)
    if measured is not None:
        plan.output_tokens_each, plan.reasoning_tokens_each = measured
        return
    limit = model.sampling.max_tokens
    pricing = model.pricing
    hidden = min(limit, pricing.reasoning_tokens or 0) if pricing else 0
    answer = pricing.answer_tokens if pricing else None
    plan.reasoning_tokens_each = float(hidden)
    plan.output_is_upper_bound = answer is None
    plan.output_tokens_each = float(limit if answer is None else min(limit, answer + hidden))


def estimate_cost(plan: ModelPlan, model: PanelModel, path: Path) -> None:
    """Tokens and cost of the needed calls: keyed ones by their prompts, estimated ones by
    their task's template (`sized`), the rest at the mean of those (1 image and no text
    if none is known); output by :func:`estimate_output`, hidden tokens priced as output;
    online, and at the provider's batch price (the registry's)."""
    estimate_output(plan, model, path)
    pricing = model.pricing
    if pricing is None or not plan.needed:
        return
    known = plan.needed - plan.estimated + plan.sized
    unknown = plan.needed - known
    chars = plan.prompt_chars + (unknown * plan.prompt_chars / known if known else 0)
    images = plan.images + unknown * (plan.images / known if known else 1)
    plan.input_tokens = chars / 4 + images * pricing.image_tokens
    output = plan.needed * (plan.output_tokens_each or 0.0)
    plan.cost = online_cost(plan.input_tokens, output, pricing.input_per_mtok,
                            pricing.output_per_mtok)
    spec = backend_spec(model.backend)
    if spec.batch is not None:
        plan.cost_batch = plan.cost * spec.batch.price
    if spec.caching is None:
        return
    plan.cached_tokens, plan.cache_write_tokens = cache_estimate(
        plan.needed_groups, spec.caching, pricing.image_tokens, pricing.cache_min_tokens)
    read_price = (pricing.cached_input_per_mtok if pricing.cached_input_per_mtok is not None
                  else spec.caching.read * pricing.input_per_mtok)
    write_price = (pricing.cache_write_per_mtok if pricing.cache_write_per_mtok is not None
                   else spec.caching.write * pricing.input_per_mtok)
    uncached = plan.input_tokens - plan.cached_tokens - plan.cache_write_tokens
    plan.cost_cached = (online_cost(uncached, output, pricing.input_per_mtok,
                                    pricing.output_per_mtok)
                        + (plan.cached_tokens * read_price
                           + plan.cache_write_tokens * write_price) / 1e6)
    if spec.batch is not None:
        plan.cost_batch_cached = plan.cost_cached * spec.batch.price


def request_tokens(request: ChatRequest, image_tokens: int) -> list[float]:
    """The estimated tokens of each part of `request` as judgebias.models.prefix reads it:
    its system prompt, then each user part (text: 4 characters a token; an image:
    `image_tokens`)."""
    return [len(request.system) / 4] + [
        float(image_tokens) if isinstance(part, bytes) else len(part) / 4
        for part in request.parts()]


def cache_estimate(groups: list[list[ChatRequest]], caching: PromptCaching,
                   image_tokens: int, min_tokens: int | None = None) -> tuple[float, float]:
    """(input tokens read from the cache, tokens written to it at the write price) of the
    requests of each job of `groups` sent in judgebias.models.prefix.grouped_order (module
    docstring, *Prompt caching*): each reads the longest prefix, in whole parts, that an
    earlier request of its job left in the cache, if at least `min_tokens` (the
    provider's, where None) and in the provider's steps. A marked cache (Claude) holds
    what each request marks: its system prompt and its first
    judgebias.models.prefix.shared_parts parts."""
    least = max(caching.min_tokens if min_tokens is None else min_tokens, 1)
    read_all = written_all = 0.0
    for group in groups:
        # a prompt shorter than the minimum neither reads nor leaves anything
        group = [r for r in group if (len(r.prompt) + len(r.system)) / 4
                 + len(r.images) * image_tokens >= least]
        ids = [part_ids(r) for r in group]  # what grouped_order and shared_parts sort by
        order = sorted(range(len(ids)), key=ids.__getitem__)
        marks = shared_parts(group) if caching.marked else []
        cached: set[tuple[str, ...]] = set()
        for i in order:
            sizes = request_tokens(group[i], image_tokens)
            ends = [0.0]
            for size in sizes:
                ends.append(ends[-1] + size)  # ends[k]: tokens of the first k parts
            last = len(ids[i])
            if caching.marked:  # only up to its marker: none without one
                last = 1 + min(marks[i], last - 1) if marks[i] > 0 else 0
            hit = next((k for k in range(last, 0, -1) if ids[i][:k] in cached), 0)
            read = ends[hit] if caching.step <= 1 else ends[hit] // caching.step * caching.step
            read = read if read >= least else 0.0
            read_all += read
            if caching.marked:
                for k in (1, last) if last else ():  # the system prompt, the marker
                    if ends[k] >= least:
                        cached.add(ids[i][:k])
                if last and ends[last] >= least:
                    written_all += ends[last] - read
            elif ends[-1] >= least:  # the whole prompt, every prefix of it
                cached.update(ids[i][:k] for k in range(1, last + 1))
    return read_all, written_all


def online_cost(input_tokens: float, output_tokens: float, input_per_mtok: float,
                output_per_mtok: float) -> float:
    """USD for these tokens at list prices per million tokens."""
    return (input_tokens * input_per_mtok + output_tokens * output_per_mtok) / 1e6


PLAN_COLUMNS = ["model", "backend", "requests", "journaled", "needed", "estimated",
                "budget_left", "over_budget", "est_output_tokens", "est_reasoning_tokens",
                "gpus", "mode", "measured_cached_share", "est_cached_tokens",
                "cost_online_usd", "cost_batch_usd", "cost_online_cached_usd",
                "cost_batch_cached_usd", "est_cost_usd"]


def _usd(value: float | None) -> float | str:
    return "-" if value is None else round(value, 2)


def plan_table(plan: Plan) -> pd.DataFrame:
    """One row per model: requests, journaled, needed, and how many of those are
    estimated (not keyed yet), with budget, output tokens (the hidden ones among them
    apart), the GPUs a job takes (a backend whose
    jobs take GPUs), the share of input its journaled answers read from the provider's
    cache, the input tokens the needed calls would read from it, and cost: online, at
    batch prices, each without and with prompt caching (module docstring), and as
    configured, without caching (`mode`: batch where the panel entry sets `batch: true`,
    online for a backend that calls a provider, else local)."""
    return pd.DataFrame([_plan_row(p) for p in plan.models], columns=PLAN_COLUMNS)


def _plan_row(p: ModelPlan) -> dict[str, Any]:
    spec = backend_spec(p.backend)
    return {
        "model": p.model, "backend": p.backend, "requests": p.requests,
        "journaled": p.journaled, "needed": p.needed, "estimated": p.estimated,
        "budget_left": "-" if p.budget_left is None else p.budget_left,
        "over_budget": p.budget_left is not None and p.needed > p.budget_left,
        "est_output_tokens": round(p.needed * (p.output_tokens_each or 0)),
        "est_reasoning_tokens": round(p.needed * p.reasoning_tokens_each),
        "gpus": p.gpus if spec.gpus else "-",
        "mode": "batch" if p.batch else "online" if spec.online else "local",
        "measured_cached_share": "-" if p.measured_cached_share is None
        else round(p.measured_cached_share, 3),
        "est_cached_tokens": "-" if p.cost_cached is None else round(p.cached_tokens),
        "cost_online_usd": _usd(p.cost), "cost_batch_usd": _usd(p.cost_batch),
        "cost_online_cached_usd": _usd(p.cost_cached),
        "cost_batch_cached_usd": _usd(p.cost_batch_cached),
        "est_cost_usd": _usd(p.cost_configured),
    }


def study_table(plan: Plan) -> pd.DataFrame:
    """One row per (study, model): that study's calls (a request two studies share is
    counted in both rows, once in the model's total)."""
    return pd.DataFrame([{"study": study, "model": p.model, **asdict(tally)}
                         for p in plan.models for study, tally in p.by_study.items()],
                        columns=["study", "model", "requests", "journaled", "needed",
                                 "estimated"]).sort_values(["study", "model"], kind="stable")


def plan_json(plan: Plan) -> dict[str, Any]:
    """`judgebias plan --json`: the model rows, the study rows, notes and what is not
    counted, as plain JSON values."""
    models = plan_table(plan).to_dict("records")
    return {"models": models,
            "studies": study_table(plan).to_dict("records"),
            "total": {"requests": sum(p.requests for p in plan.models),
                      "journaled": sum(p.journaled for p in plan.models),
                      "needed": sum(p.needed for p in plan.models),
                      "estimated": sum(p.estimated for p in plan.models),
                      **cost_totals(plan), **caching_totals(plan)},
            "notes": [{"study": s, "model": m, "note": n} for s, m, n in plan.notes],
            "not_counted": [{"study": s, "what": w} for s, w in plan.not_counted]}


def cost_totals(plan: Plan) -> dict[str, Any]:
    """The priced models' cost in all, rounded to cents: every call online
    (``cost_online_usd``), every call of a provider with a batch API at its batch price
    (``cost_batch_usd``; the others online), and as configured (``cost_usd``: the batch
    price where the panel entry sets `batch: true`); and which models are not priced.
    With prompt caching: :func:`caching_totals`."""
    priced = [p for p in plan.models if p.cost is not None]
    batch = [p.cost_batch if p.cost_batch is not None else p.cost for p in priced]
    return {"cost_online_usd": round(sum(p.cost or 0.0 for p in priced), 2),
            "cost_batch_usd": round(sum(c or 0.0 for c in batch), 2),
            "cost_usd": round(sum(p.cost_configured or 0.0 for p in priced), 2),
            "not_priced": [p.model for p in plan.models if p.cost is None and p.needed]}


def caching_totals(plan: Plan) -> dict[str, Any]:
    """:func:`cost_totals` with prompt caching (module docstring), rounded to cents:
    ``cost_online_cached_usd``, ``cost_batch_cached_usd``, ``cost_cached_usd`` (a priced
    model whose provider caches nothing counted as without), and the input tokens of the
    priced models' needed calls, those read from a cache and those written to it at the
    write price."""
    priced = [p for p in plan.models if p.cost is not None]

    def either(with_cache: float | None, without: float | None) -> float:
        return (with_cache if with_cache is not None else without) or 0.0

    return {"cost_online_cached_usd": round(sum(either(p.cost_cached, p.cost)
                                                for p in priced), 2),
            "cost_batch_cached_usd": round(sum(either(
                p.cost_batch_cached, p.cost_batch if p.cost_batch is not None else p.cost)
                for p in priced), 2),
            "cost_cached_usd": round(sum(either(p.cost_configured_cached, p.cost_configured)
                                         for p in priced), 2),
            "input_tokens": round(sum(p.input_tokens for p in priced)),
            "cached_input_tokens": round(sum(p.cached_tokens for p in priced)),
            "cache_write_tokens": round(sum(p.cache_write_tokens for p in priced))}


def plan_text(plan: Plan) -> str:
    """The human report: the model table, the total, the table by study, the notes."""
    table, total = plan_table(plan), plan_json(plan)["total"]
    lines = [table.to_string(index=False) if len(table) else "(no model calls planned)",
             f"total: {total['needed']} new calls of {total['requests']} "
             f"({total['journaled']} journaled); {total['estimated']} of the new calls are "
             "estimated (their inputs are not built yet: counted from params and data "
             "sizes, see the notes)", *_cost_lines(plan, total)]
    if len(table):
        lines += ["", "by study:", study_table(plan).to_string(index=False)]
    grouped: dict[tuple[str, str], list[str]] = {}
    for study, model, note in plan.notes:
        grouped.setdefault((study, note), []).append(model)
    if grouped:
        lines += ["", "notes (what each estimate assumes):",
                  *(f"  {s} ({', '.join(ms)}): {n}" for (s, n), ms in grouped.items())]
    if plan.not_counted:
        lines += ["", "not counted:", *(f"  {s}: {w}" for s, w in plan.not_counted)]
    return "\n".join(lines)


def _cost_lines(plan: Plan, total: Mapping[str, Any]) -> list[str]:
    """The cost totals, online and batch side by side, and what they leave out."""
    lines = []
    if any(p.cost is not None for p in plan.models):
        batched = [p.model for p in plan.models if p.batch]
        upper = any(p.output_is_upper_bound for p in plan.models if p.cost is not None)
        lines.append(
            f"cost of the new calls (priced models): ${total['cost_online_usd']:,.2f} "
            f"online; ${total['cost_batch_usd']:,.2f} with {_batch_prices()}; as configured "
            f"(batch: {', '.join(batched) or 'none'}): ${total['cost_usd']:,.2f}"
            + ("; output at max_tokens where nothing is journaled yet and no "
               "pricing.answer_tokens is stated (an upper bound)" if upper else ""))
        if any(p.cost_cached is not None for p in plan.models):
            lines.append(
                f"with prompt caching (each job's requests sent grouped; an upper bound on "
                f"the saving: a cache may evict, calls not keyed yet counted uncached): "
                f"${total['cost_online_cached_usd']:,.2f} online; "
                f"${total['cost_batch_cached_usd']:,.2f} at batch prices; as configured: "
                f"${total['cost_cached_usd']:,.2f} ({total['cached_input_tokens']:,} of "
                f"{total['input_tokens']:,} input tokens read from a cache, "
                f"{total['cache_write_tokens']:,} written at the write price)")
    if total["not_priced"]:
        lines.append(f"not priced (no panel.<m>.pricing): {', '.join(total['not_priced'])}")
    shares = [f"{p.model} {p.measured_cached_share:.0%}" for p in plan.models
              if p.measured_cached_share is not None]
    if shares:
        lines.append("measured in the journal, input read from the provider's cache: "
                     + ", ".join(shares))
    gpu = [p for p in plan.models if backend_spec(p.backend).gpus and p.needed]
    if gpu:
        names = "/".join(dict.fromkeys(p.backend for p in gpu))
        lines.append(f"{names}: {len(gpu)} model(s), {sum(p.needed for p in gpu):,} new calls "
                     "(each job takes the GPUs in `gpus`); GPU-hours are not estimated "
                     "(they depend on the GPU, the batch and the answers' lengths: time a "
                     "pilot run)")
    return lines


def _batch_prices() -> str:
    """Which backends have a batch API, at which share of the online price (the registry's
    batch price: half for OpenAI's Batch API and Gemini's batch mode, specs/batch.md)."""
    prices = {s.name: s.batch.price for s in registered_backends().values() if s.batch}
    share = ("half" if set(prices.values()) == {0.5}
             else ", ".join(f"{name} x{price:g}" for name, price in prices.items()))
    return (f"every {'/'.join(prices)} model at its batch price ({share}; "
            "judgebias.models.backends)")


# `judgebias plan --power`: the params and the pilot's files; the formulas are
# judgebias.stats.power's for the card's measures, and each study's own for its section
# (its optional ``power_section`` hook: the leaderboard's human labels, judgebias.stats.ppi).
def growth_of(params: Mapping[str, Any], pilot_params: Mapping[str, Any], pilot_dir: Path
              ) -> dict[tuple[str, str], float]:
    """(study, measure) -> configured design size over the pilot's, from each active
    study's ``power`` hook (the pilot's read in its own folder, where its data lie)."""
    growth = {}
    for study in active(params):
        hook = study.load("power")
        if hook is None or pilot_params.get(study.name) is None:
            continue
        sizes = hook(params)
        with contextlib.chdir(pilot_dir):
            pilot_sizes = hook(pilot_params)
        for measure, size in sizes.items():
            if pilot_sizes.get(measure):
                growth[(study.name, measure)] = size / pilot_sizes[measure]
    return growth


@dataclass(frozen=True)
class PowerSection:
    """A study's part of `judgebias plan --power` beyond its card measures (its
    ``power_section`` hook), printed after the card's table: ``lines`` for people,
    ``rows`` (plain JSON values) for ``--json``. The leaderboard's says how many human
    labels each interval width needs (judgebias.stats.ppi)."""

    lines: list[str]
    rows: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class PowerPlan:
    """`judgebias plan --power`: the card's measures (judgebias.stats.power.power_table;
    empty, with ``card`` false, where the pilot has no card but a study has a section)
    and each active study's own section, by study."""

    table: pd.DataFrame
    sections: dict[str, PowerSection] = field(default_factory=dict)
    card: bool = True


def power_sections(params: Mapping[str, Any], pilot_params: Mapping[str, Any],
                   pilot_dir: Path, settings: PowerSettings) -> dict[str, PowerSection]:
    """Each active study's ``power_section`` hook, (params, the pilot's params, the pilot's
    folder, settings) -> PowerSection or None, for a study the pilot ran too."""
    sections = {}
    for study in active(params):
        if study.power_section is None or pilot_params.get(study.name) is None:
            continue
        section = study.load("power_section")(params, pilot_params, pilot_dir, settings)
        if section is not None:
            sections[study.name] = section
    return sections


def power_plan(params: Mapping[str, Any], pilot_dir: Path, settings: PowerSettings
               ) -> PowerPlan:
    """`judgebias plan --power`: :func:`power_table` for `params` from the pilot run in
    `pilot_dir` (its params.yaml and results/judges.parquet), and the studies' own
    sections (:func:`power_sections`), which read the pilot's own files: a pilot with a
    section needs no card (a run of the leaderboard alone)."""
    from judgebias.card.schema import CARD
    from judgebias.io.artifacts import read_table

    card, pilot_file = pilot_dir / "results" / "judges.parquet", pilot_dir / "params.yaml"
    no_pilot = ConfigError(
        f"--pilot {pilot_dir}: no pilot run there ({card} and {pilot_file} are needed). "
        "Run a pilot first: your panel at a small size (e.g. 50 images), or the "
        "simulated panel (`make run` in a fresh clone) as a stand-in, then pass its "
        "folder.")
    if not pilot_file.is_file():
        raise no_pilot
    with contextlib.chdir(pilot_dir):
        pilot_params = load_config("params.yaml", data=False)
    sections = power_sections(params, pilot_params, pilot_dir, settings)
    if not card.is_file():
        if not sections:
            raise no_pilot
        return PowerPlan(pd.DataFrame(columns=POWER_COLUMNS), sections, card=False)
    simulated = {key for key, model in pilot_params["panel"].items()
                 if model["backend"] == "sim"}
    models = {study.name: study_models(params, study.name) for study in active(params)}
    table = power_table(read_table(card, CARD), models,
                        growth_of(params, pilot_params, pilot_dir), settings,
                        frozenset(simulated))
    return PowerPlan(table, sections)


def power_json(plan: PowerPlan) -> Any:
    """`judgebias plan --power --json`: the card's rows (a list, as before any study had
    a section); with a study's section, an object: ``card`` (those rows) and each
    study's rows under its name."""
    rows = json.loads(plan.table.to_json(orient="records"))
    if not plan.sections:
        return rows
    return {"card": rows, **{study: s.rows for study, s in plan.sections.items()}}


def power_report(plan: PowerPlan, settings: PowerSettings) -> str:
    """`judgebias plan --power`: the card's table for people, then each study's section."""
    parts = [power_text(plan.table, settings) if plan.card
             else "the pilot has no judge card (results/judges.parquet): no card measure "
                  "is sized"]
    parts += ["\n".join(section.lines) for section in plan.sections.values()]
    return "\n\n".join(parts)
