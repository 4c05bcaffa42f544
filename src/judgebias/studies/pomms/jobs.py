"""Pomms' model jobs (seed 000 §6.3): every panel evaluator scores each item of a
caption-judgement dataset with the same prompt and setting as the philautia study, as an
ordinary judge task of the judging core, through the same journal. The job takes the run
context (judgebias.models.context.RunContext: the journal, the panel model and its limits)
and the philautia setting it scores with (params.PommsParams.settings), never the params
mapping."""

from __future__ import annotations

import pandas as pd

from judgebias.io.artifacts import read_table
from judgebias.judging.tasks import run_task
from judgebias.models.context import RunContext
from judgebias.studies.philautia.jobs import judge_task
from judgebias.studies.philautia.params import Setting
from judgebias.studies.pomms.data import items
from judgebias.studies.pomms.tables import JUDGEMENTS


def item_rows(judgements_path: str) -> pd.DataFrame:
    """The dataset's items (one per candidate caption), ready to be judged."""
    return items(read_table(judgements_path, JUDGEMENTS)).rename(
        columns={"candidate": "caption"})


def score_items(run: RunContext, evaluator: str, setting: str, judgements_path: str, *,
                spec: Setting) -> pd.DataFrame:
    """One item_scores row per item, `evaluator` scoring in philautia setting `setting`,
    whose prompt and references are `spec`. Items whose image is absent get status
    "no_image" and no request is made."""
    rows = item_rows(judgements_path)
    answers = run_task(run, evaluator, "evaluator", judge_task(spec), rows)
    return pd.DataFrame({"item_id": rows["item_id"].to_numpy(),
                         "dataset": rows["dataset"].to_numpy(),
                         "evaluator": evaluator, "setting": setting, **answers})
