"""MMB's estimator inputs drawn at random: a validation pool and a test split."""

from __future__ import annotations

import numpy as np

from judgebias.studies.mmb.measures.factorial import Split


def random_split(rng: np.random.Generator, n_test: int = 80, n_pool: int = 40,
                 prompts: int = 6, ks: tuple[int, ...] = (1, 3)) -> Split:
    """Prompt probabilities, labels and cluster responsibilities (K in `ks`, clustering
    seeds 0 and 1); the first `n_test` rows are the test split, the rest the pool."""
    P = rng.uniform(0.02, 0.98, (n_test + n_pool, prompts))
    y = rng.integers(0, 2, n_test + n_pool)
    R = {}
    for k in ks:
        for c in range(2):
            logits = rng.normal(size=(n_test + n_pool, k)) * 2
            R[(k, c)] = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    return Split(P[n_test:], y[n_test:], P[:n_test], y[:n_test],
                 {kc: r[n_test:] for kc, r in R.items()},
                 {kc: r[:n_test] for kc, r in R.items()})
