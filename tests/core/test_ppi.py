"""judgebias.stats.ppi: PPI++ for a mean on hand-computed cases, equal to the reference
package ppi_py (ppi-python) on shared inputs, its input checks, and a planted world with a
biased judge (coverage and width across worlds: benchmarks/ppi_coverage.py)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from judgebias.stats.ppi import (
    MeanInterval,
    human_only_mean,
    judge_only_mean,
    normal_interval,
    ppi_mean,
    tuned_lambda,
)

with warnings.catch_warnings():  # ppi_py 0.2.3 calls warnings.simplefilter("ignore") on import
    import ppi_py

Z975 = 1.959963984540054

# Small hand-worked case: 4 labelled items, 5 unlabelled.
Y = [2.0, 4.0, 6.0, 8.0]  # mean 5, divisor-n variance (9 + 1 + 1 + 9) / 4 = 5
F_LAB = [3.0, 4.0, 7.0, 10.0]  # mean 6, divisor-n variance (9 + 4 + 1 + 16) / 4 = 7.5
F_UNLAB = [4.0, 6.0, 8.0, 10.0, 12.0]  # mean 8, divisor-n variance (16 + 4 + 0 + 4 + 16) / 5 = 8


def test_lambda_zero_is_the_classical_mean_and_interval():
    se = math.sqrt(5 / 4)
    for result in (ppi_mean(Y, F_LAB, F_UNLAB, lam=0.0), human_only_mean(Y)):
        assert result.estimate == pytest.approx(5.0, abs=1e-12)
        assert result.se == pytest.approx(se, abs=1e-12)
        assert result.ci_low == pytest.approx(5 - Z975 * se, abs=1e-12)
        assert result.ci_high == pytest.approx(5 + Z975 * se, abs=1e-12)
        assert result.lam == 0.0
    assert ppi_mean(Y, F_LAB, F_UNLAB, lam=0.0).method == "ppi"
    human = human_only_mean(Y)
    assert (human.method, human.n_labelled, human.n_unlabelled) == ("human_only", 4, 0)


def test_lambda_one_is_plain_ppi():
    # Y - f = [-1, 0, -1, -2]: mean -1, divisor-n variance (0 + 1 + 0 + 1) / 4 = 0.5
    result = ppi_mean(Y, F_LAB, F_UNLAB, lam=1.0)
    se = math.sqrt(8 / 5 + 0.5 / 4)
    assert result == MeanInterval(result.estimate, result.ci_low, result.ci_high, result.se,
                                  4, 5, 1.0, "ppi", 0.95)
    assert result.estimate == pytest.approx(8 - 1, abs=1e-12)
    assert result.se == pytest.approx(se, abs=1e-12)
    assert (result.ci_low, result.ci_high) == pytest.approx((7 - Z975 * se, 7 + Z975 * se),
                                                            abs=1e-12)


def test_the_tuned_lambda_by_hand():
    # Cov_n(Y, f) = (9 + 2 + 1 + 12) / 4 = 6; the 9 judge scores sum to 64, their squares
    # to 534, so their sample variance is (534 - 64^2 / 9) / 8 = 710 / 72; 1 + n/N = 1.8
    lam = 6 / (1.8 * 710 / 72)
    assert lam == pytest.approx(24 / 71)
    assert tuned_lambda(Y, F_LAB, F_UNLAB) == pytest.approx(lam, abs=1e-12)
    result = ppi_mean(Y, F_LAB, F_UNLAB)
    assert result.method == "ppi++"
    assert result.lam == pytest.approx(lam, abs=1e-12)
    assert result.estimate == pytest.approx(8 * lam + 5 - 6 * lam, abs=1e-12)
    # Var_n(Y - lam f) = Var(Y) - 2 lam Cov(Y, f) + lam^2 Var(f)
    se = math.sqrt(lam**2 * 8 / 5 + (5 - 12 * lam + lam**2 * 7.5) / 4)
    assert result.se == pytest.approx(se, abs=1e-12)


def test_the_tuned_lambda_is_clipped_to_zero_and_one():
    rng = np.random.default_rng(0)
    y = rng.normal(size=50)
    f_unlab = rng.normal(size=500)
    assert tuned_lambda(y, -y, -f_unlab) == 0.0  # a judge that disagrees: human-only
    assert tuned_lambda(y, 0.5 * y, 0.5 * f_unlab) == 1.0  # a compressed scale
    assert tuned_lambda(y, 0.5 * y, 0.5 * f_unlab, clip=False) > 1.2  # about 2 / 1.1
    assert tuned_lambda(y, -y, -f_unlab, clip=False) < -0.5
    # a constant judge carries nothing: lambda 0 (ppi_py: 0 / 0, NaN or a rounding residue),
    # and the human-only estimate and interval
    assert tuned_lambda(y, np.ones(50), np.ones(500)) == 0.0
    constant = ppi_mean(y, np.ones(50), np.ones(500))
    human = human_only_mean(y)
    assert (constant.estimate, constant.ci_low, constant.ci_high) == pytest.approx(
        (human.estimate, human.ci_low, human.ci_high), abs=1e-12)


def test_the_judge_only_interval_is_the_classical_one_on_the_scores():
    result = judge_only_mean(F_LAB + F_UNLAB)
    scores = np.array(F_LAB + F_UNLAB)
    se = scores.std() / 3
    assert result.estimate == pytest.approx(64 / 9)
    assert result.se == pytest.approx(se)
    assert (result.lam, result.method, result.n_labelled, result.n_unlabelled) == (
        None, "judge_only", 0, 9)


def reference_inputs(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Labels and judge scores of varied quality and size (some clip lambda to 0 or 1)."""
    rng = np.random.default_rng(seed)
    n, big_n = int(rng.integers(5, 80)), int(rng.integers(20, 800))
    slope, bias, noise = rng.uniform(-1, 2.5), rng.uniform(-2, 2), rng.uniform(0.1, 3)
    y = rng.normal(3.0, rng.uniform(0.5, 2), n + big_n)
    f = slope * y + bias + noise * rng.standard_normal(n + big_n)
    return y[:n], f[:n], f[n:]


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("lam", [None, 0.0, 0.35, 1.0, 1.8])
def test_equal_to_ppi_py(seed, lam):
    y, f_lab, f_unlab = reference_inputs(seed)
    for confidence in (0.95, 0.9):
        ours = ppi_mean(y, f_lab, f_unlab, lam=lam, confidence=confidence)
        estimate = ppi_py.ppi_mean_pointestimate(y, f_lab, f_unlab, lam=lam)
        low, high = ppi_py.ppi_mean_ci(y, f_lab, f_unlab, alpha=1 - confidence, lam=lam)
        assert ours.estimate == pytest.approx(float(estimate[0]), abs=1e-10)
        assert ours.ci_low == pytest.approx(float(low[0]), abs=1e-10)
        assert ours.ci_high == pytest.approx(float(high[0]), abs=1e-10)
    if lam is None:
        # ppi_py's lambda, recovered from its estimate (affine in lambda)
        gap = f_unlab.mean() - f_lab.mean()
        theirs = (float(estimate[0]) - y.mean()) / gap
        assert ours.lam == pytest.approx(theirs, abs=1e-8 / min(1.0, abs(gap)))


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("alternative", ["larger", "smaller"])
def test_one_sided_intervals_equal_to_ppi_py(seed, alternative):
    y, f_lab, f_unlab = reference_inputs(seed)
    # ppi_py's tuned-lambda interval ignores `alternative` (its recursive call drops it),
    # so compare at the tuned lambda fixed
    lam = tuned_lambda(y, f_lab, f_unlab)
    for lam_used in (lam, 1.0):
        ours = ppi_mean(y, f_lab, f_unlab, lam=lam_used, alternative=alternative)
        low, high = ppi_py.ppi_mean_ci(y, f_lab, f_unlab, alpha=0.05, lam=lam_used,
                                       alternative=alternative)
        assert (ours.ci_low, ours.ci_high) == pytest.approx((float(np.ravel(low)[0]),
                                                              float(np.ravel(high)[0])),
                                                             abs=1e-10)
    classical = ppi_py.classical_mean_ci(y, alpha=0.05, alternative=alternative)
    human = human_only_mean(y, alternative=alternative)
    assert (human.ci_low, human.ci_high) == pytest.approx(tuple(map(float, classical)),
                                                          abs=1e-10)


