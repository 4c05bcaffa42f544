"""The factorial experiment of seed 002 §5 as pure computation on judged probabilities.

Every (pair, instruction) was judged once; each configuration of the design only reweights
those probabilities. The paper's design: prompts {5, 10, 20} x validation sizes
{5, 10, 20, 50} x 3 training seeds x 50 sampling seeds x (4 baselines + 5 K x 5 clustering
seeds) = 52,200 configurations (spec mmb.md).

Draw rules (each from its own seeded generator, so adding a seed never redraws another):

* training seed t: a permutation of the validation candidates; D_val = its first n_val
  pairs (nested across sizes, which makes sizes comparable within a seed);
* sampling seed s: a permutation of the pool's prompts; the ensemble = its first
  n_prompts (nested); STD = the first prompt of that permutation;
* clustering seed c: which precomputed clustering (responsibilities) MMB uses.

Vectorisation: for one prompt subset S, every (n_val, t) weight vector is computed at once
(closed forms: estimator.py), predictions are one matrix product for the baselines and, per
(K, c) for MMB, one product ``P @ W`` giving every configuration's per-cluster mixture
sum_a w_za p(y | x, a), then a batched product with p(z | x): eq. 10 for all
configurations together. Metrics are batched (metrics.batch_metrics). Subsets run
in chunks that share a prompt count, about two per process over `n_jobs` processes; a
chunk's reference BPEs are one batched Newton solve (_add_reference), and its products
go through the test pairs _CHUNK rows at a time. Neither changes a number: both compute
each configuration exactly as alone. tests/mmb/test_mmb_metrics.py checks every row against
the estimator classes fitted one at a time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from joblib import Parallel, delayed
from scipy.special import softmax

from judgebias.studies.mmb.bpe_reference import REFERENCE_WEIGHT, reference_weights
from judgebias.studies.mmb.estimator import log_likelihoods, prompt_order
from judgebias.studies.mmb.measures.metrics import N_BINS, batch_metrics, mean_confidence

BASELINES = ("STD", "BEST", "AVG", "BPE")
# amzn/BayesPE's BPE (bpe_reference.py), by regulariser: labels that say which one
REFERENCE_METHODS = {"printed": "BPE-ref (printed)", "corrected": "BPE-ref (corrected)"}
KEYS = ["n_prompts", "n_val", "train_seed", "sampling_seed", "method", "k", "cluster_seed"]
_CHUNK = 2048  # test pairs per product (a multiple of the BLAS kernels' row blocks)


@dataclass
class Split:
    """One fitting problem: validation candidates and test pairs, with each clustering's
    responsibilities ((K, clustering seed) -> (n, K))."""

    P_pool: np.ndarray
    y_pool: np.ndarray
    P_test: np.ndarray
    y_test: np.ndarray
    R_pool: Mapping[tuple[int, int], np.ndarray] = field(default_factory=dict)
    R_test: Mapping[tuple[int, int], np.ndarray] = field(default_factory=dict)


@dataclass(frozen=True)
class Design:
    n_prompts: Sequence[int]
    n_val: Sequence[int]
    train_seeds: Sequence[int]
    sampling_seeds: Sequence[int]
    entropy: str = "per_group"
    coverages: Sequence[float] | np.ndarray = (1.0,)
    curves_for: Sequence[int] | None = None  # prompt counts with error-coverage curves
    n_jobs: int = 1
    calibration_bins: int = N_BINS
    bpe_reference: Sequence[str] = ()  # regulariser variants of amzn/BayesPE's BPE to add
    bpe_reference_weight: float = REFERENCE_WEIGHT

    @property
    def baselines(self) -> tuple[str, ...]:
        """The baseline methods, in column order: §5's four, then the reference BPEs."""
        return (*BASELINES, *(REFERENCE_METHODS[v] for v in self.bpe_reference))




def validation_order(seed: int, n_pool: int) -> np.ndarray:
    """The training seed's permutation of the validation candidates."""
    return np.random.default_rng([seed, 0]).permutation(n_pool)


def baseline_weights(loglik: np.ndarray, P_val: np.ndarray, y_val: np.ndarray
                     ) -> dict[str, np.ndarray]:
    """STD, BEST, AVG and BPE weights for one validation set (estimator.py's rules):
    STD takes column 0, the first of the sampling seed's permutation."""
    a = loglik.shape[1]
    total = loglik.sum(axis=0)
    accuracy = ((P_val >= 0.5) == (y_val[:, None] == 1)).sum(axis=0)
    best = int(np.lexsort((np.arange(a), -total, -accuracy))[0])
    return {"STD": np.eye(a)[0], "BEST": np.eye(a)[best], "AVG": np.full(a, 1.0 / a),
            "BPE": softmax(total)}


