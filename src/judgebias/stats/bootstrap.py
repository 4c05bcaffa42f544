"""Small statistical helpers shared by the judge-bias studies.

Only what scipy does not already offer lives here: z-scoring is `scipy.stats.zscore`,
confidence intervals come from `scipy.stats.bootstrap`, permutation tests from
`scipy.stats.permutation_test`. What this module adds is the glue that lets those scipy
routines run on *weighted means over a shared set of units* (images), which is the shape
of every per-cell statistic in the studies: a value for each (image, cell), NaN where the
judge's answer failed, and a statistic computed from the per-cell means.

The key device is that a case-resampling bootstrap replicate of "the mean over units" is
the same as a weighted mean with multinomial count weights (how often each unit was
drawn). That turns B replicates of an (N, K) table into one matrix product
``W (B, N) @ values (N, K)`` instead of gathering a (B, N, K) array.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import stats

BootstrapMethod = Literal["percentile", "basic", "BCa"]


def standardise(x: np.ndarray, axis: int = -1, ddof: int = 0) -> np.ndarray:
    """Z-score `x` along `axis`, ignoring NaN entries (they stay NaN).

    Thin wrapper on `scipy.stats.zscore(..., nan_policy="omit")` so every study uses the
    same missing-value and sd conventions. ``ddof=0`` is the population sd (scipy's and
    sklearn's StandardScaler default); ``ddof=1`` the sample sd. A slice with zero spread
    has no z-scores and comes back NaN (scipy warns about it).
    """
    return stats.zscore(np.asarray(x, dtype=float), axis=axis, ddof=ddof, nan_policy="omit")


def counts_from_indices(indices: np.ndarray, n: int) -> np.ndarray:
    """Turn resampled unit indices ``(..., n_draws)`` into count weights ``(..., n)``.

    Row r of the result says how many times each of the `n` units appears in row r of
    `indices`. A bootstrap resample drawn as indices (what `scipy.stats.bootstrap` hands a
    statistic) thus becomes the weight vector of the equivalent weighted mean. Vectorised
    with one `np.bincount` over offset indices rather than a Python loop over rows.
    """
    indices = np.asarray(indices, dtype=np.intp)
    lead = indices.shape[:-1]
    flat = indices.reshape(-1, indices.shape[-1])
    n_rows = flat.shape[0]
    offset = (np.arange(n_rows, dtype=np.intp)[:, None] * n + flat).ravel()
    counts = np.bincount(offset, minlength=n_rows * n)
    return counts.reshape(*lead, n).astype(float)


def bootstrap_weights(n: int, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Multinomial count weights ``(n_boot, n)`` of `n_boot` case-resampling bootstraps.

    Drawing n units with replacement is Multinomial(n, 1/n each); each row sums to `n`.
    For studies that run their own replicate loop instead of `bootstrap_weighted_means`.
    """
    return rng.multinomial(n, np.full(n, 1.0 / n), size=n_boot).astype(float)


def weighted_nanmean(weights: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Weighted mean over axis 0 of `values`, skipping NaN, for each row of `weights`.

    ``weights`` is ``(B, N)``, ``values`` is ``(N, ...)``; returns ``(B, ...)`` with
    ``sum_k w_bk v_k / sum_k w_bk [v_k valid]``. NaN values are excluded (never imputed),
    so a failed answer lowers the cell's count, not its mean. A cell with no valid value
    (or zero total weight on its valid values) is NaN.
    """
    weights = np.atleast_2d(np.asarray(weights, dtype=float))
    values = np.asarray(values, dtype=float)
    n = values.shape[0]
    flat = values.reshape(n, -1)
    valid = ~np.isnan(flat)
    numerator = weights @ np.where(valid, flat, 0.0)
    denominator = weights @ valid.astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = numerator / denominator
    mean[denominator == 0] = np.nan
    return mean.reshape(weights.shape[0], *values.shape[1:])


@dataclass(frozen=True)
class BootstrapSummary:
    """Point estimate, interval and spread of a vector statistic from a bootstrap.

    ``distribution`` is ``(K, n_resamples)`` (scipy's layout: resamples last); ``se`` is
    the sd of that distribution (ddof=1, as `scipy.stats.bootstrap`'s standard_error).
    """

    estimate: np.ndarray
    low: np.ndarray
    high: np.ndarray
    se: np.ndarray
    distribution: np.ndarray
    method: str
    confidence_level: float
    n_resamples: int


def bootstrap_weighted_means(
    values: np.ndarray,
    statistic: Callable[[np.ndarray], np.ndarray],
    *,
    n_resamples: int = 1000,
    confidence_level: float = 0.95,
    method: BootstrapMethod = "percentile",
    rng: np.random.Generator | int | None = None,
    batch: int | None = None,
) -> BootstrapSummary:
    """Bootstrap a statistic of NaN-aware per-cell means, resampling the units (axis 0).

    ``values`` is ``(N, ...)`` (e.g. images x generators x evaluators); ``statistic`` maps
    a stack of mean tables ``(b, ...)`` to ``(b, K)``. Every cell is resampled with the
    *same* unit draw, because all cells share the units (an image is scored in every
    cell), so between-cell dependence is kept.

    Why this shape rather than calling `scipy.stats.bootstrap` on ``values`` directly:
    scipy's `bootstrap` treats every non-`axis` dimension of a sample as an independent
    batch of scalar statistics and gathers ``sample[..., indices]``, i.e. a
    ``(K, B, N)`` array (5 GB for 4,500 images x 144 cells x 1,000 resamples), and it cannot
    hand a statistic the whole table of a replicate. So scipy resamples the index vector
    ``arange(N)`` (a one-sample bootstrap, the paired-resampling device scipy itself uses
    for ``paired=True``) with a vectorised statistic that converts each resampled index
    row to multinomial counts (`counts_from_indices`) and evaluates the weighted means as
    one matrix product (`weighted_nanmean`). scipy keeps doing the resampling, the
    interval (percentile / basic / BCa; BCa's jackknife also goes through the count form)
    and the standard error.
    """
    values = np.asarray(values, dtype=float)
    n = values.shape[0]

    def _statistic(indices: np.ndarray, axis: int = -1) -> np.ndarray:
        idx = np.moveaxis(np.asarray(indices), axis, -1)
        lead = idx.shape[:-1]
        weights = counts_from_indices(idx, n).reshape(-1, n)
        out = np.asarray(statistic(weighted_nanmean(weights, values)), dtype=float)
        out = out.reshape(*lead, -1)
        return np.moveaxis(out, -1, 0)

    result = stats.bootstrap(
        (np.arange(n),),
        _statistic,
        n_resamples=n_resamples,
        batch=batch,
        vectorized=True,
        confidence_level=confidence_level,
        method=method,
        rng=rng,
    )
    means = weighted_nanmean(np.ones((1, n)), values)
    estimate = np.asarray(statistic(means), dtype=float).reshape(-1)
    return BootstrapSummary(
        estimate=estimate,
        low=np.asarray(result.confidence_interval.low, dtype=float).reshape(-1),
        high=np.asarray(result.confidence_interval.high, dtype=float).reshape(-1),
        se=np.asarray(result.standard_error, dtype=float).reshape(-1),
        distribution=np.asarray(result.bootstrap_distribution, dtype=float).reshape(
            estimate.size, -1
        ),
        method=method,
        confidence_level=confidence_level,
        n_resamples=n_resamples,
    )