@pytest.mark.parametrize("seed", range(6))
def test_human_only_equal_to_ppi_py_classical(seed):
    y, _, _ = reference_inputs(seed)
    for confidence in (0.95, 0.8):
        low, high = ppi_py.classical_mean_ci(y, alpha=1 - confidence)
        ours = human_only_mean(y, confidence)
        assert (ours.ci_low, ours.ci_high) == pytest.approx((low, high), abs=1e-10)
        assert ours.estimate == pytest.approx(y.mean(), abs=1e-12)


def test_normal_interval_shapes():
    assert normal_interval(1.0, 2.0) == pytest.approx((1 - 2 * Z975, 1 + 2 * Z975))
    low, high = normal_interval(1.0, 2.0, alternative="larger")
    assert (low, high) == pytest.approx((1 - 2 * 1.6448536269514722, math.inf))
    low, high = normal_interval(1.0, 2.0, alternative="smaller")
    assert (low, high) == pytest.approx((-math.inf, 1 + 2 * 1.6448536269514722))


@pytest.mark.parametrize(("args", "kwargs", "message"), [
    (([1.0, 2.0, 3.0], [1.0, 2.0], [1.0, 2.0]), {}, "one human label and one judge score"),
    (([1.0], [1.0], [1.0, 2.0]), {}, "y_labelled has 1 items; at least 2"),
    (([1.0, 2.0], [1.0, 2.0], [1.0]), {}, "f_unlabelled has 1 items; at least 2"),
    (([1.0, math.nan], [1.0, 2.0], [1.0, 2.0]), {}, "y_labelled has 1 NaN"),
    (([1.0, 2.0], [1.0, math.nan], [1.0, 2.0]), {}, "f_labelled has 1 NaN"),
    (([1.0, 2.0], [1.0, 2.0], [math.inf, 2.0]), {}, "f_unlabelled has 0 NaN and 1 infinite"),
    (([[1.0, 2.0]], [1.0, 2.0], [1.0, 2.0]), {}, "one-dimensional"),
    (([1.0, 2.0], [1.0, 2.0], [1.0, 2.0]), {"lam": math.nan}, "lam must be a finite"),
    (([1.0, 2.0], [1.0, 2.0], [1.0, 2.0]), {"confidence": 95}, "confidence must be in"),
    (([1.0, 2.0], [1.0, 2.0], [1.0, 2.0]), {"alternative": "two_sided"}, "alternative must"),
])
def test_input_errors(args, kwargs, message):
    with pytest.raises(ValueError, match=message):
        ppi_mean(*args, **kwargs)


