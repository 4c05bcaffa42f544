"""Bands of MMB's error-coverage curves (studies/mmb/measures/bands.py): hand-computed cases; the
coverage simulation is benchmarks/mmb_bands.py."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from judgebias.studies.mmb.measures.bands import crossed_bootstrap_band, unit_curves


def test_crossed_band_by_hand():
    # two training seeds with curves 0 and 1 (the same for both sampling seeds): a
    # resample of the training seeds averages to 0, 1/2 or 1 with probabilities 1/4, 1/2,
    # 1/4, so the 95 % percentile band is [0, 1] around the mean 1/2.
    curves = np.array([[[0.0], [0.0]], [[1.0], [1.0]]])
    mean, low, high = crossed_bootstrap_band(curves, n_boot=4000, seed=1)
    assert (mean[0], low[0], high[0]) == (0.5, 0.0, 1.0)


def test_a_run_repeated_over_training_seeds_counts_once():
    # AVG ignores D_val: its 3 runs per sampling seed are one curve. The crossed band is
    # that of the 200 sampling seeds alone; resampling the 600 runs as independent makes
    # it about sqrt(3) narrower.
    rng = np.random.default_rng(0)
    per_sampling = rng.normal(size=(1, 200, 4))
    curves = np.repeat(per_sampling, 3, axis=0)
    _, low, high = crossed_bootstrap_band(curves, n_boot=2000)
    _, s_low, s_high = crossed_bootstrap_band(per_sampling, n_boot=2000)
    # the 600 runs as independent: one "training seed" holding every run
    _, i_low, i_high = crossed_bootstrap_band(curves.reshape(1, -1, 4), n_boot=2000)
    np.testing.assert_allclose(high - low, s_high - s_low, rtol=0.1)
    np.testing.assert_allclose((high - low) / (i_high - i_low), np.sqrt(3), rtol=0.15)


def test_unit_curves_average_clustering_seeds_and_need_a_crossed_design():
    rows = pd.DataFrame({"train_seed": [0, 0, 0, 1], "sampling_seed": [0, 0, 1, 0],
                         "error_coverage": [np.array([0.0, 1.0]), np.array([1.0, 1.0]),
                                            np.array([0.5, 0.5]), np.array([0.2, 0.2])]})
    with pytest.raises(ValueError, match="every"):
        unit_curves(rows)
    full = pd.concat([rows, pd.DataFrame({"train_seed": [1], "sampling_seed": [1],
                                          "error_coverage": [np.array([0.3, 0.4])]})])
    grid = unit_curves(full)
    assert grid.shape == (2, 2, 2)
    np.testing.assert_allclose(grid[0, 0], [0.5, 1.0])  # two clustering seeds averaged
    np.testing.assert_allclose(grid[1, 1], [0.3, 0.4])
