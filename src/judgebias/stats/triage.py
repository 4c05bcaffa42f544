"""Triage of new judged pairs: which the judge decides, with a guarantee, and which go to
humans.

The leaderboard (``specs/leaderboard.md``, "Triage (MMB)") uses a calibrated pairwise
judge (MMB, seed 002) on new pairs. Each pair gets a confidence ``c = max(p, 1 - p)``; the
judge decides the pairs with ``c >= t`` and lists the rest for humans. The threshold
``t`` comes from the audit: held-out test pairs with the judge's confidence ``c_i`` and
whether its verdict agreed with the human label (``correct_i``). For a target accuracy
``alpha*`` we want the accuracy of the decided share, ``A(t) = P(correct | c >= t)`` on
new pairs, to be at least ``alpha*``.

**Why not the empirical curve.** The naive rule picks the lowest ``t`` whose audit
accuracy above ``t`` reaches the target. It chooses ``t`` on the same pairs that measure
it, among many thresholds, and takes the lowest that happens to pass: the audit accuracy
at that ``t`` is biased upwards, and where the true curve crosses the target it lands
below the crossing about as often as not (``benchmarks/triage_validity.py``: the target
is met in 30-60 % of audits there, whatever the audit size). It is offered here
(``method="naive"``) only to be compared with.

**Learn then Test.** Angelopoulos, Bates, Candès, Jordan and Lei, "Learn then Test:
Calibrating Predictive Algorithms to Achieve Risk Control" (arXiv 2110.01052; Ann. Appl.
Stat. 19, 2025) turn the choice of ``t`` into multiple testing (their Theorem 1: any
family-wise-error-controlling procedure over valid p-values gives a set of parameters
that are all good with probability ``1 - delta``; selective classification is one of
their examples). Here, for each candidate ``t`` the null is ``H_t: A(t) < alpha*``.

* *p-value*: among the ``n_t`` audit pairs with ``c >= t``, ``k_t`` are correct. For
  i.i.d. pairs, given ``n_t`` they are ``n_t`` draws from the pairs above ``t``, so
  ``k_t ~ Binomial(n_t, A(t))``, and the exact one-sided binomial p-value
  ``P(Binomial(n_t, alpha*) >= k_t)`` (``scipy.stats.binom.sf``, equal to
  ``binomtest(k_t, n_t, alpha*, alternative="greater").pvalue``) is valid under ``H_t``.
  It is the selective-risk p-value of the authors' worked example (the binomial tail given
  the number of points above the threshold).
* *fixed-sequence testing*: the thresholds are tested from the most confident down, each
  at level ``delta``, stopping at the first that is not rejected; the chosen ``t`` is the
  lowest rejected one. With the order fixed in advance this controls the family-wise
  error at ``delta`` (a wrong rejection needs the first true null in the order to be
  rejected, which has probability at most ``delta``; one of LTT's FWER procedures),
  whatever the shape of ``A(t)``, so ``P(A(t) >= alpha*) >= 1 - delta`` over the draw of
  the audit. It needs no Bonferroni share, so testing many thresholds
  costs no power; its weakness is the order: a bad stretch among the most confident pairs
  stops it, even if the curve recovers below.

**Candidate thresholds: every distinct audit confidence, descending.** ``n_t`` and
``k_t`` (so the p-value) only change at audit confidences, so testing these is the same
as testing every ``t`` of the continuum from high to low: the audit-dependent grid adds
no selection (a ``t`` between two audit values decides the same audit pairs as the next
audit value above it, and on new pairs decides a superset, which we do not take). No
thinning: the whole procedure is one sort, one cumulative sum and one vectorised
``binom.sf`` (0.1 s for 10^5 pairs on a shared core, under a millisecond for 300), and a
coarser grid would only lose resolution, or step over a dip and so depend on where the
grid happens to lie.

**Where the sequence starts.** With ``n`` pairs above it, a threshold can be rejected
only if ``alpha*^n <= delta`` (all ``n`` correct); `smallest_certifiable` gives that
``n`` (29 at ``alpha* = 0.9, delta = 0.05``; 14 at 0.8; 59 at 0.95). Above it the test
cannot reject, and a non-rejection there would end the sequence before it begins. Nor
should the sequence start exactly there: the first test decides everything (the sequence
stops at the first non-rejection), and at ``smallest_certifiable`` pairs it needs every
one correct, so a single error among the most confident pairs certifies nothing (a top
that is 97 % accurate gets all 29 right only 41 % of the time). So the sequence starts at
the most confident threshold with at least ``max(ceil(min_decided * n_audit),
smallest_certifiable(alpha*, delta))`` audit pairs above it, ``min_decided = 0.1`` by
default: a first test on a tenth of the audit absorbs a few errors, and a threshold that
decides fewer than a tenth of the pairs is of little use for triage anyway (the authors'
example likewise keeps only thresholds with at least 30 points above them).
``benchmarks/triage_validity.py`` measures the default against starting at
`smallest_certifiable` (``min_decided=0``): a larger share decided in 14 of its 45 cells
(0.70 of the pairs against 0.48 for a calibrated judge, target 0.8, 300 audit pairs; 0.71
against 0.18 for an over-confident one with 1,000), at most 0.002 less in the others (an
audit of 100 pairs starts at `smallest_certifiable` either way). This start depends on
the audit confidences (never on the labels); it is the one step outside the fixed-order
argument above, and the benchmark measures both starts meeting the target in at least
95.8 % of audits in every cell (delta = 0.05).

**What is reported.** For the chosen ``t``: the audit accuracy above it with an exact
Clopper-Pearson interval (`clopper_pearson`), and the share of audit pairs above it, which
estimates the share of new pairs decided. The guarantee is the LTT one (``A(t) >=
alpha*`` with probability ``1 - delta``); the interval is that of one fixed threshold, not
adjusted for choosing ``t`` (by the duality of test and interval, the one-sided
``1 - delta`` Clopper-Pearson bound at the chosen ``t`` is at least ``alpha*``; the
two-sided interval's lower end may be a little below). Read it as a description of the
audit: in the benchmark the 95 % interval covers the true accuracy above the chosen ``t``
in 94-99.5 % of the certifying audits where at least half the audits certify, but only
17-54 % in the cells where 2.7-5.7 % do (the audits that certify a hard target are the
lucky draws). If no threshold is certified, nothing is decided and every pair goes to
humans (`TriageRule.describe` says so and why).

**Assumptions.** The audit pairs and the new pairs must be exchangeable: drawn from the
same population of pairs, judged by the same judge, prompt and calibration (seed 002),
and the audit not chosen by looking at confidences or labels. The guarantee concerns
``A(t)``, the accuracy of the decided share in that population; the accuracy realised on a
finite batch of new pairs scatters around it. It is not a per-pair guarantee. Missing
values are an error: the caller drops failed judge answers and counts them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

TriageMethod = Literal["ltt", "naive"]
METHODS: tuple[TriageMethod, ...] = ("ltt", "naive")


@dataclass(frozen=True)
class TriageRule:
    """A confidence threshold for triage, with what the audit says about it.

    Attributes
    ----------
    threshold : float or None
        New pairs with confidence ``>= threshold`` are decided by the judge; None when
        nothing is certified (every pair goes to humans).
    audit_accuracy : float
        Accuracy of the audit pairs above the threshold (NaN when none).
    accuracy_low, accuracy_high : float
        Its two-sided exact Clopper-Pearson interval at ``confidence`` (NaN when none),
        not adjusted for the choice of the threshold (module docstring).
    decided_share : float
        Share of audit pairs above the threshold: the expected share of new pairs decided
        (0 when none).
    n_audit : int
        Audit pairs.
    n_above : int
        Audit pairs above the threshold (when none is certified, see ``p_value``).
    target : float
        The target accuracy ``alpha*``.
    delta : float
        The allowed probability that the decided share's accuracy is below the target.
    method : {"ltt", "naive"}
        ``"ltt"``: Learn then Test with fixed-sequence testing (valid); ``"naive"``: the
        lowest threshold whose audit accuracy reaches the target (for comparison only).
    p_value : float
        The exact one-sided binomial p-value of ``H_t: A(t) < target`` at the threshold;
        when none is certified by ``"ltt"``, at the threshold that stopped the sequence
        (then ``n_above`` is its count), NaN if none was tested.
    n_start : int
        The fewest audit pairs above a threshold for it to be considered: the sequence
        starts at the most confident threshold with at least this many (for ``"ltt"``,
        ``max(ceil(min_decided * n_audit), smallest_certifiable(target, delta))``).
    confidence : float
        Level of the Clopper-Pearson interval.
    """

    threshold: float | None
    audit_accuracy: float
    accuracy_low: float
    accuracy_high: float
    decided_share: float
    n_audit: int
    n_above: int
    target: float
    delta: float
    method: TriageMethod
    p_value: float
    n_start: int
    confidence: float = 0.95

    @property
    def certified(self) -> bool:
        """Whether any pair is decided by the judge."""
        return self.threshold is not None

    def describe(self) -> str:
        """One sentence for the report: what is decided and with what guarantee, or that
        nothing is, and why."""
        if self.threshold is None:
            if self.method == "naive":
                why = "no threshold's audit accuracy reaches it"
            elif self.n_above == 0:
                why = (f"its first test needs a threshold with at least {self.n_start} audit "
                       f"pairs above it, and the audit has {self.n_audit}")
            else:
                why = (f"the {self.n_above} most confident audit pairs do not show it "
                       f"(exact binomial p = {self.p_value:.3g} > {self.delta:g})")
            return (f"No confidence threshold certified for accuracy >= {self.target:g} "
                    f"({self.method}, delta {self.delta:g}): {why}; every pair goes to "
                    "humans.")
        guarantee = (f"accuracy >= {self.target:g} with probability >= "
                     f"{100 * (1 - self.delta):.4g}% (Learn then Test)" if self.method == "ltt" else
                     f"audit accuracy >= {self.target:g} (naive rule: no guarantee)")
        return (f"The judge decides pairs with confidence >= {self.threshold:.4g} "
                f"({self.decided_share:.0%} of the {self.n_audit} audit pairs): "
                f"{guarantee}; audit accuracy {self.audit_accuracy:.3f} "
                f"[{self.accuracy_low:.3f}, {self.accuracy_high:.3f}] "
                f"({self.confidence:.0%} Clopper-Pearson, {self.n_above} pairs, not "
                "adjusted for the choice of threshold).")


def smallest_certifiable(target: float, delta: float) -> int:
    """The fewest audit pairs above a threshold at which ``H_t`` can be rejected.

    The exact binomial p-value is smallest when every pair is correct, ``target ** n``;
    this is the smallest ``n`` with ``target ** n <= delta``. Fewer pairs above a
    threshold can never certify it, whatever their labels.

    Parameters
    ----------
    target, delta : float
        The target accuracy and the error level, both in (0, 1).

    Returns
    -------
    int
    """
    _check_levels(target, delta)
    n = max(1, math.ceil(math.log(delta) / math.log(target)))
    while float(stats.binom.sf(n - 1, n, target)) > delta:  # rounding of the logs
        n += 1
    while n > 1 and float(stats.binom.sf(n - 2, n - 1, target)) <= delta:
        n -= 1
    return n


def certify_threshold(confidence: ArrayLike, correct: ArrayLike, *, target_accuracy: float,
                      delta: float = 0.05, min_decided: float = 0.1,
                      method: TriageMethod = "ltt", interval_confidence: float = 0.95
                      ) -> TriageRule:
    """Choose the confidence threshold whose decided share meets a target accuracy.

    Learn then Test (Angelopoulos et al., arXiv 2110.01052) with fixed-sequence testing
    over the distinct audit confidences from the most confident down: each ``H_t:
    A(t) < target_accuracy`` gets the exact one-sided binomial p-value of the audit pairs
    above ``t``; the sequence stops at the first p-value above ``delta`` and the lowest
    rejected ``t`` is chosen. Then ``P(A(t) >= target_accuracy) >= 1 - delta`` over the
    draw of the audit (module docstring: the argument, where the sequence starts, the
    assumptions).

    Parameters
    ----------
    confidence : array_like
        The judge's confidence ``max(p, 1 - p)`` on each audit pair, in [0.5, 1].
    correct : array_like
        1 (or True) where the judge's verdict agreed with the human label, else 0.
    target_accuracy : float
        The target accuracy ``alpha*`` of the decided share, in (0, 1).
    delta : float
        Allowed probability, over audits, that the decided share misses the target.
    min_decided : float
        The smallest share of the audit pairs a threshold must decide to be tested, in
        [0, 1]. The sequence starts at the most confident threshold with at least
        ``max(ceil(min_decided * n_audit), smallest_certifiable(target_accuracy, delta))``
        pairs above it (module docstring: why 0.1, and not 0). The naive rule only
        considers thresholds with at least ``ceil(min_decided * n_audit)`` pairs above.
    method : {"ltt", "naive"}
        ``"naive"`` picks the lowest threshold whose audit accuracy reaches the target,
        without a guarantee (for comparison).
    interval_confidence : float
        Level of the Clopper-Pearson interval of the audit accuracy.

    Returns
    -------
    TriageRule
        With ``threshold=None`` when no threshold is certified.

    Raises
    ------
    ValueError
        On arrays that are not 1-D or differ in length, no audit pairs, confidences
        outside [0.5, 1] or not finite, ``correct`` not 0/1, levels outside (0, 1), an
        unknown method or a ``min_decided`` outside [0, 1].
    """
    conf, hit = _audit(confidence, correct)
    _check_levels(target_accuracy, delta)
    if not 0 < interval_confidence < 1:
        raise ValueError(f"interval_confidence must be in (0, 1), not {interval_confidence}")
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, not {method!r}")
    if not 0 <= min_decided <= 1:
        raise ValueError(f"min_decided must be a share of the audit in [0, 1], not "
                         f"{min_decided}")
    floor = max(1, math.ceil(min_decided * conf.size - 1e-9))
    thresholds, n_above, k_above = _curve(conf, hit)
    p_values = stats.binom.sf(k_above - 1, n_above, target_accuracy)
    if method == "ltt":
        start = max(floor, smallest_certifiable(target_accuracy, delta))
        tested = np.flatnonzero(n_above >= start)
        passed = p_values[tested] <= delta
        run = int(np.argmin(passed)) if not passed.all() else passed.size
        chosen = int(tested[run - 1]) if run else None
        failed = int(tested[run]) if run < tested.size else None
    else:
        start = floor
        meets = np.flatnonzero((n_above >= start) & (k_above / n_above >= target_accuracy))
        chosen = int(meets[-1]) if meets.size else None
        failed = None
    if chosen is None:
        # n_above and p_value: the threshold that stopped the sequence, if any
        return TriageRule(None, math.nan, math.nan, math.nan, 0.0, conf.size,
                          0 if failed is None else int(n_above[failed]), target_accuracy,
                          delta, method, math.nan if failed is None else
                          float(p_values[failed]), start, interval_confidence)
    n, k = int(n_above[chosen]), int(k_above[chosen])
    low, high = clopper_pearson(k, n, interval_confidence)
    return TriageRule(float(thresholds[chosen]), k / n, low, high, n / conf.size, conf.size,
                      n, target_accuracy, delta, method, float(p_values[chosen]), start,
                      interval_confidence)


def clopper_pearson(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """The exact (Clopper-Pearson) two-sided interval of a binomial proportion.

    Clopper and Pearson (Biometrika 26, 1934): the ends are the proportions at which the
    observed count is in the ``(1 - confidence) / 2`` tail, the beta quantiles
    ``Beta((1 - c) / 2; k, n - k + 1)`` and ``Beta((1 + c) / 2; k + 1, n - k)`` (0 and 1
    at ``k = 0`` and ``k = n``). Computed by statsmodels' ``proportion_confint(...,
    method="beta")``, equal to scipy's ``binomtest(k, n).proportion_ci(method="exact")``
    to 1e-12 (``tests/core/test_triage.py``) and ten times faster, which the benchmark's
    10^5 rules need.

    Parameters
    ----------
    k, n : int
        Successes and trials, ``0 <= k <= n``, ``n >= 1``.
    confidence : float
        The interval's coverage, in (0, 1).

    Returns
    -------
    tuple of float
        ``(low, high)``.
    """
    # here, not at the top: statsmodels takes ~1 s to import (as in stats.ranking)
    from statsmodels.stats.proportion import proportion_confint

    low, high = proportion_confint(k, n, alpha=1 - confidence, method="beta")
    return (0.0 if k == 0 else float(low)), (1.0 if k == n else float(high))


def triage(rule: TriageRule, confidence_new: ArrayLike) -> np.ndarray:
    """Which new pairs the judge decides under `rule`.

    Parameters
    ----------
    rule : TriageRule
        From `certify_threshold` on an audit exchangeable with the new pairs.
    confidence_new : array_like
        The judge's confidence ``max(p, 1 - p)`` on each new pair, in [0.5, 1].

    Returns
    -------
    numpy.ndarray of bool
        True where the judge decides (confidence at or above the threshold); all False
        when nothing is certified: those pairs are listed for humans.

    Raises
    ------
    ValueError
        On confidences that are not a 1-D array of finite values in [0.5, 1].
    """
    conf = _confidences(confidence_new, "confidence_new")
    if rule.threshold is None:
        return np.zeros(conf.size, dtype=bool)
    return conf >= rule.threshold


def _curve(conf: np.ndarray, hit: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct confidences, descending, with the pairs and correct pairs at or above each
    (ties go together: a threshold cannot split them)."""
    order = np.argsort(-conf, kind="stable")
    c_sorted = conf[order]
    cum_correct = np.cumsum(hit[order])
    last = np.flatnonzero(np.r_[c_sorted[1:] != c_sorted[:-1], True])
    return c_sorted[last], last + 1, cum_correct[last]