def mmb_weights(loglik: np.ndarray, R_val: np.ndarray, entropy: str) -> np.ndarray:
    """Eq. 9 optimum per cluster, (K, n_prompts) (estimator.MultimodalBayesianEnsemble)."""
    scores = R_val.T @ loglik
    if entropy == "per_sample":
        mass = R_val.sum(axis=0)[:, None]
        scores = np.divide(scores, mass, out=np.zeros_like(scores), where=mass > 0)
    return softmax(scores, axis=1)


def _reference_weights(likelihoods: list[np.ndarray], design: Design) -> np.ndarray:
    """(configurations, variants, prompts): the reference BPE for every validation set
    at once, sets padded with rows of ones (which add nothing: bpe_reference.py)."""
    n_rows = max(len(q) for q in likelihoods)
    Q = np.ones((len(likelihoods), n_rows, likelihoods[0].shape[1]))
    for v, q in enumerate(likelihoods):
        Q[v, :len(q)] = q
    return np.stack([reference_weights(Q, design.bpe_reference_weight, variant)
                     for variant in design.bpe_reference], axis=1)


@dataclass
class _Fit:
    """One prompt subset's weights for every (n_val, training seed) configuration."""

    keys: list[dict]
    base: np.ndarray  # (configurations, baselines, prompts), in design.baselines' order
    mmb: dict[tuple[int, int], np.ndarray]  # (K, c) -> (configurations, K, prompts)
    likelihoods: list[np.ndarray]  # per configuration: (n_val, prompts), the BPE-ref input


def _weights(split: Split, subset: np.ndarray, design: Design) -> _Fit:
    """Every (n_val, training seed) configuration's closed-form weights for one prompt
    subset (the reference BPE's are added by _add_reference)."""
    keys, base, likelihoods = [], [], []
    mmb: dict[tuple[int, int], list[np.ndarray]] = {kc: [] for kc in split.R_pool}
    for t in design.train_seeds:
        order = validation_order(t, len(split.y_pool))
        for n_val in design.n_val:
            val = order[:n_val]
            P_val, y_val = split.P_pool[np.ix_(val, subset)], split.y_pool[val]
            loglik = log_likelihoods(P_val, y_val)
            keys.append({"n_val": n_val, "train_seed": t})
            base.append(baseline_weights(loglik, P_val, y_val))
            likelihoods.append(np.exp(loglik))
            for kc, R in split.R_pool.items():
                mmb[kc].append(mmb_weights(loglik, R[val], design.entropy))
    stacked = np.stack([[w[m] for m in BASELINES] for w in base])  # (V, 4, A)
    return _Fit(keys, stacked, {kc: np.stack(ws) for kc, ws in mmb.items()}, likelihoods)


def _add_reference(fits: list[_Fit], design: Design) -> None:
    """Appends the reference BPE's weights to each fit's baselines. The Newton solve
    (bpe_reference.reference_weights) treats every configuration on its own, so the fits
    that pad to the same shape (prompts, largest validation set) are solved together: one
    batched solve instead of one per prompt subset, the same numbers."""
    if not design.bpe_reference:
        return
    groups: dict[tuple[int, int], list[int]] = {}
    for i, fit in enumerate(fits):
        shape = (fit.likelihoods[0].shape[1], max(len(q) for q in fit.likelihoods))
        groups.setdefault(shape, []).append(i)
    for members in groups.values():
        solved = _reference_weights([q for i in members for q in fits[i].likelihoods], design)
        start = 0
        for i in members:
            fit = fits[i]
            fit.base = np.concatenate([fit.base, solved[start:start + len(fit.keys)]], axis=1)
            start += len(fit.keys)


