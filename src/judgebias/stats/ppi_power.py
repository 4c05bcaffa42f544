"""Planning human labels for PPI++ (judgebias.stats.ppi): how many labelled items an
interval width needs (`judgebias plan --power`, the leaderboard's power section), and when
there are too few for the normal interval (`few_labels`).

The variance is PPI++'s for a mean (Angelopoulos, Duchi and Zrnic, arXiv 2311.01453, the
mean-estimation example): ``lambda^2 Var(f) / N + Var(Y - lambda f) / n`` at the tuned
lambda, plus two first-order finite-sample corrections (divisor-n variances, and lambda
tuned on the same labels) that `ppi_halfwidth` documents; tests/core/test_ppi_power.py
checks the prediction against simulated intervals.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

from judgebias.stats.ppi import check_level, paired_scores

FEW_LABELS = 40
"""Below this many labelled items `few_labels` warns: there the median coverage of a
nominal 95 % PPI++ interval in ``benchmarks/ppi_coverage.py`` is under 93 % (module
docstring, "Few labels")."""


@dataclass(frozen=True)
class LabelMoments:
    """The second moments that set the width of a PPI++ interval for a mean.

    Attributes
    ----------
    var_y : float
        ``Var(Y)``, the variance of the human labels.
    var_f : float
        ``Var(f)``, the variance of the judge's scores.
    cov : float
        ``Cov(Y, f)``.

    Population values, or a pilot's estimates (`label_moments`). For a pairwise
    difference, those of the paired per-item differences.
    """

    var_y: float
    var_f: float
    cov: float

    def __post_init__(self) -> None:
        values = (self.var_y, self.var_f, self.cov)
        if not all(math.isfinite(v) for v in values) or self.var_y < 0 or self.var_f < 0:
            raise ValueError(f"moments must be finite with variances >= 0, not {values}")
        if self.cov ** 2 > self.var_y * self.var_f * (1 + 1e-9):
            raise ValueError(f"|cov| {abs(self.cov):g} exceeds sqrt(var_y var_f) "
                             f"{math.sqrt(self.var_y * self.var_f):g}: not a covariance")

    @property
    def correlation(self) -> float:
        """``rho``, the labels' correlation with the judge (0 where either is constant)."""
        spread = math.sqrt(self.var_y * self.var_f)
        return self.cov / spread if spread > 0 else 0.0


def label_moments(y_labelled: ArrayLike, f_labelled: ArrayLike, f_unlabelled: ArrayLike
                  ) -> LabelMoments:
    """A pilot's estimates of the moments that set a PPI++ interval's width.

    ``Var(Y)`` and the correlation of labels and judge come from the labelled items,
    ``Var(f)`` from all items (labelled and unlabelled), every variance with divisor
    ``- 1``; the covariance is the correlation times ``sqrt(Var(Y) Var(f))``, so the three
    always form a covariance matrix (the labelled and the unlabelled items' ``Var(f)``
    differ by chance in a pilot).

    Parameters
    ----------
    y_labelled, f_labelled : array_like
        Human labels and judge scores of the pilot's labelled items, in the same order.
    f_unlabelled : array_like
        The judge's scores of the pilot's other items.

    Returns
    -------
    LabelMoments

    Raises
    ------
    ValueError
        On the inputs `ppi_mean` refuses.
    """
    y, f_lab, f_unlab = paired_scores(y_labelled, f_labelled, f_unlabelled)
    var_y = float(np.var(y, ddof=1))
    var_f = float(np.var(np.concatenate([f_lab, f_unlab]), ddof=1))
    spread = math.sqrt(var_y * float(np.var(f_lab, ddof=1)))
    correlation = float(np.cov(y, f_lab)[0, 1]) / spread if spread > 0 else 0.0
    return LabelMoments(var_y, var_f, correlation * math.sqrt(var_y * var_f))


