"""Score tensors with a planted answer, and the long score table the pipeline writes."""

from __future__ import annotations

import numpy as np
import pandas as pd


def long_table(tensor: np.ndarray, models: list[str]) -> pd.DataFrame:
    """(N, M, M) tensor -> long score table, as the pipeline writes it."""
    n, m, _ = tensor.shape
    k, i, j = np.meshgrid(np.arange(n), np.arange(m), np.arange(m), indexing="ij")
    return pd.DataFrame(
        {
            "image_id": [f"img{x:05d}" for x in k.ravel()],
            "generator": np.array(models)[i.ravel()],
            "evaluator": np.array(models)[j.ravel()],
            "score": tensor.ravel(),
        }
    )


def planted(n_images: int, n_models: int = 8, bias: float = 0.06, seed: int = 0) -> np.ndarray:
    """S_kij = a_j + b_j (q_i + u_ki) + bias [i = j = 0] + noise, clipped to [0, 1].

    Evaluators differ in leniency a_j and spread b_j, generators in quality q_i, and only
    model 0 favours its own captions.
    """
    rng = np.random.default_rng(seed)
    a = rng.uniform(0.4, 0.6, n_models)
    b = rng.uniform(0.5, 1.5, n_models)
    q = rng.normal(0.0, 0.1, n_models)
    u = rng.normal(0.0, 0.1, (n_images, n_models))
    noise = rng.normal(0.0, 0.05, (n_images, n_models, n_models))
    s = a[None, None, :] + b[None, None, :] * (q[None, :, None] + u[:, :, None]) + noise
    s[:, 0, 0] += bias
    return np.clip(s, 0.0, 1.0)
