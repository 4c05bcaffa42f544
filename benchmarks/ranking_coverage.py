"""The leaderboard's statistics (judgebias.stats.ranking): the level of its pairwise test,
its behaviour over all pairs with Benjamini-Hochberg, and the coverage of its mean,
difference and rank intervals, beside the intervals it did not choose.

Why: a leaderboard says "A beats B" and "A is 1st to 2nd" from 30 to a few hundred items
scored on coarse or skewed scales; the interval and test had to be chosen by measurement
(ranking.py's docstring), and this keeps that measurement rerunnable. Every method reads
the same data sets. The symmetric bootstrap-t is `leaderboard` itself; the equal-tailed
bootstrap-t (`studentized_interval(symmetric=False)`) and the percentile interval read
the very same resamples (`Leaderboard.resampled`); BCa is scipy's
(`bootstrap_weighted_means(method="BCa")`, its own draw of the same size); "t" is
Student's t on the mean, ``sd / sqrt(n)`` and ``n`` of each column (what
`scipy.stats.ttest_1samp(nan_policy="omit")` computes, of the scores and of the paired
differences, 10x faster); Welch is `scipy.stats.ttest_ind_from_stats(equal_var=False)`
on each system's own items (unpaired: what ignoring the pairing would give).

**Worlds.** 5 systems, item ``i``, system ``k``: latent ``mu_k + u_i + s_k e_ik``, with
a per-item effect ``u_i`` shared by all systems (items differ in difficulty, sd 1: this
is why pairing matters) and systems of unequal noise ``s = 0.5, 0.75, 1, 1.25, 1.5`` (so
a difference under the null need not be symmetric); a share ``--missing`` of the scores
(verdicts) is NaN, at random. Kinds:

* ``normal``: ``u, e ~ N(0, 1)``, the score is the latent.
* ``skewed``: ``u, e ~`` centred Exp(1), ``e`` mirrored for systems 2 and 4 (long tails
  on both sides: a system that fails badly now and then against one that never does).
* ``0..10``: normal latent, score ``clip(round(5 + 2 latent), 0, 10)``, an integer
  scale with some mass at both ends.
* ``1..5 tied``: a coarse scale on which similar systems mostly tie (`tied`): the item
  sets a base score 2, 3 or 4, each system moves one point off it now and then; under
  the null two systems differ on about 19% of the items.
* ``w/t/l``: a pairwise judge; per item and *ordered* pair (both orders judged) the
  verdict is 1 / 0.5 / 0 (win / tie / loss) as ``latent_a - latent_b + N(0, 0.5^2)`` is
  above 0.5, within +-0.5, below -0.5; `item_win_rates` makes the per-item win rates, so
  ``mean`` is a win rate with ties counting half.

The **null** world has ``mu = 0`` for all 5 (every scale is symmetric about its centre,
so every true mean, or win rate 0.5, is equal); the **planted** world has ``mu = -0.5,
-0.25, 0, 0.25, 0.5`` (on the tied scale, true means ``3 + 0.2 mu``), truths computed
exactly (normal CDFs) for the discrete kinds. Per cell: ``--reps`` data sets,
``--resamples`` resamples each, alpha 0.05.

    .venv/bin/python benchmarks/ranking_coverage.py            # the tables below
    .venv/bin/python benchmarks/ranking_coverage.py --reps 30 --resamples 399 --ns 30

(the second is the CI smoke run, about 5 s.)

**Columns.** Null table: share of the 10 pairs whose test rejects at 0.05 (a method
without a p-value rejects when its 95% interval excludes 0), per method; FWER, the share
of data sets with any rejection, raw and after BH at FDR 0.05 (under the complete null
FDR = FWER). Planted tables: coverage of the 95% interval of the 5 means and of the 10
differences per method, averaged over systems (pairs; BCa's undefined intervals, on a
column without spread, left out); the rank interval's coverage of the true rank, per
system and all 5 at once, and its mean width (high - low); the share of the 10 (all
non-null) pairs found at BH 0.05, and found with the wrong sign; raw power at 0.05 of
the paired symmetric bootstrap-t and of unpaired Welch. Monte-Carlo error (95%) of a
single rate near 0.05 or 0.95: ``+-1.96 sqrt(0.0475 / reps)``; averages over correlated
systems or pairs are no noisier than that.

Reading: the symmetric bootstrap-t (what `leaderboard` uses) holds its level
(0.043-0.055) and covers 0.945-0.968 from 30 items on in every world, but for the tied
scale at 30 items, where its test is conservative (0.024). The equal-tailed bootstrap-t
is as good on smooth scores but rejects 0.111 on the tied scale at 30 items; percentile
and BCa reject 6-10% of true nulls and cover 0.91-0.94 at 30 items; the t methods reach
0.065 on skewed differences. BH keeps the family-wise error under the complete null at
or below 0.053, but for skewed scores at 30 and 100 items (0.076, 0.061: the tests'
far tail, ranking.py says more), against 0.18-0.31 unadjusted. Rank intervals are
conservative (true rank inside 0.984-1.000 per system). Pairing: with a shared item
effect, Welch's unpaired test is conservative (0.00-0.01 under the null) and loses power
(0.24 against 0.42 at 30 items; 0.05 against 0.54 at 100 on the tied scale); on a
pairwise judge's win rates, whose per-item values are negatively correlated (a's win is
b's loss), it is liberal (0.076-0.082 under the null): its larger "power" there is that
excess.

Measured (defaults; 480 s on one core of a busy 2-core machine):

1000 data sets per cell, 999 resamples, 5% missing;
Monte-Carlo error +-0.014 (95%) on a rate near 0.05 or 0.95

Null (5 systems of equal mean, 10 pairs): rejection rate per pair at 0.05
(sym: symmetric bootstrap-t, `leaderboard`'s test; eq: equal-tailed bootstrap-t;
pct: percentile; t: paired t; Welch: unpaired); FWER (any pair rejected) of
the sym test, raw and after BH at 0.05 (here FDR = FWER)

| world | n | sym | eq | pct | BCa | t | Welch | FWER raw | FWER BH |
|---|---|---|---|---|---|---|---|---|---|
| normal | 30 | 0.048 | 0.052 | 0.067 | 0.071 | 0.050 | 0.009 | 0.293 | 0.033 |
| normal | 100 | 0.054 | 0.054 | 0.061 | 0.061 | 0.055 | 0.010 | 0.303 | 0.041 |
| normal | 300 | 0.043 | 0.045 | 0.049 | 0.047 | 0.044 | 0.008 | 0.259 | 0.032 |
| skewed | 30 | 0.055 | 0.058 | 0.082 | 0.083 | 0.065 | 0.011 | 0.306 | 0.076 |
| skewed | 100 | 0.053 | 0.057 | 0.066 | 0.066 | 0.059 | 0.011 | 0.304 | 0.061 |
| skewed | 300 | 0.048 | 0.049 | 0.053 | 0.053 | 0.050 | 0.008 | 0.281 | 0.044 |
| 0..10 | 30 | 0.045 | 0.046 | 0.064 | 0.062 | 0.048 | 0.009 | 0.272 | 0.043 |
| 0..10 | 100 | 0.052 | 0.052 | 0.058 | 0.058 | 0.054 | 0.011 | 0.278 | 0.053 |
| 0..10 | 300 | 0.046 | 0.048 | 0.050 | 0.049 | 0.048 | 0.008 | 0.273 | 0.031 |
| 1..5 tied | 30 | 0.024 | 0.111 | 0.071 | 0.100 | 0.048 | 0.000 | 0.181 | 0.001 |
| 1..5 tied | 100 | 0.052 | 0.069 | 0.069 | 0.062 | 0.056 | 0.000 | 0.307 | 0.027 |
| 1..5 tied | 300 | 0.050 | 0.057 | 0.057 | 0.053 | 0.051 | 0.000 | 0.310 | 0.041 |
| w/t/l | 30 | 0.049 | 0.040 | 0.066 | 0.059 | 0.052 | 0.082 | 0.279 | 0.046 |
| w/t/l | 100 | 0.053 | 0.051 | 0.059 | 0.056 | 0.055 | 0.080 | 0.284 | 0.045 |
| w/t/l | 300 | 0.044 | 0.045 | 0.048 | 0.051 | 0.045 | 0.076 | 0.274 | 0.035 |

Planted (true means all distinct): coverage of the 95% intervals of the 5 means
(m:) and of the 10 differences (d:)

| world | n | m: sym | eq | pct | BCa | t | d: sym | eq | pct | BCa | t |
|---|---|---|---|---|---|---|---|---|---|---|---|
| normal | 30 | 0.950 | 0.947 | 0.933 | 0.933 | 0.947 | 0.950 | 0.947 | 0.930 | 0.928 | 0.947 |
| normal | 100 | 0.946 | 0.946 | 0.939 | 0.938 | 0.944 | 0.950 | 0.949 | 0.945 | 0.943 | 0.951 |
| normal | 300 | 0.948 | 0.948 | 0.944 | 0.943 | 0.947 | 0.953 | 0.952 | 0.949 | 0.948 | 0.954 |
| skewed | 30 | 0.950 | 0.938 | 0.922 | 0.919 | 0.942 | 0.950 | 0.946 | 0.924 | 0.923 | 0.943 |
| skewed | 100 | 0.950 | 0.947 | 0.942 | 0.938 | 0.949 | 0.946 | 0.944 | 0.936 | 0.932 | 0.943 |
| skewed | 300 | 0.951 | 0.950 | 0.948 | 0.948 | 0.951 | 0.949 | 0.949 | 0.946 | 0.946 | 0.949 |
| 0..10 | 30 | 0.949 | 0.955 | 0.932 | 0.936 | 0.947 | 0.949 | 0.950 | 0.930 | 0.929 | 0.947 |
| 0..10 | 100 | 0.946 | 0.946 | 0.942 | 0.939 | 0.945 | 0.949 | 0.949 | 0.943 | 0.942 | 0.949 |
| 0..10 | 300 | 0.948 | 0.947 | 0.943 | 0.945 | 0.946 | 0.949 | 0.949 | 0.946 | 0.946 | 0.949 |
| 1..5 tied | 30 | 0.952 | 0.955 | 0.943 | 0.943 | 0.951 | 0.968 | 0.923 | 0.922 | 0.909 | 0.942 |
| 1..5 tied | 100 | 0.960 | 0.964 | 0.957 | 0.955 | 0.961 | 0.954 | 0.948 | 0.943 | 0.940 | 0.951 |
| 1..5 tied | 300 | 0.952 | 0.952 | 0.949 | 0.949 | 0.951 | 0.952 | 0.949 | 0.945 | 0.942 | 0.949 |
| w/t/l | 30 | 0.948 | 0.957 | 0.932 | 0.940 | 0.945 | 0.948 | 0.959 | 0.932 | 0.940 | 0.947 |
| w/t/l | 100 | 0.945 | 0.949 | 0.941 | 0.940 | 0.945 | 0.948 | 0.952 | 0.942 | 0.944 | 0.949 |
| w/t/l | 300 | 0.955 | 0.955 | 0.953 | 0.951 | 0.955 | 0.954 | 0.955 | 0.952 | 0.951 | 0.954 |

Planted: rank intervals (true rank inside, per system and all 5 at once; mean
width); share of the 10 pairs found at BH 0.05, and found with the wrong sign;
raw power at 0.05, paired (sym) and unpaired Welch

| world | n | rank, per system | all 5 | width | found, BH | wrong sign | paired | Welch |
|---|---|---|---|---|---|---|---|---|
| normal | 30 | 0.995 | 0.981 | 1.99 | 0.278 | 0.000 | 0.415 | 0.235 |
| normal | 100 | 1.000 | 0.999 | 1.01 | 0.706 | 0.000 | 0.731 | 0.570 |
| normal | 300 | 1.000 | 1.000 | 0.33 | 0.915 | 0.000 | 0.917 | 0.841 |
| skewed | 30 | 0.993 | 0.976 | 1.91 | 0.230 | 0.001 | 0.395 | 0.256 |
| skewed | 100 | 0.999 | 0.996 | 1.01 | 0.694 | 0.000 | 0.724 | 0.574 |
| skewed | 300 | 1.000 | 0.999 | 0.32 | 0.913 | 0.000 | 0.915 | 0.833 |
| 0..10 | 30 | 0.995 | 0.980 | 2.02 | 0.275 | 0.000 | 0.411 | 0.242 |
| 0..10 | 100 | 0.998 | 0.995 | 1.05 | 0.695 | 0.000 | 0.725 | 0.565 |
| 0..10 | 300 | 1.000 | 1.000 | 0.38 | 0.897 | 0.000 | 0.900 | 0.825 |
| 1..5 tied | 30 | 0.984 | 0.933 | 2.71 | 0.012 | 0.000 | 0.164 | 0.002 |
| 1..5 tied | 100 | 0.999 | 0.995 | 1.84 | 0.437 | 0.000 | 0.536 | 0.053 |
| 1..5 tied | 300 | 1.000 | 0.999 | 0.99 | 0.762 | 0.000 | 0.776 | 0.312 |
| w/t/l | 30 | 0.995 | 0.979 | 2.02 | 0.291 | 0.000 | 0.417 | 0.486 |
| w/t/l | 100 | 0.999 | 0.995 | 1.10 | 0.680 | 0.000 | 0.708 | 0.750 |
| w/t/l | 300 | 1.000 | 1.000 | 0.44 | 0.884 | 0.000 | 0.888 | 0.915 |
"""

