"""Seed 002 §6's significance procedure and Fig. 3's bands.

"For each n_prompt x n_sample configuration, we perform a paired permutation test on the
mean difference in performance between the best-performing model and each other method
... we apply the Benjamini-Yekutieli False Discovery Rate correction on a per-metric
basis"; bold = the best, or not significantly different from it. The pairing unit is a
replicate run whose seeds every method shares (spec mmb.md); the test flips the sign of
each unit's difference (exact enumeration when 2^R <= n_resamples, otherwise n_resamples
random flips with the observed one counted, p = (hits + 1) / (n + 1)), two-sided on the
mean difference. Fig. 3: "95% confidence intervals ... from bootstrapped sampling of the
mean": a percentile bootstrap of the mean over runs.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import pandas as pd
from statsmodels.stats.multitest import multipletests


def sign_flip_pvalue(differences: np.ndarray, n_resamples: int, rng: np.random.Generator
                     ) -> float:
    """Two-sided paired sign-flip permutation p-value of mean(differences) = 0."""
    d = np.asarray(differences, dtype=float)
    observed = abs(d.mean())
    if np.allclose(d, 0):
        return 1.0
    if 2 ** len(d) <= n_resamples:
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=len(d))))
        return float(np.mean(np.abs(signs @ d / len(d)) >= observed - 1e-12))
    signs = rng.choice((-1.0, 1.0), size=(n_resamples, len(d)))
    hits = int(np.sum(np.abs(signs @ d / len(d)) >= observed - 1e-12))
    return (hits + 1) / (n_resamples + 1)


def compare_to_best(frame: pd.DataFrame, *, metric: str, higher_is_better: bool,
                    cell: Sequence[str], method: str, unit: Sequence[str],
                    n_resamples: int = 10_000, alpha: float = 0.05, seed: int = 0
                    ) -> pd.DataFrame:
    """One row per (cell, method): mean, is_best, p_value (NaN for the best), p_adjusted
    (Benjamini-Yekutieli over every test of this metric) and bold."""
    rng = np.random.default_rng(seed)
    rows = []
    for key, group in frame.groupby(list(cell), sort=True):
        key = key if isinstance(key, tuple) else (key,)
        table = group.pivot_table(index=list(unit), columns=method, values=metric,
                                  aggfunc="mean")
        incomplete = table.columns[table.isna().any()].tolist()
        if incomplete:
            raise ValueError(f"{metric}: methods {incomplete} lack some replicate units in "
                             f"cell {dict(zip(cell, key, strict=True))}")
        means = table.mean()
        best = means.idxmax() if higher_is_better else means.idxmin()
        for name in table.columns:
            p = np.nan if name == best else sign_flip_pvalue(
                (table[best] - table[name]).to_numpy(), n_resamples, rng)
            rows.append({**dict(zip(cell, key, strict=True)), method: name,
                         "mean": float(means[name]), "is_best": name == best, "p_value": p,
                         "n_units": len(table)})
    out = pd.DataFrame(rows)
    tested = out["p_value"].notna()
    out["p_adjusted"] = np.nan
    if tested.any():
        out.loc[tested, "p_adjusted"] = multipletests(out.loc[tested, "p_value"],
                                                      method="fdr_by")[1]
    out["bold"] = out["is_best"] | (out["p_adjusted"] >= alpha)
    return out
