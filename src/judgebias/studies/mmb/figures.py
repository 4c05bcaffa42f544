"""MMB's figures (seed 002): Fig. 1 (F1 and ECE of AVG, BPE and MMB), Fig. 3
(error-coverage curves with bootstrap bands; Fig. 5, Appendix D: for every prompt count)
and Fig. 4 (example images of each cluster
with its top instruction). Bare matplotlib Figures written atomically, as in
judgebias.report.figures; the curves' data as DVC plots (`write_curves`)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from matplotlib.figure import Figure as MplFigure
from PIL import Image

from judgebias.report.figures import display_name, save_figure
from judgebias.studies.mmb.measures.factorial import REFERENCE_METHODS
from judgebias.studies.mmb.tables import CURVES
from judgebias.workflow.dvcviews import write_curve

if TYPE_CHECKING:
    from judgebias.studies.mmb.params import MmbParams

COLORS = {"STD": "#9e9e9e", "BEST": "#8d6e63", "AVG": "#1f77b4", "BPE": "#ff7f0e",
          "MMB": "#2ca02c", REFERENCE_METHODS["printed"]: "#d62728",
          REFERENCE_METHODS["corrected"]: "#9467bd"}


def draw_all(params: MmbParams, frames: Mapping[str, pd.DataFrame],
             paths: Mapping[str, Path]) -> None:
    """Every figure of the section, each to its path in `paths` (by name, tables.FIGURES)."""
    analysed = set(frames["table2"]["judge"])  # a judge left out has no rows
    judges = [j for j in params.models if j in analysed]
    simulated = set(params.simulated.intersection(judges))
    fig1(frames["table2"], judges, simulated, paths["fig1"])
    bands = frames["error_coverage"]
    fig3(bands[bands["n_prompts"] == params.report.n_prompts], judges,
         simulated, paths["fig3"])
    fig5(bands, judges, simulated, paths["fig5"])
    fig4(frames["top_prompts"], paths["fig4"])
    fig_power(frames["power"], judges, simulated, paths["power"])


def curve_rows(params: MmbParams, frames: Mapping[str, pd.DataFrame], name: str,
               judge: str) -> pd.DataFrame:
    """One judge's rows of curve `name` (tables.CURVES) as DVC plots it: one row per x,
    one column per line. Fig. 3's error-coverage curves at the reported cell (the
    report's prompt count and validation size; the figure draws every size, Fig. 5 every
    prompt count too), the power view's ECE of AVG, BPE and MMB, and MMB's ECE over the
    tau sweep (table only)."""
    if name == "error_coverage":
        bands = frames["error_coverage"]
        cell = bands[(bands["judge"] == judge) & (bands["n_prompts"] == params.report.n_prompts)
                     & (bands["n_val"] == params.report.n_val)]
        return cell.pivot(index="coverage", columns="method", values="error").reset_index()
    table = frames[name]
    return table[table["judge"] == judge]


def write_curves(params: MmbParams, frames: Mapping[str, pd.DataFrame],
                 paths: Mapping[tuple[str, str], Path]) -> None:
    """Every (curve, judge) of `paths` as its CSV (judgebias.workflow.dvcviews)."""
    for (name, judge), path in paths.items():
        write_curve(curve_rows(params, frames, name, judge), CURVES[name], path)


def fig1(table2: pd.DataFrame, judges: list[str], simulated: set[str], path: Path) -> None:
    """Seed 002 Fig. 1: F1 (higher is better) and ECE (lower is better) of AVG, BPE, MMB."""
    fig = MplFigure(figsize=(7, 2.8 * len(judges)))
    methods = ["AVG", "BPE", "MMB"]
    for row, judge in enumerate(judges):
        for col, (metric, label) in enumerate((("f1", "F1 ↑"), ("ece", "ECE ↓"))):
            ax = fig.add_subplot(len(judges), 2, 2 * row + col + 1)
            values = table2[(table2["judge"] == judge) & (table2["metric"] == metric)]
            values = values.set_index("method").reindex(methods)["mean"]
            ax.bar(methods, values.to_numpy(), color=[COLORS[m] for m in methods])
            for x, v in enumerate(values.to_numpy()):
                ax.text(x, v, f"{v:.3f}", ha="center", va="bottom", fontsize=8)
            ax.set_title(f"{display_name(judge, simulated)}: {label}", fontsize=9)
            ax.set_ylim(0, max(values.max() * 1.25, 1e-3))
    fig.tight_layout()
    save_figure(fig, path)


def fig3(bands: pd.DataFrame, judges: list[str], simulated: set[str], path: Path) -> None:
    """Seed 002 Fig. 3: error vs coverage per validation size (the report's prompt
    count), mean over runs with a 95 % bootstrap band of the mean (shaded)."""
    panels = [(judge, n_val, f"{display_name(judge, simulated)}, |D_val| = {n_val}")
              for judge in judges for n_val in sorted(bands["n_val"].unique())]
    _curves(bands, panels, len(panels) // len(judges), path)


def fig5(bands: pd.DataFrame, judges: list[str], simulated: set[str], path: Path) -> None:
    """Seed 002 Appendix D Fig. 5: Fig. 3's curves for every prompt count (rows: judge x
    prompts; columns: validation sizes)."""
    sizes = sorted(bands["n_val"].unique())
    panels = [(judge, n_val, f"{display_name(judge, simulated)}, {n_prompts} prompts, "
               f"|D_val| = {n_val}", n_prompts)
              for judge in judges for n_prompts in sorted(bands["n_prompts"].unique())
              for n_val in sizes]
    _curves(bands, panels, len(sizes), path)


def _curves(bands: pd.DataFrame, panels: list[tuple], columns: int, path: Path) -> None:
    """One error-coverage panel per (judge, |D_val|, title[, prompts]), `columns` a row."""
    rows = -(-len(panels) // columns)
    fig = MplFigure(figsize=(3.2 * columns, 2.8 * rows))
    for i, (judge, n_val, title, *prompts) in enumerate(panels):
        ax = fig.add_subplot(rows, columns, i + 1)
        cell = bands[(bands["judge"] == judge) & (bands["n_val"] == n_val)]
        if prompts:
            cell = cell[cell["n_prompts"] == prompts[0]]
        for method, curve in cell.groupby("method"):
            ax.plot(curve["coverage"], curve["error"], color=COLORS[method], label=method,
                    lw=1.2)
            ax.fill_between(curve["coverage"], curve["low"], curve["high"],
                            color=COLORS[method], alpha=0.2, lw=0)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("coverage", fontsize=8)
        ax.set_ylabel("error", fontsize=8)
        if i == 0:
            ax.legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, path)


def fig4(top: pd.DataFrame, path: Path, per_cluster: int = 4) -> None:
    """Seed 002 Fig. 4 analogue: example images of each cluster (the first judge's fit)
    with its top instruction and, on the synthetic default, the planted best one."""
    first = top[top["judge"] == top["judge"].iloc[0]]
    fig = MplFigure(figsize=(1.6 * per_cluster + 3.2, 1.6 * len(first)))
    for row, entry in enumerate(first.itertuples()):
        examples = list(entry.examples)[:per_cluster]
        for col, image in enumerate(examples):
            ax = fig.add_subplot(len(first), per_cluster + 2, row * (per_cluster + 2) + col + 1)
            ax.imshow(np.asarray(Image.open(image).convert("RGB")))
            ax.set_axis_off()
        ax = fig.add_subplot(len(first), per_cluster + 2,
                             (row * (per_cluster + 2) + per_cluster + 1,
                              row * (per_cluster + 2) + per_cluster + 2))
        ax.set_axis_off()
        planted = "" if entry.planted is None else (
            f"\nplanted: {entry.planted} {'✓' if entry.matches else '✗'}")
        ax.text(0, 0.5, f"cluster {entry.cluster} ({entry.style or 'mixed'})\n"
                        f"top: {entry.top} (w = {entry.weight:.2f}){planted}",
                fontsize=8, va="center")
    fig.tight_layout()
    save_figure(fig, path, photographs=True)


def fig_power(power: pd.DataFrame, judges: list[str], simulated: set[str], path: Path
              ) -> None:
    """Issue 20's power view (measures/power.py): ECE of AVG, BPE and MMB and MMB's top-instruction
    recovery against validation pairs per cluster, one row of panels per judge."""
    fig = MplFigure(figsize=(7, 2.8 * len(judges)))
    for row, judge in enumerate(judges):
        curve = power[power["judge"] == judge]
        x = curve["per_cluster"].to_numpy()
        ax = fig.add_subplot(len(judges), 2, 2 * row + 1)
        for method in ("AVG", "BPE", "MMB"):
            ax.plot(x, curve[method], marker="o", ms=3, color=COLORS[method], label=method)
        ax.set_title(f"{display_name(judge, simulated)}: ECE ↓", fontsize=9)
        ax.legend(fontsize=7)
        right = fig.add_subplot(len(judges), 2, 2 * row + 2)
        right.plot(x, curve["recovery"], marker="o", ms=3, color=COLORS["MMB"])
        right.set_ylim(-0.05, 1.05)
        right.set_title(f"{display_name(judge, simulated)}: top = planted", fontsize=9)
        for axis in (ax, right):
            axis.set_xscale("symlog", linthresh=1)
            axis.set_xlabel("validation pairs per cluster (n_val / K)", fontsize=8)
    fig.tight_layout()
    save_figure(fig, path)
