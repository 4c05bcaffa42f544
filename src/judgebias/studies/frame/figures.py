"""FRAME's figures (seed 004): Fig. 2 (attack success rate and mean gain of successful
attacks per judge), Fig. 3 (pairwise win rates before and after manipulating set A), the
example gallery (each manipulation next to the judges' scores) and the in-sample-max
null (ours). Bare matplotlib Figures written atomically, as in judgebias.report.figures."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure as MplFigure
from PIL import Image

from judgebias.report.figures import display_name, save_figure
from judgebias.studies.frame.recipes import DOMAIN_TITLES, SHORT_NAMES

READINGS = {"in_sample": ("#d62728", "in-sample (the paper's)"),
            "cross_fitted": ("#1f77b4", "cross-fitted (ours)")}


def fig2(success: pd.DataFrame, simulated: set[str], path: Path) -> None:
    """Seed 004 Fig. 2: attack success rate (left) and mean % change over successful cells
    (right) per judge, the paper's in-sample reading next to the cross-fitted one."""
    judges = list(dict.fromkeys(success["judge"]))
    fig = MplFigure(figsize=(9, 0.5 * len(judges) + 1.6))
    x = np.arange(len(judges))
    for col, (column, label) in enumerate((("success_rate", "attack success rate (%)"),
                                           ("mean_gain", "mean % change, successful cells"))):
        ax = fig.add_subplot(1, 2, col + 1)
        for offset, (reading, (color, name)) in zip((-0.2, 0.2), READINGS.items(), strict=True):
            values = success[success["reading"] == reading].set_index("judge").reindex(
                judges)[column].to_numpy(dtype=float)
            ax.barh(x + offset, values, height=0.38, color=color, label=name)
        ax.set_yticks(x, [display_name(j, simulated) for j in judges], fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel(label, fontsize=9)
        if col == 0:
            ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    save_figure(fig, path)


def fig3(rates: pd.DataFrame, judge: str, simulated: set[str], path: Path) -> None:
    """Seed 004 Fig. 3: per domain, A's and B's win rates (win 1, tie 1/2, both orders
    averaged) for the originals (top) and with set A manipulated (bottom)."""
    mine = rates[rates["judge"] == judge]
    domains = [d for d in DOMAIN_TITLES if d in set(mine["domain"])]
    fig = MplFigure(figsize=(7, 4.6))
    for row, condition in enumerate(("original", "manipulated")):
        ax = fig.add_subplot(2, 1, row + 1)
        cell = mine[mine["condition"] == condition].set_index("domain").reindex(domains)
        x = np.arange(len(domains))
        a, b = cell["a_win_rate"].to_numpy(float), cell["b_win_rate"].to_numpy(float)
        ax.bar(x - 0.2, a, width=0.38, color="#d62728", label="set A")
        ax.bar(x + 0.2, b, width=0.38, color="#7f7f7f", label="set B")
        ax.set_xticks(x, [DOMAIN_TITLES[d] for d in domains], fontsize=8)
        ax.set_ylim(0, 1)
        ax.axhline(0.5, color="black", lw=0.6, ls=":")
        title = "original A vs B" if condition == "original" else "manipulated A vs B"
        ax.set_title(f"{display_name(judge, simulated)}: {title}", fontsize=9)
        ax.legend(fontsize=7, ncol=2, loc="upper right")
    fig.tight_layout()
    save_figure(fig, path)


def null_figure(cross: pd.DataFrame, simulated: set[str], path: Path) -> None:
    """Ours: per judge and cell, the paper's in-sample maximum gain, the 95th percentile
    of its permutation null (what a judge with no susceptibility "gains" by picking the
    best of the grid on the same items), and the cross-fitted gain with its interval."""
    judges = list(dict.fromkeys(cross["judge"]))
    fig = MplFigure(figsize=(10, 2.4 * len(judges)))
    for row, judge in enumerate(judges):
        ax = fig.add_subplot(len(judges), 1, row + 1)
        cell = cross[cross["judge"] == judge].reset_index(drop=True)
        x = np.arange(len(cell))
        ax.bar(x, cell["in_sample_gain"], color="#d62728", alpha=0.6, label="in-sample max")
        ax.plot(x, cell["null_q95"], "k_", ms=10, label="null 95th pct. of the max")
        ax.errorbar(x, cell["cross_fitted_gain"],
                    yerr=[cell["cross_fitted_gain"] - cell["ci_low"],
                          cell["ci_high"] - cell["cross_fitted_gain"]],
                    fmt="o", color="#1f77b4", ms=3, lw=0.8, label="cross-fitted (95% CI)")
        ax.axhline(0, color="black", lw=0.5)
        ax.set_xticks(x, [f"{DOMAIN_TITLES[d][:5]} {SHORT_NAMES[m]}" for d, m in
                          zip(cell["domain"], cell["manipulation"], strict=True)],
                      rotation=90, fontsize=6)
        ax.set_ylabel("score change", fontsize=8)
        ax.set_title(display_name(judge, simulated), fontsize=9)
        if row == 0:
            ax.legend(fontsize=7, ncol=3, loc="upper left")
    fig.tight_layout()
    save_figure(fig, path)


def examples(gallery: pd.DataFrame, simulated: set[str], path: Path) -> None:
    """Example images: per example item (rows), the original and each manipulation at
    the analysis judge's best setting (columns), titled with every judge's score."""
    rows = list(dict.fromkeys(gallery["item_id"]))
    columns = list(dict.fromkeys(gallery["label"]))
    fig = MplFigure(figsize=(1.9 * len(columns), 2.3 * len(rows)))
    for r, item in enumerate(rows):
        for c, label in enumerate(columns):
            ax = fig.add_subplot(len(rows), len(columns), r * len(columns) + c + 1)
            ax.axis("off")
            shown = gallery[(gallery["item_id"] == item) & (gallery["label"] == label)]
            if shown.empty:
                continue
            entry = shown.iloc[0]
            ax.imshow(np.asarray(Image.open(entry["image"]).convert("RGB")))
            ax.set_title(f"{label}\n{entry['scores']}", fontsize=6)
    fig.tight_layout()
    save_figure(fig, path)
