"""Bands of the error-coverage curves (seed 002 Fig. 3 and Appendix D Fig. 5: "95%
confidence intervals ... from bootstrapped sampling of the mean").

A curve's replicate runs are not independent draws: every (training seed, sampling seed)
pair is run, so runs sharing a training seed share D_val and runs sharing a sampling seed
share the prompt subset (AVG and STD ignore D_val, so their runs with one sampling seed
are the same curve). Resampling runs as if independent counts each shared draw several
times, and the band is too narrow. The band here resamples the two seed factors
independently (the pigeonhole bootstrap of a crossed design, Owen 2007, "The pigeonhole
bootstrap", Ann. Appl. Stat. 1(2)): draw training seeds and sampling seeds with
replacement, average the curves of the crossed runs; percentile band. Its target is the
mean curve over the seeds' distribution, the data (and the judged probabilities) fixed.
Owen's variance is conservative (it counts the interaction term more than once); with
the paper's 3 training seeds its resampling of that factor is coarse.
benchmarks/mmb_bands.py measures the coverage of both bands on planted worlds.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def unit_curves(rows: pd.DataFrame) -> np.ndarray:
    """(training seeds, sampling seeds, coverages): each run's curve, averaged over
    clustering seeds (MMB) within a run. Every (training seed, sampling seed) must be
    present: the design is crossed."""
    mean = rows.groupby(["train_seed", "sampling_seed"])["error_coverage"].apply(
        lambda curves: np.mean(np.stack(curves.to_numpy()), axis=0))
    seeds = [sorted(mean.index.get_level_values(i).unique()) for i in (0, 1)]
    if len(mean) != len(seeds[0]) * len(seeds[1]):
        raise ValueError("error-coverage curves need every (training seed, sampling seed)")
    return np.stack(mean.loc[[(t, s) for t in seeds[0] for s in seeds[1]]].to_numpy()
                    ).reshape(len(seeds[0]), len(seeds[1]), -1)


def crossed_bootstrap_band(curves: np.ndarray, *, n_boot: int = 1000, ci: float = 0.95,
                           seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean, low, high) per coverage from `curves` (T, S, G): percentile band of the
    mean over training seeds and sampling seeds resampled independently (module
    docstring)."""
    curves = np.asarray(curves, dtype=float)
    n_train, n_sampling, _ = curves.shape
    rng = np.random.default_rng(seed)
    means = []
    for chunk in np.array_split(np.arange(n_boot), max(1, n_boot // 100)):
        train = rng.integers(n_train, size=(len(chunk), n_train))
        sampling = rng.integers(n_sampling, size=(len(chunk), n_sampling))
        means.append(curves[train[:, :, None], sampling[:, None, :]].mean(axis=(1, 2)))
    means = np.concatenate(means)
    tail = (1 - ci) / 2 * 100
    return (curves.mean(axis=(0, 1)), np.percentile(means, tail, axis=0),
            np.percentile(means, 100 - tail, axis=0))