from __future__ import annotations

import argparse
import math
import time
import warnings
from collections.abc import Callable

import numpy as np
from scipy import stats
from threadpoolctl import threadpool_limits

from judgebias.stats.bootstrap import bootstrap_weighted_means
from judgebias.stats.ranking import item_win_rates, leaderboard, studentized_interval

K = 5
SCALES = np.array([0.5, 0.75, 1.0, 1.25, 1.5])
SIGNS = np.array([1.0, -1.0, 1.0, -1.0, 1.0])
PLANTED = np.array([-0.5, -0.25, 0.0, 0.25, 0.5])
JUDGE_SD, TIE = 0.5, 0.5
TIED_STEP = 0.2
ALPHA = 0.05


def _latent(rng: np.random.Generator, n: int, mu: np.ndarray, skewed: bool) -> np.ndarray:
    if skewed:
        u = rng.exponential(1.0, (n, 1)) - 1
        e = SIGNS * (rng.exponential(1.0, (n, K)) - 1)
    else:
        u, e = rng.standard_normal((n, 1)), rng.standard_normal((n, K))
    return mu + u + SCALES * e


def _missing(rng: np.random.Generator, x: np.ndarray, share: float) -> np.ndarray:
    return np.where(rng.random(x.shape) < share, np.nan, x)