def _subset_rows(split: Split, design: Design, n_prompts: int, seed: int, score: str,
                 fit: _Fit) -> pd.DataFrame:
    """The rows of one prompt subset (`fit`: its weights, reference BPE included)."""
    subset = prompt_order(seed, split.P_pool.shape[1])[:n_prompts]
    keys, P, n_test = fit.keys, split.P_test[:, subset], len(split.y_test)
    n_rows = fit.base.shape[0] * fit.base.shape[1] + len(keys) * len(fit.mmb)
    p = np.empty((n_rows, n_test))
    p[:fit.base.size // n_prompts] = fit.base.reshape(-1, n_prompts) @ P.T
    row = fit.base.size // n_prompts
    meta = [{**key, "method": m, "k": 0, "cluster_seed": -1}
            for key in keys for m in design.baselines]
    for (k, c), weights in fit.mmb.items():  # weights: (configurations, K, prompts)
        flat = weights.transpose(2, 0, 1).reshape(n_prompts, -1)
        R = split.R_test[(k, c)][:, :, None]
        for lo in range(0, n_test, _CHUNK):  # rows of P: the same products, kept in cache
            hi = min(lo + _CHUNK, n_test)
            per_cluster = (P[lo:hi] @ flat).reshape(hi - lo, len(keys), k)
            # sum_z p(z | x) sum_a w_za p(y | x, a): eq. 10 for every configuration
            p[row:row + len(keys), lo:hi] = np.matmul(per_cluster, R[lo:hi])[:, :, 0].T
        row += len(keys)
        meta += [{**key, "method": "MMB", "k": k, "cluster_seed": c} for key in keys]
    np.clip(p, 0.0, 1.0, out=p)
    frame = pd.DataFrame(meta).assign(n_prompts=n_prompts, sampling_seed=seed)
    if score == "confidence":
        return frame.assign(confidence=mean_confidence(p) * n_test, n_test=n_test)
    wanted = design.curves_for is None or n_prompts in design.curves_for
    metrics = batch_metrics(p, split.y_test, n_bins=design.calibration_bins,
                            coverages=np.asarray(design.coverages) if wanted else None)
    curves = metrics.pop("error_coverage", None)
    return frame.assign(**metrics, error_coverage=None if curves is None else list(curves))


def _chunk_rows(items: Sequence[tuple[Split, int, int]], design: Design, score: str
                ) -> list[pd.DataFrame]:
    """The rows of several (split, prompt count, sampling seed) subsets, in order."""
    fits = [_weights(split, prompt_order(seed, split.P_pool.shape[1])[:n], design)
            for split, n, seed in items]
    _add_reference(fits, design)
    return [_subset_rows(split, design, n, seed, score, fit)
            for (split, n, seed), fit in zip(items, fits, strict=True)]


def _run(items: list[tuple[Split, int, int]], design: Design, score: str
         ) -> list[pd.DataFrame]:
    """Every subset's rows, in the order of `items`, computed in chunks of subsets that
    share a prompt count (their reference BPEs solve together: _add_reference), about
    two chunks per process."""
    by_count: dict[int, list[int]] = {}
    for i, (_, n, _) in enumerate(items):
        by_count.setdefault(n, []).append(i)
    pieces = max(1, -(-2 * design.n_jobs // len(by_count)))
    chunks = [members[j::pieces] for members in by_count.values() for j in range(pieces)]
    chunks = [chunk for chunk in chunks if chunk]
    parts = Parallel(n_jobs=design.n_jobs)(
        delayed(_chunk_rows)([items[i] for i in chunk], design, score) for chunk in chunks)
    frames: list[pd.DataFrame | None] = [None] * len(items)
    for chunk, part in zip(chunks, parts, strict=True):
        for i, frame in zip(chunk, part, strict=True):
            frames[i] = frame
    return [frame for frame in frames if frame is not None]


def run_factorial(split: Split, design: Design) -> pd.DataFrame:
    """One row per configuration: the design keys (KEYS; k = 0 and cluster_seed = -1 for
    the baselines), every metric of metrics.batch_metrics and the error-coverage curve
    (None for prompt counts outside `design.curves_for`: the curve needs a second sort, by
    confidence; None means every prompt count, as Fig. 3 and Appendix D's Fig. 5 show)."""
    parts = _run([(split, n, s) for n in design.n_prompts for s in design.sampling_seeds],
                 design, "metrics")
    return pd.concat(parts, ignore_index=True)[[*KEYS, *_metric_columns(parts[0])]]


def run_nopref(folds: Mapping[int, Split], design: Design) -> pd.DataFrame:
    """Seed 002 Table 4, MJBench protocol: for each held-out fold, fit on validation pairs
    of the other folds (its Split's pool) and predict its no-preference test pairs; the
    metric is the mean top-label confidence pooled over folds (0.5 is ideal)."""
    parts = _run([(folds[f], n, s) for f in folds for n in design.n_prompts
                  for s in design.sampling_seeds], design, "confidence")
    rows = pd.concat(parts, ignore_index=True)
    pooled = rows.groupby(KEYS, as_index=False)[["confidence", "n_test"]].sum()
    pooled["confidence"] /= pooled["n_test"]
    return pooled[[*KEYS, "confidence"]]


def _metric_columns(frame: pd.DataFrame) -> list[str]:
    return [c for c in frame.columns if c not in KEYS]
