"""`judgebias probe MODEL`: one cheap real call per ability, and a record of what the
provider actually did (issue 41 item 6).

The abilities `judgebias validate` checks a study's judges against (judgebias.abilities)
are the backend's table: what the provider documents. A provider may do otherwise (a
reasoning model that refuses log-probs, an OpenAI-compatible server that ignores them, a
model that takes one image), and a wrong table used to cost the first job's calls, or a
study that quietly fell back. A probe asks the model one tiny question (``PROBE_PROMPT``:
"Reply with the single digit 4.") once per ability, each request changing one thing:

* ``answer``: the model's own sampling, no log-probs asked. What every other probe needs:
  if the provider refuses it (a dead endpoint, a bad key, an unknown model, sampling the
  model refuses), the probe stops at once with the backend's one line
  (judgebias.models.api), as a job would, and records nothing.
* ``log-probs``: the model's sampling with its ``top_logprobs`` (5 where it asks none):
  whether the answer's top-k log-probs came back (a refusal, or an answer without them,
  is "no").
* ``system prompt``: with a system prompt.
* ``temperature``: at the model's temperature if above 0, else 1.0 (above 0 it is the
  ``answer`` request itself, answered from the journal: no second call).
* ``1 image``, ``2 images``: one and two small generated PNGs (the studies attach at
  most two); two is not asked when one is refused.

A refusal of one probe's request (a permanent error: HTTP 400, 413 or 422, with the
provider's words) is that ability's answer, recorded with the words; the probe goes on.
An endpoint that cannot be reached, a refused key or an unknown model stops any probe
(:data:`STOPS`), also one whose plain answer came from the journal. The requests go through
the journal the jobs use (judgebias.models.runner), a file of its own under
``<journal_dir>/probes/`` (the model's journal feeds `judgebias plan` its mean answer
length, which one-token answers would bias), so a second probe asks again only what
was refused (a provider may have changed; a refused request is not billed); each new
call is counted against the model's ``max_requests``. A probe always asks online, also
for a model in batch mode (a batch takes hours). The model's
``max_tokens`` is kept: a cap costs nothing on a one-digit answer, and a smaller one
would cut a reasoning model's answer to nothing (not journaled: paid again at every
probe) or fall below Claude's thinking budget (refused).

The record (judgebias.probe_record) then takes the table's place for the measured
abilities in `validate`, while the model's answer-relevant settings are unchanged;
``panel.<key>.abilities`` still has the last word. `judgebias plan` shows, per API
model, its probe's calls and cost, or the calls a probe would make.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from judgebias.abilities import model_abilities
from judgebias.config import ConfigError
from judgebias.data.scenes import random_scene, render, to_png_bytes
from judgebias.models.api import PermanentError, unreachable
from judgebias.models.backends import backend_spec
from judgebias.models.base import (
    Backend,
    ChatRequest,
    ChatResponse,
    hidden_tokens,
)
from judgebias.models.batch import BatchBackend
from judgebias.models.context import RunContext
from judgebias.models.journal import Journal, journal_path, request_key
from judgebias.models.panel import PanelModel
from judgebias.models.registry import backend_version, build_backend
from judgebias.models.runner import check_failures, run_requests
from judgebias.models.sim import PROBE_PROMPT
from judgebias.probe_record import (
    PROBE_DIR,
    read_record,
    settings_fingerprint,
    write_record,
)

SYSTEM = "You answer with digits only."
IMAGES = (1, 2)  # the images a probe attaches: the studies attach at most two
ACCEPTED, REFUSED, FAILED, SKIPPED = "accepted", "refused", "failed", "not asked"
# Statuses refusing the key (401), the bill (402), the access (403), the model or route
# (404, 405), not the request: a probe stops on them (a request's own refusal: 400, 413, 422).
STOPS = frozenset({401, 402, 403, 404, 405})


@dataclass(frozen=True)
class Probe:
    """One request of a probe: its row in the table, the ability it measures (an
    `Abilities` field; "" for the answer every probe needs) and what it asks."""

    name: str
    ability: str
    request: ChatRequest


@dataclass
class Outcome:
    """What one probe got: ``result`` (accepted, refused, failed or not asked), the
    provider's words (a refusal, a failure, an answer that is not "ok"), the answer's
    text, whether top-k log-probs came back, its usage and whether it was a new call."""

    probe: str
    ability: str
    result: str
    words: str = ""
    answer: str = ""
    status: str = ""
    finish: str = ""
    logprobs: bool | None = None
    images: int = 0
    usage: dict[str, int] = field(default_factory=dict)
    new_call: bool = False


@cache
def probe_images() -> tuple[bytes, ...]:
    """Two small, different PNGs (128 px scenes, as the synthetic datasets draw them)."""
    return tuple(to_png_bytes(render(random_scene(np.random.default_rng(seed))))
                 for seed in range(max(IMAGES)))


def probes(model: PanelModel) -> list[Probe]:
    """The requests a probe of `model` makes, in order (module docstring)."""
    own = model.sampling
    plain = dataclasses.replace(own, top_logprobs=0)

    def ask(sampling: Any = plain, **fields: Any) -> ChatRequest:
        return ChatRequest(model=model.model_id, prompt=PROBE_PROMPT, sampling=sampling,
                           revision=model.revision, **fields)

    warm = own.temperature if own.temperature > 0 else 1.0
    return [Probe("answer", "", ask()),
            Probe("log-probs", "answer_logprobs",
                  ask(dataclasses.replace(own, top_logprobs=own.top_logprobs or 5))),
            Probe("system prompt", "system_prompt", ask(system=SYSTEM)),
            Probe(f"temperature {warm:g}", "temperature",
                  ask(dataclasses.replace(plain, temperature=warm))),
            *(Probe(f"{n} image{'s' * (n > 1)}", "images_per_request",
                    ask(images=probe_images()[:n])) for n in IMAGES)]


def probe_model(params: Mapping[str, Any], key: str) -> dict[str, Any]:
    """Probe panel model `key`, write its record and return it.

    Raises PermanentError (the backend's one line) where the provider refuses the plain
    answer, TooManyFailures where it gave none after its retries, BudgetExceeded where a
    new call would exceed ``max_requests``; nothing is recorded then."""
    if key not in params["panel"]:
        raise ConfigError(f"probe: no panel model {key!r} (panel: "
                          f"{', '.join(params['panel'])})")
    model = PanelModel.from_params(params, key)
    todo = probes(model)
    version = backend_version(model)
    path = journal_path(Path(params["journal_dir"]) / PROBE_DIR, model.backend,
                        model.model_id)
    with Journal(path) as journal, ExitStack() as stack:
        keys = [request_key(p.request, model.backend, version) for p in todo]
        answered = journal.lookup(keys)
        backend = None
        if any(k not in answered for k in keys):
            if model.gpus:  # a vllm model: its own GPUs, as a job takes them
                from judgebias.models.gpu import GpuNeed, job_gpus

                stack.enter_context(job_gpus(GpuNeed(model.gpus), params["journal_dir"]))
            backend, version = build_backend(RunContext(params), model, "judge")
            if isinstance(backend, BatchBackend):
                backend.batch = False  # a probe asks online: a batch takes hours
        outcomes: list[Outcome] = []
        for probe, request_id in zip(todo, keys, strict=True):
            outcomes.append(_ask(params, model, probe, request_id, journal, backend,
                                 version, outcomes))
    record = _record(params, model, version, outcomes, keys)
    write_record(params, key, record)
    return record


def _ask(params: Mapping[str, Any], model: PanelModel, probe: Probe, request_id: str,
         journal: Journal, backend: Backend | None, version: str,
         before: Sequence[Outcome]) -> Outcome:
    """One probe's outcome: from the journal, or a new call (reserved against the
    model's budget first)."""
    images = len(probe.request.images)
    if images > 1 and any(o.images and o.result == REFUSED for o in before):
        return Outcome(probe.name, probe.ability, SKIPPED, images=images)
    journaled = journal.lookup([request_id])
    new_call = request_id not in journaled
    try:
        if new_call:
            assert backend is not None  # built wherever a request is not journaled
            _reserve(params, model)
            [response], _ = run_requests(backend, [probe.request], journal,
                                         backend_version=version, label=f"probe {model.key}")
        else:
            response = journaled[request_id]
    except PermanentError as exc:
        if not probe.ability or _stops(exc):
            raise  # the plain answer, or the endpoint, key or model (module docstring)
        words = str(exc).removeprefix(f"{model.label}: ")
        return Outcome(probe.name, probe.ability, REFUSED, words=words, images=images,
                       new_call=True)
    if not probe.ability:
        check_failures([response], 0.0, f"{model.label} (probe)")
    return _answered(probe, response, images, new_call)


def _stops(exc: PermanentError) -> bool:
    """Whether a permanent error refuses the endpoint, the key or the model, not one
    probe's request: nothing was reached, or the SDK's exception it was raised from has
    such a status (``status_code``: openai, anthropic; ``code``: google-genai). It stops
    the probe even where the journal answered the plain answer (a probe asking again
    only what was refused before)."""
    cause = exc.__cause__
    status = getattr(cause, "status_code", getattr(cause, "code", None))
    return unreachable(exc) is not None or status in STOPS


def _answered(probe: Probe, response: ChatResponse, images: int, new_call: bool
              ) -> Outcome:
    if response.status == "failed":  # no answer after the retries: nothing measured
        return Outcome(probe.name, probe.ability, FAILED, words=response.error,
                       images=images, new_call=new_call)
    top = bool(response.tokens) and any(t.top for t in response.tokens or ())
    said = response.ok and bool(response.text.strip())  # (not cut off before a word)
    return Outcome(probe.name, probe.ability, ACCEPTED,
                   words="" if response.ok else response.error, answer=response.text[:80],
                   status=response.status, finish=response.finish_reason,
                   logprobs=top if said else None,
                   images=images, usage=dict(response.usage), new_call=new_call)


def _reserve(params: Mapping[str, Any], model: PanelModel) -> None:
    """Count one new call against the model's ``max_requests``, in its own journal, as
    a job's calls are (BudgetExceeded where it has none left)."""
    if model.max_requests is None:
        return
    with Journal(journal_path(params["journal_dir"], model.backend,
                              model.model_id)) as budget:
        budget.reserve_calls(model.model_id, 1, model.max_requests)


def measured(outcomes: Sequence[Outcome]) -> tuple[dict[str, Any], int]:
    """The abilities the outcomes show (a failed probe shows nothing, nor does an answer
    to the log-probs probe that is not "ok" or has no text: cut off, its hidden reasoning
    having spent the output limit), and the most images accepted in one request."""
    found: dict[str, Any] = {}
    accepted = 0
    for o in outcomes:
        if not o.ability or o.result in (FAILED, SKIPPED):
            continue
        if o.ability == "images_per_request":
            if o.result == REFUSED:
                found.setdefault(o.ability, accepted)
            else:
                accepted = max(accepted, o.images)
        elif o.ability == "answer_logprobs":
            if o.result == REFUSED or o.logprobs is not None:
                found[o.ability] = bool(o.logprobs)
        else:
            found[o.ability] = o.result == ACCEPTED
    return found, accepted


def tokens(usage: Mapping[str, int]) -> tuple[int, int, int]:
    """(input, output, reasoning) tokens of an answer's usage, as every backend journals
    them (output: every billed output token, the hidden reasoning's included)."""
    return (usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0),
            hidden_tokens(usage))


