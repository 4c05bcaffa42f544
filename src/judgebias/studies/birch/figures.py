"""BIRCH's figures (seed 003), analogues of Fig. 1 (Acc_IDS vs Acc_CDS, Base vs BIRCH),
Fig. 3 (IB vs LB with the down-sampling spread), Fig. 4 (accuracy vs the share of the
correctness-driven subset), Fig. 5 (IRS per subset), Fig. 6 (IB with vs without the
image), Fig. 8 (IB and LB per domain) and Fig. 10 (Fig. 3 for the judge with the lowest
IB, the paper's Phi-4 panel). Bare matplotlib Figures written atomically."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure as MplFigure

from judgebias.report.figures import display_name, save_figure

BLUE, RED, GREY = "#1f77b4", "#d62728", "#7f7f7f"


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
             folder: Path) -> None:
    """Every figure of tables.FIGURES from the analysis tables (`observed_cds`: the data's
    own CDS share, marked on Fig. 4)."""
    fig1(result["table4"], simulated, folder / "fig1.png")
    fig3(result["bias"], simulated, folder / "fig3.png")
    fig4(result["cds_curve"], observed_cds, simulated, folder / "fig4.png")
    fig5(result["irs_subsets"], simulated, folder / "fig5.png")
    fig6(result["bias"], simulated, folder / "fig6.png")
    fig8(result["domains"], simulated, folder / "fig8.png")
    fig10(result["bias"], simulated, folder / "fig10.png")
