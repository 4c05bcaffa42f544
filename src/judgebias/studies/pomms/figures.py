"""Fig. D of seed 000: Phi-tilde with Pomms as an extra evaluator column."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from judgebias.report.figures import heatmap
from judgebias.study import simulated_models, study_models


def draw_heatmap(config: Mapping[str, Any], phi_tilde: str, out: Path) -> None:
    phi_t = pd.read_parquet(phi_tilde).set_index("generator")
    title = rf"$\tilde{{\Phi}}$ with Pomms as an evaluator, {config['pomms']['setting']}"
    heatmap(phi_t, out, title, diverging=True, highlight_diagonal=True,
            simulated=simulated_models(config, study_models(config, "philautia")))
