"""Prediction-powered inference (PPI++) for the mean of a judge-scored quantity.

The leaderboard (``specs/leaderboard.md``, "Human labels") ranks a user's systems by an
LLM judge's scores. When the user also gives human labels for a random subset of the
items, the judge's bias can be corrected with valid intervals: for ``n`` labelled items
with human labels ``Y`` and judge scores ``f``, and ``N`` further (unlabelled) items
with judge scores only, PPI++ (Angelopoulos, Duchi and Zrnic, "PPI++: Efficient
Prediction-Powered Inference", arXiv 2311.01453, the mean-estimation example) estimates
the mean of ``Y`` as::

    theta_lambda = lambda * mean(f_unlabelled) + mean(Y - lambda * f_labelled)

The first term uses the judge on many items; the second, the *rectifier*, measures on
the labelled items how far the judge is from the humans and removes it. For every fixed
lambda the estimate is unbiased; ``lambda = 1`` is plain PPI (Angelopoulos, Bates,
Fannjiang, Jordan and Zrnic, "Prediction-powered inference", Science 382, 2023),
``lambda = 0`` the human-only mean. PPI++ tunes lambda to the variance-minimising value
(arXiv 2311.01453, power tuning; for a mean)::

    lambda = Cov(Y, f) / ((1 + n / N) Var(f))

which for a good judge gives much narrower intervals than the human labels alone, and for
a useless one falls back to them. The four methods here (`MeanInterval.method`):

* ``"ppi++"``: `ppi_mean` with the tuned lambda (the default);
* ``"ppi"``: `ppi_mean` with a fixed lambda (``lam=1.0`` is the Science paper's PPI);
* ``"human_only"``: `human_only_mean`, the classical interval from the labels alone;
* ``"judge_only"``: `judge_only_mean`, the naive interval that treats the judge's scores
  as the truth. It is shown so the user can see what it misses: its width shrinks with
  all items but its centre carries the judge's bias, so it under-covers
  (``benchmarks/ppi_coverage.py`` measures how badly).

``ppi_mean`` and ``human_only_mean`` take ``interval="t"`` for a small-sample variant
(below, "Few labels").

**The reference.** Every formula matches the ``ppi-python`` package (``ppi_py`` 0.2.3,
``ppi_mean_pointestimate``, ``ppi_mean_ci``, ``classical_mean_ci``), and
``tests/core/test_ppi.py`` checks equality to 1e-10 on shared inputs. Its conventions,
taken as they are: the tuned lambda is ``Cov_n(Y, f_labelled)`` (the labelled items,
divisor n) over ``(1 + n/N)`` times the sample variance (divisor n + N - 1) of the judge's scores
on all ``n + N`` items, *clipped to [0, 1]*; the standard errors use the divisor-n
standard deviation; the interval is the normal (CLT) one, ``estimate -+ z_{1 - alpha/2}
se`` when two-sided, ``[estimate + z_alpha se, inf)`` for ``alternative="larger"`` and
``(-inf, estimate + z_{1 - alpha} se]`` for ``"smaller"``. Where it differs, on
purpose: ``confidence`` is the coverage (0.95 by default; ppi_py takes ``alpha``,
0.1 by default), and a judge whose scores are all equal gets lambda 0 (it carries no
information), where ppi_py's is 0 / 0: NaN, or whatever rounding leaves (a constant
judge cancels from the estimate, so any finite lambda gives the human-only estimate and
interval, as lambda 0 does here). (ppi_py's tuned-lambda
interval also ignores ``alternative``, its recursive call drops it; here it is honoured,
equal to ppi_py's interval at the same fixed lambda.) ``clip=False`` gives the unclipped
plug-in lambda, which ppi_py's mean interval does not offer: for a judge on a compressed
scale (``f = 0.5 Y + c``) the optimal lambda is above 1 (2 for a noiseless judge), and
clipping it to 1 throws away part of the gain (``benchmarks/ppi_coverage.py``: a system's
interval 4 to 12 % wider than the unclipped one at 50 to 200 labels, 1 to 4 % with a
discrete judge; at 20 labels the unclipped lambda is too noisy to gain anything).

**Why CLT intervals.** The estimate is a sum of two independent sample means (one over
the unlabelled items, one over the labelled), so it is asymptotically normal with the
variance ``lambda^2 Var(f) / N + Var(Y - lambda f) / n``; plugging in a consistent
estimate of lambda does not change the limit (arXiv 2311.01453, the power-tuning
theorem). This is the interval the papers and ppi_py give, so the leaderboard's numbers
can be checked against them; a t quantile or a bootstrap is an ad hoc variant with no
reference to check (the t one is offered for few labels, below).
``benchmarks/ppi_coverage.py`` measures it with 1,000 items, biased judges and normal,
skewed, discrete-judge and pass/fail labels: from 100 labels on PPI++ covers 92.9-95.5 %
of the time (median 94.5 %), from 50 labels on at 0.5 to 0.75 of the human-only width
(0.77-0.88 with pass/fail labels); the judge-only interval covers 0 % wherever the judge
is biased.

**Few labels** (judgebias.stats.ppi_power: `few_labels`, `FEW_LABELS`). Its weak point is
few labels: the divisor-n standard deviations and the z quantile make it short, the tuned
lambda is fitted to the same few items, and a skewed or discrete label makes its ends
lopsided. Over the benchmark's 32 cells (4 judges, 4 kinds of noise, a mean and a
difference) the median coverage of PPI++'s nominal 95 % interval is 78.8 % at 5 labels,
87.9 % at 10, 91.6 % at 20, 92.8 % at 30, 93.6 % at 40 and 93.7 % at 50 (one cell in ten
below 68.5, 84.6, 89.4, 91.4, 92.1 and 93.0 %); the human-only interval is as short
(median 84.3 % at 5, 92.5 % at 20). From 40 labels on the gain of more flattens, and what
is left (91-93 % in the worst cells, the mean of a skewed or a pass/fail label, as for
the human-only interval) shrinks only slowly, so `few_labels` warns below 40.
``interval="t"`` (divisor ``- 1`` variances and Student t quantiles,
Welch-Satterthwaite's degrees of freedom for the two means) raises the median to 91.8 %
at 5 labels, 92.8 % at 10, 93.8 % at 20 and 94.3 % at 30, for an interval 1.57, 1.21,
1.09 and 1.06 times as wide (1.04 at 40), and is no cure for pass/fail labels at 5 (72-80
%: all five labels alike a quarter of the time); it is offered, not the default, which
stays the papers' and ppi_py's.

**Planning: how many labels** (judgebias.stats.ppi_power: `label_moments`,
`ppi_halfwidth`, `labels_for_width`; `judgebias plan --power`, the leaderboard's
``power_section``). The interval's width is
set by three moments, ``Var(Y)``, ``Var(f)`` and ``Cov(Y, f)``, which a pilot run
estimates; `ppi_halfwidth` predicts the half-width `ppi_mean` will report at ``n``
labelled and ``N`` unlabelled items, and `labels_for_width` inverts it for a target
half-width, beside the human-only count (lambda 0) for the same width.

**The labelled items must be a random sample of the items.** The rectifier
``mean(Y - lambda f)`` estimates the judge's bias on *all* items only if the labelled
items are drawn uniformly at random from the same items (or population) as the
unlabelled ones, independently of their scores and labels. Labels for the items the
judge found hard, for one system's outputs only, for the first items of a file sorted by
anything, or chosen after looking at the judge's scores give a biased correction and
intervals that do not cover, whatever their width. (A stratified or score-dependent
design needs sampling weights, which this module does not take.) ``f_unlabelled`` holds
the items *without* labels: the labelled items are not repeated there (ppi_py's ``N``).

**Pairwise differences.** The difference of two systems' means is the mean of the paired
per-item difference, so it is the same estimator on paired differences: ``ppi_mean(y_a -
y_b, f_a_lab - f_b_lab, f_a_unlab - f_b_unlab)``, both systems' answers to the same items
in the same order (items are the unit; all systems' answers on an item move together).
Its lambda is tuned for the difference itself, and its interval is not the difference of
the two means' intervals: the two systems' scores on an item are correlated, and the
judge's shared item effects cancel in the difference. A judge biased the same way on both
systems (an additive bias) is unbiased for the difference; one that prefers one system
(self-preference) is not, and PPI is what corrects it.

**Missing values are an error.** A NaN or infinite score or label raises ``ValueError``:
the caller drops failed judge answers (and, for a difference, the item for both systems)
beforehand, and counts what it dropped. Dropping is the caller's decision because it
changes the estimand to the items the judge answered; it keeps the labelled subset random
only if failures do not depend on the labels. Fewer than two labelled or two unlabelled
items is an error too (no spread, no interval).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

Method = Literal["ppi++", "ppi", "human_only", "judge_only"]
Alternative = Literal["two-sided", "larger", "smaller"]
ALTERNATIVES: tuple[Alternative, ...] = ("two-sided", "larger", "smaller")
Interval = Literal["normal", "t"]
INTERVALS: tuple[Interval, ...] = ("normal", "t")


@dataclass(frozen=True)
class MeanInterval:
    """An estimated mean with its normal (CLT) confidence interval.

    Attributes
    ----------
    estimate : float
        The point estimate of the mean (of the human labels' scale).
    ci_low, ci_high : float
        The interval's ends (``-inf`` / ``inf`` on the open side of a one-sided one).
    se : float
        The estimate's standard error.
    n_labelled : int
        Items with human labels the estimate uses (0 for ``judge_only``).
    n_unlabelled : int
        Items whose judge scores it uses without labels (for ``judge_only``, all items;
        0 for ``human_only``).
    lam : float or None
        The lambda used: tuned (``ppi++``), fixed (``ppi``), 0 for ``human_only``, None for
        ``judge_only`` (not a prediction-powered estimate).
    method : {"ppi++", "ppi", "human_only", "judge_only"}
        Which estimator (see the module docstring).
    confidence : float
        The interval's nominal coverage.
    """

    estimate: float
    ci_low: float
    ci_high: float
    se: float
    n_labelled: int
    n_unlabelled: int
    lam: float | None
    method: Method
    confidence: float = 0.95


def _scores(values: ArrayLike, name: str, minimum: int) -> np.ndarray:
    """`values` as a finite 1-D float array of at least `minimum` entries, or ValueError."""
    array = np.asarray(values, dtype=float)
    if array.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional (one value per item), not of "
                         f"shape {array.shape}")
    if not np.isfinite(array).all():
        n_nan = int(np.isnan(array).sum())
        n_inf = int(np.isinf(array).sum())
        raise ValueError(f"{name} has {n_nan} NaN and {n_inf} infinite values: drop the "
                         "items with failed judge answers or missing labels first "
                         "(judgebias.stats.ppi, 'Missing values')")
    if array.size < minimum:
        raise ValueError(f"{name} has {array.size} items; at least {minimum} are needed "
                         "for a standard error")
    return array


def check_level(confidence: float, alternative: str, interval: str = "normal") -> None:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), not {confidence}")
    if alternative not in ALTERNATIVES:
        raise ValueError(f"alternative must be one of {ALTERNATIVES}, not {alternative!r}")
    if interval not in INTERVALS:
        raise ValueError(f"interval must be one of {INTERVALS}, not {interval!r}")


def normal_interval(estimate: float, se: float, confidence: float = 0.95,
                    alternative: Alternative = "two-sided", df: float = math.inf
                    ) -> tuple[float, float]:
    """The normal (CLT) confidence interval around `estimate`.

    Parameters
    ----------
    estimate, se : float
        Point estimate and its standard error.
    confidence : float
        Nominal coverage, ``1 - alpha``.
    alternative : {"two-sided", "larger", "smaller"}
        ``"two-sided"``: ``estimate -+ z_{1 - alpha/2} se``; ``"larger"``:
        ``[estimate + z_alpha se, inf)``; ``"smaller"``: ``(-inf, estimate + z_{1 - alpha}
        se]``, as statsmodels' ``_zconfint_generic``, which ppi_py calls.
    df : float
        Infinite (the default) for the normal quantiles; finite, Student t quantiles with
        `df` degrees of freedom instead (the ``interval="t"`` variant of `ppi_mean`).

    Returns
    -------
    tuple of float
        ``(low, high)``.
    """
    check_level(confidence, alternative)
    alpha = 1 - confidence
    quantile = stats.norm.ppf if math.isinf(df) else stats.t(df).ppf
    if alternative == "two-sided":
        z = float(quantile(1 - alpha / 2))
        return estimate - z * se, estimate + z * se
    if alternative == "larger":
        return estimate + float(quantile(alpha)) * se, math.inf
    return -math.inf, estimate + float(quantile(1 - alpha)) * se


def welch_df(terms: tuple[float, ...], counts: tuple[int, ...]) -> float:
    """Welch-Satterthwaite's degrees of freedom of a sum of independent squared standard
    errors ``terms`` (each a variance over its count), ``(sum s)^2 / sum(s^2 / (count -
    1))`` (Satterthwaite 1946, Biometrics Bulletin 2(6); Welch 1947, Biometrika 34);
    infinite when every term is 0 (no spread: the quantile does not matter)."""
    denominator = sum(s ** 2 / (c - 1) for s, c in zip(terms, counts, strict=True) if s)
    return sum(terms) ** 2 / denominator if denominator else math.inf


def tuned_lambda(y_labelled: ArrayLike, f_labelled: ArrayLike, f_unlabelled: ArrayLike, *,
                 clip: bool = True) -> float:
    """The variance-minimising lambda of PPI++ for a mean, as ppi_py computes it.

    arXiv 2311.01453 (power tuning, the mean example): the variance
    ``lambda^2 Var(f) / N + Var(Y - lambda f) / n`` of the estimate is smallest at
    ``Cov(Y, f) / ((1 + n/N) Var(f))``. Plugged in as ppi_py 0.2.3 does
    (``_calc_lam_glm`` with ``clip=True``, called by ``ppi_mean_ci``): the covariance over
    the labelled items with divisor n, the variance of the judge's scores over all
    ``n + N`` items with divisor - 1.

    Parameters
    ----------
    y_labelled, f_labelled : array_like
        Human labels and judge scores of the labelled items, in the same order.
    f_unlabelled : array_like
        Judge scores of the items without labels.
    clip : bool
        Clip to [0, 1] (ppi_py's mean interval always does). ``False`` gives the plug-in
        value itself, which may be negative (a judge that disagrees with the humans) or
        above 1 (a judge on a compressed scale).

    Returns
    -------
    float
        Lambda; 0 when the judge's scores do not vary (ppi_py's is 0 / 0 there).
    """
    y, f_lab, f_unlab = paired_scores(y_labelled, f_labelled, f_unlabelled)
    return _tuned_lambda(y, f_lab, f_unlab, clip)


def paired_scores(y_labelled: ArrayLike, f_labelled: ArrayLike, f_unlabelled: ArrayLike
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    y = _scores(y_labelled, "y_labelled", 2)
    f_lab = _scores(f_labelled, "f_labelled", 2)
    if y.size != f_lab.size:
        raise ValueError(f"y_labelled has {y.size} items but f_labelled {f_lab.size}: one "
                         "human label and one judge score per labelled item")
    f_unlab = _scores(f_unlabelled, "f_unlabelled", 2)
    return y, f_lab, f_unlab


def _tuned_lambda(y: np.ndarray, f_lab: np.ndarray, f_unlab: np.ndarray, clip: bool
                  ) -> float:
    n, big_n = y.size, f_unlab.size
    cov = float(np.mean((y - y.mean()) * (f_lab - f_lab.mean())))
    var = float(np.var(np.concatenate([f_lab, f_unlab]), ddof=1))
    if var == 0:
        return 0.0
    lam = cov / ((1 + n / big_n) * var)
    return float(np.clip(lam, 0.0, 1.0)) if clip else lam


def ppi_mean(y_labelled: ArrayLike, f_labelled: ArrayLike, f_unlabelled: ArrayLike, *,
             lam: float | None = None, confidence: float = 0.95,
             alternative: Alternative = "two-sided", clip: bool = True,
             interval: Interval = "normal") -> MeanInterval:
    """The prediction-powered estimate of a mean, with its CLT interval.

    ``lam * mean(f_unlabelled) + mean(y_labelled - lam * f_labelled)`` (arXiv 2311.01453,
    the mean example; ``lam = 1`` is the PPI of Angelopoulos et al., Science 2023), with
    standard error ``sqrt(Var(lam f_unlabelled) / N + Var(y - lam f_labelled) / n)``
    (divisor-n variances). Equal to ppi_py's ``ppi_mean_pointestimate`` and
    ``ppi_mean_ci(..., alpha=1 - confidence, lam=lam)``. The labelled items must be a
    random sample of all items (module docstring); for a pairwise difference pass the
    paired per-item differences.

    Parameters
    ----------
    y_labelled : array_like
        Human labels of the labelled items (no NaN: drop missing ones first).
    f_labelled : array_like
        The judge's scores of the same items, in the same order.
    f_unlabelled : array_like
        The judge's scores of the items without labels (not the labelled ones again).
    lam : float, optional
        None (the default) tunes lambda to minimise the variance (`tuned_lambda`, method
        ``"ppi++"``); a number fixes it (method ``"ppi"``; 1 is plain PPI, 0 gives the
        human-only estimate and interval).
    confidence : float
        Nominal coverage of the interval.
    alternative : {"two-sided", "larger", "smaller"}
        The interval's shape (`normal_interval`).
    clip : bool
        With ``lam=None``: clip the tuned lambda to [0, 1] as ppi_py does.
    interval : {"normal", "t"}
        ``"normal"`` (the default): ppi_py's CLT interval. ``"t"``: the small-sample
        variant, the same estimate and lambda with divisor ``- 1`` variances and Student t
        quantiles, Welch-Satterthwaite's degrees of freedom for the two means
        (`welch_df`; the labelled term's ``n - 1`` where it dominates). Not in the papers
        nor ppi_py; ``benchmarks/ppi_coverage.py`` measures what it buys below
        ``ppi_power.FEW_LABELS`` labels.

    Returns
    -------
    MeanInterval

    Raises
    ------
    ValueError
        On NaN or infinite values, arrays that are not 1-D, different numbers of labels
        and labelled scores, fewer than 2 labelled or 2 unlabelled items, a non-finite
        ``lam``, a ``confidence`` outside (0, 1) or an unknown ``interval``.
    """
    check_level(confidence, alternative, interval)
    y, f_lab, f_unlab = paired_scores(y_labelled, f_labelled, f_unlabelled)
    if lam is None:
        lam_used = _tuned_lambda(y, f_lab, f_unlab, clip)
        method: Method = "ppi++"
    else:
        lam_used = float(lam)
        if not math.isfinite(lam_used):
            raise ValueError(f"lam must be a finite number or None, not {lam}")
        method = "ppi"
    n, big_n = y.size, f_unlab.size
    imputed = lam_used * f_unlab
    rectifier = y - lam_used * f_lab
    estimate = float(imputed.mean() + rectifier.mean())
    ddof = 1 if interval == "t" else 0
    terms = (float(imputed.std(ddof=ddof)) ** 2 / big_n,
             float(rectifier.std(ddof=ddof)) ** 2 / n)
    se = math.sqrt(sum(terms))
    df = welch_df(terms, (big_n, n)) if interval == "t" else math.inf
    low, high = normal_interval(estimate, se, confidence, alternative, df)
    return MeanInterval(estimate, low, high, se, n, big_n, lam_used, method, confidence)


def human_only_mean(y_labelled: ArrayLike, confidence: float = 0.95,
                    alternative: Alternative = "two-sided", interval: Interval = "normal"
                    ) -> MeanInterval:
    """The classical mean of the human labels with its CLT interval.

    ``mean(y) -+ z std(y) / sqrt(n)`` (divisor-n standard deviation), equal to ppi_py's
    ``classical_mean_ci(y, alpha=1 - confidence)`` and to `ppi_mean` with ``lam=0``;
    with ``interval="t"``, the Student t interval (``std(y, ddof=1)``, ``n - 1`` degrees
    of freedom).

    Parameters
    ----------
    y_labelled : array_like
        Human labels of a random sample of the items (no NaN).
    confidence : float
        Nominal coverage of the interval.
    alternative : {"two-sided", "larger", "smaller"}
        The interval's shape (`normal_interval`).
    interval : {"normal", "t"}
        The CLT interval (the default) or the Student t one.

    Returns
    -------
    MeanInterval
        With ``lam=0.0`` and ``n_unlabelled=0``.

    Raises
    ------
    ValueError
        On NaN or infinite labels, fewer than 2 of them, a bad ``confidence`` or an
        unknown ``interval``.
    """
    return _plain_mean(y_labelled, "y_labelled", confidence, alternative, "human_only",
                       interval)


def judge_only_mean(f_all: ArrayLike, confidence: float = 0.95,
                    alternative: Alternative = "two-sided") -> MeanInterval:
    """The naive mean of the judge's scores, as if they were the human labels.

    The same CLT interval as `human_only_mean`, on the judge's scores of all items
    (labelled and unlabelled). It estimates the mean *judge score*, not the mean label:
    a biased judge's interval is narrow around the wrong value. Shown beside the others
    so the user sees its under-coverage; never the leaderboard's corrected answer.

    Parameters
    ----------
    f_all : array_like
        The judge's scores of every item (no NaN).
    confidence : float
        Nominal coverage of the interval.
    alternative : {"two-sided", "larger", "smaller"}
        The interval's shape (`normal_interval`).

    Returns
    -------
    MeanInterval
        With ``lam=None``, ``n_labelled=0`` and ``n_unlabelled`` the number of items.

    Raises
    ------
    ValueError
        On NaN or infinite scores, fewer than 2 of them, or a bad ``confidence``.
    """
    return _plain_mean(f_all, "f_all", confidence, alternative, "judge_only")


def _plain_mean(values: ArrayLike, name: str, confidence: float, alternative: Alternative,
                method: Method, interval: Interval = "normal") -> MeanInterval:
    check_level(confidence, alternative, interval)
    x = _scores(values, name, 2)
    estimate = float(x.mean())
    t = interval == "t"
    se = float(x.std(ddof=1 if t else 0)) / math.sqrt(x.size)
    low, high = normal_interval(estimate, se, confidence, alternative,
                                x.size - 1 if t else math.inf)
    if method == "human_only":
        return MeanInterval(estimate, low, high, se, x.size, 0, 0.0, method, confidence)
    return MeanInterval(estimate, low, high, se, 0, x.size, None, method, confidence)
