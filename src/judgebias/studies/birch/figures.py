"""BIRCH's figures (seed 003), analogues of Fig. 1 (Acc_IDS vs Acc_CDS, Base vs BIRCH),
Fig. 3 (IB vs LB with the down-sampling spread), Fig. 4 (accuracy vs the share of the
correctness-driven subset), Fig. 5 (IRS per subset), Fig. 6 (IB with vs without the
image), Fig. 8 (IB and LB per domain) and Fig. 10 (Fig. 3 for the judge with the lowest
IB, the paper's Phi-4 panel) and Fig. 11 (per-domain accuracy with vs without the image,
the supplement's). Bare matplotlib Figures written atomically; Fig. 4's data as DVC plots
(`write_curves`)."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure as MplFigure
from matplotlib.lines import Line2D

from judgebias.report.figures import display_name, save_figure
from judgebias.studies.birch.tables import CURVES
from judgebias.workflow.dvcviews import write_curve

BLUE, RED, GREY = "#1f77b4", "#d62728", "#7f7f7f"
TAB20 = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
         "#7f7f7f", "#bcbd22", "#17becf", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896")


def _bars(ax, labels: list[str], series: Mapping[str, tuple[np.ndarray, str]],
          errors: Mapping[str, np.ndarray] | None = None) -> None:
    x = np.arange(len(labels))
    width = 0.8 / max(len(series), 1)
    for i, (name, (values, color)) in enumerate(series.items()):
        err = None if errors is None else errors.get(name)
        ax.bar(x + (i - (len(series) - 1) / 2) * width, values, width, color=color,
               label=name, yerr=err, capsize=3)
    ax.set_xticks(x, labels, fontsize=8, rotation=20, ha="right")
    ax.axhline(0, color="black", linewidth=0.6)
    ax.legend(fontsize=7, ncol=len(series), loc="lower center", bbox_to_anchor=(0.5, 1.0),
              frameon=False)


def _judges(frame: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(frame["judge"])) if not frame.empty else []


def fig1(table4: pd.DataFrame, simulated: set[str], path: Path) -> None:
    """Acc_IDS and Acc_CDS per judge, Base next to BIRCH (Fig. 1)."""
    judges = _judges(table4)
    wide = table4.set_index(["judge", "method"])
    fig = MplFigure(figsize=(max(4, 1.4 * len(judges) + 2), 3.2))
    ax = fig.add_subplot(1, 1, 1)
    series = {}
    for method, shade in (("base", 1.0), ("birch", 0.55)):
        for subset, color in (("acc_ids", BLUE), ("acc_cds", RED)):
            values = np.array([wide[subset].get((j, method), np.nan) for j in judges]) * 100
            series[f"{method}: {subset[4:].upper()}"] = (values, color if shade == 1.0
                                                         else _lighter(color))
    _bars(ax, [display_name(j, simulated) for j in judges], series)
    ax.set_ylabel("accuracy (%)", fontsize=9)
    save_figure(fig, path)


def _lighter(color: str) -> str:
    rgb = np.array([int(color[i:i + 2], 16) for i in (1, 3, 5)])
    mixed = (rgb + (255 - rgb) * 0.55).astype(int)
    return "#" + "".join(f"{c:02x}" for c in mixed)


def _ib_lb(ax, bias: pd.DataFrame, judges: list[str], simulated: set[str]) -> None:
    base = bias[bias["variant"] == "base"].set_index(["judge", "statistic"])
    series, errors = {}, {}
    for statistic, color in (("IB", BLUE), ("LB", GREY)):
        series[statistic] = (np.array([base["ds_mean"].get((j, statistic), np.nan)
                                       for j in judges]) * 100, color)
        errors[statistic] = np.array([base["ds_sd"].get((j, statistic), np.nan)
                                      for j in judges]) * 100
    _bars(ax, [display_name(j, simulated) for j in judges], series, errors)
    ax.set_ylabel("bias (%), mean ± sd of 160 draws", fontsize=8)


def fig3(bias: pd.DataFrame, simulated: set[str], path: Path) -> None:
    """IB vs LB (Base), down-sampled mean with the sd as error bar (Fig. 3)."""
    judges = _judges(bias)
    fig = MplFigure(figsize=(max(4, 1.2 * len(judges) + 2), 3.2))
    _ib_lb(fig.add_subplot(1, 1, 1), bias, judges, simulated)
    save_figure(fig, path)


def fig10(bias: pd.DataFrame, simulated: set[str], path: Path) -> None:
    """Fig. 3 for the judge with the lowest IB (the paper's Fig. 10, Phi-4)."""
    base = bias[(bias["variant"] == "base") & (bias["statistic"] == "IB")]
    judges = [] if base.empty else [str(base.sort_values("value")["judge"].iloc[0])]
    fig = MplFigure(figsize=(3.5, 3.2))
    _ib_lb(fig.add_subplot(1, 1, 1), bias, judges, simulated)
    save_figure(fig, path)


def fig4(curve: pd.DataFrame, observed: float, simulated: set[str], path: Path) -> None:
    """Accuracy vs the CDS ratio: down-sampled mean (points) and the analytic line
    r Acc_CDS + (1 - r) Acc_IDS (Fig. 4; spec birch.md)."""
    fig = MplFigure(figsize=(5, 3.4))
    ax = fig.add_subplot(1, 1, 1)
    for judge in _judges(curve):
        part = curve[curve["judge"] == judge].groupby("target_ratio")
        mean, analytic = part["accuracy"].mean() * 100, part["analytic"].first() * 100
        line = ax.plot(mean.index, mean.to_numpy(), "o", label=display_name(judge, simulated))
        ax.plot(analytic.index, analytic.to_numpy(), "-", color=line[0].get_color(),
                linewidth=0.8)
    if np.isfinite(observed):
        ax.axvline(observed, color=GREY, linestyle=":", linewidth=0.8)
    ax.axhline(50, color="black", linewidth=0.5)
    ax.set_xlabel("share of correctness-driven pairs (CDS)", fontsize=9)
    ax.set_ylabel("accuracy (%)", fontsize=9)
    ax.legend(fontsize=7)
    save_figure(fig, path)


def cds_share_rows(curve: pd.DataFrame, judge: str) -> pd.DataFrame:
    """Fig. 4's data for `judge` as DVC plots it (tables.CURVES["cds_share"]): per target
    CDS ratio, the mean accuracy over the down-sampling draws and the analytic line. A
    dataset too small to down-sample has no curve (no rows, no columns): then no rows."""
    if curve.empty:
        return pd.DataFrame(columns=["target_ratio", "accuracy", "analytic"])
    part = curve[curve["judge"] == judge].groupby("target_ratio")
    return pd.DataFrame({"accuracy": part["accuracy"].mean(),
                         "analytic": part["analytic"].first()}).reset_index()


def write_curves(result: Mapping[str, pd.DataFrame], paths: Mapping[str, Path]) -> None:
    """Fig. 4's curve of each judge in `paths` (by judge) as its CSV
    (judgebias.workflow.dvcviews)."""
    for judge, path in paths.items():
        write_curve(cds_share_rows(result["cds_curve"], judge), CURVES["cds_share"], path)


def fig5(irs: pd.DataFrame, simulated: set[str], path: Path) -> None:
    """IRS on the informativeness- and correctness-driven subsets (Fig. 5)."""
    judges = _judges(irs)
    wide = irs.set_index(["judge", "subset"])["irs"] if not irs.empty else pd.Series()
    fig = MplFigure(figsize=(max(4, 1.2 * len(judges) + 2), 3.2))
    ax = fig.add_subplot(1, 1, 1)
    _bars(ax, [display_name(j, simulated) for j in judges],
          {s: (np.array([wide.get((j, s), np.nan) for j in judges]) * 100, c)
           for s, c in (("IDS", BLUE), ("CDS", RED))})
    ax.set_ylabel("IRS (%)", fontsize=9)
    save_figure(fig, path)


def fig6(bias: pd.DataFrame, simulated: set[str], path: Path) -> None:
    """IB with and without the image (Fig. 6)."""
    judges = _judges(bias)
    ib = bias[bias["statistic"] == "IB"].set_index(["judge", "variant"])["value"]
    fig = MplFigure(figsize=(max(4, 1.2 * len(judges) + 2), 3.2))
    ax = fig.add_subplot(1, 1, 1)
    _bars(ax, [display_name(j, simulated) for j in judges],
          {name: (np.array([ib.get((j, v), np.nan) for j in judges]) * 100, c)
           for name, v, c in (("with image", "base", BLUE), ("no image", "no_image", GREY))})
    ax.set_ylabel("IB (%)", fontsize=9)
    save_figure(fig, path)


def fig8(domains: pd.DataFrame, simulated: set[str], path: Path) -> None:
    """IB and LB per domain, one panel per judge (Fig. 8)."""
    judges = _judges(domains)
    fig = MplFigure(figsize=(3.4 * max(len(judges), 1), 3.2))
    for i, judge in enumerate(judges):
        ax = fig.add_subplot(1, len(judges), i + 1)
        part = domains[domains["judge"] == judge]
        _bars(ax, part["domain"].astype(str).tolist(),
              {"IB": (part["ib"].to_numpy(dtype=float) * 100, BLUE),
               "LB": (part["lb"].to_numpy(dtype=float) * 100, GREY)})
        ax.set_xlabel(display_name(judge, simulated), fontsize=9)
    save_figure(fig, path)


def draw_all(result: Mapping[str, pd.DataFrame], observed_cds: float, simulated: set[str],
             paths: Mapping[str, Path]) -> None:
    """Every figure of tables.FIGURES from the analysis tables, each to its path in
    `paths` (by name; `observed_cds`: the data's own CDS share, marked on Fig. 4)."""
    fig1(result["table4"], simulated, paths["fig1"])
    fig3(result["bias"], simulated, paths["fig3"])
    fig4(result["cds_curve"], observed_cds, simulated, paths["fig4"])
    fig5(result["irs_subsets"], simulated, paths["fig5"])
    fig6(result["bias"], simulated, paths["fig6"])
    fig8(result["domains"], simulated, paths["fig8"])
    fig10(result["bias"], simulated, paths["fig10"])


def fig11(table: pd.DataFrame, simulated: set[str], path: Path) -> None:
    """Seed 003 Fig. 11: one panel per judge, a point per domain at (accuracy with the
    image, accuracy without), its area the domain's pairs; above the diagonal the image
    hurt, below it helped. Domains are told apart by colour and named in one legend."""
    judges = list(dict.fromkeys(table["judge"])) or [""]
    domains = list(dict.fromkeys(table["domain"]))
    colours = dict(zip(domains, itertools.cycle(TAB20), strict=False))
    columns = min(2, len(judges))
    rows = -(-len(judges) // columns)
    fig = MplFigure(figsize=(3.4 * columns, 3.1 * rows + 0.3 * (len(domains) // 3 + 1)))
    largest = max(float(table["n_pairs"].max()), 1.0) if not table.empty else 1.0
    for i, judge in enumerate(judges, start=1):
        ax = fig.add_subplot(rows, columns, i)
        ax.fill_between([0, 100], [0, 100], [0, 0], color="#2ca02c", alpha=0.08)
        ax.fill_between([0, 100], [0, 100], [100, 100], color="#d62728", alpha=0.08)
        ax.plot([0, 100], [0, 100], color="black", linewidth=0.6)
        for _, row in table[table["judge"] == judge].iterrows():
            ax.scatter(row["acc_image"] * 100, row["acc_no_image"] * 100,
                       s=20 + 200 * row["n_pairs"] / largest, color=colours[row["domain"]],
                       alpha=0.75, label=str(row["domain"]))
        ax.set(xlim=(0, 100), ylim=(0, 100), aspect="equal")
        ax.set_title(display_name(judge, simulated), fontsize=9)
        ax.set_xlabel("accuracy with image (%)", fontsize=8)
        ax.set_ylabel("accuracy without image (%)", fontsize=8)
        ax.tick_params(labelsize=8)
    handles = [Line2D([], [], marker="o", linestyle="", color=colours[d], label=str(d))
               for d in domains]
    if handles:
        fig.legend(handles=handles, loc="lower center", ncol=min(3, len(handles)),
                   fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.1 * (len(domains) // 3 + 1) / rows, 1, 1))
    save_figure(fig, path)
