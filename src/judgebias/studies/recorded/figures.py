"""The recorded study's figure: each judge's headline measure with its interval, one
figure per table (a scores table: self-preference in score points; a pairwise table:
preference fairness PF, whose sign says primacy or recency)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure as MplFigure

from judgebias.report.figures import interval_plot, save_figure

HEADLINES = {"scores": ("self_preference", "own_effect", "own_ci_low", "own_ci_high", "model",
                        "self-preference (score points)"),
             "pairwise": ("position", "estimate", "ci_low", "ci_high", "judge",
                          "preference fairness PF (recency - primacy)")}


def headline(measures: pd.DataFrame, kind: str) -> tuple[pd.DataFrame, str]:
    """(model, estimate, ci_low, ci_high) of each judge with a finite headline, and the
    axis label."""
    table, estimate, low, high, who, label = HEADLINES[kind]
    rows = measures[measures["table"] == table]
    if kind == "pairwise":
        rows = rows[rows["measure"] == "pf"]
    frame = pd.DataFrame({"model": rows[who], "estimate": rows[estimate],
                          "ci_low": rows[low], "ci_high": rows[high]})
    finite = np.isfinite(frame[["estimate", "ci_low", "ci_high"]].astype(float)).all(axis=1)
    return frame[finite].reset_index(drop=True), label


def draw_headline(measures: pd.DataFrame, kind: str, title: str, out: Path) -> Path:
    """The headline figure of one table; a figure saying so where no judge has one."""
    frame, label = headline(measures, kind)
    if len(frame):
        return interval_plot(frame, out, title, xlabel=label)
    fig = MplFigure(figsize=(6.5, 1.5))
    fig.text(0.5, 0.5, f"{title}: no judge has an estimate of {label}", ha="center",
             va="center")
    return save_figure(fig, out)
