"""Fig. D of seed 000: Phi-tilde with Pomms as an extra evaluator column."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from judgebias.report.figures import heatmap
from judgebias.studies.philautia.tables import read_matrix
from judgebias.study import simulated_models, study_models


def draw_heatmap(config: Mapping[str, Any], phi_tilde: str, out: Path) -> None:
    phi_t = read_matrix(phi_tilde)
    title = rf"$\tilde{{\Phi}}$ with Pomms as an evaluator, {config['pomms']['setting']}"
    heatmap(phi_t, out, title, diverging=True, highlight_diagonal=True,
            simulated=simulated_models(config, study_models(config, "philautia")))
