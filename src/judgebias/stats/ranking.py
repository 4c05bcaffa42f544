"""A leaderboard of systems scored by a judge on the same items: means, paired
differences, tests with FDR control, and rank intervals, all from one bootstrap over items.

specs/leaderboard.md: "A mean over items is the estimand; items are the resampling unit
(all systems' outputs on an item move together: paired)", and rank intervals come "from
the same bootstrap as the means". So every number here comes from *one* draw of item
resamples shared by all systems and all pairs: a resample that happens to draw many hard
items lowers every system together, which is what keeps the differences' intervals
narrow (items often differ in difficulty more than good systems differ from each other)
and what makes the ranks of one resample a coherent ranking.

Input is a scores matrix ``(n_items, n_systems)`` (a plain judge's scores, a de-biased
judge's, or per-item win rates from `item_win_rates` for a pairwise judge), NaN where a
system's output on an item has no usable score (a failed judge answer, a missing
output). A NaN is excluded, never imputed: a system's mean is over its own non-NaN
items, a pairwise difference over the items both systems have, so a missing output
lowers ``n``, not the mean. With outputs missing, a pair's difference therefore need not
equal the difference of the two systems' means (which ranks them); with outputs missing
at random both estimate the same difference, and the pair's is the paired, sharper one.

**The count-weights trick** (`judgebias.stats.bootstrap`): a case resample of the items is
a vector of multinomial counts, so B resamples of every column at once are one matrix
product ``W (B, n) @ values (n, M)``. The counts come from ``rng.integers(0, n, (B, n))``
(the draw `scipy.stats.bootstrap` makes) through `counts_from_indices`, in chunks of rows
so that memory stays bounded; the chunks give the same numbers as one draw. 10 systems x
2,000 items x 2,000 resamples (55 columns: 10 means, 45 differences) takes about a
quarter of a second.

**Which interval, which test: the symmetric studentised bootstrap (bootstrap-t).** For
each column (a system's scores, or the per-item differences of a pair) with estimate
``m`` and plug-in standard error ``se = sd / sqrt(n)`` (ddof 1), every resample gives
``t* = (m* - m) / se*``, ``se*`` computed the same way from the resample (the counts give
its first and second moments in the same matrix product). The interval is ``m +- q se``
with ``q`` the ``confidence_level`` quantile of ``|t*|``; the p-value of "difference =
0" is ``(#{|t*| >= |t0|} + 1) / (B + 1)`` with ``t0 = m / se``. Both read the same
``|t*|``, so an interval at level ``1 - a`` excludes 0 exactly when ``p < a``, up to one
resample at the interval's end (the "+1" keeps the test valid; Davison and Hinkley 1997,
ch. 4). The symmetric form has two-sided coverage error O(1/n^2) against O(1/n) for the
equal-tailed one (Hall 1988, "On symmetric bootstrap confidence intervals").

``benchmarks/ranking_coverage.py`` measured the candidates (`Leaderboard.resampled`
gives the equal-tailed bootstrap-t and the percentile interval from the very same
resamples, scipy the BCa interval and the t-tests) on worlds of 5 systems with a per-item
effect shared by all systems (item difficulty) and unequal noise (so a difference under
the null need not be symmetric), 5% of scores missing: normal; skewed (centred
exponential item effects and noise, mirrored for two systems); a 0..10 integer scale; a
1..5 scale on which the systems tie on most items (under the null two systems differ on
about 19% of them); a win/tie/loss pairwise judge read through `item_win_rates`. 1,000
data sets per cell, 999 resamples: Monte-Carlo error +-0.014 on a rate near 0.05 or 0.95.
At 30 items (sym: symmetric bootstrap-t; eq: equal-tailed; pct: percentile; t: the
t-interval of a mean, the paired t-test and its interval for a difference):

============================  =====  =====  =====  =====  =====
n = 30 (5 systems, 10 pairs)  sym    eq     pct    BCa    t
============================  =====  =====  =====  =====  =====
null rejection, normal        0.048  0.052  0.067  0.071  0.050
null rejection, skewed        0.055  0.058  0.082  0.083  0.065
null rejection, 0..10         0.045  0.046  0.064  0.062  0.048
null rejection, 1..5 tied     0.024  0.111  0.071  0.100  0.048
null rejection, win/tie/loss  0.049  0.040  0.066  0.059  0.052
mean coverage, normal         0.950  0.947  0.933  0.933  0.947
mean coverage, skewed         0.950  0.938  0.922  0.919  0.942
mean coverage, 0..10          0.949  0.955  0.932  0.936  0.947
mean coverage, 1..5 tied      0.952  0.955  0.943  0.943  0.951
mean coverage, win/tie/loss   0.948  0.957  0.932  0.940  0.945
diff. coverage, normal        0.950  0.947  0.930  0.928  0.947
diff. coverage, skewed        0.950  0.946  0.924  0.923  0.943
diff. coverage, 0..10         0.949  0.950  0.930  0.929  0.947
diff. coverage, 1..5 tied     0.968  0.923  0.922  0.909  0.942
diff. coverage, win/tie/loss  0.948  0.959  0.932  0.940  0.947
============================  =====  =====  =====  =====  =====

(the full table, with 100 and 300 items, is in the benchmark's docstring). The
percentile interval is too narrow at small n (in effect ``m +- 1.96 sd / sqrt(n)`` with
the ddof-0 sd: no t quantile) and its test rejects 6-8% of true nulls at 30 items; BCa
corrects skewness, not that narrowness. The t methods reach 0.065 on skewed differences.
The equal-tailed bootstrap-t is good on smooth scores but fails where two systems tie on
most items (0.111): with a few one-sided differences, the resamples that draw few of them
have tiny ``se*`` and extreme ``t*`` on one side only, so the other tail looks short
(tests/core/test_ranking.py has a case: 3 of 30 items one point apart, sign-test p 0.25,
equal-tailed p 0.02, symmetric p 0.19). The symmetric bootstrap-t holds its level at
0.043-0.055 in every cell but that tied one at 30 items, where it is conservative
(0.024), and covers 0.945-0.960 (means) and 0.946-0.968 (differences). At 100 items the
percentile and BCa tests still reject 5.6-6.9% of true nulls; at 300 all five agree
within 0.01. The symmetric bootstrap-t is also read from the very resamples that give
the rank intervals, so the whole leaderboard is one bootstrap. An interval end is
infinite only when more than ``1 - confidence_level`` of the resamples of a column have
no spread (a pair that differs on one or two items of 30): resampling the items cannot
bound it then, and the test does not reject. Being symmetric, an interval can reach past
the ends of a bounded scale (a win rate near 1).

**Rank intervals.** A system's rank is ``1 +`` the number of systems with a strictly
higher mean (rank 1 = best = highest mean), on the data (``rank``) and in each resample.
On a coarse scale two resampled means are often exactly equal; the tie can be broken
either way, so the interval's lower end counts it as the better rank and its upper end
as the worse (`rank_interval`): ``rank_low`` is the ``a/2`` quantile of the ranks with
ties in the system's favour, ``rank_high`` the ``1 - a/2`` quantile with ties against
it, each an actual rank (``numpy.quantile(..., method="inverted_cdf")``). Without ties
it is the central ``confidence_level`` range of the resampled ranks. It is marginal (one
system at a time). In the benchmark's planted worlds (adjacent true means 0.25 latent sd
apart, so neighbours are not separable at 30 items) it held the true rank for
0.984-1.000 of systems, and for all 5 at once in 0.976-1.000 of data sets (0.933 on the
tied 1..5 scale at 30 items): conservative, since a resample's ranks add sampling noise
to the sample's own. Mean width: about 2 ranks at 30 items, 1 at 100, 0.3-0.45 at 300
(2.7, 1.8, 1.0 on the tied scale).

**FDR over pairs.** Every pair of systems is tested, ``K(K-1)/2`` tests; statsmodels'
``multipletests(method="fdr_bh")`` adjusts them (Benjamini-Hochberg) and ``significant``
is ``p_adjusted < fdr``. BH assumes independent or positively dependent tests; pairwise
differences that share a system are not all positively dependent (a - b and b - c
correlate negatively). Measured under the complete null with 5 systems (where FDR =
FWER): 0.001-0.053 of data sets had a significant pair, against 0.18-0.31 with no
adjustment, except in the skewed world: 0.076 at 30 items, 0.061 at 100, 0.044 at 300.
The cause is mostly the tail: the first BH threshold is ``fdr / 10`` = 0.005, and at 30
items of skewed scores every test is liberal that far out (per pair, rejection at 0.005:
symmetric bootstrap-t 0.0084, equal-tailed 0.0079, paired t 0.0121; a separate run of
1,000 data sets, 1,999 resamples, where BH's FWER was 0.071). Where scores are skewed and
items few, ``correction="fdr_by"`` (Benjamini-Yekutieli, valid under any dependence, as
the judge card uses) brought it to 0.029. A bootstrap p-value is at least ``1 / (B +
1)``; when that cannot pass the first threshold ``fdr / n_pairs`` a warning says to
raise ``n_resamples`` (the default 2,000 serves up to 100 pairs, 14 systems, at FDR
0.05).

**A system with no usable score** (every entry NaN, e.g. no judge may score it under a
self-exclusion rule) keeps its row with ``n = 0`` and NaN everywhere else: the spec
wants no entry for it, never a zero, and a NaN row lets the caller drop it without a
failed leaderboard. It is left out of the other systems' ranks and of the FDR family;
its pairs have ``n = 0``, NaN statistics and ``significant = False``. Fewer than two
systems is an error (there is nothing to rank or compare). A system with one usable item
has a mean but no interval (no sd); a resample that draws none of a system's items has no
mean for it, so that resample is left out of that system's interval and rank interval,
and the other systems are ranked without it there.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from judgebias.stats.bootstrap import counts_from_indices

SYSTEM_COLUMNS = ("system", "mean", "low", "high", "se", "n", "n_missing", "rank",
                  "rank_low", "rank_high")
PAIR_COLUMNS = ("system_a", "system_b", "difference", "low", "high", "se", "n", "p_value",
                "p_adjusted", "significant")
CHUNK = 4_000_000  # count weights per chunk of resamples (32 MB of float64)
_ZERO = 1e-7  # spreads below this share of a column's scale are rounding error (0)


@dataclass(frozen=True)
class Resampled:
    """Columns' estimates and their studentised bootstrap, from one draw of item counts.

    ``estimate``, ``se`` (plug-in ``sd / sqrt(n)``, ddof 1) and ``n`` (non-NaN items) are
    ``(M,)``; ``means`` (the resampled means ``m*``) and ``t`` (``(m* - m) / se*``) are
    ``(B, M)``, NaN where a resample leaves a column undefined (no drawn item for a mean;
    fewer than two for ``t``). Kept whole so that a caller (the benchmark) can read other
    intervals from the very same resamples.
    """

    estimate: np.ndarray
    se: np.ndarray
    n: np.ndarray
    means: np.ndarray
    t: np.ndarray


@dataclass(frozen=True)
class Leaderboard:
    """The two tables of `leaderboard`, and the settings that made them.

    ``systems`` has one row per system, in input order, columns `SYSTEM_COLUMNS`:
    ``system`` (name), ``mean`` (over the system's non-NaN items), ``low`` / ``high``
    (symmetric bootstrap-t interval at ``confidence_level``), ``se`` (``sd / sqrt(n)``,
    ddof 1), ``n`` (items with a score), ``n_missing`` (items without), ``rank`` (1 + the
    number of systems with a strictly higher mean; ties share the better rank), and
    ``rank_low`` / ``rank_high`` (the central ``confidence_level`` range of the ranks over
    the resamples, a tie counted as the better rank for ``rank_low`` and the worse for
    ``rank_high``: `rank_interval`).

    ``pairs`` has one row per unordered pair ``(a, b)``, ``a`` before ``b`` in input
    order, columns `PAIR_COLUMNS`: ``difference`` (mean of ``score_a - score_b`` over the
    ``n`` items both have), ``low`` / ``high`` and ``se`` as above, ``p_value`` (two-sided
    symmetric bootstrap-t test of difference = 0), ``p_adjusted`` (Benjamini-Hochberg,
    or ``correction``, over all pairs with a p-value) and ``significant`` (``p_adjusted <
    fdr``).

    ``resampled`` is the bootstrap behind both tables: its columns are the systems, then
    the pairs in the order of ``pairs`` (for a plot of the distributions, or another
    interval from the very same resamples, as the benchmark reads).
    """

    systems: pd.DataFrame
    pairs: pd.DataFrame
    confidence_level: float
    fdr: float
    correction: str
    n_resamples: int
    resampled: Resampled


def draw_counts(n: int, n_resamples: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Count weights of ``n_resamples`` case resamples of ``n`` items, in chunks.

    Each chunk is ``(rows, n)``, ``CHUNK`` numbers at most; the chunks stacked equal one
    ``counts_from_indices(rng.integers(0, n, (n_resamples, n)), n)`` (a Generator's integer
    stream does not depend on how the draws are cut), so the numbers depend on the seed
    only, never on the chunk size.
    """
    step = max(1, CHUNK // max(n, 1))
    return [counts_from_indices(rng.integers(0, n, (min(step, n_resamples - start), n)), n)
            for start in range(0, n_resamples, step)]


def resample_means(values: np.ndarray, counts: Sequence[np.ndarray]) -> Resampled:
    """Means of the columns of ``values`` ``(n, M)`` and their studentised bootstrap.

    NaN entries are excluded (each column's mean is over its own non-NaN rows). The
    columns are centred on their estimates first, so that the resampled variance
    ``E*[c^2] - E*[c]^2`` does not lose digits on scores far from 0 (a 0-100 scale). A
    variance below ``(1e-7 scale)^2`` (``scale``: the column's range or its mean's size,
    whichever is larger) is rounding error and counts as 0, as does a shift below
    ``1e-9 scale``: a resample with no spread has ``se* = 0`` and ``t* = +-inf`` (0 when
    it also reproduces the estimate), an extreme value rather than a missing one.
    """
    values = np.asarray(values, dtype=float)
    valid = ~np.isnan(values)
    n = valid.sum(axis=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns, n < 2
        estimate = np.where(valid, values, 0.0).sum(axis=0) / n
        span = np.nanmax(values, axis=0) - np.nanmin(values, axis=0)
        scale = np.nan_to_num(np.maximum(span, np.abs(estimate)))
        centred = np.where(valid, values - estimate, 0.0)
        variance = (centred**2).sum(axis=0) / (n - 1)
        var_tol, shift_tol = (_ZERO * scale) ** 2, 1e-2 * _ZERO * scale
        se = np.where(variance <= var_tol, 0.0, np.sqrt(variance / n))
    se[n < 2] = np.nan
    moments = np.hstack([centred, centred**2, valid.astype(float)])
    means, ts = [], []
    for chunk in counts:
        s1, s2, drawn = np.split(chunk @ moments, 3, axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            shift = s1 / drawn
            var = (s2 / drawn - shift**2) * drawn / (drawn - 1)
            flat = var <= var_tol
            shift = np.where(flat & (np.abs(shift) <= shift_tol), 0.0, shift)
            se_star = np.sqrt(np.where(flat, 0.0, var) / drawn)
            t = np.where(flat, np.where(shift == 0, 0.0, np.sign(shift) * np.inf),
                         shift / se_star)
        t[drawn < 2] = np.nan
        shift[drawn == 0] = np.nan
        means.append(estimate + shift)
        ts.append(t)
    m = values.shape[1]
    return Resampled(estimate=estimate, se=se, n=n,
                     means=np.vstack(means) if means else np.empty((0, m)),
                     t=np.vstack(ts) if ts else np.empty((0, m)))


def studentized_interval(
    resampled: Resampled, confidence_level: float = 0.95, *, symmetric: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """Bootstrap-t interval per column: symmetric ``m +- q se``, ``q`` the
    ``confidence_level`` quantile of ``|t*|`` (the default, `leaderboard`'s), or
    equal-tailed ``[m - q(1 - a/2) se, m - q(a/2) se]`` from the quantiles of ``t*``.

    Quantiles are ``inverted_cdf`` (no interpolation, so an infinite ``t*`` never turns
    an end into NaN): the ends are actual resamples, which keeps the interval and
    `studentized_p` in step. Why symmetric: the module docstring (the equal-tailed
    interval is liberal when a difference is 0 on most items). NaN for a column without
    an ``se`` (fewer than two items) or without resamples; ``[m, m]`` for a column with
    no spread.
    """
    alpha = 1 - confidence_level
    low = np.full(resampled.estimate.shape, np.nan)
    high = low.copy()
    for j in range(resampled.estimate.size):
        t = resampled.t[:, j]
        t = t[~np.isnan(t)]
        m, se = resampled.estimate[j], resampled.se[j]
        if not t.size or np.isnan(se):
            continue
        if se == 0:
            low[j] = high[j] = m
        elif symmetric:
            q = np.quantile(np.abs(t), confidence_level, method="inverted_cdf")
            low[j], high[j] = m - q * se, m + q * se
        else:
            q_low, q_high = np.quantile(t, [alpha / 2, 1 - alpha / 2],
                                        method="inverted_cdf")
            low[j], high[j] = m - q_high * se, m - q_low * se
    return low, high


def studentized_p(
    resampled: Resampled, null: float = 0.0, *, symmetric: bool = True
) -> np.ndarray:
    """Two-sided bootstrap-t p-value of "the column's mean = ``null``", per column.

    With ``t0 = (m - null) / se`` and B the resamples where ``t*`` is defined:
    symmetric (the default, `leaderboard`'s) ``p = (#{|t*| >= |t0|} + 1) / (B + 1)``;
    equal-tailed ``p = 2 min(#{t* >= t0} + 1, #{t* <= t0} + 1) / (B + 1)``, capped at 1.
    ``t*`` is centred on the estimate, so its distribution stands in for that of ``t0``
    under the null; the test rejects at ``a`` exactly when `studentized_interval` (of
    the same kind) at ``1 - a`` excludes ``null``, up to one resample at the interval's
    end (the "+1"s keep the test valid). A column with no spread has ``t0 = +-inf``
    (every item differs by the same amount: the smallest p) or 0 (p = 1).
    """
    p = np.full(resampled.estimate.shape, np.nan)
    for j in range(resampled.estimate.size):
        t = resampled.t[:, j]
        t = t[~np.isnan(t)]
        m, se = resampled.estimate[j], resampled.se[j]
        if not t.size or np.isnan(se):
            continue
        with np.errstate(invalid="ignore"):  # no spread and m = null: sign 0 * inf
            t0 = float((m - null) / se if se > 0 else np.sign(m - null) * np.inf)
        t0 = 0.0 if np.isnan(t0) else t0
        if symmetric:
            p[j] = (int((np.abs(t) >= abs(t0)).sum()) + 1) / (t.size + 1)
        else:
            tail = min(int((t >= t0).sum()), int((t <= t0).sum())) + 1
            p[j] = 2 * tail / (t.size + 1)
    return np.minimum(p, 1.0)


def resample_ranks(means: np.ndarray, *, worst: bool = False) -> np.ndarray:
    """Ranks of the systems in each row of ``means`` ``(B, K)`` (rank 1 = best = highest).

    By default ``1 +`` the number of systems with a strictly higher mean: ties share the
    better rank (competition ranking, "1224"). With ``worst=True``, the number of systems
    with a mean at least as high (itself included): ties share the worse rank ("1334").
    Without ties both are the plain ranks. A NaN mean gets a NaN rank and counts for no
    one (comparisons with NaN are false). ``(B, K, K)`` comparisons: 10 systems x 2,000
    resamples is 200,000 booleans.
    """
    means = np.atleast_2d(np.asarray(means, dtype=float))
    if worst:
        ranks = (means[:, None, :] >= means[:, :, None]).sum(axis=2).astype(float)
    else:
        ranks = 1.0 + (means[:, None, :] > means[:, :, None]).sum(axis=2)
    return np.where(np.isnan(means), np.nan, ranks)


def rank_interval(means: np.ndarray, confidence_level: float = 0.95
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Rank interval of each system from its resampled ``means`` ``(B, K)``.

    ``low``: the ``a/2`` quantile of the ranks with ties broken in the system's favour;
    ``high``: the ``1 - a/2`` quantile with ties broken against it (`resample_ranks`). A
    tie in a resample can be broken either way, so the interval holds both; without ties
    it is the central ``confidence_level`` range of the ranks. Ends are ranks that occur
    (``inverted_cdf``). A resample without the system (NaN mean) is left out of its
    interval; a system with no resample is NaN.
    """
    alpha = 1 - confidence_level
    best, worst = resample_ranks(means), resample_ranks(means, worst=True)
    k = best.shape[1]
    low, high = np.full(k, np.nan), np.full(k, np.nan)
    for j in range(k):
        defined = ~np.isnan(best[:, j])
        if defined.any():
            low[j] = np.quantile(best[defined, j], alpha / 2, method="inverted_cdf")
            high[j] = np.quantile(worst[defined, j], 1 - alpha / 2, method="inverted_cdf")
    return low, high


def _scores_matrix(scores: Any, systems: Sequence[str] | None) -> tuple[np.ndarray, list[str]]:
    """The float matrix and the system names (from a DataFrame's columns, ``systems``, or
    ``system_0``, ...), with the input checks of `leaderboard`."""
    names = None
    if isinstance(scores, pd.DataFrame):
        names = [str(c) for c in scores.columns]
        scores = scores.to_numpy(dtype=float, na_value=np.nan)
    matrix = np.asarray(scores, dtype=float)
    if matrix.ndim != 2:
        raise ValueError(f"scores must be (n_items, n_systems), not shape {matrix.shape}")
    if matrix.shape[1] < 2:
        raise ValueError(f"a leaderboard needs at least 2 systems, not {matrix.shape[1]}")
    if matrix.shape[0] < 1:
        raise ValueError("scores has no items")
    if np.isinf(matrix).any():
        raise ValueError("scores has infinite entries (use NaN for a missing score)")
    if systems is not None:
        names = [str(s) for s in systems]
    if names is None:
        names = [f"system_{k}" for k in range(matrix.shape[1])]
    if len(names) != matrix.shape[1] or len(set(names)) != len(names):
        raise ValueError(f"need {matrix.shape[1]} distinct system names, not {names}")
    return matrix, names


def leaderboard(
    scores: Any,
    systems: Sequence[str] | None = None,
    *,
    n_resamples: int = 2000,
    confidence_level: float = 0.95,
    fdr: float = 0.05,
    correction: Literal["fdr_bh", "fdr_by"] = "fdr_bh",
    rng: np.random.Generator | int | None = 0,
) -> Leaderboard:
    """Per-system means with intervals and rank intervals, and every pairwise difference
    with its interval and test (FDR over pairs), from one paired bootstrap over items.

    Parameters
    ----------
    scores
        ``(n_items, n_systems)`` array, or a DataFrame whose columns are the systems; NaN
        where a system's output on an item has no usable score (excluded, never imputed).
        Higher is better.
    systems
        Names of the columns (default: the DataFrame's columns, else ``system_0``, ...).
    n_resamples
        Bootstrap resamples of the items, shared by every system and pair.
    confidence_level
        Of the mean, difference and rank intervals.
    fdr
        False discovery rate of ``significant``.
    correction
        statsmodels' ``multipletests`` method: Benjamini-Hochberg (the default) or
        Benjamini-Yekutieli, valid under any dependence and more conservative (module
        docstring: where BH's FDR was measured above the target).
    rng
        Seed or Generator of the draw; the default 0 makes the tables reproducible.

    Returns
    -------
    Leaderboard
        ``systems`` and ``pairs`` tables (columns documented on `Leaderboard`).

    Raises
    ------
    ValueError
        Fewer than 2 systems, no items, an infinite score, names that do not match, or a
        setting out of range. An all-NaN system is not an error: its row has ``n = 0``
        and NaN statistics (module docstring).
    """
    matrix, names = _scores_matrix(scores, systems)
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, not {n_resamples}")
    for name, level in (("confidence_level", confidence_level), ("fdr", fdr)):
        if not 0 < level < 1:
            raise ValueError(f"{name} must be in (0, 1), not {level}")
    if correction not in ("fdr_bh", "fdr_by"):
        raise ValueError(f"correction must be 'fdr_bh' or 'fdr_by', not {correction!r}")
    n_items, k = matrix.shape
    first, second = np.triu_indices(k, 1)
    differences = matrix[:, first] - matrix[:, second]
    # equal scores that went through different arithmetic (0.3 and 0.1 + 0.2) are equal
    size = np.maximum(np.abs(matrix[:, first]), np.abs(matrix[:, second]))
    differences[np.abs(differences) <= 1e-12 * size] = 0.0
    columns = np.hstack([matrix, differences])
    generator = np.random.default_rng(rng)
    resampled = resample_means(columns, draw_counts(n_items, n_resamples, generator))
    low, high = studentized_interval(resampled, confidence_level)
    p = studentized_p(resampled)[k:]

    rank_low, rank_high = rank_interval(resampled.means[:, :k], confidence_level)
    means = resampled.estimate[:k]
    systems_table = pd.DataFrame({
        "system": names,
        "mean": means,
        "low": low[:k],
        "high": high[:k],
        "se": resampled.se[:k],
        "n": resampled.n[:k].astype(int),
        "n_missing": (n_items - resampled.n[:k]).astype(int),
        "rank": resample_ranks(means)[0],
        "rank_low": rank_low,
        "rank_high": rank_high,
    }, columns=list(SYSTEM_COLUMNS))

    adjusted = np.full(p.shape, np.nan)
    tested = ~np.isnan(p)
    if tested.any():
        # here, not at the top: statsmodels takes ~1 s to import (judgebias.card.build)
        from statsmodels.stats.multitest import multipletests

        if 1 / (n_resamples + 1) > fdr / tested.sum():
            warnings.warn(
                f"with {n_resamples} resamples no p-value can fall below "
                f"{1 / (n_resamples + 1):.2g}, above BH's first threshold "
                f"{fdr / tested.sum():.2g} for {tested.sum()} pairs: raise n_resamples "
                f"to at least {int(np.ceil(tested.sum() / fdr))}", stacklevel=2)
        adjusted[tested] = multipletests(p[tested], alpha=fdr, method=correction)[1]
    pairs_table = pd.DataFrame({
        "system_a": [names[a] for a in first],
        "system_b": [names[b] for b in second],
        "difference": resampled.estimate[k:],
        "low": low[k:],
        "high": high[k:],
        "se": resampled.se[k:],
        "n": resampled.n[k:].astype(int),
        "p_value": p,
        "p_adjusted": adjusted,
        "significant": tested & (adjusted < fdr),
    }, columns=list(PAIR_COLUMNS))
    return Leaderboard(systems=systems_table, pairs=pairs_table,
                       confidence_level=confidence_level, fdr=fdr, correction=correction,
                       n_resamples=n_resamples, resampled=resampled)


def item_win_rates(preferences: Any) -> np.ndarray:
    """Per item, each system's win rate over its opponents, from pairwise verdicts.

    Parameters
    ----------
    preferences
        ``(n_items, n_systems, n_systems)``: entry ``[i, a, b]`` is the judge's
        probability or verdict that ``a`` is preferred to ``b`` on item ``i`` (1 = a, 0 =
        b, 0.5 a tie), with ``a`` shown first; NaN where that ordered pair was not judged
        or the answer failed. The diagonal is ignored.

    Returns
    -------
    numpy.ndarray
        ``(n_items, n_systems)``: ``a``'s score against ``b`` is the mean of the judged
        orders, ``[i, a, b]`` and ``1 - [i, b, a]`` (both orders, when a position-bias fix
        asks both, count equally; one is used alone when the other is missing), and the
        win rate is its mean over the opponents with a score; NaN for a system with none
        on that item. Ties thus count half. Fed to `leaderboard` (or through
        `win_rate_leaderboard`), a system's mean is its win rate over items, with the same
        paired bootstrap; each item counts once, however many of its comparisons failed,
        as the spec's "mean over items" estimand asks. With every pair judged it equals
        the plain win rate over all (item, opponent) comparisons.
    """
    prefs = np.asarray(preferences, dtype=float)
    if prefs.ndim != 3 or prefs.shape[1] != prefs.shape[2]:
        raise ValueError("preferences must be (n_items, n_systems, n_systems), "
                         f"not shape {prefs.shape}")
    if ((prefs < 0) | (prefs > 1)).any():
        raise ValueError("preferences must lie in [0, 1] (1: the first system preferred)")
    k = prefs.shape[1]
    off = ~np.eye(k, dtype=bool)
    both = np.stack([prefs, 1 - np.swapaxes(prefs, 1, 2)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # pairs never judged: NaN
        versus = np.nanmean(both, axis=0)
        versus[:, ~off] = np.nan
        return np.nanmean(versus, axis=2)


def win_rate_leaderboard(
    preferences: Any, systems: Sequence[str] | None = None, **options: Any
) -> Leaderboard:
    """`leaderboard` of the win rates of a pairwise judge (`item_win_rates`).

    ``options`` are `leaderboard`'s keywords. ``mean`` is then a win rate in [0, 1] (ties
    half), ``difference`` a difference of win rates (each against all opponents, the
    pair's own comparison included), and the ranks those of the win rates.
    """
    return leaderboard(item_win_rates(preferences), systems, **options)
