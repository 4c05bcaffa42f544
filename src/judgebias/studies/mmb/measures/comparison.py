"""Does MMB beat AVG and BPE for this judge? A comparison whose uncertainty includes the
test pairs (issue 20, item 8).

Why a second test next to the paper's. Seed 002 §6 bolds a method when a paired
permutation test over replicate runs (training x sampling seeds) finds no difference from
the best (significance.py). Every replicate run is scored on the *same* test pairs, so
that test conditions on them: it asks whether MMB beats AVG on these 300 pairs, and a
difference that comes from which pairs happened to be drawn reads as a finding. A user
wants to know whether MMB is better on pairs like these, so here the test groups (a
prompt's images; HPSv2's unit of sampling, and its pairs share images) are the sample.

The verdict: Brier score (Brier 1950), ``(p - y)^2`` per test pair. It is strictly
proper, and its reliability term (Murphy 1973) is the calibration that ECE bins, so a
better-calibrated predictor of equal discrimination scores lower; unlike binned ECE it is
a mean of per-pair terms, so its difference has a plain sampling law. Estimand:
``D = E[Brier(MMB) - Brier(base)]`` per pair, each pair's score averaged over the
method's replicate runs (MMB also over clustering seeds, as Tables 1-2 average them);
estimate: the mean over test groups of each group's mean pair difference (groups count
equally: they are the independent units). Test and interval: one-sample t over the G
group differences (Student 1908; scipy.stats.ttest_1samp, its confidence_interval), G - 1
degrees of freedom. Check: the sign-flip permutation p of the same group differences
(Fisher 1935; scipy.stats.permutation_test), exact when within a group the two methods'
predictions are exchangeable (one law), as under the null that neither is better.
Every comparison of the table (judges x baselines) is adjusted together on the t-test's
p (statsmodels multipletests, Benjamini-Yekutieli as the paper's §6).

The ECE difference (the paper's metric, Guo et al. 2017, metrics.py) stays in the table
as an estimate: ``mean ECE(MMB runs) - mean ECE(base runs)`` with a percentile bootstrap
over test groups (scipy.stats.bootstrap, each resample's ECE with the pairs weighted by
their group's multiplicity). It is approximate and not tested: binned ECE is not a mean
of per-pair terms (biased upwards by about sqrt(bins / n), more for a sharper
predictor), and the bootstrap of its difference over-states the spread near a calibrated
predictor and under-covers when sharpness differs (tables below).

Calibration (benchmarks/mmb_power.py: pairs with true logit x ~ N(0, 1.5^2), humans
y ~ Bernoulli(sigmoid(x)), 10 pairs per group, 6 runs per method, p = sigmoid(s x + e);
e normal (sd 0.5), skewed (centred exponential, scale 0.7) or discrete (the run answers
sigmoid(s ln 2) or its complement by the sign of s x + e: 2/3 or 1/3 at s = 1, the
smoothed choice of a backend without log-probs); null: both methods s = 1).

Null, 2000 data sets per row (``benchmarks/mmb_power.py --worlds 2000 --sections null
--jobs 2``; --perm 1999, exact at 10 groups), rejection rate at 0.05, MC se 0.0049:

======  ========  ======  =========
groups  noise     t-test  sign flip
======  ========  ======  =========
30      normal    0.0515  0.0500
30      skewed    0.0480  0.0480
30      discrete  0.0490  0.0420
10      normal    0.0520  0.0490
10      skewed    0.0415  0.0405
10      discrete  0.0485  0.0305
======  ========  ======  =========

The t-test holds its level within 2 MC se in every row, 10 groups and discrete answers
included; the sign flip, exact in law, is conservative when the group differences take
few values (discrete answers: ties at 0 and between flips), 0.031 at 10 groups. So the
verdict uses the t-test, and the interval is its t-interval (the p and the interval
agree).

Coverage of the 95 % t-interval, 1000 data sets per row (``--worlds 1000 --sections
coverage --jobs 2``; true D from 100,000 fresh groups, its own MC error about 3e-4),
MC se 0.0069:

======  ====================  ========  =======  ========
groups  planted world         noise     true D   coverage
======  ====================  ========  =======  ========
30      baseline logit x 2    normal    -0.0074  0.950
30      baseline logit x 2    skewed    -0.0046  0.956
30      baseline logit x 2    discrete   0.0026  0.951
30      baseline logit x 1/2  normal    -0.0161  0.945
30      baseline logit x 1/2  skewed    -0.0179  0.945
30      baseline logit x 1/2  discrete  -0.0206  0.954
10      baseline logit x 2    normal    -0.0071  0.955
10      baseline logit x 2    skewed    -0.0043  0.954
10      baseline logit x 2    discrete   0.0026  0.959
10      baseline logit x 1/2  normal    -0.0160  0.961
10      baseline logit x 1/2  skewed    -0.0181  0.960
10      baseline logit x 1/2  discrete  -0.0205  0.957
======  ====================  ========  =======  ========

Every row is within 2 MC se of 0.95 (the group means of a bounded score are close to
normal already at 10 pairs per group). A planted sharpness change need not favour MMB:
a sharper discrete baseline (0.8 instead of 2/3) scores better here (D > 0).

Judges read from samples (``mmb.probability``, jobs.py: p = (k + 1) / (n + 2) from n
sampled verdicts). The sampling noise of a pair's probabilities is drawn with the pair,
so the group differences carry it and the t-interval over groups covers the difference
of the methods *as sampled* (its estimand: D with each pair's n-sample estimates; the
true D below comes from fresh groups with fresh samples). ``benchmarks/mmb_power.py
--sections null coverage --noises "sampled n=4" "sampled n=8" "sampled n=16" --worlds
2000`` (03:25 UTC, 2026-12-06; normal noise on the logit, then n verdicts drawn with
it); MC se 0.0049 for every rate.

Null rejection at 0.05 (t-test, sign flip) and coverage of the 95 % t-interval (true D
in brackets) when the baseline's logit is the truth x 2 or x 1/2:

======  ==  ======  =========  ===============  ===============
groups  n   t-test  sign flip  logit x 2        logit x 1/2
======  ==  ======  =========  ===============  ===============
30      4   0.0545  0.0545     0.948 (0.0148)   0.948 (-0.0243)
30      8   0.0495  0.0475     0.951 (0.0082)   0.950 (-0.0225)
30      16  0.0525  0.0475     0.947 (0.0022)   0.951 (-0.0202)
10      4   0.0540  0.0500     0.940 (0.0147)   0.948 (-0.0242)
10      8   0.0575  0.0560     0.949 (0.0082)   0.949 (-0.0226)
10      16  0.0455  0.0460     0.950 (0.0024)   0.942 (-0.0203)
======  ==  ======  =========  ===============  ===============

Every rate is within about 2 MC se of its target (the lowest coverage, 0.940, is 2.0 se
below 0.95). How far the sampled route's ECE and Brier lie from the log-prob route's:
benchmarks/mmb_sampling.py.

The approximate ECE bootstrap (30 groups, 200 resamples; ``--boot 200 --worlds 2000
--sections ece-null`` and ``--boot 200 --worlds 1000 --truth-draws 4000 --sections
ece-coverage``; MC se 0.0049 and 0.0069). Its inverted test (p = 2 min(#{D* <= 0} + 1,
#{D* >= 0} + 1) / (B + 1), compare_ece) rejects 0.0035 (normal), 0.0015 (skewed) and
0.0295 (discrete) under the null, far below 0.05, so it is not used for a verdict; its
95 % interval covers the true ECE difference (at this test size) 0.893 and 0.896
(baseline logit x 2, normal / skewed; D -0.062, -0.060) and 0.979 and 0.983 (x 1/2,
D 0.000, 0.007): read it as a rough range, not a 95 % interval.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy.stats import bootstrap, permutation_test, ttest_1samp
from statsmodels.stats.multitest import multipletests

from judgebias.studies.mmb.estimator import log_likelihoods
from judgebias.studies.mmb.measures.factorial import (
    Design,
    Split,
    baseline_weights,
    mmb_weights,
    prompt_order,
    validation_order,
)
from judgebias.studies.mmb.measures.metrics import N_BINS

VERDICTS = ("MMB better", "MMB worse", "not distinguishable")
TIE = 1e-12  # |D*| below this is floating-point rounding of equal predictions


def calibration_gaps(p: np.ndarray, y: np.ndarray, n_bins: int = N_BINS
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Per prediction: its confidence bin (metrics.py's equal-width bins of
    max(p, 1 - p), the last one closed) and its gap ``hit - confidence``, with
    hit = [p >= 0.5] == [y = 1]. Rows of `p` are runs, columns pairs."""
    p = np.atleast_2d(np.asarray(p, dtype=float))
    confidence = np.maximum(p, 1 - p)
    edges = np.arange(1, n_bins) / n_bins
    bins = (confidence[..., None] >= edges).sum(axis=-1)
    hits = ((p >= 0.5) == (np.asarray(y)[None, :] == 1)).astype(float)
    return bins, hits - confidence