def normal(rng: np.random.Generator, n: int, mu: np.ndarray, share: float) -> np.ndarray:
    return _missing(rng, _latent(rng, n, mu, False), share)


def skewed(rng: np.random.Generator, n: int, mu: np.ndarray, share: float) -> np.ndarray:
    return _missing(rng, _latent(rng, n, mu, True), share)


def scale10(rng: np.random.Generator, n: int, mu: np.ndarray, share: float) -> np.ndarray:
    return _missing(rng, np.clip(np.round(5 + 2 * _latent(rng, n, mu, False)), 0, 10), share)


def verdicts(rng: np.random.Generator, n: int, mu: np.ndarray, share: float) -> np.ndarray:
    """Ordered-pair verdicts ``(n, K, K)`` of a pairwise judge; its per-item win rates are
    what the leaderboard reads (`win_rates`)."""
    q = _latent(rng, n, mu, False)
    d = q[:, :, None] - q[:, None, :] + JUDGE_SD * rng.standard_normal((n, K, K))
    v = np.where(d > TIE, 1.0, np.where(d < -TIE, 0.0, 0.5))
    return _missing(rng, v, share)


def win_rates(rng: np.random.Generator, n: int, mu: np.ndarray, share: float) -> np.ndarray:
    return item_win_rates(verdicts(rng, n, mu, share))


