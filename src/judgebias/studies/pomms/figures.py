"""Fig. D of seed 000: Phi-tilde with Pomms as an extra evaluator column."""

from __future__ import annotations

from collections.abc import Set
from pathlib import Path

from judgebias.report.figures import heatmap
from judgebias.studies.philautia.tables import read_matrix


def draw_heatmap(setting: str, simulated: Set[str], phi_tilde: str, out: Path) -> None:
    """Fig. D for philautia setting `setting`; the models in `simulated` are flagged."""
    phi_t = read_matrix(phi_tilde)
    title = rf"$\tilde{{\Phi}}$ with Pomms as an evaluator, {setting}"
    heatmap(phi_t, out, title, diverging=True, highlight_diagonal=True, simulated=simulated)
