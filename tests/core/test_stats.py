"""Tests for judgebias.stats.bootstrap: z-scoring, count weights, weighted means, bootstrap glue."""

from __future__ import annotations

import math

import numpy as np
import pytest

from judgebias.stats.bootstrap import (
    bootstrap_weighted_means,
    bootstrap_weights,
    counts_from_indices,
    standardise,
    weighted_nanmean,
)


def test_standardise_population_sd_by_hand() -> None:
    x = np.array([0.9, 0.7, 0.5])
    # mean 0.7, population sd sqrt(0.08 / 3)
    expected = [0.2 / math.sqrt(0.08 / 3), 0.0, -0.2 / math.sqrt(0.08 / 3)]
    np.testing.assert_allclose(standardise(x), expected, atol=1e-12)
    # sample sd sqrt(0.08 / 2) = 0.2
    np.testing.assert_allclose(standardise(x, ddof=1), [1.0, 0.0, -1.0], atol=1e-12)


def test_standardise_keeps_nan_and_ignores_it() -> None:
    x = np.array([[1.0, np.nan, 3.0], [1.0, 2.0, 3.0]])
    z = standardise(x, axis=-1)
    assert np.isnan(z[0, 1])
    np.testing.assert_allclose(z[0, [0, 2]], [-1.0, 1.0])


def test_counts_from_indices_matches_bincount_rows() -> None:
    rng = np.random.default_rng(0)
    idx = rng.integers(0, 7, size=(2, 3, 7))
    counts = counts_from_indices(idx, 7)
    assert counts.shape == (2, 3, 7)
    for a in range(2):
        for b in range(3):
            np.testing.assert_array_equal(counts[a, b], np.bincount(idx[a, b], minlength=7))
    # fewer draws than units (jackknife rows) still give n-length weights
    assert counts_from_indices(np.array([[0, 2]]), 4).tolist() == [[1.0, 0.0, 1.0, 0.0]]


def test_bootstrap_weights_are_multinomial_counts() -> None:
    w = bootstrap_weights(10, 50, np.random.default_rng(1))
    assert w.shape == (50, 10)
    np.testing.assert_array_equal(w.sum(axis=1), np.full(50, 10.0))


def test_weighted_nanmean_excludes_nan_and_equals_explicit_resample() -> None:
    values = np.array([[1.0, np.nan], [3.0, 4.0], [5.0, 6.0]])
    np.testing.assert_allclose(weighted_nanmean(np.ones((1, 3)), values), [[3.0, 5.0]])
    idx = np.array([0, 0, 1])  # unit 0 twice, unit 1 once
    w = counts_from_indices(idx[None], 3)
    explicit = np.nanmean(values[idx], axis=0)
    np.testing.assert_allclose(weighted_nanmean(w, values)[0], explicit)
    # a cell whose drawn units are all NaN is NaN, not 0
    only_first = counts_from_indices(np.array([[0, 0, 0]]), 3)
    assert np.isnan(weighted_nanmean(only_first, values)[0, 1])


def test_bootstrap_weighted_means_of_a_mean() -> None:
    rng = np.random.default_rng(2)
    values = rng.normal(size=(400, 2))
    summary = bootstrap_weighted_means(
        values, lambda means: means, n_resamples=500, rng=np.random.default_rng(3)
    )
    np.testing.assert_allclose(summary.estimate, values.mean(axis=0))
    assert summary.distribution.shape == (2, 500)
    assert np.all(summary.low < summary.estimate)
    assert np.all(summary.estimate < summary.high)
    # bootstrap se of a mean is close to sd / sqrt(n)
    np.testing.assert_allclose(summary.se, values.std(axis=0) / math.sqrt(400), rtol=0.15)


@pytest.mark.parametrize("method", ["basic", "BCa"])
def test_bootstrap_weighted_means_other_methods(method: str) -> None:
    values = np.random.default_rng(4).normal(size=(60, 3))
    summary = bootstrap_weighted_means(
        values, lambda means: means, n_resamples=200, method=method, rng=5
    )
    assert summary.low.shape == (3,)
    assert np.all(summary.low < summary.high)