def tied(rng: np.random.Generator, n: int, mu: np.ndarray, share: float) -> np.ndarray:
    """A coarse 1..5 scale on which similar systems mostly tie: the item sets a base
    score 2, 3 or 4 and each system moves off it by one point with probability
    ``0.05 +- TIED_STEP mu / 2`` up and down (a true mean ``3 + TIED_STEP mu``); under
    the null two systems differ on about 19% of the items."""
    base = rng.choice([2.0, 3.0, 4.0], (n, 1), p=[0.25, 0.5, 0.25])
    up, down = 0.05 + TIED_STEP * mu / 2, 0.05 - TIED_STEP * mu / 2
    draw = rng.random((n, K))
    return _missing(rng, base + (draw < up) - (draw > 1 - down), share)


def truth(kind: str, mu: np.ndarray) -> np.ndarray:
    """True means (win rates) of the 5 systems, exactly."""
    sd = np.sqrt(1 + SCALES**2)
    if kind in ("normal", "skewed"):
        return mu.astype(float)
    if kind == "1..5 tied":
        return 3 + TIED_STEP * mu
    if kind == "0..10":
        edges = (np.arange(0.5, 10, 1.0)[:, None] - 5) / 2  # latent cut points
        cdf = stats.norm.cdf((edges - mu) / sd)  # (10, K): P(latent < cut)
        prob = np.diff(np.vstack([np.zeros(K), cdf, np.ones(K)]), axis=0)
        return (np.arange(11)[:, None] * prob).sum(axis=0)
    diff_mu = mu[:, None] - mu[None, :]
    diff_sd = np.sqrt(SCALES[:, None] ** 2 + SCALES[None, :] ** 2 + JUDGE_SD**2)
    win = stats.norm.sf((TIE - diff_mu) / diff_sd)
    tie = stats.norm.cdf((TIE - diff_mu) / diff_sd) - stats.norm.cdf((-TIE - diff_mu) / diff_sd)
    score = win + 0.5 * tie
    np.fill_diagonal(score, np.nan)
    return np.nanmean(score, axis=1)