def weighted_ece(p: np.ndarray, y: np.ndarray, weights: np.ndarray,
                 n_bins: int = N_BINS) -> np.ndarray:
    """ECE (Guo et al. 2017) of every run (rows of `p`, (R, n)) under every weighting
    of the pairs (rows of `weights`, (B, n); a pair counted w times): (B, R).
    ECE = sum_b |sum_{j in b} w_j (hit_j - conf_j)| / sum_j w_j; with unit weights it is
    metrics.calibration_errors' ECE."""
    bins, gaps = calibration_gaps(p, y, n_bins)
    weights = np.atleast_2d(np.asarray(weights, dtype=float))
    onehot = (bins[..., None] == np.arange(n_bins)) * gaps[..., None]  # (R, n, bins)
    runs, n = gaps.shape
    summed = weights @ onehot.transpose(1, 0, 2).reshape(n, runs * n_bins)
    return np.abs(summed.reshape(len(weights), runs, n_bins)).sum(axis=2) / weights.sum(
        axis=1, keepdims=True)


def compare_ece(p_mmb: np.ndarray, p_base: np.ndarray, y: np.ndarray,
                groups: Sequence[object], *, n_boot: int = 2000, ci: float = 0.95,
                seed: int = 0, n_bins: int = N_BINS) -> dict[str, float]:
    """D = mean ECE of MMB's runs - mean ECE of the baseline's runs on the same test pairs
    (module docstring), with its percentile interval over test groups and the p-value of
    D = 0 that inverts it. `p_mmb` (R1, n) and `p_base` (R2, n): each run's p(A preferred)
    on the n test pairs; `groups`: each pair's test group."""
    p_mmb, p_base = np.atleast_2d(p_mmb), np.atleast_2d(p_base)
    y = np.asarray(y)
    codes, index = np.unique(np.asarray(groups), return_inverse=True)
    if not (p_mmb.shape[1] == p_base.shape[1] == len(y) == len(index)):
        raise ValueError("p_mmb, p_base, y and groups must describe the same test pairs")
    if len(codes) < 2:
        raise ValueError("the comparison resamples test groups: it needs at least 2")
    both = np.concatenate([p_mmb, p_base])

    def difference(drawn: np.ndarray, axis: int = -1) -> np.ndarray:
        drawn = np.atleast_2d(drawn)
        counts = (drawn[..., None] == np.arange(len(codes))).sum(axis=-2)  # (B, groups)
        ece = weighted_ece(both, y, counts[:, index], n_bins)
        return ece[:, :len(p_mmb)].mean(axis=1) - ece[:, len(p_mmb):].mean(axis=1)

    observed = float(difference(np.arange(len(codes)))[0])
    result = bootstrap((np.arange(len(codes)),), difference, vectorized=True,
                       n_resamples=n_boot, batch=200, confidence_level=ci,
                       method="percentile", random_state=np.random.default_rng(seed))
    draws = result.bootstrap_distribution
    tail = min(np.sum(draws <= TIE), np.sum(draws >= -TIE)) + 1  # rounding is a tie
    return {"difference": observed, "low": float(result.confidence_interval.low),
            "high": float(result.confidence_interval.high),
            "p_value": float(min(1.0, 2 * tail / (n_boot + 1)))}


