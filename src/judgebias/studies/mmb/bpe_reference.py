r"""BPE as the reference implementation optimises it (amzn/BayesPE, ``src/ensemble_scaler.py``
``BayesianLoss``), beside eq. 5 of seed 002 (``002_c331b1081448eede.txt`` §3.1), so a
user can tell which BPE a published number used. Role: an estimator beside those of
estimator.py (the factorial fits it as "BPE-ref").

Eq. 5 (``estimator.BayesianPromptEnsemble``) maximises
:math:`\sum_a w_a S_a + H(w)`, :math:`S_a = \sum_j \log q_{ja}`,
:math:`q_{ja} = p(y_j \mid x_j, a)`: the log-likelihood *outside* the mixture, whose exact
optimum is softmax(S). The reference minimises over softmax-parametrised weights

.. math:: F(w) = -\sum_j \log \sum_a w_a q_{ja} + \lambda R(w), \qquad \lambda = 0.1

(its ``kl_weight``): the mixture likelihood *inside* the log, and a regulariser that its
docstring calls an entropy but that reads ``entropy = -dot(w, exp(w))``:

* ``regulariser="printed"``: :math:`R(w) = \sum_a w_a e^{w_a}`, as the code has it;
* ``regulariser="corrected"``: :math:`R(w) = \sum_a w_a \log w_a = -H(w)`, the entropy
  the docstring and the paper name.

Both are strictly convex and symmetric, so both pull towards the uniform weights, but
with different strength: near uniform (:math:`u = 1/A`) the curvature on the simplex is
:math:`r''(1/A) = A` for the entropy and :math:`(2 + 1/A) e^{1/A}` (about 2) for the
printed term, so with 20 prompts the printed term regularises about 8 times less.

Limits (tests/mmb/test_mmb_bpe_reference.py checks each):

* no validation data, or :math:`\lambda \to \infty`: uniform weights (AVG), under both;
  more precisely :math:`\lambda\, r''(1/A)\,(w - u) \to g - \bar g` with
  :math:`g_a = \sum_j q_{ja} / \bar q_j` the likelihood's gradient at u (second-order
  expansion of F on the simplex);
* :math:`\lambda \to 0`: the maximum-likelihood mixture weights (the EM fixed point
  :math:`w_a \propto w_a \sum_j q_{ja} / (w \cdot q_j)`), under both;
* corrected, :math:`\lambda = 1`: by Jensen, :math:`\log \sum_a w_a q_{ja} \ge
  \sum_a w_a \log q_{ja}`, so the optimum's objective is at least eq. 5's optimum,
  :math:`\mathrm{logsumexp}_a S_a`.

What we do not copy: the reference adds 1e-4 inside the log and to each q (after adding
1e-5 to every class probability and renormalising), divides by :math:`\sum e^\theta +
10^{-4}` instead of normalising exactly, and runs torch LBFGS for 10 x 100 iterations from
a learning rate of 1e-5 (halved while the loss is NaN). Here q is clipped to
[1e-12, 1 - 1e-12] as in estimator.py, and a batched Newton solve on the simplex runs to
convergence (reference_weights), so the numbers are the objective's optimum, not one
optimiser's stopping point. (scipy's L-BFGS-B over softmax logits, tried first, took
25-300 ms per fit here and stalled where the printed regulariser's optimum sits on the
boundary, up to 0.016 nats above the optimum; the Newton solve fits a prompt subset's 12
validation sets at once in about 30 ms per regulariser.)
"""

from __future__ import annotations

import numpy as np

from judgebias.studies.mmb.estimator import EPS, _PromptEnsemble, log_likelihoods

REGULARISERS = ("printed", "corrected")
REFERENCE_WEIGHT = 0.1  # amzn/BayesPE BayesianLoss.forward's kl_weight
BARRIERS = {"printed": 10.0 ** -np.arange(3, 12, 2), "corrected": np.zeros(1)}