WORLDS: dict[str, Callable[[np.random.Generator, int, np.ndarray, float], np.ndarray]] = {
    "normal": normal, "skewed": skewed, "0..10": scale10, "1..5 tied": tied,
    "w/t/l": win_rates}


def one(scores: np.ndarray, true_means: np.ndarray, resamples: int, seed: int
        ) -> dict[str, np.ndarray]:
    """Every method's verdicts on one data set (booleans per system or pair)."""
    first, second = np.triu_indices(K, 1)
    true_diff = true_means[first] - true_means[second]
    lb = leaderboard(scores, n_resamples=resamples, rng=seed)
    res, sy, pa = lb.resampled, lb.systems, lb.pairs
    pct_low, pct_high = np.nanquantile(res.means, [ALPHA / 2, 1 - ALPHA / 2], axis=0)
    columns = np.hstack([scores, scores[:, first] - scores[:, second]])
    with warnings.catch_warnings():  # BCa is undefined on a column without spread
        warnings.simplefilter("ignore")
        bca = bootstrap_weighted_means(columns, lambda m: m, n_resamples=resamples,
                                       method="BCa", rng=seed + 1)
    # the one-sample t of each column (a score, a paired difference): its mean, sd / sqrt(n)
    # and n are those of `leaderboard` (ttest_1samp with nan_policy="omit" is the same
    # test, column by column, 10x slower); Welch from each system's own mean and sd
    half = stats.t.ppf(1 - ALPHA / 2, res.n - 1) * res.se
    t_ci = (res.estimate - half, res.estimate + half)
    mean, sd = np.nanmean(scores, axis=0), np.nanstd(scores, axis=0, ddof=1)
    count = (~np.isnan(scores)).sum(axis=0)
    welch = stats.ttest_ind_from_stats(mean[first], sd[first], count[first], mean[second],
                                       sd[second], count[second], equal_var=False)
    target = np.concatenate([true_means, true_diff])

    def covers(low: np.ndarray, high: np.ndarray) -> np.ndarray:
        """1 inside, 0 outside, NaN where the method gives no interval (BCa on a column
        without spread), which the rates leave out."""
        low, high = np.asarray(low, dtype=float), np.asarray(high, dtype=float)
        inside = ((low <= target) & (target <= high)).astype(float)
        return np.where(np.isnan(low) | np.isnan(high), np.nan, inside)

    boot_t = covers(np.concatenate([sy["low"], pa["low"]]),
                    np.concatenate([sy["high"], pa["high"]]))
    equal = covers(*studentized_interval(res, 1 - ALPHA, symmetric=False))
    true_rank = 1 + (true_means[None, :] > true_means[:, None]).sum(axis=1)
    rank_in = (sy["rank_low"] <= true_rank) & (true_rank <= sy["rank_high"])
    return {
        "boot_t": boot_t, "equal": equal, "percentile": covers(pct_low, pct_high),
        "bca": covers(bca.low, bca.high), "t": covers(*t_ci),
        "p": pa["p_value"].to_numpy(), "significant": pa["significant"].to_numpy(),
        "sign_ok": np.sign(pa["difference"].to_numpy()) == np.sign(true_diff),
        "welch_p": np.asarray(welch.pvalue), "rank_in": rank_in.to_numpy(),
        "rank_width": (sy["rank_high"] - sy["rank_low"]).to_numpy(),
    }


