"""Simulated human annotators of the synthetic FRAME benchmark (seed 004 §4.1 "Human
Annotation", Tables 2 and 7; spec frame.md: "Human scores 1-5 (half points possible after
averaging two annotators)")."""

from __future__ import annotations

import numpy as np


def simulate_annotators(alignment: np.ndarray, rng: np.random.Generator, *,
                        sds: tuple[float, float] = (0.5, 0.7),
                        bias: tuple[float, float] = (0.0, 0.2)
                        ) -> tuple[np.ndarray, np.ndarray]:
    """Two annotators' integer scores 1-5 of images with true alignment in [0, 1]:
    ``clip(round(1 + 4 * alignment + bias_i + N(0, sd_i)), 1, 5)``; the human score of an
    item is their mean. With alignment spread over [0, 1] the defaults give an
    inter-annotator Pearson of about 0.8 (Table 7 reports 0.59-0.82)."""
    alignment = np.asarray(alignment, dtype=float)
    return tuple(np.clip(np.round(1 + 4 * alignment + b + rng.normal(0.0, sd, alignment.shape)),
                         1, 5) for sd, b in zip(sds, bias, strict=True))