def _penalty(w: np.ndarray, regulariser: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """R(w) per row and its first and second derivatives per weight (R is a sum of
    r(w_a))."""
    if regulariser == "printed":
        e = np.exp(w)
        return (w * e).sum(axis=-1), (1 + w) * e, (2 + w) * e
    with np.errstate(divide="ignore", invalid="ignore"):
        log_w = np.log(w)
        return np.where(w > 0, w * log_w, 0.0).sum(axis=-1), 1 + log_w, 1 / w


def _barrier_objective(Q: np.ndarray, W: np.ndarray, weight: float, regulariser: str,
                       mu: float) -> np.ndarray:
    """F(w) - mu sum_a log w_a per configuration (inf outside the open simplex)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        value = (-np.log(np.matmul(Q, W[:, :, None])).sum(axis=(1, 2))
                 + weight * _penalty(W, regulariser)[0] - mu * np.log(W).sum(axis=1))
    return np.where((W > 0).all(axis=1), value, np.inf)


def reference_weights(Q: np.ndarray, weight: float = REFERENCE_WEIGHT,
                      regulariser: str = "printed", *, tol: float = 1e-12
                      ) -> np.ndarray:
    """The weights minimising F (module docstring) for each configuration's likelihoods
    of the true labels `Q` (V, n, A), (V, A). Rows of ones add nothing (log 1 = 0 on the
    simplex), so validation sets of different sizes are padded with ones.

    Solver: F is convex on the simplex, so Newton's method with the equality constraint
    (a KKT solve per step) and backtracking line searches that stay inside the simplex.
    The entropy keeps the corrected optimum inside; the printed regulariser's optimum may
    sit on the boundary (where the reference's softmax logits drift to -inf), so it
    gets a log barrier mu sum_a log w_a, mu from 1e-3 down to 1e-11. Every configuration
    is solved at once (batched linear algebra); tests check the result against the
    stationarity conditions and the limits."""
    Q = np.clip(np.asarray(Q, dtype=float), EPS, 1.0)
    W = np.full((Q.shape[0], Q.shape[2]), 1.0 / Q.shape[2])
    for mu in BARRIERS[regulariser]:
        active = np.arange(len(W))
        for _ in range(100):
            step, grad = _newton_step(Q[active], W[active], weight, regulariser, mu)
            going = -(grad * step).sum(axis=1) >= tol  # the Newton decrement
            active, step, grad = active[going], step[going], grad[going]
            if not len(active):
                break
            W[active] = _line_search(Q[active], W[active], step, grad, weight,
                                     regulariser, mu)
    return W / W.sum(axis=1, keepdims=True)


def _newton_step(Q: np.ndarray, W: np.ndarray, weight: float, regulariser: str,
                 mu: float) -> tuple[np.ndarray, np.ndarray]:
    """(Newton step on the simplex, gradient) of F - mu sum log w: the KKT system
    H d + nu 1 = -g, 1'd = 0, solved as d = -H^-1 (g + nu 1)."""
    ratio = Q / np.matmul(Q, W[:, :, None])
    _, slope, curvature = _penalty(W, regulariser)
    grad = -ratio.sum(axis=1) + weight * slope - mu / W
    hess = np.matmul(ratio.transpose(0, 2, 1), ratio)
    hess += np.eye(W.shape[1]) * (weight * curvature + mu / W ** 2)[:, :, None]
    solved = np.linalg.solve(hess, np.stack([grad, np.ones_like(grad)], axis=2))
    nu = solved[:, :, 0].sum(axis=1) / solved[:, :, 1].sum(axis=1)
    return -(solved[:, :, 0] - nu[:, None] * solved[:, :, 1]), grad


def _line_search(Q: np.ndarray, W: np.ndarray, step: np.ndarray, grad: np.ndarray,
                 weight: float, regulariser: str, mu: float) -> np.ndarray:
    """Backtracking (Armijo, with round-off slack) from the longest step that stays
    inside the simplex; a configuration with no decrease keeps its weights."""
    with np.errstate(divide="ignore"):
        to_edge = np.where(step < 0, -W / np.where(step < 0, step, -1.0), np.inf).min(axis=1)
    t = np.minimum(1.0, 0.99 * to_edge)
    current = _barrier_objective(Q, W, weight, regulariser, mu)
    bound = current + 1e-13 * np.abs(current)
    slope = (grad * step).sum(axis=1)
    for _ in range(40):
        trial = W + t[:, None] * step
        ok = _barrier_objective(Q, trial, weight, regulariser, mu) <= bound + 1e-4 * t * slope
        if ok.all():
            break
        t = np.where(ok, t, t / 2)
    return np.where(ok[:, None], trial, W)


def reference_objective(q: np.ndarray, w: np.ndarray, weight: float, regulariser: str
                        ) -> float:
    """F(w) for one configuration's likelihoods `q` (n, A)."""
    q = np.clip(np.asarray(q, dtype=float), EPS, 1.0)
    return float(_barrier_objective(q[None], np.asarray(w)[None], weight, regulariser,
                                    0.0)[0])


class ReferenceBayesianPromptEnsemble(_PromptEnsemble):
    r"""BPE as amzn/BayesPE fits it (module docstring): mixture likelihood inside the log,
    regulariser as printed (:math:`w e^w`) or corrected (entropy); eq. 6 inference.

    Parameters
    ----------
    regulariser : {"printed", "corrected"}
        ``printed``: :math:`\sum_a w_a e^{w_a}`, the reference's code; ``corrected``:
        :math:`\sum_a w_a \log w_a`, the entropy its docstring names.
    weight : float
        :math:`\lambda`, the regulariser's weight (the reference's ``kl_weight``, 0.1).

    Attributes
    ----------
    weights_ : ndarray of shape (n_prompts,)
    objective_ : float
        F at ``weights_`` (the quantity minimised).

    Examples
    --------
    >>> ref = ReferenceBayesianPromptEnsemble(regulariser="corrected")
    >>> bool(ref.fit([[0.8, 0.5]], [1]).weights_[0] > 0.5)
    True
    """

    def __init__(self, regulariser: str = "printed", weight: float = REFERENCE_WEIGHT
                 ) -> None:
        self.regulariser = regulariser
        self.weight = weight

    def fit(self, X: object, y: object) -> ReferenceBayesianPromptEnsemble:
        if self.regulariser not in REGULARISERS:
            raise ValueError(f"regulariser must be one of {REGULARISERS}, got "
                             f"{self.regulariser!r}")
        if not self.weight > 0:
            raise ValueError(f"weight must be positive, got {self.weight!r}")
        X, y = self._fit_start(X, y)
        q = np.exp(log_likelihoods(X, y))
        self.weights_ = reference_weights(q[None], self.weight, self.regulariser)[0]
        self.objective_ = reference_objective(q, self.weights_, self.weight,
                                              self.regulariser)
        return self
