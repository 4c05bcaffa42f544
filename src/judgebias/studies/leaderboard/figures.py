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
        low, high, unbounded = _drawn_bounds(rows)
        errors = np.vstack([rows["mean"] - low, high - rows["mean"]])
        ax.errorbar(rows["mean"], positions, xerr=np.nan_to_num(errors), fmt="o",
                    color="#2166ac", ecolor="#404040", elinewidth=1.5, capsize=3)
        for k in np.flatnonzero(unbounded):  # an interval without a finite end (see below)
            ax.annotate("unbounded", (rows["mean"].iloc[k], positions[k]), fontsize=6,
                        xytext=(0, 6), textcoords="offset points", ha="center")
        ax.set_title(method, fontsize=10)
        ax.set_xlabel(str(rows["unit"].dropna().iloc[0]) if rows["unit"].notna().any()
                      else "", fontsize=8)
        ax.grid(axis="x", color="#e0e0e0", linewidth=0.8)
        ax.set_axisbelow(True)
    axes[0].set_yticks(positions, [display_name(s, simulated) for s in order])
    axes[0].set_ylim(len(order) - 0.5, -0.5)
    fig.suptitle(f"{task}: mean score per system, 95% paired bootstrap intervals")
    return save_figure(fig, out)


def _drawn_bounds(rows: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The interval ends to draw. A studentised bootstrap interval is infinite where many
    resamples have no spread (a system that wins every comparison: judgebias.stats.ranking
    keeps that honest answer); it is drawn to the edge of the panel's finite values and
    marked "unbounded", never dropped."""
    low, high = rows["low"].to_numpy(float), rows["high"].to_numpy(float)
    finite = np.concatenate([rows["mean"].to_numpy(float), low[np.isfinite(low)],
                             high[np.isfinite(high)]])
    finite = finite[np.isfinite(finite)]
    lo, hi = (finite.min(), finite.max()) if finite.size else (0.0, 1.0)
    pad = 0.1 * (hi - lo) if hi > lo else 0.5
    unbounded = np.isinf(low) | np.isinf(high)
    return (np.where(np.isinf(low), lo - pad, low), np.where(np.isinf(high), hi + pad, high),
            unbounded)
