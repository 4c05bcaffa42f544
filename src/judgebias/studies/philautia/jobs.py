"""The philautia study's model jobs (seed 000 Algorithm 1, lines 2 and 4): a generator
captions each image; an evaluator scores each caption with the setting's G-VEval prompt.
Both are ordinary judge tasks of the judging core (journaled, raw answers kept).

The jobs take the run context (judgebias.models.context.RunContext: the journal, the panel
model and its limits) and the values of the ``philautia:`` block they need (the step hands
them from its typed view, params.PhilautiaParams), never the params mapping."""

from __future__ import annotations

from collections.abc import Collection

import pandas as pd

from judgebias.io.artifacts import read_table
from judgebias.judging.answers import STATUS_OK, IntegerScore
from judgebias.judging.tasks import FreeText, JudgeTask, run_task
from judgebias.models.context import RunContext
from judgebias.studies.philautia.params import Setting
from judgebias.studies.philautia.tables import CAPTIONS, IMAGES

NO_CAPTION = "no_caption"


def caption_task(prompt: str) -> JudgeTask:
    """The generation prompt (seed 000 Appendix C; template `prompt`,
    ``philautia.caption_prompt``) with the image."""
    return JudgeTask(prompt=prompt, answer=FreeText())


def judge_task(setting: Setting) -> JudgeTask:
    """The setting's G-VEval prompt (seed 000 Appendix C) with the caption, the image and,
    in the reference-based setting, the reference captions, one per line (our format;
    G-VEval's scorer joins them as ``'a'; 'b'; 'c``, see judgebias.prompts)."""
    fields = {"Caption": "caption", **({"Reference": "references"}
                                       if setting.references else {})}
    return JudgeTask(prompt=setting.prompt, answer=IntegerScore(), fields=fields)


def caption_images(run: RunContext, generator: str, images_path: str, *, prompt: str
                   ) -> pd.DataFrame:
    """Seed 000 Alg. 1 line 2: one caption per image by `generator` (a captions table),
    asked with template `prompt` (``philautia.caption_prompt``)."""
    images = read_table(images_path, IMAGES)
    rows = run_task(run, generator, "generator", caption_task(prompt), images)
    return pd.DataFrame({"image_id": images["image_id"].to_numpy(), "generator": generator,
                         **rows})


def caption_rows(images: pd.DataFrame, captions: pd.DataFrame) -> pd.DataFrame:
    """One row per image with its caption by one generator, ready to be judged; a failed
    caption becomes status "no_caption" (nothing to judge)."""
    captions = captions.rename(columns={"label": "caption"})
    rows = images.merge(captions[["image_id", "generator", "caption", "status"]],
                        on="image_id", how="inner", validate="one_to_one")
    rows["status"] = rows["status"].where(rows["status"] == STATUS_OK, NO_CAPTION)
    return rows


def score_captions(run: RunContext, evaluator: str, setting: str, images_path: str,
                   captions_path: str, *, spec: Setting,
                   only: Collection[str] | None = None) -> pd.DataFrame:
    """Seed 000 Alg. 1 line 4 (per image): `evaluator` scores each caption in setting
    `setting`, whose prompt and references are `spec` (``philautia.settings.<setting>``,
    params.PhilautiaParams.settings; a scores table); with `only`, the captions of those
    image ids (one wave's).

    Images whose caption failed get status "no_caption" and no request is made.
    """
    images = read_table(images_path, IMAGES)
    if only is not None:
        images = images[images["image_id"].isin(only)].reset_index(drop=True)
    rows = caption_rows(images, read_table(captions_path, CAPTIONS))
    answers = run_task(run, evaluator, "evaluator", judge_task(spec), rows)
    return pd.DataFrame({"image_id": rows["image_id"].to_numpy(),
                         "generator": rows["generator"].to_numpy(),
                         "evaluator": evaluator, "setting": setting, **answers})
