"""The calls the philautia study will make, for `judgebias plan`: every caption request
(one per generator and image), and every score request (one per evaluator, setting,
generator and image) whose caption exists. Before the dataset is built, or while a
generator's captions are not written, they are estimated: one per image (the dataset's
`n_images`), an upper bound where a caption fails (a failed caption is not scored)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from judgebias.io.artifacts import read_table
from judgebias.judging.tasks import build_requests
from judgebias.models.context import RunContext
from judgebias.plan import PlannedCalls
from judgebias.studies.philautia.jobs import caption_rows, caption_task, judge_task
from judgebias.studies.philautia.params import settings_of
from judgebias.studies.philautia.tables import CAPTIONS, DATASET_TABLE, IMAGES, captions_path
from judgebias.study import study_models

NO_DATASET = "dataset not built: one caption per image (n_images) and one score per " \
    "(setting, generator, image), if every caption succeeds"
NO_CAPTIONS = "scores of captions not written yet: one per image, if every caption succeeds"
POWERED = ("self_preference", "family_preference", "own_minus_family")  # card measures


def planned_calls(params: Mapping[str, Any]) -> list[PlannedCalls]:
    block = params["philautia"]
    models, settings = study_models(params, "philautia"), settings_of(block)
    captioning = caption_task(block["caption_prompt"])
    if not Path(DATASET_TABLE).exists():
        spec = block["dataset"]
        n_images = spec[spec["name"]].get("n_images") or 0
        return [calls for m in models for calls in (
            PlannedCalls(m, estimated=n_images, note=NO_DATASET, task=captioning),
            *(PlannedCalls(m, estimated=n_images * len(models), note=NO_DATASET,
                           task=judge_task(setting)) for setting in settings.values()))]
    run = RunContext(params)
    images = read_table(DATASET_TABLE, IMAGES)
    rows = {g: caption_rows(images, read_table(captions_path(g), CAPTIONS)) for g in models
            if Path(captions_path(g)).exists()}
    planned = []
    for key in models:
        requests, _ = build_requests(run, key, captioning, images)
        planned.append(PlannedCalls(key, [r for r in requests if r is not None]))
        for setting in settings.values():
            task = judge_task(setting)
            calls = PlannedCalls(key, task=task)
            for generator in models:
                if generator not in rows:
                    calls.estimated += len(images)
                    calls.note = NO_CAPTIONS
                    continue
                requests, _ = build_requests(run, key, task, rows[generator])
                calls.requests += [r for r in requests if r is not None]
            planned.append(calls)
    return planned


def power_sizes(params: Mapping[str, Any]) -> dict[str, float]:
    """The design size of the card's self-preference measures: images (judgebias.stats.power;
    the image-clustered standard error shrinks with the root of their number)."""
    spec = params["philautia"]["dataset"]
    if Path(DATASET_TABLE).exists():
        images = len(read_table(DATASET_TABLE, IMAGES))
    else:
        images = spec[spec["name"]].get("n_images") or 0
    return {measure: float(images) for measure in POWERED} if images else {}