def _expected_variance(moments: LabelMoments, n: np.ndarray, big_n: np.ndarray,
                       lam: float | None, clip: bool) -> np.ndarray:
    """The expected squared standard error `ppi_mean` reports, for arrays of label and
    unlabelled counts (see `ppi_halfwidth`)."""
    n, big_n = n.astype(float), big_n.astype(float)
    var_y, var_f, cov = moments.var_y, moments.var_f, moments.cov
    if lam is not None or var_f == 0 or var_y == 0:
        fixed = 0.0 if lam is None else lam  # a constant judge or label: lambda 0
        residual = max(var_y - 2 * fixed * cov + fixed ** 2 * var_f, 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            imputed = np.where(fixed == 0, 0.0, fixed ** 2 * var_f * (big_n - 1) / big_n ** 2)
        return imputed + residual * (n - 1) / n ** 2
    lam_sq, deviation, free = _tuned_lambda_moments(moments, n, big_n, clip)
    regression = max(var_y - cov ** 2 / var_f, 0.0)  # Var(Y - beta f), beta = cov / var_f
    rectifier = (regression + var_f * deviation) * (n - 1) / n - 2 * regression / n * free
    return lam_sq * var_f * (big_n - 1) / big_n ** 2 + rectifier / n


def _tuned_lambda_moments(moments: LabelMoments, n: np.ndarray, big_n: np.ndarray,
                          clip: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """E[lam^2], E[(lam - beta)^2] and P(lam not clipped) of `ppi_mean`'s tuned lambda,
    taken as normal around ``Cov(Y, f) / ((1 + n/N) Var(f))`` with the normal-theory
    variance of a sample covariance, ``(Var(Y) Var(f) + Cov(Y, f)^2) / n``, then clipped
    to [0, 1] with `clip` (``beta = Cov(Y, f) / Var(f)``)."""
    var_y, var_f, cov = moments.var_y, moments.var_f, moments.cov
    beta = cov / var_f
    shrink = 1 + n / big_n
    mu = beta / shrink
    tau = np.sqrt((var_y * var_f + cov ** 2) / n) / (shrink * var_f)
    if not clip:
        return mu ** 2 + tau ** 2, (mu - beta) ** 2 + tau ** 2, np.ones_like(n)
    a, b = -mu / tau, (1 - mu) / tau
    below, above = stats.norm.cdf(a), stats.norm.sf(b)
    free = 1 - below - above
    edge = stats.norm.pdf(a) - stats.norm.pdf(b)
    spread = tau ** 2 * (free - b * stats.norm.pdf(b) + a * stats.norm.pdf(a))
    lam_sq = above + mu ** 2 * free + 2 * mu * tau * edge + spread
    deviation = (beta ** 2 * below + (1 - beta) ** 2 * above + (mu - beta) ** 2 * free
                 + 2 * (mu - beta) * tau * edge + spread)
    return lam_sq, deviation, free


def ppi_halfwidth(moments: LabelMoments, n_labelled: int, n_unlabelled: int, *,
                  confidence: float = 0.95, lam: float | None = None,
                  clip: bool = True) -> float:
    """The predicted half-width of the two-sided PPI++ interval of a mean.

    The estimate ``lam mean(f_unlabelled) + mean(Y - lam f_labelled)`` has variance
    ``lam^2 Var(f) / N + Var(Y - lam f) / n`` (arXiv 2311.01453, the mean estimator and
    its power tuning), smallest at ``lam = Cov(Y, f) / ((1 + n/N) Var(f))``, where it is
    ``Var(Y) ((1 - rho^2) / n + rho^2 / (n + N))`` (rho: the labels' correlation with
    the judge). The half-width is ``z_{(1 + confidence)/2}`` times the root of the
    *expected squared standard error `ppi_mean` reports*, which at finite ``n`` differs
    from that variance in two ways, both kept here to first order in ``1/n``: its
    divisor-n variances multiply each term by ``(count - 1) / count``, and its lambda is
    tuned on the same labelled items, a noisy plug-in (normal, with the normal-theory
    variance of a sample covariance, clipped as ppi_mean clips it) whose distance from
    ``beta = Cov(Y, f) / Var(f)`` adds ``Var(f) E[(lam - beta)^2]`` to the rectifier's
    variance, less ``2 Var(Y - beta f) / n`` where it is not clipped (its fit to the
    sample; PPI++'s lambda is a regression slope, cf. Eyre and Madras, arXiv
    2411.12665). For a good judge that is what makes the reported interval wider than
    the asymptotic one below 100 labels (by 3.5 % at 40 labels with rho = 0.88, 9 % with
    rho = 0.97). A fixed `lam` has no tuning term. What is left is Jensen's inequality
    (the mean of the standard error is below the root of its mean square): the
    prediction is 0 to 2 % wide of `ppi_mean`'s mean half-width from 40 labels on, and up
    to 5 % with a near-perfect judge (rho = 0.97); ``tests/core/test_ppi_power.py``
    checks it by simulation.

    Parameters
    ----------
    moments : LabelMoments
        The labels' and judge's moments (`label_moments` from a pilot).
    n_labelled, n_unlabelled : int
        Labelled items ``n`` (at least 2) and items with judge scores only ``N``.
    confidence : float
        The interval's nominal coverage.
    lam : float, optional
        None tunes lambda as `ppi_mean` does (clipped to [0, 1] with `clip`); 0 gives the
        human-only interval's half-width (``N`` then plays no part).
    clip : bool
        With ``lam=None``: clip the tuned lambda to [0, 1].

    Returns
    -------
    float
    """
    check_level(confidence, "two-sided")
    if n_labelled < 2 or (n_unlabelled < 2 and lam != 0):
        raise ValueError(f"need at least 2 labelled and 2 unlabelled items, not "
                         f"{n_labelled} and {n_unlabelled}")
    variance = _expected_variance(moments, np.array([n_labelled]), np.array([n_unlabelled]),
                                  lam, clip)
    return float(stats.norm.ppf(0.5 + confidence / 2)) * math.sqrt(float(variance[0]))


def labels_for_width(halfwidth: float, moments: LabelMoments, n_items: int, *,
                     confidence: float = 0.95, human_only: bool = False,
                     clip: bool = True) -> int | None:
    """The fewest labelled items from which on the PPI++ interval is predicted to be at
    most ``+- halfwidth``.

    `ppi_halfwidth` inverted over ``n``: the smallest count after which every larger one
    meets the target too (with a handful of labels the interval `ppi_mean` reports is
    degenerate, its divisor-n variances and its lambda fitted to the same few items, and
    can be predicted narrow at 2 labels and wide at 10). The labels are taken from a
    task of `n_items` items, so ``N = n_items - n`` items keep the judge's scores only
    (as the leaderboard splits them). With ``human_only``, the classical interval's
    count (lambda 0), for comparison: the labels the judge saves. At the tuned lambda the
    variance is about
    ``Var(Y) ((1 - rho^2) / n + rho^2 / n_items)`` (rho: the labels' correlation with the
    judge), which every label of the task brings down to ``Var(Y) / n_items``: a width
    below about ``z sqrt(Var(Y) / n_items)`` needs more items, not only more labels.

    Parameters
    ----------
    halfwidth : float
        The half-width wanted, in the labels' unit.
    moments : LabelMoments
        The labels' and judge's moments (`label_moments` from a pilot).
    n_items : int
        The task's items, labelled and not.
    confidence : float
        The interval's nominal coverage.
    human_only : bool
        Size the human-only interval instead.
    clip : bool
        Clip the tuned lambda to [0, 1], as `ppi_mean` does by default.

    Returns
    -------
    int or None
        The count (at least 2), or None where no count up to the task's items (all of
        them for human-only, all but 2 for PPI++) is enough.
    """
    check_level(confidence, "two-sided")
    if not halfwidth > 0:
        raise ValueError(f"halfwidth must be positive, not {halfwidth}")
    counts = np.arange(2, n_items + 1 if human_only else n_items - 1)
    if counts.size == 0:
        return None
    variance = _expected_variance(moments, counts, n_items - counts,
                                  0.0 if human_only else None, clip)
    z = float(stats.norm.ppf(0.5 + confidence / 2))
    short = np.flatnonzero(z * np.sqrt(variance) > halfwidth)
    if not short.size:
        return int(counts[0])
    return int(counts[short[-1] + 1]) if short[-1] + 1 < counts.size else None


def few_labels(n_labelled: int, minimum: int = FEW_LABELS) -> str | None:
    """A warning where too few labelled items make the normal interval under-cover.

    PPI++'s interval, and the human-only one, are CLT intervals (arXiv 2311.01453: its
    guarantees, the power-tuned one included, are asymptotic): with few labels the
    divisor-n standard deviation, the z quantile, the noise of the tuned lambda and a
    skewed or discrete label make them too short. ``benchmarks/ppi_coverage.py``
    measures how much (module docstring, "Few labels"): below `FEW_LABELS` labels the
    median coverage of a nominal 95 % PPI++ interval is under 93 %. It does not depend
    on the level asked: the benchmark measures 95 % intervals.

    Parameters
    ----------
    n_labelled : int
        Labelled items behind an interval.
    minimum : int
        Fewer than this warns.

    Returns
    -------
    str or None
        One sentence for logs, metrics and the report, or None from `minimum` labels on.
    """
    if n_labelled >= minimum:
        return None
    return (f"only {n_labelled} labelled items: below {minimum} the PPI++ and human-only "
            "intervals are normal approximations that cover less often than their level "
            "(benchmarks/ppi_coverage.py), more so with skewed or discrete labels; label "
            "more items, or read the intervals as too narrow")