def _confidences(values: ArrayLike, name: str) -> np.ndarray:
    array = np.asarray(values, dtype=float)
    if array.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional (one confidence per pair), not "
                         f"of shape {array.shape}")
    if not np.isfinite(array).all():
        raise ValueError(f"{name} has {int((~np.isfinite(array)).sum())} NaN or infinite "
                         "values: drop the pairs with failed judge answers first")
    outside = (array < 0.5) | (array > 1.0)
    if outside.any():
        raise ValueError(f"{name} must be max(p, 1 - p), in [0.5, 1]; {int(outside.sum())} "
                         f"values lie outside (e.g. {array[outside][0]:g}): pass the "
                         "confidence in the judge's verdict, not p itself")
    return array


def _audit(confidence: ArrayLike, correct: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    conf = _confidences(confidence, "confidence")
    raw = np.asarray(correct)
    if raw.ndim != 1:
        raise ValueError(f"correct must be one-dimensional (one 0/1 per pair), not of "
                         f"shape {raw.shape}")
    if raw.size != conf.size:
        raise ValueError(f"confidence has {conf.size} pairs but correct {raw.size}: one "
                         "of each per audit pair")
    if conf.size == 0:
        raise ValueError("the audit has no pairs")
    try:
        as_float = raw.astype(float)
    except (TypeError, ValueError):
        raise ValueError("correct must hold 0/1 (or booleans): whether the judge's verdict "
                         "agreed with the human label") from None
    bad = ~np.isin(as_float, (0.0, 1.0))
    if bad.any():
        raise ValueError(f"correct must hold 0/1 (or booleans); {int(bad.sum())} values do "
                         f"not (e.g. {raw[bad][0]!r})")
    return conf, as_float.astype(np.int64)


def _check_levels(target: float, delta: float) -> None:
    if not 0 < target < 1:
        raise ValueError(f"target_accuracy must be in (0, 1), not {target}")
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), not {delta}")