def _record(params: Mapping[str, Any], model: PanelModel, version: str,
            outcomes: Sequence[Outcome], keys: Sequence[str]) -> dict[str, Any]:
    """The record of a probe (judgebias.probe_record). Its calls and tokens count each
    request once (the temperature probe of a model sampling above 0 is the plain
    answer's request); a refusal carries no tokens (providers bill none)."""
    found, images = measured(outcomes)
    sent = {k: o for k, o in zip(keys, outcomes, strict=True) if o.result != SKIPPED}
    spent = [tokens(o.usage) for o in sent.values()]
    totals = {name: sum(t[i] for t in spent)
              for i, name in enumerate(("input", "output", "reasoning"))}
    return {"model": model.key, "backend": model.backend, "model_id": model.model_id,
            "revision": model.revision, "backend_version": version,
            "settings": settings_fingerprint(params, model.key),
            "probed_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "probes": [dataclasses.asdict(o) for o in outcomes],
            "abilities": found, "images_accepted": images, "calls": len(sent),
            "new_calls": sum(o.new_call for o in outcomes), "tokens": totals,
            "cost_usd": _cost(model, totals)}


def _cost(model: PanelModel, totals: Mapping[str, int]) -> float | None:
    """USD of the probe's tokens at the model's online prices (None: not priced)."""
    from judgebias.plan import online_cost

    if model.pricing is None:
        return None
    return online_cost(totals["input"], totals["output"], model.pricing.input_per_mtok,
                       model.pricing.output_per_mtok)


