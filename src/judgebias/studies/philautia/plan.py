"""The calls the philautia study will make, for `judgebias plan`: every caption request
(one per generator and image), and every score request (one per evaluator, setting,
generator and image) whose caption exists. Before the dataset is built, or while a
generator's captions are not written, they are estimated: one per image (the dataset's
`n_images`), an upper bound where a caption fails (a failed caption is not scored)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from judgebias.io.artifacts import read_table
from judgebias.judging.tasks import build_requests
from judgebias.models.context import RunContext
from judgebias.plan import PlannedCalls
from judgebias.studies.philautia.jobs import caption_rows, caption_task, judge_task
from judgebias.studies.philautia.params import settings_of
from judgebias.studies.philautia.tables import (
    CAPTIONS,
    DATASET_TABLE,
    IMAGES,
    captions_path,
    look_path,
    wave_count,
)
from judgebias.study import study_models

NO_DATASET = "dataset not built: one caption per image (n_images) and one score per " \
    "(setting, generator, image), if every caption succeeds"
NO_CAPTIONS = "scores of captions not written yet: one per image, if every caption succeeds"
LATER_WAVES = "images of waves not open yet (philautia.waves): asked only if the looks " \
    "before them go on"
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
    planned = []
    for key in models:
        requests, _ = build_requests(run, key, captioning, images)
        planned.append(PlannedCalls(key, [r for r in requests if r is not None]))
    for name, setting in settings.items():
        open_images = _open_images(params, name, images)
        rows = {g: caption_rows(open_images, read_table(captions_path(g), CAPTIONS))
                for g in models if Path(captions_path(g)).exists()}
        for key in models:
            task = judge_task(setting)
            calls = PlannedCalls(key, task=task)
            for generator in models:
                if generator not in rows:
                    calls.estimated += len(open_images)
                    calls.note = NO_CAPTIONS
                    continue
                requests, _ = build_requests(run, key, task, rows[generator])
                calls.requests += [r for r in requests if r is not None]
            if len(open_images) < len(images):
                calls.estimated += (len(images) - len(open_images)) * len(models)
                calls.note = LATER_WAVES
            planned.append(calls)
    return planned


def _open_images(params: Mapping[str, Any], setting: str, images: pd.DataFrame
                 ) -> pd.DataFrame:
    """The images a setting's score jobs may ask about now: all of them without waves;
    in waves (philautia.waves), those of wave 1 and of each wave the look before it
    opened (the rest are counted as an upper bound, `LATER_WAVES`)."""
    count = wave_count(params)
    if count == 1:
        return images
    from judgebias.stats.waves import wave_of
    from judgebias.studies.philautia.waves import read_look

    design = params["philautia"]["waves"]
    waves = wave_of(images["image_id"].tolist(), count, design["seed"])
    opened = 1
    while opened < count and Path(look := look_path(setting, opened)).exists() \
            and read_look(Path(look)).runs_next_wave:
        opened += 1
    return images[images["image_id"].map(waves) <= opened].reset_index(drop=True)


def power_sizes(params: Mapping[str, Any]) -> dict[str, float]:
    """The design size of the card's self-preference measures: images (judgebias.stats.power;
    the image-clustered standard error shrinks with the root of their number)."""
    spec = params["philautia"]["dataset"]
    if Path(DATASET_TABLE).exists():
        images = len(read_table(DATASET_TABLE, IMAGES))
    else:
        images = spec[spec["name"]].get("n_images") or 0
    return {measure: float(images) for measure in POWERED} if images else {}
