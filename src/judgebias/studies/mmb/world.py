"""The simulated MMB judge without images: the same planted law as the ``sim`` backend
(sim.judge_logit, sim.slope, sim.position_bias), drawn as arrays, for simulations that
need thousands of worlds (benchmarks/mmb_power.py) and for fast tests. Role: a helper
of sim.py (the simulated judge), used by no step.

What is the same as the pipeline's default: each prompt group has one style and images of
quality q ~ U(0.05, 1); simulated humans prefer the first image with probability
sigmoid(gamma * dq) (data/synthetic.py); the judge's logit is sim.judge_logit with the judge's
own landscape. What is simpler: the judge perceives q exactly (no pixels), brightness is
the style's palette luma plus the magenta defects' pull (synthetic.MAX_DEFECT * (1 - q) of
the image), each test pair's human label is its own draw (the pipeline ranks a group once),
and the clusters are the styles, each pair's p(z | pair) putting `purity` on its own
style and the rest spread evenly (the pipeline's clusters come from embeddings).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from judgebias.studies.mmb.data.synthetic import DEFECT, MAX_DEFECT, STYLES
from judgebias.studies.mmb.measures.factorial import Split
from judgebias.studies.mmb.sim import JudgeTraits, expert_instruction, position_bias, slope

LUMA = np.array([0.299, 0.587, 0.114])


@dataclass
class SimulatedWorld:
    """One judge's arrays: the split (validation candidates, test pairs, clusters as
    (K, 0)), each test pair's group, and the planted best instruction (a column) per
    cluster (None where the pool has no expert for the style)."""

    split: Split
    test_groups: np.ndarray
    planted: list[int | None]


def landscape(traits: JudgeTraits, pool: Sequence[str], styles: Sequence[str]
              ) -> tuple[np.ndarray, np.ndarray]:
    """(slopes (instructions, styles), position biases (instructions,)) of the judge."""
    slopes = np.array([[slope(traits, text, style) for style in styles] for text in pool])
    return slopes, np.array([position_bias(traits, text) for text in pool])


def _groups(n_groups: int, per_group: int, n_styles: int, rng: np.random.Generator
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(style, first quality, second quality) of every pair of every group (all pairs)."""
    first, second = np.triu_indices(per_group, k=1)
    quality = rng.uniform(0.05, 1.0, (n_groups, per_group))
    style = np.repeat(np.arange(n_groups) % n_styles, len(first))
    return style, quality[:, first].ravel(), quality[:, second].ravel()


def simulate_world(traits: JudgeTraits, pool: Sequence[str], *, styles: Sequence[str],
                   n_test_groups: int, images_per_test_group: int, n_val_pairs: int,
                   purity: float, rng: np.random.Generator) -> SimulatedWorld:
    """A world of the module docstring: test groups with all their pairs, `n_val_pairs`
    validation candidates (one pair of a group each), p(A preferred) for every
    instruction, and responsibilities on K = len(styles) style clusters."""
    slopes, bias = landscape(traits, pool, styles)
    luma = np.array([np.mean(np.array(STYLES[s]) @ LUMA) / 255 for s in styles])
    defect = np.array(DEFECT) @ LUMA / 255

    def pairs(style: np.ndarray, qa: np.ndarray, qb: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        brighter = MAX_DEFECT * (qb - qa) * (defect - luma[style])  # first minus second
        logit = (slopes[:, style].T * (qa - qb)[:, None] + bias[None, :]
                 + traits.brightness_bias * brighter[:, None]
                 + traits.noise * rng.standard_normal((len(qa), len(pool))))
        humans = (rng.random(len(qa)) < expit(traits.gamma * (qa - qb))).astype(int)
        R = np.full((len(qa), len(styles)), (1 - purity) / max(len(styles) - 1, 1))
        R[np.arange(len(qa)), style] = purity if len(styles) > 1 else 1.0
        return expit(logit), humans, R

    test_style, qa, qb = _groups(n_test_groups, images_per_test_group, len(styles), rng)
    P_test, y_test, R_test = pairs(test_style, qa, qb)
    val_style = np.arange(n_val_pairs) % len(styles)
    P_pool, y_pool, R_pool = pairs(val_style, rng.uniform(0.05, 1.0, n_val_pairs),
                                   rng.uniform(0.05, 1.0, n_val_pairs))
    k = len(styles)
    texts = {str(i): text for i, text in enumerate(pool)}
    planted = [expert_instruction(traits, style, texts) for style in styles]
    return SimulatedWorld(
        split=Split(P_pool, y_pool, P_test, y_test, {(k, 0): R_pool}, {(k, 0): R_test}),
        test_groups=np.repeat(np.arange(n_test_groups),
                              images_per_test_group * (images_per_test_group - 1) // 2),
        planted=[None if p is None else int(p) for p in planted])
