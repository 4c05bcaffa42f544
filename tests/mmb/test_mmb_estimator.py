"""MMB's estimators (seed 002 eq. 5-10): hand-computed cases and every limit the spec
lists, under both entropy modes (judgebias.studies.mmb.estimator's table)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import softmax
from sklearn.utils.estimator_checks import (
    check_get_params_invariance,
    check_no_attributes_set_in_init,
)

from judgebias.studies.mmb.estimator import (
    AverageEnsemble,
    BayesianPromptEnsemble,
    BestPrompt,
    MultimodalBayesianEnsemble,
    StandardPrompt,
)

X = np.array([[0.9, 0.6], [0.2, 0.7], [0.8, 0.3]])
Y = np.array([1, 0, 1])


def test_bpe_is_softmax_of_validation_log_likelihoods():
    # S_1 = log .9 + log .8 + log .8 ; S_2 = log .6 + log .3 + log .3
    s = np.array([np.log(0.9 * 0.8 * 0.8), np.log(0.6 * 0.3 * 0.3)])
    bpe = BayesianPromptEnsemble().fit(X, Y)
    np.testing.assert_allclose(bpe.weights_, np.exp(s) / np.exp(s).sum())
    expected = X @ bpe.weights_
    np.testing.assert_allclose(bpe.predict_proba(X)[:, 1], expected)
    np.testing.assert_array_equal(bpe.predict(X), (expected >= 0.5).astype(int))


def test_bpe_weights_maximise_the_eq5_objective():
    bpe = BayesianPromptEnsemble().fit(X, Y)
    s = bpe.log_likelihood_

    def objective(w):
        return w @ s - np.sum(w * np.log(w))

    rng = np.random.default_rng(0)
    for w in rng.dirichlet([1, 1], size=200):
        assert objective(w) <= objective(bpe.weights_) + 1e-12


def test_best_average_and_standard():
    # accuracy: prompt 0 gets 3/3, prompt 1 gets 0/3 (0.7 says A for a B pair, 0.3 B for A)
    assert BestPrompt().fit(X, Y).prompt_ == 0
    tie = np.array([[0.9, 0.6], [0.4, 0.45]])  # both 2/2 right; prompt 0 likelier
    assert BestPrompt().fit(tie, [1, 0]).prompt_ == 0
    np.testing.assert_allclose(AverageEnsemble().fit(X, Y).predict_proba(X)[:, 1], X.mean(1))
    prompts = {StandardPrompt(random_state=s).fit(X, Y).prompt_ for s in range(20)}
    assert prompts == {0, 1}


def test_mmb_per_group_hand_case():
    R = np.array([[1.0, 0.0], [0.5, 0.5], [0.0, 1.0]])
    fitted = MultimodalBayesianEnsemble().fit(X, Y, responsibilities=R)
    loglik = np.log(np.where(Y[:, None] == 1, X, 1 - X))
    np.testing.assert_allclose(fitted.weights_, softmax(R.T @ loglik, axis=1))
    p = np.einsum("nz,za,na->n", R, fitted.weights_, X)
    np.testing.assert_allclose(fitted.predict_proba(X, responsibilities=R)[:, 1], p)


@pytest.mark.parametrize("entropy", ["per_group", "per_sample"])
def test_k1_against_bpe(entropy):
    rng = np.random.default_rng(1)
    P, y = rng.uniform(0.05, 0.95, (30, 4)), rng.integers(0, 2, 30)
    mmb = MultimodalBayesianEnsemble(entropy=entropy).fit(P, y, responsibilities=np.ones((30, 1)))
    bpe = BayesianPromptEnsemble().fit(P, y)
    if entropy == "per_group":
        np.testing.assert_allclose(mmb.weights_[0], bpe.weights_)
    else:  # eq. 9 as printed: softmax(S / M), not BPE
        np.testing.assert_allclose(mmb.weights_[0], softmax(bpe.log_likelihood_ / 30))
        assert not np.allclose(mmb.weights_[0], bpe.weights_)


@pytest.mark.parametrize("entropy", ["per_group", "per_sample"])
def test_no_validation_data_is_avg(entropy):
    empty = np.zeros((0, 3))
    mmb = MultimodalBayesianEnsemble(entropy=entropy).fit(empty, np.zeros(0, int),
                                                          responsibilities=np.zeros((0, 2)))
    np.testing.assert_allclose(mmb.weights_, np.full((2, 3), 1 / 3))
    np.testing.assert_allclose(BayesianPromptEnsemble().fit(empty, []).weights_, 1 / 3)


def _two_cluster_data(n, rng):
    """Prompt 0 is right in cluster 0, prompt 1 in cluster 1; each is a coin flip elsewhere."""
    z = rng.integers(0, 2, n)
    y = rng.integers(0, 2, n)
    good = np.where(y == 1, 0.8, 0.2)
    P = np.column_stack([np.where(z == 0, good, 0.5), np.where(z == 1, good, 0.5)])
    return P, y, np.eye(2)[z]


@pytest.mark.parametrize("entropy", ["per_group", "per_sample"])
def test_unbounded_validation_data(entropy):
    rng = np.random.default_rng(2)
    P, y, R = _two_cluster_data(4000, rng)
    w = MultimodalBayesianEnsemble(entropy=entropy).fit(P, y, responsibilities=R).weights_
    if entropy == "per_group":  # one-hot on the best prompt of each cluster
        np.testing.assert_allclose(w, np.eye(2), atol=1e-6)
    else:  # softmax of the mean log-likelihood: stays spread
        assert np.all(w.max(axis=1) < 0.7)
        np.testing.assert_array_equal(w.argmax(axis=1), [0, 1])


@pytest.mark.parametrize("entropy", ["per_group", "per_sample"])
def test_tau_limits(entropy):
    rng = np.random.default_rng(3)
    P, y, hard = _two_cluster_data(60, rng)
    cosines = np.where(hard == 1, 0.9, 0.6)
    R = softmax(cosines / 1e-4, axis=1)  # tau -> 0: hard clusters, BPE per cluster
    w = MultimodalBayesianEnsemble(entropy=entropy).fit(P, y, responsibilities=R).weights_
    for z in range(2):
        members = hard[:, z] == 1
        s = BayesianPromptEnsemble().fit(P[members], y[members]).log_likelihood_
        expected = softmax(s) if entropy == "per_group" else softmax(s / members.sum())
        np.testing.assert_allclose(w[z], expected, atol=1e-8)
    R = softmax(cosines / 1e6, axis=1)  # tau -> infinity: uniform responsibilities
    w = MultimodalBayesianEnsemble(entropy=entropy).fit(P, y, responsibilities=R).weights_
    s = BayesianPromptEnsemble().fit(P, y).log_likelihood_
    expected = softmax(s / 2) if entropy == "per_group" else softmax(s / len(y))
    np.testing.assert_allclose(w, np.tile(expected, (2, 1)), atol=1e-5)


def test_bad_input_is_a_clear_error():
    with pytest.raises(ValueError, match="probabilities"):
        BayesianPromptEnsemble().fit([[1.5, 0.2]], [1])
    with pytest.raises(ValueError, match="y must"):
        BayesianPromptEnsemble().fit(X, [1, 2, 0])
    with pytest.raises(ValueError, match="rows summing to 1"):
        MultimodalBayesianEnsemble().fit(X, Y, responsibilities=np.ones((3, 2)))
    with pytest.raises(ValueError, match="entropy"):
        MultimodalBayesianEnsemble(entropy="eq9").fit(X, Y, responsibilities=np.ones((3, 1)))


@pytest.mark.parametrize("estimator", [StandardPrompt(random_state=0), BestPrompt(),
                                       AverageEnsemble(), BayesianPromptEnsemble(),
                                       MultimodalBayesianEnsemble()])
def test_scikit_learn_conventions(estimator):
    """The estimator_checks that apply: X must be probabilities, so the checks that feed
    arbitrary reals (check_estimator as a whole) do not."""
    name = type(estimator).__name__
    check_no_attributes_set_in_init(name, estimator)
    check_get_params_invariance(name, estimator)
