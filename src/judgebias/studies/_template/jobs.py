"""The template study's model job: each judge scores every answer, through the judging
core (journal, retries, budget, raw answers and log-probs are kept there)."""

from __future__ import annotations

import pandas as pd

from judgebias.judging.answers import IntegerScore
from judgebias.judging.tasks import JudgeTask, run_task
from judgebias.models.context import RunContext

PROMPT = "_template_score"  # src/judgebias/prompts/templates/_template_score.txt
TASK = JudgeTask(prompt=PROMPT, answer=IntegerScore(low=1, high=10),
                 fields={"Answer": "answer"}, images=())


def score_answers(run: RunContext, judge: str, items: pd.DataFrame) -> pd.DataFrame:
    """One row per answer: the judge's reply and score, keyed by item and judge (`run`:
    the journal, the panel model and its limits, judgebias.models.context)."""
    answers = run_task(run, judge, "judge", TASK, items)
    return pd.DataFrame({"item_id": items["item_id"].to_numpy(), "judge": judge, **answers})
