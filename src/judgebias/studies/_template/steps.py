"""The template study's steps, one per rule of workflow/rules/_template.smk
(judgebias.workflow.step_dispatch): each reads the files its rule names, calls the study's
functions and writes the files its rule names. A step imports what only it uses inside its body, so
its rule's code dependencies stay its own (judgebias.workflow.codedeps)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from judgebias.models.context import RunContext
from judgebias.studies._template.params import TemplateParams


def answers(params: TemplateParams, *, answers: Path) -> None:
    """Draw the synthetic answers."""
    from judgebias.io.artifacts import write_table
    from judgebias.studies._template.data import build_answers
    from judgebias.studies._template.tables import ANSWERS

    write_table(build_answers(params.n_items, params.max_words, params.seed), answers, ANSWERS)


def judge(run: RunContext, *, judge: str, answers: Path, scores: Path) -> None:
    """One judge scores every answer: a model job, so it takes the run context (the
    journal, the panel), not the params mapping."""
    from judgebias.io.artifacts import read_table, write_table
    from judgebias.studies._template.jobs import score_answers
    from judgebias.studies._template.tables import ANSWERS, SCORES

    write_table(score_answers(run, judge, read_table(answers, ANSWERS)), scores, SCORES)


def measure(params: TemplateParams, *, answers: Path, scores: Sequence[Path],
            slopes: Path, metrics: Path) -> None:
    """Every judge's length slope, as a table and in metrics.json."""
    import pandas as pd

    from judgebias.io.artifacts import read_table, write_frame, write_json
    from judgebias.studies._template.measures import slopes as length_slopes
    from judgebias.studies._template.tables import ANSWERS, SCORES

    table = length_slopes(pd.concat([read_table(p, SCORES) for p in scores],
                                    ignore_index=True),
                          read_table(answers, ANSWERS), ci=params.ci)
    write_frame(table, slopes)
    write_json({"slopes": table.set_index("judge").to_dict(orient="index")}, metrics)
