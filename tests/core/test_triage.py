"""judgebias.stats.triage: the Learn-then-Test threshold on hand-computed audits (exact
binomial p-values worked out below), the no-certification cases, monotonicity in the
target, input checks, and a simulated world with a known truth where LTT meets the target
in at least 1 - delta of audits and the naive rule does not (the full comparison across
judges and audit sizes: benchmarks/triage_validity.py)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from scipy import stats

from judgebias.stats.triage import (
    TriageRule,
    certify_threshold,
    clopper_pearson,
    smallest_certifiable,
    triage,
)

# Ten audit pairs, all confidences distinct, most confident first. Target 0.5: the
# p-value of "accuracy above t < 0.5" with k of n correct is P(Bin(n, 1/2) >= k), sums of
# binomial coefficients over 2^n.
CONF = [0.99, 0.95, 0.9, 0.85, 0.8, 0.75, 0.7, 0.65, 0.6, 0.55]
CORRECT = [1, 1, 1, 1, 1, 1, 0, 1, 0, 0]


def test_smallest_certifiable_by_hand():
    # target^n <= delta first at: 0.5^5 = 1/32; 0.9^29 = 0.047 (0.9^28 = 0.052);
    # 0.8^14 = 0.044 (0.8^13 = 0.055); 0.95^59 = 0.0485 (0.95^58 = 0.051)
    assert smallest_certifiable(0.5, 0.05) == 5
    assert smallest_certifiable(0.9, 0.05) == 29
    assert smallest_certifiable(0.8, 0.05) == 14
    assert smallest_certifiable(0.95, 0.05) == 59
    assert smallest_certifiable(0.5, 0.1) == 4
    for target in (0.6, 0.75, 0.9, 0.97, 0.99):
        for delta in (0.01, 0.05, 0.2):
            n = smallest_certifiable(target, delta)
            assert target**n <= delta < (target ** (n - 1) if n > 1 else 1.0)


def test_ten_pairs_by_hand_stops_at_the_first_non_rejection():
    # delta 0.05: the sequence starts at n = 5 (smallest_certifiable; a tenth of 10 is 1).
    # n=5: 5/5 correct, p = 1/32 = 0.031, rejected; n=6: 6/6, p = 1/64 = 0.016, rejected;
    # n=7: 6/7, p = (C(7,6) + 1) / 128 = 8/128 = 0.0625 > 0.05: stop. The lowest rejected
    # threshold is the 6th confidence, 0.75. (n=8: 7/8, p = 9/256 = 0.035 would pass, but
    # fixed-sequence testing does not resume after a non-rejection.)
    rule = certify_threshold(CONF, CORRECT, target_accuracy=0.5, delta=0.05)
    assert rule.threshold == 0.75
    assert (rule.n_above, rule.n_audit, rule.n_start) == (6, 10, 5)
    assert rule.decided_share == pytest.approx(0.6, abs=1e-12)
    assert rule.audit_accuracy == 1.0
    assert rule.p_value == pytest.approx(1 / 64, abs=1e-12)
    # Clopper-Pearson for 6/6 at 95%: lower end solves p^6 = 0.025, upper end 1
    assert rule.accuracy_low == pytest.approx(0.025 ** (1 / 6), abs=1e-9)
    assert rule.accuracy_high == 1.0
    assert (rule.method, rule.target, rule.delta, rule.confidence) == ("ltt", 0.5, 0.05, 0.95)
    assert rule.certified
    assert stats.binomtest(6, 6, 0.5, alternative="greater").pvalue == pytest.approx(1 / 64)


def test_ten_pairs_by_hand_at_delta_one_tenth():
    # delta 0.1 starts at n = 4 (0.5^4 = 0.0625): n=4..6 all correct (p <= 1/16); n=7:
    # 8/128 = 0.0625; n=8: 7/8, 9/256 = 0.035; n=9: 7/9, (36 + 9 + 1) / 512 = 0.0898;
    # n=10: 7/10, (120 + 45 + 10 + 1) / 1024 = 0.172 > 0.1: stop at 0.6, 9 pairs.
    rule = certify_threshold(CONF, CORRECT, target_accuracy=0.5, delta=0.1)
    assert (rule.threshold, rule.n_above, rule.n_start) == (0.6, 9, 4)
    assert rule.p_value == pytest.approx(46 / 512, abs=1e-12)
    assert rule.audit_accuracy == pytest.approx(7 / 9, abs=1e-12)
    ci = stats.binomtest(7, 9).proportion_ci(confidence_level=0.95, method="exact")
    assert (rule.accuracy_low, rule.accuracy_high) == pytest.approx((ci.low, ci.high),
                                                                    abs=1e-12)
    assert "0.6" in rule.describe() and "probability >= 90%" in rule.describe()


def test_the_naive_rule_takes_the_lowest_threshold_that_reaches_the_target():
    # accuracy above each threshold: 1 (n <= 6), 6/7, 7/8, 7/9 = 0.78, 7/10: at 0.75 the
    # lowest is 0.6; at 0.5 all ten pairs
    naive = certify_threshold(CONF, CORRECT, target_accuracy=0.75, method="naive")
    assert (naive.threshold, naive.n_above, naive.method) == (0.6, 9, "naive")
    assert naive.audit_accuracy == pytest.approx(7 / 9, abs=1e-12)
    assert "no guarantee" in naive.describe()
    assert certify_threshold(CONF, CORRECT, target_accuracy=0.5,
                             method="naive").threshold == 0.55
    # 9/10 correct is exactly 0.9 (no rounding loses it)
    assert certify_threshold([0.9] * 10, [1] * 9 + [0], target_accuracy=0.9,
                             method="naive").threshold == 0.9


def test_ties_go_together_and_triage_applies_the_threshold():
    # thresholds are distinct confidences: 0.9 (6 pairs, 6 correct, p = 1/64), then 0.7
    # (8 pairs, 6 correct: p = (28 + 8 + 1) / 256 = 0.145): stop at 0.9
    conf = [0.9] * 6 + [0.7] * 2 + [0.6] * 2
    correct = [True] * 6 + [False] * 2 + [True] * 2
    rule = certify_threshold(conf, correct, target_accuracy=0.5)
    assert (rule.threshold, rule.n_above) == (0.9, 6)
    assert triage(rule, [0.9, 0.95, 0.89, 0.5, 1.0]).tolist() == [True, True, False, False,
                                                                  True]
    assert triage(rule, []).shape == (0,)


def test_nothing_certified_when_the_audit_is_too_small():
    rule = certify_threshold(CONF, CORRECT, target_accuracy=0.9)  # needs 29 pairs
    assert rule.threshold is None and not rule.certified
    assert (rule.n_above, rule.n_start, rule.decided_share) == (0, 29, 0.0)
    assert math.isnan(rule.audit_accuracy) and math.isnan(rule.accuracy_low)
    assert math.isnan(rule.p_value)
    text = rule.describe()
    assert "No confidence threshold certified" in text and "every pair goes to humans" in text
    assert "29" in text
    assert not triage(rule, [0.99, 1.0, 0.6]).any()


def test_nothing_certified_when_the_first_test_fails():
    # 40 pairs, target 0.8: the sequence starts at 14 pairs (smallest_certifiable; a tenth
    # is 4). The 14 most confident hold 2 errors: p = P(Bin(14, 0.8) >= 12) = 0.448, so it
    # stops there, although all 40 (38 correct, p = 0.008) would pass on their own.
    conf = np.linspace(0.99, 0.6, 40)
    correct = np.ones(40, dtype=int)
    correct[[0, 5]] = 0
    rule = certify_threshold(conf, correct, target_accuracy=0.8)
    assert rule.threshold is None
    assert rule.n_above == 14
    assert rule.p_value == pytest.approx(float(stats.binom.sf(11, 14, 0.8)), abs=1e-12)
    assert rule.p_value == pytest.approx(0.448, abs=1e-3)
    assert "p = 0.448" in rule.describe()
    assert stats.binomtest(38, 40, 0.8, alternative="greater").pvalue < 0.01
    naive = certify_threshold(conf, correct, target_accuracy=0.8, method="naive")
    assert naive.n_above == 40  # the naive rule decides everything
    # a later start skips the bad top: from a half of the audit, 20 pairs with 18 correct
    # (p = 0.206) still fail; from all 40 (p = 0.008) it passes
    assert certify_threshold(conf, correct, target_accuracy=0.8,
                             min_decided=0.5).threshold is None
    assert certify_threshold(conf, correct, target_accuracy=0.8,
                             min_decided=1.0).threshold == pytest.approx(0.6)


def test_a_higher_target_never_gives_a_lower_threshold():
    targets = np.arange(0.55, 0.99, 0.02)
    rng = np.random.default_rng(7)

    def thresholds(conf: np.ndarray, correct: np.ndarray, **kwargs: float) -> list[float]:
        rules = [certify_threshold(conf, correct, target_accuracy=t, **kwargs)
                 for t in targets]
        return [math.inf if r.threshold is None else r.threshold for r in rules]

    for _ in range(6):
        # continuous confidences, default start
        conf = 0.5 + 0.5 * rng.beta(3, 1.5, 400)
        correct = rng.random(400) < conf
        got = thresholds(conf, correct)
        assert got == sorted(got)
        # discrete confidences with one start for every target (module docstring)
        conf = rng.choice([0.6, 0.75, 0.9, 0.99], 400)
        correct = rng.random(400) < conf
        got = thresholds(conf, correct, min_decided=0.25)
        assert got == sorted(got)
    assert any(t < math.inf for t in got)


def test_ties_can_break_monotonicity_where_the_starts_differ():
    # The documented exception: with min_decided=0, target 0.8 starts at 14 pairs and
    # target 0.9 at 29. A block of 20 ties at the top with 15 correct stops 0.8
    # (P(Bin(20, 0.8) >= 15) = 0.80); 0.9 skips it and passes on all 220 (215 correct).
    conf = [0.99] * 20 + [0.9] * 200
    correct = [1] * 15 + [0] * 5 + [1] * 200
    low = certify_threshold(conf, correct, target_accuracy=0.8, min_decided=0.0)
    high = certify_threshold(conf, correct, target_accuracy=0.9, min_decided=0.0)
    assert low.threshold is None and high.threshold == 0.9
    # one start for both targets, at least 29 pairs: monotone again
    for min_decided in (29 / 220, 0.1):  # 0.1: 22 pairs, so both start at the 220-block
        low = certify_threshold(conf, correct, target_accuracy=0.8, min_decided=min_decided)
        high = certify_threshold(conf, correct, target_accuracy=0.9, min_decided=min_decided)
        assert low.threshold == high.threshold == 0.9


def test_p_value_and_interval_match_scipy_binomtest():
    rng = np.random.default_rng(3)
    conf = 0.5 + 0.5 * rng.random(500)
    correct = rng.random(500) < conf
    rule = certify_threshold(conf, correct, target_accuracy=0.85, delta=0.1,
                             interval_confidence=0.9)
    assert rule.threshold is not None
    above = conf >= rule.threshold
    k, n = int(correct[above].sum()), int(above.sum())
    assert n == rule.n_above and rule.decided_share == n / 500
    test = stats.binomtest(k, n, 0.85, alternative="greater")
    assert rule.p_value == pytest.approx(test.pvalue, rel=1e-9)
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.9, method="exact")
    assert (rule.accuracy_low, rule.accuracy_high) == pytest.approx((ci.low, ci.high))
    # by the duality of test and interval, the one-sided (1 - delta) bound clears the target
    one_sided = test.proportion_ci(confidence_level=0.9, method="exact")
    assert one_sided.low >= 0.85
    assert triage(rule, conf).sum() == n
    with pytest.raises(dataclasses.FrozenInstanceError):
        rule.threshold = 0.5  # type: ignore[misc]
    assert isinstance(rule, TriageRule)


def test_clopper_pearson_equals_scipy_binomtest_exact():
    for n in (1, 2, 7, 30, 101):
        for k in sorted({0, 1, n // 3, n // 2, n - 1, n}):
            for level in (0.9, 0.95):
                ci = stats.binomtest(k, n).proportion_ci(confidence_level=level,
                                                         method="exact")
                assert clopper_pearson(k, n, level) == pytest.approx((ci.low, ci.high),
                                                                     abs=1e-12)
    assert clopper_pearson(0, 5)[0] == 0.0 and clopper_pearson(5, 5)[1] == 1.0


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"confidence": [[0.9, 0.8]], "correct": [[1, 0]]}, "one-dimensional"),
    ({"confidence": [0.9, 0.8], "correct": [1]}, "2 pairs but correct 1"),
    ({"confidence": [], "correct": []}, "no pairs"),
    ({"confidence": [0.9, 0.3], "correct": [1, 0]}, r"max\(p, 1 - p\)"),
    ({"confidence": [0.9, 1.2], "correct": [1, 0]}, r"in \[0.5, 1\]"),
    ({"confidence": [0.9, math.nan], "correct": [1, 0]}, "NaN"),
    ({"confidence": [0.9, 0.8], "correct": [1, 2]}, "0/1"),
    ({"confidence": [0.9, 0.8], "correct": [1, math.nan]}, "0/1"),
    ({"confidence": [0.9, 0.8], "correct": ["yes", "no"]}, "0/1"),
    ({"confidence": [0.9, 0.8], "correct": [1, 0], "target_accuracy": 1.0},
     "target_accuracy"),
    ({"confidence": [0.9, 0.8], "correct": [1, 0], "target_accuracy": 0.0},
     "target_accuracy"),
    ({"confidence": [0.9, 0.8], "correct": [1, 0], "delta": 0.0}, "delta"),
    ({"confidence": [0.9, 0.8], "correct": [1, 0], "min_decided": 1.5}, "min_decided"),
    ({"confidence": [0.9, 0.8], "correct": [1, 0], "min_decided": -0.1}, "min_decided"),
    ({"confidence": [0.9, 0.8], "correct": [1, 0], "method": "bonferroni"}, "method"),
    ({"confidence": [0.9, 0.8], "correct": [1, 0], "interval_confidence": 1.0},
     "interval_confidence"),
])
def test_input_errors(kwargs, match):
    kwargs = {"target_accuracy": 0.9, **kwargs}
    with pytest.raises(ValueError, match=match):
        certify_threshold(**kwargs)


def test_triage_input_errors():
    rule = certify_threshold(CONF, CORRECT, target_accuracy=0.5)
    with pytest.raises(ValueError, match=r"confidence_new .*in \[0.5, 1\]"):
        triage(rule, [0.2, 0.9])
    with pytest.raises(ValueError, match="one-dimensional"):
        triage(rule, [[0.9]])
    with pytest.raises(ValueError, match="NaN"):
        triage(rule, [math.inf])


def test_ltt_meets_the_target_where_the_naive_rule_does_not():
    # A calibrated judge, c uniform on [0.5, 1]: the accuracy above t is (1 + t) / 2, so the
    # 0.9 target is met exactly at t = 0.8, and 300-pair audits have ~300 thresholds near
    # it. The truth is the realised accuracy above the chosen t on 100,000 fresh pairs.
    # LTT must meet the target in >= 95% of audits: with 200 audits, 90% leaves 3 binomial
    # standard deviations (1.5 points each). The naive rule picks the lowest of many noisy
    # crossings and lands below t = 0.8 about half the time.
    rng = np.random.default_rng(0)
    fresh = np.sort(rng.uniform(0.5, 1.0, 100_000))
    fresh_correct_above = np.r_[np.cumsum((rng.random(fresh.size) < fresh)[::-1])[::-1], 0]

    def fresh_accuracy(threshold: float) -> float:
        i = int(np.searchsorted(fresh, threshold))
        return fresh_correct_above[i] / (fresh.size - i)

    reps, target, met = 200, 0.9, {"ltt": 0, "naive": 0}
    for _ in range(reps):
        conf = rng.uniform(0.5, 1.0, 300)
        correct = rng.random(300) < conf
        for method in met:
            rule = certify_threshold(conf, correct, target_accuracy=target, method=method)
            # nothing decided meets the target vacuously
            met[method] += rule.threshold is None or fresh_accuracy(rule.threshold) >= target
    assert met["ltt"] / reps >= 0.90
    assert met["naive"] / reps <= 0.75
