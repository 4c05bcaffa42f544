"""The leaderboard's figure: per judging method, each system's mean score with its paired
bootstrap interval, one panel per method (their units differ: G-VEval points, Pomms'
human scale), systems in the same order in every panel so a changed order is seen."""

from __future__ import annotations

from collections.abc import Sequence, Set
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure as MplFigure

from judgebias.report.figures import display_name, save_figure


def draw_leaderboard(systems: pd.DataFrame, methods: Sequence[str], task: str,
                     simulated: Set[str], out: Path) -> Path:
    """One panel per method of `methods` (the baseline first): dots at the means, bars
    over the intervals, the baseline's best system on top. `systems` is the leaderboard's
    systems table."""
    base = systems[systems["method"] == methods[0]].sort_values("mean", ascending=False)
    order = base["system"].tolist()
    positions = np.arange(len(order))
    fig = MplFigure(figsize=(3.2 * len(methods) + 1.5, 0.45 * len(order) + 1.8))
    axes = fig.subplots(1, len(methods), sharey=True, squeeze=False)[0]
    for ax, method in zip(axes, methods, strict=True):
        rows = systems[systems["method"] == method].set_index("system").reindex(order)
        errors = np.vstack([rows["mean"] - rows["low"], rows["high"] - rows["mean"]])
        ax.errorbar(rows["mean"], positions, xerr=np.nan_to_num(errors), fmt="o",
                    color="#2166ac", ecolor="#404040", elinewidth=1.5, capsize=3)
        ax.set_title(method, fontsize=10)
        ax.set_xlabel(str(rows["unit"].dropna().iloc[0]) if rows["unit"].notna().any()
                      else "", fontsize=8)
        ax.grid(axis="x", color="#e0e0e0", linewidth=0.8)
        ax.set_axisbelow(True)
    axes[0].set_yticks(positions, [display_name(s, simulated) for s in order])
    axes[0].set_ylim(len(order) - 0.5, -0.5)
    fig.suptitle(f"{task}: mean score per system, 95% paired bootstrap intervals")
    return save_figure(fig, out)