# --- what a person reads: the probe's table, and `judgebias plan`'s probe lines -----------

def _said(outcome: Mapping[str, Any]) -> str:
    """What came back to one probe: the answer (and its log-probs, for that probe), or
    the provider's words."""
    if outcome["result"] == SKIPPED:
        return "(fewer images were refused)"
    if outcome["result"] != ACCEPTED:
        return outcome["words"]
    said = repr(outcome["answer"])
    if outcome["ability"] == "answer_logprobs" and outcome["logprobs"] is not None:
        said += ", top-k log-probs" if outcome["logprobs"] else ", no log-probs came back"
    if outcome["status"] != "ok":
        said += f" ({outcome['status']}: {outcome['words']})"
    elif not outcome["answer"].strip():
        said += f" (no text: finish reason {outcome['finish']})"
    return said


def _yes(value: bool) -> str:
    return "yes" if value else "no"


def probe_text(params: Mapping[str, Any], record: Mapping[str, Any]) -> str:
    """The probe's table (probe, result, what came back), the abilities `validate` now
    takes, the probe's cost and where the record lies."""
    key = record["model"]
    model = PanelModel.from_params(params, key)
    rows = [(o["probe"], o["result"], _said(o)) for o in record["probes"]]
    width = max(len(name) for name, _, _ in rows)
    lines = [f"{model.label}: {record['calls']} calls, {record['new_calls']} of them new "
             "(the others answered by the journal)",
             *(f"  {name:<{width}}  {result:<9}  {said}" for name, result, said in rows)]
    now = model_abilities(params, key)
    limit = (f"at most {now.images_per_request}" if now.images_per_request is not None
             else "no limit known")
    stated = params["panel"][key].get("abilities")
    lines.append(f"validate now takes: answer log-probs {_yes(now.answer_logprobs)}; system "
                 f"prompt {_yes(now.system_prompt)}; temperature above 0 "
                 f"{_yes(now.temperature)}; images per request {limit} "
                 f"({record['images_accepted']} accepted)"
                 + (f"; panel.{key}.abilities states {stated}, over the probe"
                    if stated else ""))
    used = record["tokens"]
    cost = record["cost_usd"]
    lines.append(f"cost: {record['calls']} calls, {used['input']:,} input + "
                 f"{used['output']:,} output tokens ({used['reasoning']:,} of them "
                 "reasoning), "
                 + (f"${cost:.4f} at panel.{key}.pricing" if cost is not None
                    else f"not priced (no panel.{key}.pricing)"))
    return "\n".join(lines)