def group_differences(p_mmb: np.ndarray, p_base: np.ndarray, y: np.ndarray,
                      groups: Sequence[object]) -> np.ndarray:
    """Each test group's mean, over its pairs, of Brier(MMB) - Brier(baseline) (Brier
    1950: (p - y)^2 of p(A preferred) against the human label), each pair's Brier score
    averaged over the method's replicate runs. `p_mmb` (R1, n) and `p_base` (R2, n);
    `groups`: each pair's test group. A |difference| below TIE is rounding of equal
    predictions (MMB without validation data is AVG by another sum) and counts as 0."""
    p_mmb, p_base = np.atleast_2d(p_mmb), np.atleast_2d(p_base)
    y = np.asarray(y, dtype=float)
    codes, index = np.unique(np.asarray(groups), return_inverse=True)
    if not (p_mmb.shape[1] == p_base.shape[1] == len(y) == len(index)):
        raise ValueError("p_mmb, p_base, y and groups must describe the same test pairs")
    if len(codes) < 2:
        raise ValueError("the comparison resamples test groups: it needs at least 2")
    per_pair = ((p_mmb - y) ** 2).mean(axis=0) - ((p_base - y) ** 2).mean(axis=0)
    means = np.bincount(index, per_pair) / np.bincount(index)
    return np.where(np.abs(means) < TIE, 0.0, means)