def test_input_errors_of_the_plain_means():
    with pytest.raises(ValueError, match="y_labelled has 1 NaN"):
        human_only_mean([1.0, math.nan, 2.0])
    with pytest.raises(ValueError, match="f_all has 1 items"):
        judge_only_mean([1.0])
    with pytest.raises(ValueError, match="confidence must be in"):
        judge_only_mean([1.0, 2.0], confidence=0.0)


def test_a_biased_judge_planted_world():
    """An additive judge bias of +1 point on system a and none on b (self-preference):
    judge-only misses both a's mean and the difference; PPI++ with 100 labels of 1,000
    items covers both at about the nominal rate, narrower than the human labels alone."""
    rng = np.random.default_rng(2311)
    n_items, n_lab, reps = 1000, 100, 200
    truth_a, truth_diff = 6.0, 0.5
    covered = {"ppi++": 0, "judge_only": 0, "ppi++ diff": 0, "judge_only diff": 0}
    widths = {"ppi++": 0.0, "human_only": 0.0}
    for _ in range(reps):
        item = rng.normal(0.0, 1.0, n_items)
        y_a = truth_a + item + rng.normal(0.0, 1.0, n_items)
        y_b = truth_a - truth_diff + item + rng.normal(0.0, 1.0, n_items)
        f_a = y_a + 1.0 + rng.normal(0.0, 0.7, n_items)
        f_b = y_b + rng.normal(0.0, 0.7, n_items)
        lab = slice(None, n_lab)  # the items are exchangeable: the first n are a random sample
        unlab = slice(n_lab, None)
        for key, y, f, truth in (("", y_a, f_a, truth_a),
                                 (" diff", y_a - y_b, f_a - f_b, truth_diff)):
            ppi = ppi_mean(y[lab], f[lab], f[unlab])
            judge = judge_only_mean(f)
            covered["ppi++" + key] += ppi.ci_low <= truth <= ppi.ci_high
            covered["judge_only" + key] += judge.ci_low <= truth <= judge.ci_high
            if not key:
                widths["ppi++"] += ppi.ci_high - ppi.ci_low
                human = human_only_mean(y[lab])
                widths["human_only"] += human.ci_high - human.ci_low
    assert covered["ppi++"] / reps >= 0.88
    assert covered["ppi++ diff"] / reps >= 0.88
    assert covered["judge_only"] / reps <= 0.05
    assert covered["judge_only diff"] / reps <= 0.05
    assert widths["ppi++"] < 0.8 * widths["human_only"]
