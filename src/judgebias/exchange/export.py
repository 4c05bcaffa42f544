"""`judgebias requests export`: the requests still unanswered, written out to be answered
elsewhere (issue 44 item 1; the formats: judgebias.exchange.formats).

What is written is exactly what `judgebias plan` counts as needed (judgebias.plan: each
study's ``plan`` hook, built with the judging code the jobs use): per panel model, its
requests that can be built now (their inputs exist), each once, under the journal key the
model's own jobs look up, less those answered in its journal. A request whose inputs do
not exist yet (scores of captions a model has not written) cannot be written: the
manifest and the summary count them per study and model, with the study's note, and say
to run the pipeline after importing, then export again, so a pipeline with several
stages of model calls goes out in as many rounds.

Each model's requests go in files of their own (``<panel key>.jsonl``: OpenAI's Batch API
takes one model per file), cut where a file would pass ``max_requests`` lines or
``max_bytes`` (OpenAI's limits are 50,000 requests and 200 MB per file, specs/batch.md;
the defaults are judgebias.models.batch.BatchSettings', which stay under both), then
named ``<panel key>.001.jsonl``, ``.002`` ...; the lines go in the order a job sends
its requests, side by side where they share a prefix (judgebias.models.prefix.grouped),
so a provider's prompt cache can serve them; ``manifest.json`` beside them gives the
format, the image mode, and per model its backend, model id, files and count. Every key
written is recorded in the model's journal first (Journal.mark_exported): `judgebias
answers import` accepts answers only for keys exported from this project, and journals
each with the request's summary as an online call would.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judgebias.config import ConfigError
from judgebias.exchange.formats import ImageMode, RequestFormat, image_file, request_line
from judgebias.io.atomicfile import atomic_path
from judgebias.models.base import ChatRequest
from judgebias.models.batch import BatchSettings
from judgebias.models.journal import Journal, journal_path, request_key
from judgebias.models.panel import PanelModel, panel_models
from judgebias.models.prefix import grouped
from judgebias.models.reasoning import Reasoning
from judgebias.models.registry import backend_version
from judgebias.plan import PlannedCalls, collect_calls
from judgebias.study import active

MANIFEST = "manifest.json"
LIMITS = BatchSettings()  # the per-file limits the provider batches use


@dataclass
class ModelExport:
    """What was written for one panel model: its files and requests, and how many more
    wait for inputs not built yet (by study, with the study's note)."""

    model: str
    backend: str
    model_id: str
    files: list[str] = field(default_factory=list)
    requests: int = 0
    answered: int = 0  # already in the journal, not written
    waiting: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ExportSummary:
    folder: Path
    fmt: RequestFormat
    images: ImageMode
    models: list[ModelExport]

    @property
    def requests(self) -> int:
        return sum(m.requests for m in self.models)

    @property
    def waiting(self) -> int:
        return sum(sum(m.waiting.values()) for m in self.models)


def default_models(params: Mapping[str, Any]) -> list[str]:
    """The panel models answered elsewhere (backend ``external``)."""
    return [key for key, model in params["panel"].items() if model["backend"] == "external"]


def export_requests(params: Mapping[str, Any], folder: Path, *, fmt: RequestFormat = "openai",
                    images: ImageMode = "inline", models: Sequence[str] = (),
                    studies: Sequence[str] = (), max_requests: int = LIMITS.max_requests,
                    max_bytes: int = LIMITS.max_bytes) -> ExportSummary:
    """Write every request the `studies` (default: every active one) still need of the
    `models` (default: the external ones) to `folder` (module docstring)."""
    panel = panel_models(params)
    chosen = list(models) or default_models(params)
    if not chosen:
        raise ConfigError("no panel model has backend `external`: name the models whose "
                          "requests to write with --model")
    for key in chosen:
        if key not in panel:
            raise ConfigError(f"--model {key}: not a panel model (panel: {', '.join(panel)})")
    names = [study.name for study in active(params)]
    for study in studies:
        if study not in names:
            raise ConfigError(f"--study {study}: not an active study (active: "
                              f"{', '.join(names) or 'none'})")
    planned, _, _ = collect_calls(params)
    folder.mkdir(parents=True, exist_ok=True)
    exports = []
    for key in chosen:
        by_study = {study: calls for study, calls in planned.get(key, {}).items()
                    if not studies or study in studies}
        exports.append(_export_model(panel[key], by_study, folder, fmt, images,
                                     Path(params["journal_dir"]), (max_requests, max_bytes)))
    summary = ExportSummary(folder, fmt, images, exports)
    _write_manifest(summary)
    return summary


def _export_model(model: PanelModel, by_study: Mapping[str, list[PlannedCalls]],
                  folder: Path, fmt: RequestFormat, images: ImageMode,
                  journal_dir: Path, limits: tuple[int, int]) -> ModelExport:
    """One model's files: its keyed requests not answered yet, each once."""
    version = backend_version(model)
    export = ModelExport(model.key, model.backend, model.model_id)
    requests: dict[str, ChatRequest] = {}
    for study, groups in by_study.items():
        for calls in groups:
            if calls.estimated:
                export.waiting[study] = export.waiting.get(study, 0) + calls.estimated
                if calls.note and calls.note not in export.notes:
                    export.notes.append(calls.note)
            for request in calls.requests:
                requests.setdefault(request_key(request, model.backend, version), request)
    with Journal(journal_path(journal_dir, model.backend, model.model_id)) as journal:
        answered = journal.lookup(requests)
        # side by side where they share a prefix, as a job sends them (issue 45)
        pending = grouped({k: r for k, r in requests.items() if k not in answered})
        journal.mark_exported(pending.items())
    export.answered, export.requests = len(answered), len(pending)
    reasoning = Reasoning.of(model.fields)  # a reasoning model's effort, as it is asked online
    lines = (request_line(key, request, fmt, None if images == "inline" else [
        image_file(image, digest, folder)
        for image, digest in zip(request.images, request.image_hashes(), strict=True)],
        reasoning) + "\n" for key, request in pending.items())
    parts = [_write_part(folder / f"{model.key}.{n:03d}.jsonl", group)
             for n, group in enumerate(_groups(lines, *limits), 1)]
    if len(parts) <= 1:  # one file: no part number
        one = folder / f"{model.key}.jsonl"
        if parts:
            parts[0].replace(one)
        else:
            _write_part(one, [])
        parts = [one]
    export.files = [p.name for p in parts]
    return export


def _groups(lines: Iterable[str], max_requests: int, max_bytes: int) -> Iterator[list[str]]:
    """Consecutive lines in groups under both limits (a line alone over `max_bytes` is a
    group of its own)."""
    group: list[str] = []
    size = 0
    for line in lines:
        length = len(line.encode())
        if group and (len(group) >= max_requests or size + length > max_bytes):
            yield group
            group, size = [], 0
        group.append(line)
        size += length
    if group:
        yield group


def _write_part(path: Path, lines: Iterable[str]) -> Path:
    with atomic_path(path) as tmp, tmp.open("w", encoding="utf-8") as out:
        out.writelines(lines)
    return path


def _write_manifest(summary: ExportSummary) -> None:
    manifest = {"format": summary.fmt, "images": summary.images,
                "models": {m.model: {"backend": m.backend, "model_id": m.model_id,
                                     "files": m.files, "requests": m.requests,
                                     "already_answered": m.answered,
                                     "waiting_for_inputs": m.waiting, "notes": m.notes}
                           for m in summary.models}}
    with atomic_path(summary.folder / MANIFEST) as tmp:
        tmp.write_text(json.dumps(manifest, indent=1) + "\n")


def export_text(summary: ExportSummary) -> str:
    """What `judgebias requests export` prints: per model, what was written and what
    waits, then the next step."""
    lines = []
    for m in summary.models:
        where = ", ".join(str(summary.folder / f) for f in m.files)
        lines.append(f"{m.model} ({m.backend}, {m.model_id}): {m.requests} requests -> "
                     f"{where}" + (f" ({m.answered} already answered, not written)"
                                   if m.answered else ""))
        for study, n in m.waiting.items():
            lines.append(f"  {study}: {n} more wait for inputs the pipeline has not built "
                         "yet")
    if summary.requests:
        lines.append(f"answer them where the models run ({summary.fmt} format, images "
                     f"{summary.images}), then `judgebias answers import FILE ...`")
    if summary.waiting:
        first = "after importing, run" if summary.requests else "run"
        lines.append(f"{first} the pipeline (`snakemake --keep-going`): it builds the inputs "
                     "the answers allow; then export again for the next round")
    if not summary.requests and not summary.waiting:
        lines.append("nothing left to answer: every request of these models is journaled")
    return "\n".join(lines)
