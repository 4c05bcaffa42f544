"""MMB's inputs for tests: an estimator's validation pool and test split drawn at random,
and a one-pair table with real image files for the judge jobs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from judgebias.io.artifacts import write_table
from judgebias.io.filedigest import file_sha256
from judgebias.studies.mmb.data import synthetic
from judgebias.studies.mmb.measures.factorial import Split
from judgebias.studies.mmb.params import builtin_pool
from judgebias.studies.mmb.tables import PAIRS


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


def judge_inputs(root: Path) -> tuple[str, str]:
    """(pair table, instruction pool) files under `root`: one test pair of two rendered
    neon sci-fi images (qualities 0.9 and 0.2) and the first 3 built-in instructions."""
    images = []
    for name, quality, seed in (("a", 0.9, 1), ("b", 0.2, 2)):
        path = root / f"{name}.png"
        path.write_bytes(synthetic.png_bytes(synthetic.render("neon sci-fi", quality, 32,
                                                              seed)))
        images.append(str(path))
    pairs = pd.DataFrame([{"pair_id": "p1", "group": "g", "prompt": "a neon city",
                           "image_a": images[0], "image_b": images[1], "preference": 1.0,
                           "split": "test", "fold": None, "source": "synthetic",
                           "style_a": None, "style_b": None,
                           "image_a_sha256": file_sha256(images[0]),
                           "image_b_sha256": file_sha256(images[1])}])
    pairs_path, pool_path = root / "pairs.parquet", root / "pool.yaml"
    write_table(pairs, pairs_path, PAIRS)
    pool_path.write_text(yaml.safe_dump(builtin_pool()[:3]))
    return str(pairs_path), str(pool_path)