def compare_brier(p_mmb: np.ndarray, p_base: np.ndarray, y: np.ndarray,
                  groups: Sequence[object], *, ci: float = 0.95, n_perm: int = 9999,
                  seed: int = 0) -> dict[str, float]:
    """D = mean over test groups of group_differences (module docstring): the t-interval
    and t-test p of D = 0 over the groups (scipy.stats.ttest_1samp; Student 1908), and
    the sign-flip permutation p (scipy.stats.permutation_test, one sample: every group's
    difference keeps or flips its sign; Fisher 1935, exact, all 2^G flips, when
    2^G <= n_perm + 1). The flip is exact when, within a group, the two methods'
    predictions are exchangeable (one law, as under the null that neither is better)."""
    d = group_differences(p_mmb, p_base, y, groups)
    if not d.any():
        return {"difference": 0.0, "low": 0.0, "high": 0.0, "p_value": 1.0,
                "p_sign_flip": 1.0, "n_groups": len(d)}
    t = ttest_1samp(d, 0.0)
    interval = t.confidence_interval(ci)
    flipped = permutation_test((d,), np.mean, permutation_type="samples", vectorized=True,
                               n_resamples=n_perm, rng=np.random.default_rng(seed))
    return {"difference": float(d.mean()), "low": float(interval.low),
            "high": float(interval.high), "p_value": float(t.pvalue),
            "p_sign_flip": float(flipped.pvalue), "n_groups": len(d)}


def verdicts(table: pd.DataFrame, alpha: float) -> pd.DataFrame:
    """`table` with p_adjusted (Benjamini-Yekutieli over all its rows) and the verdict:
    MMB better / worse when the adjusted p is below alpha (difference = MMB - baseline of
    a score where lower is better: Brier), else not distinguishable."""
    adjusted = multipletests(table["p_value"], method="fdr_by")[1]
    significant = adjusted < alpha
    verdict = np.where(significant & (table["difference"] < 0), VERDICTS[0],
                       np.where(significant & (table["difference"] > 0), VERDICTS[1],
                                VERDICTS[2]))
    return table.assign(p_adjusted=adjusted, verdict=verdict)


def cell_predictions(split: Split, design: Design, n_prompts: int, n_val: int, k: int
                     ) -> dict[str, np.ndarray]:
    """Every replicate run's p(A preferred) on the test pairs at one (prompts, validation
    pairs) cell, with the factorial's draw rules (factorial.py): AVG and BPE one row per
    (training seed, sampling seed), MMB one row per (run, clustering seed) at K = k."""
    rows: dict[str, list[np.ndarray]] = {"AVG": [], "BPE": [], "MMB": []}
    for seed in design.sampling_seeds:
        subset = prompt_order(seed, split.P_pool.shape[1])[:n_prompts]
        P = split.P_test[:, subset]
        for t in design.train_seeds:
            val = validation_order(t, len(split.y_pool))[:n_val]
            P_val, y_val = split.P_pool[np.ix_(val, subset)], split.y_pool[val]
            loglik = log_likelihoods(P_val, y_val)
            weights = baseline_weights(loglik, P_val, y_val)
            rows["AVG"].append(P @ weights["AVG"])
            rows["BPE"].append(P @ weights["BPE"])
            for (kk, c), R in split.R_pool.items():
                if kk == k:
                    W = mmb_weights(loglik, R[val], design.entropy)
                    rows["MMB"].append(np.einsum("nz,za,na->n", split.R_test[(k, c)], W, P))
    return {method: np.clip(np.stack(r), 0.0, 1.0) for method, r in rows.items()}


def judge_comparisons(split: Split, design: Design, groups: Sequence[object], *,
                      n_prompts: int, n_val: int, k: int, n_boot: int, seed: int
                      ) -> pd.DataFrame:
    """One row per baseline (AVG, BPE) at the report cell: MMB's Brier difference with its
    t-interval and tests (compare_brier; the verdict's), and the ECE difference with its
    approximate bootstrap interval (compare_ece; an estimate, not tested). The caller
    adjusts over judges (verdicts)."""
    runs = cell_predictions(split, design, n_prompts, n_val, k)
    y, ones = split.y_test, np.ones(len(split.y_test))
    rows = []
    for base in ("AVG", "BPE"):
        ece = compare_ece(runs["MMB"], runs[base], y, groups, n_boot=n_boot, seed=seed)
        rows.append({"comparison": f"MMB - {base}",
                     "brier_mmb": float(((runs["MMB"] - y) ** 2).mean()),
                     "brier_baseline": float(((runs[base] - y) ** 2).mean()),
                     **compare_brier(runs["MMB"], runs[base], y, groups, seed=seed),
                     "ece_mmb": float(weighted_ece(runs["MMB"], y, ones).mean()),
                     "ece_baseline": float(weighted_ece(runs[base], y, ones).mean()),
                     "ece_difference": ece["difference"], "ece_low": ece["low"],
                     "ece_high": ece["high"], "n_runs": len(runs[base]),
                     "n_pairs": len(y)})
    return pd.DataFrame(rows)
