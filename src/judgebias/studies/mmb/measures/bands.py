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
Owen's variance is conservative (it counts the interaction term more than once), but
with the paper's 3 training seeds the resampling of that factor is coarse (a bootstrap
of 3 draws has (3 - 1) / 3 of their variance and a 3-point percentile distribution), so
methods whose curve depends on D_val still undercover.

Coverage (benchmarks/mmb_bands.py, defaults: 2,000 replicates of 3 training x 20
sampling seeds drawn from a population of 20 x 100, n_boot 200; pointwise, Monte-Carlo
error >= 0.005; 1,642 s on 2 shared cores):

=========  ======  =============  ===================
noise      method  crossed seeds  runs as independent
=========  ======  =============  ===================
gaussian   AVG     0.951          0.770
gaussian   STD     0.903          0.746
gaussian   BEST    0.888          0.620
gaussian   BPE     0.855          0.540
gaussian   MMB     0.908          0.635
skewed     AVG     0.945          0.754
skewed     STD     0.937          0.750
skewed     BEST    0.837          0.537
skewed     BPE     0.884          0.619
skewed     MMB     0.908          0.647
discrete   AVG     0.948          0.758
discrete   STD     0.944          0.752
discrete   BEST    0.892          0.633
discrete   BPE     0.870          0.562
discrete   MMB     0.897          0.596
=========  ======  =============  ===================

So the crossed band reaches 90-95 % where D_val plays no part (AVG, STD) and 84-91 % where
it does: better than resampling runs (54-77 %), still short. Not done: an interval from
the crossed random-effects variance (MS_T + MS_S - MS_E) / (T S) with Satterthwaite
degrees of freedom, which accounts for the few training seeds.
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
    chunks = []
    for chunk in np.array_split(np.arange(n_boot), max(1, n_boot // 100)):
        train = rng.integers(n_train, size=(len(chunk), n_train))
        sampling = rng.integers(n_sampling, size=(len(chunk), n_sampling))
        chunks.append(curves[train[:, :, None], sampling[:, None, :]].mean(axis=(1, 2)))
    means = np.concatenate(chunks)
    tail = (1 - ci) / 2 * 100
    return (curves.mean(axis=(0, 1)), np.percentile(means, tail, axis=0),
            np.percentile(means, 100 - tail, axis=0))
