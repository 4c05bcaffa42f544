"""The leaderboard study's model jobs: a model system captions the task's images (the
philautia generator task), and each judge scores every system's caption with the task's
G-VEval prompt (the philautia evaluator task). Both go through the judging core (journal,
retries, raw answers and log-probs kept), so adding a system pays only for its own
captions and their scores: every other request is answered from the journal."""

from __future__ import annotations

import pandas as pd

from judgebias.io.artifacts import read_table
from judgebias.judging.tasks import run_task
from judgebias.models.context import RunContext
from judgebias.studies.leaderboard.tables import OUTPUTS
from judgebias.studies.philautia.jobs import judge_task
from judgebias.studies.philautia.params import Setting
from judgebias.studies.philautia.tables import IMAGES


def judged_rows(images_path: str, outputs_path: str) -> pd.DataFrame:
    """Every (image, system) output with what the judge is shown: the image and its
    references; an output without a caption keeps its status and is not asked about."""
    images = read_table(images_path, IMAGES)
    outputs = read_table(outputs_path, OUTPUTS)
    return outputs.merge(images[["image_id", "image_path", "references"]], on="image_id",
                         how="left", validate="many_to_one")


def score_outputs(run: RunContext, judge: str, images_path: str, outputs_path: str, *,
                  prompt: str, references: bool) -> pd.DataFrame:
    """One scores row per (image, system): `judge` scores the caption with template
    `prompt`, given the references where `references`."""
    rows = judged_rows(images_path, outputs_path)
    answers = run_task(run, judge, "judge",
                       judge_task(Setting(prompt=prompt, references=references)), rows)
    return pd.DataFrame({"image_id": rows["image_id"].to_numpy(),
                         "system": rows["system"].to_numpy(), "judge": judge, **answers})
