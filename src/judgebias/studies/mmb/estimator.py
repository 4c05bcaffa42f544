r"""Prompt-ensemble judges of seed 002 (``002_c331b1081448eede.txt``), scikit-learn style.

``X`` is the (n_samples, n_prompts) matrix of p(y = 1 | x, a): the judge's probability
that image A is preferred under instruction a; ``y`` is 1 when A is preferred. Every
estimator's ``predict_proba`` returns columns [p(y = 0), p(y = 1)]. Log-likelihoods clip
p to [1e-12, 1 - 1e-12], so one confident wrong answer costs about 27.6 nats, not inf.

Baselines (§5): STD, one random prompt; BEST, the prompt with the highest validation
accuracy; AVG, the uniform average.

BPE (§3.1, eq. 5-6). Maximising :math:`\sum_a w_a S_a - \sum_a w_a \log w_a` over the
simplex, :math:`S_a = \sum_j \log p(y_j \mid x_j, a)`: the Lagrangian's stationarity
:math:`S_a - \log w_a - 1 - \lambda = 0` gives :math:`w_a \propto e^{S_a}`, i.e.
``w = softmax(S)``, the exact optimum (the objective is strictly concave). No optimiser.
The reference implementation (amzn/BayesPE) optimises a different objective (the mixture
likelihood inside the log, and a ``w exp(w)`` regulariser where the entropy is meant):
bpe_reference.ReferenceBayesianPromptEnsemble, the factorial's "BPE-ref" baselines.

MMB (§4.1, eq. 7-10). Responsibilities :math:`R_{jz} = p(z \mid x_j)`;
:math:`L_{za} = \sum_j R_{jz} \log p(y_j \mid x_j, a)`, :math:`N_z = \sum_j R_{jz}`.

* ``entropy="per_group"`` (the spec's decision, default) maximises
  :math:`\sum_z [\sum_a w_{za} L_{za} - \sum_a w_{za} \log w_{za}]`: ``w_z = softmax(L_z)``.
* ``entropy="per_sample"`` is eq. 9 as printed (the entropy inside the sum over samples,
  weighted by :math:`N_z`): ``w_z = softmax(L_z / N_z)``; a cluster with
  :math:`N_z = 0` gets uniform weights (the limit of per_group at no data; per_sample's
  ratio is undefined there).

Inference (eq. 10): :math:`p(y \mid x) = \sum_z R_z \sum_a w_{za} p(y \mid x, a)`.

`ClusteredBayesianEnsemble` is MMB made whole for new image pairs: the per-cluster weights
of a fitted `MultimodalBayesianEnsemble` together with what produces its responsibilities
(the cluster centroids g_z and tau: §4 "Soft Image Grouping", p(z | x) ∝ exp(cos(phi(x),
g_z) / tau)) and what produces its ``X`` (the instructions, the judge's prompt template,
how p(y | x, a) is read, the embedding function phi). It is the estimator the pipeline
saves (results/mmb/<judge>/debiaser.json, judgebias.io.saved; `judgebias.load` reads it).

Which limit each mode meets (tests/mmb/test_mmb_estimator.py checks every row):

=====================================  ==========================  =======================
limit                                   per_group                   per_sample (eq. 9)
=====================================  ==========================  =======================
K = 1                                   BPE exactly                 softmax(S / M), not BPE
no validation data                      AVG                         AVG (by definition)
unbounded validation data               one-hot: best per cluster   softmax of the mean
                                                                     log-lik.: not one-hot
tau -> 0 (hard clusters)                BPE per cluster             softmax(S_z / M_z)
tau -> inf (R = 1/K)                    softmax(S / K): one BPE at  softmax(S / M)
                                        temperature K
=====================================  ==========================  =======================

Why this module is long: it is seed 002's family of prompt ensembles as one API (the
three baselines, BPE, MMB, and MMB with its clusters for new pairs, the one the pipeline
saves), sharing the input checks, the log-likelihoods and eq. 10's inference; split, each
estimator would import the others' checks, and the saved class would sit apart from the
MMB it wraps.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from numbers import Real
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from scipy.special import softmax
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

if TYPE_CHECKING:
    from judgebias.studies.mmb.params import MmbParams

EPS = 1e-12


def log_likelihoods(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """log p(y_j | x_j, a) per sample and prompt, p clipped to [EPS, 1 - EPS]."""
    p = np.clip(X, EPS, 1 - EPS)
    return np.where(np.asarray(y)[..., :, None] == 1, np.log(p), np.log1p(-p))


def check_probabilities(X: object, name: str = "X") -> np.ndarray:
    """X as a 2-D float array of probabilities (ValueError otherwise)."""
    X = np.asarray(X, dtype=float)
    if X.ndim != 2:
        raise ValueError(f"{name} must be 2-D (n_samples, n_prompts), got shape {X.shape}")
    if X.shape[1] == 0:
        raise ValueError(f"{name} needs at least one prompt column")
    if np.isnan(X).any() or (X < 0).any() or (X > 1).any():
        raise ValueError(f"{name} must hold probabilities in [0, 1] (no NaN)")
    return X


def check_labels(y: object, n: int) -> np.ndarray:
    y = np.asarray(y)
    if y.shape != (n,):
        raise ValueError(f"y must have shape ({n},), got {y.shape}")
    if not np.isin(y, (0, 1)).all():
        raise ValueError("y must hold 0 (B preferred) or 1 (A preferred)")
    return y.astype(int)


def check_responsibilities(R: object, n: int) -> np.ndarray:
    R = np.asarray(R, dtype=float)
    if R.ndim != 2 or R.shape[0] != n or R.shape[1] == 0:
        raise ValueError(f"responsibilities must have shape ({n}, K), got {R.shape}")
    if (R < 0).any() or not np.allclose(R.sum(axis=1), 1.0, atol=1e-6):
        raise ValueError("responsibilities must be non-negative with rows summing to 1")
    return R


class _PromptEnsemble(ClassifierMixin, BaseEstimator):
    """Shared inference: p(y = 1 | x) = X @ weights_ (eq. 6)."""

    def _fit_start(self, X: object, y: object) -> tuple[np.ndarray, np.ndarray]:
        X = check_probabilities(X)
        y = check_labels(y, X.shape[0])
        self.classes_ = np.array([0, 1])
        self.n_features_in_ = X.shape[1]
        return X, y

    def _positive(self, X: object) -> np.ndarray:
        check_is_fitted(self)
        X = check_probabilities(X)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} prompts, fitted with {self.n_features_in_}")
        return X @ self.weights_

    def predict_proba(self, X: object) -> np.ndarray:
        """Columns [p(B preferred), p(A preferred)]."""
        p = self._positive(X)
        return np.column_stack([1 - p, p])

    def predict(self, X: object) -> np.ndarray:
        """1 where p(A preferred) >= 0.5."""
        return (self._positive(X) >= 0.5).astype(int)


class StandardPrompt(_PromptEnsemble):
    """STD (seed 002 §5): one prompt drawn at random; the validation data are not used.

    Parameters
    ----------
    random_state : int or None
        Seeds the draw.

    Attributes
    ----------
    prompt_ : int
        The drawn prompt's column.
    weights_ : ndarray of shape (n_prompts,)
        One-hot on ``prompt_``.

    Examples
    --------
    >>> StandardPrompt(random_state=0).fit([[0.9, 0.2]], [1]).prompt_ in (0, 1)
    True
    """

    def __init__(self, random_state: int | None = None) -> None:
        self.random_state = random_state

    def fit(self, X: object, y: object) -> StandardPrompt:
        X, y = self._fit_start(X, y)
        self.prompt_ = int(np.random.default_rng(self.random_state).integers(X.shape[1]))
        self.weights_ = np.eye(X.shape[1])[self.prompt_]
        return self


class BestPrompt(_PromptEnsemble):
    """BEST (seed 002 §5): the prompt with the highest validation accuracy; ties go to the
    higher validation log-likelihood, then to the lowest column. Without validation data
    every prompt ties and the first is taken.

    Attributes
    ----------
    prompt_ : int
    weights_ : ndarray of shape (n_prompts,)

    Examples
    --------
    >>> BestPrompt().fit([[0.9, 0.4], [0.3, 0.8]], [1, 0]).prompt_
    0
    """

    def fit(self, X: object, y: object) -> BestPrompt:
        X, y = self._fit_start(X, y)
        accuracy = ((X >= 0.5) == (y[:, None] == 1)).sum(axis=0)
        loglik = log_likelihoods(X, y).sum(axis=0)
        self.prompt_ = int(np.lexsort((np.arange(X.shape[1]), -loglik, -accuracy))[0])
        self.weights_ = np.eye(X.shape[1])[self.prompt_]
        return self


class AverageEnsemble(_PromptEnsemble):
    """AVG (seed 002 §5): the unweighted average of the prompts.

    Attributes
    ----------
    weights_ : ndarray of shape (n_prompts,)
        1 / n_prompts each.

    Examples
    --------
    >>> float(AverageEnsemble().fit([[0.9, 0.5]], [1]).predict_proba([[0.9, 0.5]])[0, 1])
    0.7
    """

    def fit(self, X: object, y: object) -> AverageEnsemble:
        X, _ = self._fit_start(X, y)
        self.weights_ = np.full(X.shape[1], 1.0 / X.shape[1])
        return self


class BayesianPromptEnsemble(_PromptEnsemble):
    """BPE (seed 002 eq. 5, exact solution; eq. 6 inference): weights_ = softmax(S_a).

    Attributes
    ----------
    weights_ : ndarray of shape (n_prompts,)
    log_likelihood_ : ndarray of shape (n_prompts,)
        S_a, the validation log-likelihood of each prompt.

    Examples
    --------
    >>> bpe = BayesianPromptEnsemble().fit([[0.8, 0.5]], [1])
    >>> bool(bpe.weights_[0] > bpe.weights_[1])
    True
    """

    def fit(self, X: object, y: object) -> BayesianPromptEnsemble:
        X, y = self._fit_start(X, y)
        self.log_likelihood_ = log_likelihoods(X, y).sum(axis=0)
        self.weights_ = softmax(self.log_likelihood_)
        return self


class MultimodalBayesianEnsemble(ClassifierMixin, BaseEstimator):
    """MMB (seed 002 eq. 9-10): one prompt-weight vector per image cluster.

    Parameters
    ----------
    entropy : {"per_group", "per_sample"}
        Where the entropy regulariser sits (module docstring): per cluster (default; K = 1
        is BPE) or per sample as eq. 9 prints it.

    Attributes
    ----------
    weights_ : ndarray of shape (n_clusters, n_prompts)
    cluster_mass_ : ndarray of shape (n_clusters,)
        N_z, the validation mass of each cluster.
    top_prompts_ : ndarray of shape (n_clusters,)
        The highest-weighted prompt of each cluster (Fig. 4).

    Examples
    --------
    >>> X, y, R = [[0.9, 0.4], [0.2, 0.7]], [1, 1], [[1.0, 0.0], [0.0, 1.0]]
    >>> MultimodalBayesianEnsemble().fit(X, y, responsibilities=R).top_prompts_.tolist()
    [0, 1]
    """

    def __init__(self, entropy: str = "per_group") -> None:
        self.entropy = entropy

    def fit(self, X: object, y: object, *, responsibilities: object
            ) -> MultimodalBayesianEnsemble:
        if self.entropy not in ("per_group", "per_sample"):
            raise ValueError(f"entropy must be 'per_group' or 'per_sample', got "
                             f"{self.entropy!r}")
        X = check_probabilities(X)
        y = check_labels(y, X.shape[0])
        R = check_responsibilities(responsibilities, X.shape[0])
        self.classes_ = np.array([0, 1])
        self.n_features_in_ = X.shape[1]
        scores = R.T @ log_likelihoods(X, y)  # L_za
        self.cluster_mass_ = R.sum(axis=0)
        if self.entropy == "per_sample":
            mass = self.cluster_mass_[:, None]
            scores = np.divide(scores, mass, out=np.zeros_like(scores), where=mass > 0)
        self.weights_ = softmax(scores, axis=1)
        self.top_prompts_ = self.weights_.argmax(axis=1)
        return self

    def _positive(self, X: object, responsibilities: object) -> np.ndarray:
        check_is_fitted(self)
        X = check_probabilities(X)
        R = check_responsibilities(responsibilities, X.shape[0])
        if R.shape[1] != self.weights_.shape[0]:
            raise ValueError(f"responsibilities have {R.shape[1]} clusters, fitted with "
                             f"{self.weights_.shape[0]}")
        return np.einsum("nz,za,na->n", R, self.weights_, X)

    def predict_proba(self, X: object, *, responsibilities: object) -> np.ndarray:
        """Eq. 10: columns [p(B preferred), p(A preferred)]."""
        p = self._positive(X, responsibilities)
        return np.column_stack([1 - p, p])

    def predict(self, X: object, *, responsibilities: object) -> np.ndarray:
        return (self._positive(X, responsibilities) >= 0.5).astype(int)


# ------------------------------------------------------------------------------------
# MMB for new image pairs: the fitted weights with their clusters (saved by the pipeline)
# ------------------------------------------------------------------------------------

ENTROPIES = ("per_group", "per_sample")
PAIR_MODES = ("mean_prob", "mean_embedding")
# What `embedding` may hold: the keys of judgebias.studies.mmb.embed.EmbeddingSpec that
# change an embedding (``mmb.embedding``; batch size and device change none of its values)
EMBEDDING_KEYS = ("architecture", "pretrained", "checkpoint", "init_seed", "image_size")
# What `probability` may hold: how the judge's p(y | x, a) was read (``mmb.probability``
# for this judge, and ``mmb.order``)
PROBABILITY_KEYS = ("source", "samples", "prior", "order")


# The replicate of the report's cell the pipeline saves (steps.save): the first seed of
# each of the factorial's draws (measures.factorial: training seed t draws D_val,
# sampling seed s the instructions, clustering seed c the clusters)
SAVED_REPLICATE = {"train_seed": 0, "sampling_seed": 0, "cluster_seed": 0}


def saved_instructions(pool: Sequence[str], mmb: MmbParams) -> list[str]:
    """The instruction ids, in column order, of the MMB fit the pipeline saves for a judge
    (steps.save): the ensemble of the report's cell (``mmb.report.n_prompts``, the only
    key read) in sampling seed 0 of the factorial, drawn from `pool` (the instruction
    pool's ids, in its order) as measures.factorial.prompt_order draws it (seed 002 §5:
    each sampling seed draws the instructions of the ensemble; the first n_prompts of
    the seeded permutation). They follow from the pool and that key alone, so a judge
    can be asked them before MMB is fitted (tests/mmb/test_mmb_saved.py checks the draw
    against prompt_order's)."""
    n_prompts, ids = mmb.report.n_prompts, list(pool)
    if n_prompts > len(ids):
        raise ValueError(f"mmb.report.n_prompts: {n_prompts} prompts asked, but the pool "
                         f"has {len(ids)}")
    order = prompt_order(SAVED_REPLICATE["sampling_seed"], len(ids))
    return [ids[i] for i in order[:n_prompts]]


def prompt_order(seed: int, n_prompts: int) -> np.ndarray:
    """Sampling seed `seed`'s permutation of the pool's prompts (seed 002 §5: each
    sampling seed draws the instructions of the ensemble, its first n_prompts;
    measures.factorial draws them here too)."""
    return np.random.default_rng([seed, 1]).permutation(n_prompts)


def unit_rows(X: object) -> np.ndarray:
    """The rows of `X` scaled to unit L2 norm, in float32: the arithmetic of
    judgebias.studies.mmb.measures.cluster.normalise (seed 002 §5: cosine similarity), so
    cosines computed here are the clustering step's to the bit."""
    X = np.asarray(X, dtype=np.float32)
    return X / np.linalg.norm(X, axis=1, keepdims=True).clip(1e-12)


def _strings(values: Any, name: str) -> np.ndarray:
    """`values` as a 1-D object array of Python strings (a saved file's "str" dtype)."""
    items = list(values)
    if not all(isinstance(v, str) for v in items):
        raise ValueError(f"{name} must be strings")
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out


def _plain(value: object, name: str, allowed: Sequence[str]) -> dict[str, Any] | None:
    """A descriptive mapping parameter as a dict of JSON scalars with known keys."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ValueError(f"{name} must be a mapping or None, got {type(value).__name__}")
    unknown = sorted(set(value) - set(allowed))
    if unknown:
        raise ValueError(f"{name}: unknown keys {unknown} (known: {', '.join(allowed)})")
    for key, item in value.items():
        if not (item is None or isinstance(item, str | bool | int | float)):
            raise ValueError(f"{name}.{key} must be a string, a number or None")
    return dict(value)


class ClusteredBayesianEnsemble(ClassifierMixin, BaseEstimator):
    r"""MMB for new image pairs (seed 002 §4, eq. 7-10): prompt weights per image cluster,
    with the clusters themselves.

    A `MultimodalBayesianEnsemble` (eq. 9, solved in closed form: module docstring) whose
    responsibilities come from the pair's images: p(z | x) ∝ exp(cos(phi(x), g_z) / tau)
    (§4 "Soft Image Grouping"; sim = the cosine, §5 "Models"), with the centroids g_z of
    the clustering of the support set, so that the fitted estimator applies to any new
    pair whose images are embedded with the same phi (``embedding``). A pair has two
    images (spec mmb.md): ``pair="mean_prob"`` takes p(z | pair) = (p(z | x_A) +
    p(z | x_B)) / 2, ``"mean_embedding"`` p(z | the normalised mean of the two unit
    embeddings), exactly as the factorial computes them from the clustering step's
    cosines (measures.factorial_inputs.responsibilities, measures.cluster.pair_cosines).
    Inference is eq. 10: p(y | x) = sum_z p(z | x) sum_a w_za p(y | x, a).

    Parameters
    ----------
    tau : float, default=0.05
        Temperature of p(z | x) (never given by the paper; spec mmb.md's default), the
        same to fit and to infer.
    entropy : {"per_group", "per_sample"}, default="per_group"
        Where eq. 9's entropy regulariser sits (module docstring; per_group: K = 1 is BPE).
    pair : {"mean_prob", "mean_embedding"}, default="mean_prob"
        How a pair's two images give p(z | pair) (``mmb.clustering.pair``).
    judge : str or None, default=None
        Descriptive: the judge (panel key) whose p(y | x, a) make ``X``.
    judge_prompt : str or None, default=None
        Descriptive: the id of the pairwise prompt template (judgebias.prompts; MMB's
        ``mmb.prompt``) each instruction was asked with.
    probability : mapping or None, default=None
        Descriptive: how p(y | x, a) was read from the judge: ``source`` ("logprobs", the
        softmax of the two answer tokens' log-probs; or "samples", (k + prior) / (n + 2
        prior) of n sampled verdicts, with ``samples`` and ``prior``), and ``order``
        ("random": one presentation order per (pair, instruction); "both": the mean of
        both orders). See judgebias.studies.mmb.jobs.
    embedding : mapping or None, default=None
        Descriptive: phi, the image embedding the centroids live in: ``architecture``,
        ``pretrained``, ``checkpoint``, ``init_seed``, ``image_size`` (the fields of
        judgebias.studies.mmb.embed.EmbeddingSpec that change an embedding:
        ``EmbeddingSpec(**embedding)`` embeds new images the same way).

    The descriptive parameters change no number; they say how to make the inputs.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        [0, 1]: 0 = image B preferred, 1 = image A preferred.
    n_features_in_ : int
        Number of instructions (columns of ``X``).
    instructions_ : ndarray of str, shape (n_features_in_,)
        The instruction ids, in column order. A DataFrame ``X`` is read by these names.
    instruction_texts_ : ndarray of str, shape (n_features_in_,), or None
        Each instruction's text (what the judge is asked), when given to `fit`.
    centroids_ : ndarray of float32, shape (n_clusters_, n_dims)
        The unit cluster centroids g_z in the embedding space.
    n_clusters_ : int
        K.
    ensemble_ : MultimodalBayesianEnsemble
        The fitted per-cluster weights (eq. 9).
    weights_ : ndarray of shape (n_clusters_, n_features_in_)
        w_za (``ensemble_.weights_``); each row sums to 1.
    cluster_mass_ : ndarray of shape (n_clusters_,)
        N_z, the validation mass of each cluster.
    top_prompts_ : ndarray of shape (n_clusters_,)
        The column of each cluster's highest-weighted instruction (Fig. 4).
    n_validation_ : int
        Validation pairs `fit` saw.
    audit_confidence_ : ndarray of shape (n_audit,)
        Set by `audit`: on each held-out pair, the top-label confidence max(p, 1 - p) of
        this estimator (the x axis of seed 002 Fig. 3's error-coverage curve).
    audit_correct_ : ndarray of bool, shape (n_audit,)
        Set by `audit`: whether the prediction (A where p >= 0.5) agreed with the human
        label. Together, the evidence to triage new pairs by confidence (spec
        leaderboard.md "Triage").
    audit_groups_ : ndarray of str, shape (n_audit,), or None
        Set by `audit`: each held-out pair's group (its generation prompt), the unit to
        resample when the audit's pairs share images; None when not given.

    Examples
    --------
    >>> import numpy as np
    >>> g = np.eye(2)  # two clusters: the first axis and the second
    >>> a = b = np.array([[1.0, 0.0], [0.0, 1.0]])  # pair 0 in cluster 0, pair 1 in 1
    >>> X, y = [[0.9, 0.2], [0.3, 0.8]], [1, 1]
    >>> est = ClusteredBayesianEnsemble(tau=0.01).fit(
    ...     X, y, embeddings_a=a, embeddings_b=b, centroids=g)
    >>> est.top_prompts_.tolist()
    [0, 1]
    >>> est.predict(X, embeddings_a=a, embeddings_b=b).tolist()
    [1, 1]
    """

    _saved_state_version: ClassVar[int] = 1

    def __init__(self, tau: float = 0.05, entropy: str = "per_group",
                 pair: str = "mean_prob", judge: str | None = None,
                 judge_prompt: str | None = None,
                 probability: Mapping[str, Any] | None = None,
                 embedding: Mapping[str, Any] | None = None) -> None:
        self.tau = tau
        self.entropy = entropy
        self.pair = pair
        self.judge = judge
        self.judge_prompt = judge_prompt
        self.probability = probability
        self.embedding = embedding

    def _check_params(self) -> None:
        if (isinstance(self.tau, bool) or not isinstance(self.tau, Real)
                or not np.isfinite(self.tau) or self.tau <= 0):
            raise ValueError(f"tau must be a positive number, got {self.tau!r}")
        if self.entropy not in ENTROPIES:
            raise ValueError(f"entropy must be one of {ENTROPIES}, got {self.entropy!r}")
        if self.pair not in PAIR_MODES:
            raise ValueError(f"pair must be one of {PAIR_MODES}, got {self.pair!r}")
        for name in ("judge", "judge_prompt"):
            if not (getattr(self, name) is None or isinstance(getattr(self, name), str)):
                raise ValueError(f"{name} must be a string or None")
        _plain(self.probability, "probability", PROBABILITY_KEYS)
        _plain(self.embedding, "embedding", EMBEDDING_KEYS)

    # -------------------------------------------------------------------------------
    # inputs
    # -------------------------------------------------------------------------------

    @staticmethod
    def _columns(X: Any, ids: Sequence[str] | None) -> tuple[np.ndarray, list[str]]:
        """(X as a probability matrix, its instruction ids): a DataFrame's columns named
        `ids` (or all of them, in order), an array's columns as they are."""
        if hasattr(X, "columns"):
            names = [str(c) for c in X.columns] if ids is None else list(ids)
            missing = [i for i in names if i not in X.columns]
            if missing:
                raise ValueError(f"X lacks the instruction columns {missing}")
            return check_probabilities(X[names].to_numpy(dtype=float)), names
        matrix = check_probabilities(X)
        names = [f"x{i}" for i in range(matrix.shape[1])] if ids is None else list(ids)
        if len(names) != matrix.shape[1]:
            raise ValueError(f"{len(names)} instruction ids for {matrix.shape[1]} columns")
        return matrix, names

    def _matrix(self, X: object) -> np.ndarray:
        """X at predict time: a DataFrame by ``instructions_``, an array in their order."""
        check_is_fitted(self, "ensemble_")
        matrix, _ = self._columns(X, list(self.instructions_) if hasattr(X, "columns")
                                  else None)
        if matrix.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {matrix.shape[1]} instructions, fitted with "
                             f"{self.n_features_in_}")
        return matrix

    @staticmethod
    def _embeddings(E: object, name: str, dims: int) -> np.ndarray:
        E = np.asarray(E, dtype=np.float32)
        if E.ndim != 2 or E.shape[1] != dims:
            raise ValueError(f"{name} must have shape (n_pairs, {dims}), got {E.shape}")
        if not np.isfinite(E).all():
            raise ValueError(f"{name} must be finite")
        return E

    def _assign(self, centroids: np.ndarray, embeddings_a: object, embeddings_b: object
                ) -> np.ndarray:
        """p(z | pair) (seed 002 §4: softmax_z(cos / tau)) with unit `centroids`."""
        a = self._embeddings(embeddings_a, "embeddings_a", centroids.shape[1])
        b = self._embeddings(embeddings_b, "embeddings_b", centroids.shape[1])
        if a.shape != b.shape:
            raise ValueError(f"embeddings_a {a.shape} and embeddings_b {b.shape} differ")
        ua, ub = unit_rows(a), unit_rows(b)
        if self.pair == "mean_embedding":
            return softmax(np.asarray(unit_rows(ua + ub) @ centroids.T, dtype=float)
                           / self.tau, axis=1)
        return (softmax(np.asarray(ua @ centroids.T, dtype=float) / self.tau, axis=1)
                + softmax(np.asarray(ub @ centroids.T, dtype=float) / self.tau, axis=1)) / 2

    # -------------------------------------------------------------------------------
    # fit, predict, audit
    # -------------------------------------------------------------------------------

    def fit(self, X: object, y: object, *, embeddings_a: object, embeddings_b: object,
            centroids: object, instructions: Sequence[str] | None = None,
            instruction_texts: Sequence[str] | None = None) -> ClusteredBayesianEnsemble:
        """Fit eq. 9's per-cluster weights on validation pairs (seed 002 §4.1).

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_pairs, n_instructions)
            p(y = 1 | x, a): the judge's probability that image A is preferred under each
            instruction. A DataFrame's columns are the instruction ids.
        y : array-like of shape (n_pairs,)
            1 where people prefer image A, 0 where B.
        embeddings_a, embeddings_b : array-like of shape (n_pairs, n_dims)
            phi of each pair's images A and B (any norm: they are normalised).
        centroids : array-like of shape (n_clusters, n_dims)
            The cluster centroids g_z (FAISS spherical k-means on the support set's
            embeddings, measures.cluster.spherical_kmeans; normalised here).
        instructions : sequence of str, optional
            The instruction ids in column order; default: a DataFrame's columns, else
            "x0", "x1", ...
        instruction_texts : sequence of str, optional
            Each instruction's text, in column order.

        Returns
        -------
        self : ClusteredBayesianEnsemble
        """
        self._check_params()
        matrix, ids = self._columns(X, instructions)
        labels = check_labels(y, matrix.shape[0])
        names = _strings(ids, "instructions")
        if len(set(ids)) != len(ids):
            raise ValueError("instruction ids must be unique")
        texts = (None if instruction_texts is None
                 else _strings(instruction_texts, "instruction_texts"))
        if texts is not None and len(texts) != len(names):
            raise ValueError(f"{len(texts)} instruction texts for {len(names)} instructions")
        g = np.asarray(centroids, dtype=np.float32)
        if g.ndim != 2 or g.shape[0] == 0 or not np.isfinite(g).all():
            raise ValueError(f"centroids must be a finite (n_clusters, n_dims) array, got "
                             f"shape {g.shape}")
        g = unit_rows(g)
        R = self._assign(g, embeddings_a, embeddings_b)
        if R.shape[0] != matrix.shape[0]:
            raise ValueError(f"{R.shape[0]} embedded pairs for {matrix.shape[0]} rows of X")
        ensemble = MultimodalBayesianEnsemble(entropy=self.entropy).fit(
            matrix, labels, responsibilities=R)
        self.classes_ = np.array([0, 1])
        self.n_features_in_ = matrix.shape[1]
        self.instructions_ = names
        self.instruction_texts_ = texts
        self.centroids_ = g
        self.n_clusters_ = g.shape[0]
        self._set_ensemble(ensemble)
        self.n_validation_ = int(matrix.shape[0])
        return self

    def _set_ensemble(self, ensemble: MultimodalBayesianEnsemble) -> None:
        self.ensemble_ = ensemble
        self.weights_ = ensemble.weights_
        self.cluster_mass_ = ensemble.cluster_mass_
        self.top_prompts_ = ensemble.top_prompts_

    def responsibilities(self, embeddings_a: object, embeddings_b: object) -> np.ndarray:
        """p(z | pair) of each pair (seed 002 §4; ``pair``), shape (n_pairs, n_clusters_)."""
        check_is_fitted(self, "ensemble_")
        return self._assign(self.centroids_, embeddings_a, embeddings_b)

    def _positive(self, X: object, embeddings_a: object, embeddings_b: object
                  ) -> np.ndarray:
        matrix = self._matrix(X)
        R = self.responsibilities(embeddings_a, embeddings_b)
        if R.shape[0] != matrix.shape[0]:
            raise ValueError(f"{R.shape[0]} embedded pairs for {matrix.shape[0]} rows of X")
        # eq. 10, clipped to [0, 1] as the factorial clips (a sum of weights may be 1 + ulp)
        return np.clip(self.ensemble_.predict_proba(matrix, responsibilities=R)[:, 1],
                       0.0, 1.0)

    def predict_proba(self, X: object, *, embeddings_a: object, embeddings_b: object
                      ) -> np.ndarray:
        """Eq. 10: columns [p(B preferred), p(A preferred)] for each pair.

        `X` as in `fit` (a DataFrame may hold more columns: ``instructions_`` are read);
        `embeddings_a`, `embeddings_b` are phi of each pair's images."""
        p = self._positive(X, embeddings_a, embeddings_b)
        return np.column_stack([1 - p, p])

    def predict(self, X: object, *, embeddings_a: object, embeddings_b: object
                ) -> np.ndarray:
        """1 (A preferred) where p(A preferred) >= 0.5, else 0."""
        return (self._positive(X, embeddings_a, embeddings_b) >= 0.5).astype(int)

    def confidence(self, X: object, *, embeddings_a: object, embeddings_b: object
                   ) -> np.ndarray:
        """Top-label confidence max(p, 1 - p) of each pair (spec mmb.md; the quantity
        `audit_confidence_` holds for the audit's pairs)."""
        p = self._positive(X, embeddings_a, embeddings_b)
        return np.maximum(p, 1 - p)

    def score(self, X: object, y: object, sample_weight: object = None, *,
              embeddings_a: object, embeddings_b: object) -> float:
        """Accuracy of `predict` against `y` (ClassifierMixin's, with the embeddings)."""
        from sklearn.metrics import accuracy_score

        return float(accuracy_score(y, self.predict(X, embeddings_a=embeddings_a,
                                                    embeddings_b=embeddings_b),
                                    sample_weight=sample_weight))

    def audit(self, X: object, y: object, *, embeddings_a: object, embeddings_b: object,
              groups: Sequence[str] | None = None) -> ClusteredBayesianEnsemble:
        """Keep the held-out evidence of held-out pairs (never the validation pairs):
        ``audit_confidence_``, ``audit_correct_`` and ``audit_groups_``.

        Parameters
        ----------
        X, embeddings_a, embeddings_b : as in `predict_proba`
        y : array-like of shape (n_pairs,)
            The human labels (1: A preferred).
        groups : sequence of str, optional
            Each pair's group (e.g. its generation prompt).

        Returns
        -------
        self : ClusteredBayesianEnsemble
        """
        p = self._positive(X, embeddings_a, embeddings_b)
        labels = check_labels(y, len(p))
        kept = None if groups is None else _strings(groups, "groups")
        if kept is not None and len(kept) != len(p):
            raise ValueError(f"{len(kept)} groups for {len(p)} pairs")
        self.audit_confidence_ = np.maximum(p, 1 - p)
        self.audit_correct_ = (p >= 0.5) == (labels == 1)
        self.audit_groups_ = kept
        return self

    # -------------------------------------------------------------------------------
    # saved (judgebias.io.saved: JSON, loaded by judgebias.load)
    # -------------------------------------------------------------------------------

    def _saved_state(self) -> dict[str, Any]:
        """The constructor params and every fitted attribute (the inner ensemble as its
        weights, masses and top prompts), for `_from_saved_state`."""
        check_is_fitted(self, "ensemble_")
        self._check_params()
        params = self.get_params(deep=False)
        for name in ("probability", "embedding"):
            params[name] = None if params[name] is None else dict(params[name])
        params["tau"] = float(params["tau"])
        fitted = {"n_features_in_": int(self.n_features_in_),
                  "instructions_": self.instructions_,
                  "instruction_texts_": self.instruction_texts_,
                  "centroids_": self.centroids_, "weights_": self.weights_,
                  "cluster_mass_": self.cluster_mass_, "top_prompts_": self.top_prompts_,
                  "n_validation_": int(self.n_validation_)}
        audit = None
        if hasattr(self, "audit_confidence_"):
            audit = {"audit_confidence_": self.audit_confidence_,
                     "audit_correct_": self.audit_correct_,
                     "audit_groups_": self.audit_groups_}
        return {"params": params, "fitted": fitted, "audit": audit}

    @classmethod
    def _from_saved_state(cls, state: dict[str, Any]) -> ClusteredBayesianEnsemble:
        """The fitted estimator `_saved_state` describes, checked for consistency (a
        ValueError names what disagrees), predicting the same numbers to the last bit."""
        estimator = cls(**state["params"])
        estimator._check_params()
        fitted = state["fitted"]
        weights = np.asarray(fitted["weights_"], dtype=float)
        centroids = np.asarray(fitted["centroids_"], dtype=np.float32)
        names = _strings(fitted["instructions_"], "instructions_")
        texts = fitted["instruction_texts_"]
        texts = None if texts is None else _strings(texts, "instruction_texts_")
        mass = np.asarray(fitted["cluster_mass_"], dtype=float)
        top = np.asarray(fitted["top_prompts_"])
        n_features = int(fitted["n_features_in_"])
        if weights.ndim != 2 or centroids.ndim != 2 or weights.shape[0] != len(centroids):
            raise ValueError("weights_ and centroids_ disagree on the clusters")
        if weights.shape[1] != n_features or len(names) != n_features or (
                texts is not None and len(texts) != n_features):
            raise ValueError("weights_, instructions_ and n_features_in_ disagree")
        if (weights < 0).any() or not np.allclose(weights.sum(axis=1), 1.0):
            raise ValueError("weights_ rows are not distributions")
        if mass.shape != (len(weights),) or top.shape != (len(weights),) or not (
                np.array_equal(top, weights.argmax(axis=1))):
            raise ValueError("cluster_mass_ or top_prompts_ disagree with weights_")
        if not np.isfinite(centroids).all():
            raise ValueError("centroids_ are not finite")
        ensemble = MultimodalBayesianEnsemble(entropy=estimator.entropy)
        ensemble.classes_ = np.array([0, 1])
        ensemble.n_features_in_ = n_features
        ensemble.weights_ = weights
        ensemble.cluster_mass_ = mass
        ensemble.top_prompts_ = top
        estimator.classes_ = np.array([0, 1])
        estimator.n_features_in_ = n_features
        estimator.instructions_ = names
        estimator.instruction_texts_ = texts
        estimator.centroids_ = centroids
        estimator.n_clusters_ = len(centroids)
        estimator._set_ensemble(ensemble)
        estimator.n_validation_ = int(fitted["n_validation_"])
        audit = state.get("audit")
        if audit is not None:
            confidence = np.asarray(audit["audit_confidence_"], dtype=float)
            correct = np.asarray(audit["audit_correct_"])
            groups = audit["audit_groups_"]
            groups = None if groups is None else _strings(groups, "audit_groups_")
            if (confidence.ndim != 1 or correct.shape != confidence.shape
                    or correct.dtype != bool
                    or (groups is not None and len(groups) != len(confidence))):
                raise ValueError("the audit arrays disagree")
            if ((confidence < 0.5) | (confidence > 1)).any():
                raise ValueError("audit_confidence_ lies outside [0.5, 1]")
            estimator.audit_confidence_ = confidence
            estimator.audit_correct_ = correct
            estimator.audit_groups_ = groups
        return estimator
