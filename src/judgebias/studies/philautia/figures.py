"""Figures of one philautia setting: Fig. A (Phi), Fig. 4 (Phi-tilde) of seed 000, and
the philautia scores with their intervals."""

from __future__ import annotations

from collections.abc import Mapping, Set
from pathlib import Path

import pandas as pd

from judgebias.report.figures import heatmap, interval_plot
from judgebias.studies.philautia.tables import read_matrix


def draw_figures(sim: Set[str], setting: str, phi: Path, phi_tilde: Path,
                 philautia: Path, out: Mapping[str, Path]) -> None:
    """Fig. A (raw Phi) and Fig. 4 (Phi-tilde) of seed 000 for one setting, plus the
    philautia scores with their bootstrap intervals, to the paths `out` names
    (``tables.FIGURES``); the models in `sim` are flagged as simulated."""
    heatmap(read_matrix(phi), out["phi"], rf"$\Phi$ (mean score), {setting}",
            diverging=False, value_fmt=".3f", simulated=sim)
    heatmap(read_matrix(phi_tilde), out["phi_tilde"],
            rf"$\tilde{{\Phi}}$ (column- then row-standardised), {setting}",
            diverging=True, simulated=sim, highlight_diagonal=True)
    estimates = pd.read_parquet(philautia)
    interval_plot(estimates.rename(columns={"score": "estimate"}), out["philautia"],
                  f"Philautia scores with bootstrap intervals, {setting}", simulated=sim)
