"""The reference BPE (amzn/BayesPE's objective; studies/mmb/bpe_reference.py): hand-solved
cases and the limits its docstring derives, for the regulariser as printed and as
corrected."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.special import logsumexp
from sklearn.utils.estimator_checks import (
    check_get_params_invariance,
    check_no_attributes_set_in_init,
)

from judgebias.studies.mmb.bpe_reference import (
    REGULARISERS,
    ReferenceBayesianPromptEnsemble,
    reference_objective,
    reference_weights,
)
from judgebias.studies.mmb.estimator import log_likelihoods


def _curvature(regulariser: str, a: int) -> float:
    """r''(1/A): the regulariser's curvature at the uniform weights."""
    return a if regulariser == "corrected" else (2 + 1 / a) * np.exp(1 / a)


@pytest.mark.parametrize("regulariser", REGULARISERS)
def test_two_prompts_one_pair_solves_the_stationarity_equation(regulariser):
    # q = (0.9, 0.5), w = weight of prompt 0, lambda = 1:
    # F(w) = -log(0.5 + 0.4 w) + r(w) + r(1 - w), so F'(w) = 0 reads
    # 0.4 / (0.5 + 0.4 w) = r'(w) - r'(1 - w), with r'(w) = 1 + log w (corrected)
    # or (1 + w) e^w (printed).
    def slope(w):
        return 1 + np.log(w) if regulariser == "corrected" else (1 + w) * np.exp(w)

    expected = brentq(lambda w: 0.4 / (0.5 + 0.4 * w) - slope(w) + slope(1 - w),
                      1e-9, 1 - 1e-9)
    fitted = ReferenceBayesianPromptEnsemble(regulariser=regulariser, weight=1.0).fit(
        [[0.9, 0.5]], [1])
    np.testing.assert_allclose(fitted.weights_, [expected, 1 - expected], atol=1e-8)
    assert 0.5 < expected < 1
    np.testing.assert_allclose(fitted.predict_proba([[0.9, 0.5]])[0, 1],
                               0.9 * expected + 0.5 * (1 - expected))


@pytest.mark.parametrize("regulariser", REGULARISERS)
def test_no_validation_data_and_indistinguishable_prompts_give_avg(regulariser):
    # Without data, or when every prompt says the same, the likelihood is flat on the
    # simplex and the symmetric, strictly convex regulariser picks the uniform weights.
    empty = ReferenceBayesianPromptEnsemble(regulariser=regulariser).fit(np.empty((0, 4)),
                                                                         [])
    np.testing.assert_allclose(empty.weights_, 0.25)
    same = np.repeat(np.random.default_rng(0).uniform(0.1, 0.9, (30, 1)), 5, axis=1)
    y = (np.random.default_rng(1).random(30) < 0.5).astype(int)
    flat = ReferenceBayesianPromptEnsemble(regulariser=regulariser).fit(same, y)
    np.testing.assert_allclose(flat.weights_, 0.2, atol=1e-9)


@pytest.mark.parametrize("regulariser", REGULARISERS)
def test_strong_regulariser_limit(regulariser):
    # lambda -> inf: lambda r''(1/A) (w - u) -> g - mean(g), g_a = sum_j q_ja / mean_a q_j
    rng = np.random.default_rng(2)
    q = rng.uniform(0.2, 0.9, (12, 5))
    g = (q / q.mean(axis=1, keepdims=True)).sum(axis=0)
    weight = 1e4
    w = reference_weights(q[None], weight, regulariser)[0]
    np.testing.assert_allclose(weight * _curvature(regulariser, 5) * (w - 0.2),
                               g - g.mean(), rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("regulariser", REGULARISERS)
def test_weak_regulariser_limit_is_the_maximum_likelihood_mixture(regulariser):
    # lambda -> 0: the mixture weights maximising sum_j log(q_j . w), found here by EM
    # (w_a <- w_a mean_j q_ja / (q_j . w)); two prompts right on different pairs keep the
    # optimum inside the simplex.
    q = np.array([[0.9, 0.2], [0.3, 0.8], [0.6, 0.6], [0.85, 0.3], [0.2, 0.7]])
    em = np.full(2, 0.5)
    for _ in range(5000):
        em = em * (q / (q @ em)[:, None]).mean(axis=0)
    w = reference_weights(q[None], 1e-9, regulariser)[0]
    np.testing.assert_allclose(w, em, atol=1e-5)


def test_corrected_objective_bounds_eq5_by_jensen():
    # log sum_a w_a q_ja >= sum_a w_a log q_ja, so at lambda = 1 the corrected optimum
    # is at least eq. 5's optimum logsumexp(S).
    rng = np.random.default_rng(3)
    X = rng.uniform(0.05, 0.95, (20, 6))
    y = rng.integers(0, 2, 20)
    fitted = ReferenceBayesianPromptEnsemble(regulariser="corrected", weight=1.0).fit(X, y)
    assert -fitted.objective_ >= logsumexp(log_likelihoods(X, y).sum(axis=0)) - 1e-9


@pytest.mark.parametrize("regulariser", REGULARISERS)
def test_optimum_meets_the_kkt_conditions_and_beats_random_weights(regulariser):
    rng = np.random.default_rng(4)
    q = rng.uniform(0.05, 0.95, (8, 6))
    w = reference_weights(q[None], 0.1, regulariser)[0]
    slope = 1 + np.log(w) if regulariser == "corrected" else (1 + w) * np.exp(w)
    grad = -(q / (q @ w)[:, None]).sum(axis=0) + 0.1 * slope
    inside = w > 1e-6
    # equal gradients where the weight is positive, no lower one where it is zero
    assert np.ptp(grad[inside]) < 1e-5
    assert (grad[~inside] >= grad[inside].mean() - 1e-5).all()
    best = reference_objective(q, w, 0.1, regulariser)
    for other in rng.dirichlet(np.ones(6), size=200):
        assert reference_objective(q, other, 0.1, regulariser) >= best - 1e-10


def test_batched_fits_equal_one_at_a_time_fits_with_padding():
    rng = np.random.default_rng(5)
    sets = [rng.uniform(0.05, 0.95, (n, 4)) for n in (0, 3, 9)]
    padded = np.ones((3, 9, 4))
    for v, q in enumerate(sets):
        padded[v, :len(q)] = q
    for regulariser in REGULARISERS:
        together = reference_weights(padded, 0.1, regulariser)
        for v, q in enumerate(sets):
            np.testing.assert_allclose(together[v], reference_weights(
                q.reshape(1, -1, 4), 0.1, regulariser)[0], atol=1e-7)


def test_estimator_api_and_errors():
    check_no_attributes_set_in_init("ref", ReferenceBayesianPromptEnsemble())
    check_get_params_invariance("ref", ReferenceBayesianPromptEnsemble())
    with pytest.raises(ValueError, match="regulariser"):
        ReferenceBayesianPromptEnsemble(regulariser="entropy").fit([[0.5]], [1])
    with pytest.raises(ValueError, match="weight"):
        ReferenceBayesianPromptEnsemble(weight=0).fit([[0.5]], [1])
    with pytest.raises(ValueError, match="probabilities"):
        ReferenceBayesianPromptEnsemble().fit([[1.5]], [1])
