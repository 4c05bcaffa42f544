"""Simulated human annotators of the synthetic FRAME benchmark (seed 004 §4.1 "Human
Annotation", Appendix A, Tables 2 and 7, /work/shared/seeds/004_eb2847ac5d078cb2.txt; spec
frame.md: "Human scores 1-5 (half points possible after averaging two annotators)").

Two co-authors scored each image's alignment with its instruction (Appendix A). Ours score
the true alignment the offline renderer knows (judgebias.studies.frame.scene.alignment), each
with an own leniency (`bias`) and noise (`sds`), so that the simulated judges' correlation
with "humans" (Table 4's analogue) is measured against a noisy reference, as in the paper.

Role: a helper of data.py (stage 4 of the synthetic benchmark).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def simulate_annotators(alignment: np.ndarray, rng: np.random.Generator, *,
                        sds: Sequence[float] = (0.5, 0.7),
                        bias: Sequence[float] = (0.0, 0.2)
                        ) -> tuple[np.ndarray, np.ndarray]:
    """Each annotator's integer scores 1-5 of images with true alignment in [0, 1]:
    ``clip(round(1 + 4 * alignment + bias_i + N(0, sd_i)), 1, 5)``, one array per annotator
    (Appendix A: two annotators). The human score of an item is their mean, so half points
    occur (spec).

    The defaults aim at Table 7's inter-annotator agreement (Pearson 0.62-0.82 across
    domains, "within 0.6-0.8", Appendix A): with alignment spread uniformly over [0, 1] the
    two annotators correlate at about 0.77 (tests/frame/test_frame_scene.py checks the range
    0.59-0.82). The agreement falls when the alignments spread less, as it does in the
    paper's domains with fewer extreme scores (Table 2).
    """
    if len(sds) != 2 or len(bias) != 2:
        raise ValueError(f"two annotators: one sd and one bias each, got {sds} and {bias}")
    alignment = np.asarray(alignment, dtype=float)
    if np.any((alignment < 0) | (alignment > 1)):
        raise ValueError("alignment must lie in [0, 1]")
    first, second = (np.clip(np.round(1 + 4 * alignment + b
                                      + rng.normal(0.0, sd, alignment.shape)), 1, 5)
                     for sd, b in zip(sds, bias, strict=True))
    return first, second