def probe_summaries(params: Mapping[str, Any], keys: Sequence[str]) -> dict[str, Any]:
    """`judgebias plan`'s view of the probes of the API models among `keys`: probed
    (its calls, tokens, cost), probed for other settings (``stale``) or not probed (the
    calls a probe would make)."""
    rows: dict[str, Any] = {}
    for key in keys:
        model = PanelModel.from_params(params, key)
        if not backend_spec(model.backend).online:
            continue
        record = read_record(params, key)
        if record is not None and record.get("settings") == settings_fingerprint(params, key):
            rows[key] = {"state": "probed", "probed_at": record["probed_at"],
                         "calls": record["calls"], "tokens": record["tokens"],
                         "cost_usd": record["cost_usd"]}
        else:
            rows[key] = {"state": "stale" if record else "not probed",
                         "calls": len({p.request for p in probes(model)})}
    return rows


def probe_lines(rows: Mapping[str, Any]) -> list[str]:
    """The probe summaries as `judgebias plan` prints them (none: no lines)."""
    if not rows:
        return []
    lines = ["", "probes (`judgebias probe MODEL`: one call per ability; validate takes "
                 "what the provider did):"]
    for key, row in rows.items():
        if row["state"] == "probed":
            used, cost = row["tokens"], row["cost_usd"]
            lines.append(f"  {key}: probed {row['probed_at']}: {row['calls']} calls, "
                         f"{used['input']:,} input + {used['output']:,} output tokens"
                         + (f", ${cost:.4f}" if cost is not None else ""))
        else:
            what = "probed for other settings" if row["state"] == "stale" else "not probed"
            lines.append(f"  {key}: {what}: a probe makes {row['calls']} calls")
    return lines