def cell(kind: str, n: int, planted: bool, args: argparse.Namespace,
         rng: np.random.Generator) -> dict[str, float]:
    """Rates over ``args.reps`` data sets of one world, one size."""
    mu = PLANTED if planted else np.zeros(K)
    true_means = truth(kind, mu)
    keys = ("boot_t", "equal", "percentile", "bca", "t", "p", "significant", "sign_ok",
            "welch_p", "rank_in", "rank_width")
    got: dict[str, list[np.ndarray]] = {key: [] for key in keys}
    for _ in range(args.reps):
        scores = WORLDS[kind](rng, n, mu, args.missing)
        out = one(scores, true_means, args.resamples, int(rng.integers(2**31)))
        for key in keys:
            got[key].append(out[key])
    a = {key: np.array(v, dtype=float) for key, v in got.items()}
    # null: an interval excluding the true 0 is a rejection; pairs are columns K..
    row = {f"{m}_{part}": float(np.nanmean(a[m][:, sl]))
           for m in ("boot_t", "equal", "percentile", "bca", "t")
           for part, sl in (("mean", slice(0, K)), ("diff", slice(K, None)))}
    row |= {
        "reject_p": float(np.mean(a["p"] < ALPHA)),
        "welch": float(np.mean(a["welch_p"] < ALPHA)),
        "fwer": float(np.mean((a["p"] < ALPHA).any(axis=1))),
        "fwer_bh": float(np.mean(a["significant"].any(axis=1))),
        "found": float(np.mean(a["significant"])),
        "wrong_sign": float(np.mean(a["significant"] * (1 - a["sign_ok"]))),
        "rank_in": float(np.mean(a["rank_in"])),
        "rank_all": float(np.mean(a["rank_in"].all(axis=1))),
        "rank_width": float(np.mean(a["rank_width"])),
    }
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=1000, help="data sets per cell")
    parser.add_argument("--resamples", type=int, default=999)
    parser.add_argument("--ns", type=int, nargs="+", default=[30, 100, 300])
    parser.add_argument("--worlds", nargs="+", default=list(WORLDS), choices=list(WORLDS))
    parser.add_argument("--missing", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    # one BLAS thread: the products are small, and threads only contend on a shared machine
    threadpool_limits(1)
    rng = np.random.default_rng(args.seed)
    mc = 1.96 * math.sqrt(0.05 * 0.95 / args.reps)
    start = time.perf_counter()
    print(f"{args.reps} data sets per cell, {args.resamples} resamples, {args.missing:.0%} "
          f"missing;\nMonte-Carlo error +-{mc:.3f} (95%) on a rate near 0.05 or 0.95\n")
    print("Null (5 systems of equal mean, 10 pairs): rejection rate per pair at 0.05\n"
          "(sym: symmetric bootstrap-t, `leaderboard`'s test; eq: equal-tailed bootstrap-t;\n"
          "pct: percentile; t: paired t; Welch: unpaired); FWER (any pair rejected) of\n"
          "the sym test, raw and after BH at 0.05 (here FDR = FWER)\n")
    print("| world | n | sym | eq | pct | BCa | t | Welch | FWER raw | FWER BH |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for kind in args.worlds:
        for n in args.ns:
            r = cell(kind, n, False, args, rng)
            rates = [r["reject_p"]] + [1 - r[f"{m}_diff"] for m in
                                       ("equal", "percentile", "bca", "t")]
            rates += [r["welch"], r["fwer"], r["fwer_bh"]]
            print(f"| {kind} | {n} | " + " | ".join(f"{x:.3f}" for x in rates) + " |",
                  flush=True)
    planted = {(kind, n): cell(kind, n, True, args, rng) for kind in args.worlds
               for n in args.ns}
    print("\nPlanted (true means all distinct): coverage of the 95% intervals of the 5 means\n"
          "(m:) and of the 10 differences (d:)\n")
    print("| world | n | m: sym | eq | pct | BCa | t | d: sym | eq | pct | BCa | t |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    methods = ("boot_t", "equal", "percentile", "bca", "t")
    for (kind, n), r in planted.items():
        cover = [r[f"{m}_{part}"] for part in ("mean", "diff") for m in methods]
        print(f"| {kind} | {n} | " + " | ".join(f"{x:.3f}" for x in cover) + " |")
    print("\nPlanted: rank intervals (true rank inside, per system and all 5 at once; mean\n"
          "width); share of the 10 pairs found at BH 0.05, and found with the wrong sign;\n"
          "raw power at 0.05, paired (sym) and unpaired Welch\n")
    print("| world | n | rank, per system | all 5 | width | found, BH | wrong sign | "
          "paired | Welch |")
    print("|---|---|---|---|---|---|---|---|---|")
    for (kind, n), r in planted.items():
        print(f"| {kind} | {n} | {r['rank_in']:.3f} | {r['rank_all']:.3f} | "
              f"{r['rank_width']:.2f} | {r['found']:.3f} | {r['wrong_sign']:.3f} | "
              f"{r['reject_p']:.3f} | {r['welch']:.3f} |")
    print(f"\n({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
