"""One judging task for every study: (model, prompt template, items) -> one row per item.

Every model call of every study goes through :func:`run_task` (docs/design.md "One judging
core"): a :class:`JudgeTask` names the prompt template, how its placeholders are filled
from the columns of an items table, which columns hold the images (any number: one for a
caption judge, two for a pairwise judge), an optional system prompt, and the answer kind
that reads the reply. The rows it returns keep the raw answer, its token log-probs, the
provider's ``finish_reason``, the request key and a status; the parsed value is filled
only where the answer kind accepted the answer. Items that cannot be asked (a failed
caption upstream, an image that was not imported) get no request and keep their status.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd

from judgebias import prompts
from judgebias.judging.answers import STATUS_OK, STATUS_TRUNCATED, Answer, AnswerKind
from judgebias.models.base import ChatRequest, ChatResponse, TokenLogprob
from judgebias.models.context import RunContext
from judgebias.models.journal import Journal, journal_path, request_key
from judgebias.models.panel import PanelModel
from judgebias.models.registry import backend_version, build_backend
from judgebias.models.runner import RunStats, check_failures, run_requests

log = logging.getLogger(__name__)

NO_IMAGE = "no_image"

# The columns every table of model answers carries (artifacts.CALL_FIELDS / ANSWER_FIELDS).
CALL_COLUMNS = ("model_id", "revision", "backend", "prompt_id", "sampling", "request_key",
                "status", "error", "raw_text", "logprobs", "finish_reason")
ANSWER_COLUMNS = ("value", "label", "expected", "mass", "probs", "logprobs_available")


@dataclass(frozen=True)
class FreeText:
    """The answer kind of a generation task (a caption): the stripped text as `value`.

    An empty answer never reaches it (the runner records it as failed); an answer cut off
    by ``max_tokens`` gets status "truncated" and keeps its text for audit.
    """

    name: ClassVar[str] = "text"

    def parse(self, text: str, tokens: Sequence[TokenLogprob] | None = None,
              finish_reason: str = "stop") -> Answer:
        status = STATUS_TRUNCATED if finish_reason == "length" else STATUS_OK
        return Answer(status, text.strip())


@dataclass(frozen=True)
class JudgeTask:
    """What one job asks a model about each item of a table.

    Parameters
    ----------
    prompt : str
        Template id of the user message (judgebias.prompts).
    answer : AnswerKind
        The parser of the reply (judgebias.judging.answers).
    fields : mapping of str to str
        Template placeholder -> items column holding its value (a string, or a list of
        strings written one per line).
    images : tuple of str
        Items columns holding image file paths, attached in this order: at the
        template's image places (``{{image}}``, the k-th takes the k-th), or after the
        text where the template marks none.
    system : str or None
        Template id of the system prompt, if the protocol has one.
    """

    prompt: str
    answer: AnswerKind
    fields: Mapping[str, str] = field(default_factory=dict)
    images: tuple[str, ...] = ("image_path",)
    system: str | None = None


# Image files read by this process, kept while they fit: `judgebias plan` builds one
# request per (evaluator, setting, generator, image), about 300 per image at the papers'
# scale (12 models, 2 settings), and re-reading and re-hashing each file for each of
# them dominated it (benchmarks/plan_scale.py). Keyed by path, size and mtime, so a
# rewritten file is read again; least recently used files go first beyond the budget.
IMAGE_CACHE_BYTES = 512 * 1024 * 1024
_images: OrderedDict[str, tuple[tuple[int, int], bytes, str]] = OrderedDict()
_cached_bytes = 0


def read_image(path: str) -> tuple[bytes, str]:
    """An image file's bytes and their sha256 (hex), read once while they fit the cache.

    Every request of a process that attaches the file shares the one bytes object.
    """
    global _cached_bytes
    stat = os.stat(path)
    version = (stat.st_size, stat.st_mtime_ns)
    hit = _images.get(path)
    if hit is not None and hit[0] == version:
        _images.move_to_end(path)
        return hit[1], hit[2]
    data = Path(path).read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if hit is not None:
        _cached_bytes -= len(hit[1])
        del _images[path]
    if len(data) <= IMAGE_CACHE_BYTES:
        _images[path] = (version, data, digest)
        _cached_bytes += len(data)
        while _cached_bytes > IMAGE_CACHE_BYTES:
            _, (_, dropped, _) = _images.popitem(last=False)
            _cached_bytes -= len(dropped)
    return data, digest


def _image_paths(row: Mapping[str, Any], columns: Sequence[str]) -> list[str] | None:
    paths = [row[c] for c in columns]
    return paths if all(isinstance(p, str) and p for p in paths) else None


def build_requests(run: RunContext, model_key: str, task: JudgeTask,
                   items: pd.DataFrame, samples: Sequence[int] = (0,)
                   ) -> tuple[list[ChatRequest | None], list[str]]:
    """The request to panel model `model_key` for each item (None where nothing can be
    asked) and each item's status before asking: an item's own `status` column if it has
    one ("ok" otherwise), or "no_image" where an image path is missing. With `samples`,
    as :func:`run_samples` asks them: the items sample after sample."""
    model = run.model(model_key)
    first, statuses = _requests(model, task, items)
    return ([q for _, per in _sampled(model, first, samples) for q in per],
            statuses * len(samples))


def _sampled(model: PanelModel, requests: list[ChatRequest | None], samples: Sequence[int]
             ) -> list[tuple[PanelModel, list[ChatRequest | None]]]:
    """Per sample r: the model with its sampling seed + r and `requests` asked with it."""
    out = []
    for r in samples:
        asked = resampled(model, r)
        out.append((asked, requests if asked is model else  # sample 0: the requests as built
                    [None if q is None else dataclasses.replace(q, sampling=asked.sampling)
                     for q in requests]))
    return out


def _requests(model: PanelModel, task: JudgeTask,
              items: pd.DataFrame) -> tuple[list[ChatRequest | None], list[str]]:
    system = prompts.render(task.system) if task.system else ""
    places = prompts.image_places(task.prompt)
    if places not in (0, len(task.images)):
        raise ValueError(f"prompt {task.prompt!r} marks {places} image places "
                         f"({prompts.IMAGE_MARKER}) but the task attaches "
                         f"{len(task.images)} ({', '.join(task.images) or 'none'})")
    requests: list[ChatRequest | None] = []
    statuses: list[str] = []
    seen: dict[str, tuple[bytes, str]] = {}  # this call's files: one stat each
    for row in items.to_dict("records"):
        status = row.get("status", STATUS_OK)
        paths = _image_paths(row, task.images)
        if status == STATUS_OK and paths is None:
            status = NO_IMAGE
        statuses.append(status)
        if status != STATUS_OK or paths is None:  # (an "ok" item has its paths)
            requests.append(None)
            continue
        text, image_at = prompts.render_layout(
            task.prompt, {name: row[column] for name, column in task.fields.items()})
        images = [seen[p] if p in seen else seen.setdefault(p, read_image(p)) for p in paths]
        requests.append(ChatRequest(
            model=model.model_id, prompt=text, system=system, sampling=model.sampling,
            images=tuple(data for data, _ in images), revision=model.revision,
            digests=tuple(digest for _, digest in images), image_at=image_at))
    return requests, statuses


def answer_requests(run: RunContext, model: PanelModel, role: str,
                    requests: list[ChatRequest]) -> tuple[list[ChatResponse], RunStats, str]:
    """Answer a job's requests through the model's backend, journaled and within budget.

    Returns the answers, what the job did, and the backend version (part of every
    journal key). A failed call never satisfies a job: if more than the model's
    ``max_failures`` share (params; default 0) of the calls failed, this raises
    TooManyFailures once every answer is journaled, and the job writes nothing, so a rerun
    retries exactly the failed calls. A model on the vllm backend first takes its own
    GPUs (Snakemake only caps how many are in use; judgebias.models.gpu makes sure two
    jobs never share a device), unless every answer is already journaled: a rerun from
    the journal needs no GPU.
    """
    gpus = model.gpus
    path = journal_path(run.journal_dir, model.backend, model.model_id)
    with Journal(path) as journal, ExitStack() as stack:
        version = backend_version(model)
        keys = [request_key(r, model.backend, version) for r in requests] if gpus else []
        if gpus and len(journal.lookup(keys)) < len(set(keys)):
            from judgebias.models.gpu import GpuNeed, job_gpus  # the one path, issue 39

            stack.enter_context(job_gpus(GpuNeed(gpus), run.journal_dir))
        backend, version = build_backend(run, model, role)
        responses, stats = run_requests(backend, requests, journal, backend_version=version,
                                        max_requests=model.max_requests,
                                        label=f"{role} {model.key}")
    log.info("%s: %d requests, %d from the journal, %d new calls, %d failed, retries %s",
             model.key, stats.total, stats.journaled, stats.called, stats.failed,
             stats.retries or "none")
    check_failures(responses, run.accepted_failures(model.key), f"panel.{model.key} ({role})")
    return responses, stats, version


def answer_rows(model: PanelModel, task: JudgeTask,
                requests: Sequence[ChatRequest | None], statuses: Sequence[str],
                responses: Sequence[ChatResponse | None], version: str) -> dict[str, list]:
    """The call and answer columns, one entry per item (see CALL_COLUMNS, ANSWER_COLUMNS).

    The status is the item's own where nothing was asked, the backend's where the call
    failed, and otherwise the answer kind's ("ok", "unparseable", "truncated", ...).
    """
    sampling = json.dumps(model.sampling.as_dict(), sort_keys=True)
    cols: dict[str, list[Any]] = {name: [] for name in (*CALL_COLUMNS, *ANSWER_COLUMNS)}
    for request, status, response in zip(requests, statuses, responses, strict=True):
        answer = (Answer(status) if response is None
                  else Answer(response.status) if not response.ok
                  else task.answer.parse(response.text, response.tokens,
                                         response.finish_reason))
        value = answer.value
        number = (value if isinstance(value, int | float) and not isinstance(value, bool)
                  else None)
        cols["model_id"].append(model.model_id)
        cols["revision"].append(model.revision)
        cols["backend"].append(model.backend)
        cols["prompt_id"].append(task.prompt)
        cols["sampling"].append(sampling)
        cols["request_key"].append(None if request is None
                                   else request_key(request, model.backend, version))
        cols["status"].append(answer.status)
        cols["error"].append("" if response is None else response.error)
        cols["raw_text"].append("" if response is None else response.text)
        cols["logprobs"].append("" if response is None else response.logprobs_json())
        cols["finish_reason"].append("" if response is None else response.finish_reason)
        cols["value"].append(None if number is None else float(number))
        cols["label"].append(answer.value if isinstance(answer.value, str) else None)
        cols["expected"].append(answer.expected)
        cols["mass"].append(answer.mass)
        cols["probs"].append(json.dumps(dict(answer.probs), sort_keys=True)
                             if answer.probs is not None else "")
        cols["logprobs_available"].append(response is not None and response.tokens is not None)
    cols["value"] = pd.array(cols["value"], dtype="Float64")
    cols["expected"] = pd.array(cols["expected"], dtype="Float64")
    cols["mass"] = pd.array(cols["mass"], dtype="Float64")
    return cols


def run_task(run: RunContext, model_key: str, role: str, task: JudgeTask,
             items: pd.DataFrame) -> pd.DataFrame:
    """Ask `model_key` (acting as `role`, e.g. "evaluator") the task about every item.

    Returns one row per item, in order, with the call and answer columns; the caller adds
    its key columns. Identical requests are called once; journaled ones not at all.
    """
    return run_samples(run, model_key, role, task, items, (0,)).drop(columns="sample")


def run_samples(run: RunContext, model_key: str, role: str, task: JudgeTask,
                items: pd.DataFrame, samples: Sequence[int]) -> pd.DataFrame:
    """`run_task` asking every item once per sample r of `samples`, with the model's
    sampling seed + r (:func:`resampled`).

    The seed is part of every request's journal key (judgebias.models.journal), so sample
    r > 0 is a new call rather than a cache hit of sample 0, answered (and paid) once and
    kept on resume; a provider that honours a seed (OpenAI's ``seed``, vLLM, the sim)
    draws a fresh sample with it, one that takes none (Anthropic) samples afresh anyway.
    Every sample goes in one run (one provider batch in batch mode). Rows are the items
    in order, sample after sample, with a ``sample`` column: BIRCH's repeats and MMB's
    sampled p(y | x, a) ask through it.
    """
    model = run.model(model_key)  # resolved once for the whole task
    first, statuses = _requests(model, task, items)
    asked = _sampled(model, first, samples)
    answered, _, version = answer_requests(
        run, model, role, [q for _, per in asked for q in per if q is not None])
    answers = iter(answered)
    frames = []
    for r, (sampled, requests) in zip(samples, asked, strict=True):
        responses = [None if q is None else next(answers) for q in requests]
        frames.append(pd.DataFrame(answer_rows(sampled, task, requests, statuses, responses,
                                               version)).assign(sample=r))
    return pd.concat(frames, ignore_index=True)


def resampled(model: PanelModel, sample: int) -> PanelModel:
    """`model` with its sampling seed moved on by `sample` (itself for 0)."""
    if not sample:
        return model
    return dataclasses.replace(model, sampling=dataclasses.replace(
        model.sampling, seed=model.sampling.seed + sample))
