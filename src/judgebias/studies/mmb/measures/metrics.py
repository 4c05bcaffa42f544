"""MMB's metrics (seed 002 §5 "Metrics", Table 4, Fig. 3), batched over configurations.

``p`` is (B, n): for each of B configurations, p(image A preferred) on n pairs; ``y`` is
(n,), 1 where A is preferred (the positive class of AUC-PR and F1). Conventions:

* predicted label ``yhat = 1`` where ``p >= 0.5``; top-label confidence ``max(p, 1 - p)``;
* ECE and MCE (Guo et al. 2017, the paper's [23]): 15 equal-width bins of the confidence
  over [0, 1] (the last bin closed); ECE = sum_b (n_b / n) |acc_b - conf_b|; MCE = the
  largest |acc_b - conf_b| over non-empty bins;
* NLL: mean -log p(y), natural log, p clipped to [1e-12, 1 - 1e-12]; Brier: mean (p - y)^2;
* Cohen's kappa between yhat and y (NaN when both are constant and equal, as undefined);
* ROC-AUC: the Mann-Whitney statistic with average ranks for ties (= roc_auc_score);
* AUC-PR: average precision as sklearn.metrics.average_precision_score defines it
  (sum over distinct thresholds of the recall increment times the precision);
* F1 of the positive class, 0 where undefined (sklearn's zero_division=0).

Each row is one configuration; tests compare every metric with scikit-learn row by row.
"""

from __future__ import annotations

import numpy as np

EPS = 1e-12
N_BINS = 15

# name -> (label in tables, higher is better)
METRICS: dict[str, tuple[str, bool]] = {
    "ece": ("ECE", False), "mce": ("MCE", False), "auc_pr": ("AUC-PR", True),
    "nll": ("NLL", False), "brier": ("Brier", False), "kappa": ("Kappa", True),
    "accuracy": ("Acc", True), "roc_auc": ("ROC-AUC", True), "f1": ("F1", True),
    "confidence": ("Mean confidence", False),
}


def _rows(p: np.ndarray) -> np.ndarray:
    p = np.asarray(p, dtype=float)
    return p[None, :] if p.ndim == 1 else p


def _by_score(p: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(p, y) per row sorted by p, highest first: the one sort every metric but the
    error-coverage curve needs."""
    order = np.argsort(-p, axis=1)
    return np.take_along_axis(p, order, axis=1), np.asarray(y)[order].astype(float)


def _prefix(values: np.ndarray) -> np.ndarray:
    return np.concatenate([np.zeros((len(values), 1)), np.cumsum(values, axis=1)], axis=1)


def _calibration(scores: np.ndarray, hits: np.ndarray, n_bins: int
                 ) -> tuple[np.ndarray, np.ndarray]:
    """(ECE, MCE) from rows sorted by p (highest first). A pair's confidence is >= an
    edge e > 0.5 exactly when p >= e (a prefix of the row) or 1 - p >= e (a suffix), so
    every bin's count and sums come from prefix sums, without sorting by confidence."""
    b, n = scores.shape
    confidence = np.maximum(scores, 1 - scores)
    conf_sum = _prefix(confidence)
    hit_sum = _prefix(((scores >= 0.5) == (hits == 1)).astype(float))
    rows = np.arange(b)
    counts, confs, rights = [np.zeros(b)], [np.zeros(b)], [np.zeros(b)]
    for edge in np.arange(n_bins - 1, 0, -1) / n_bins:  # bin lower edges, highest first
        if edge > 0.5:
            top = (scores >= edge).sum(axis=1)
            tail = n - ((1 - scores) >= edge).sum(axis=1)
            counts.append(top + n - tail)
            confs.append(conf_sum[rows, top] + conf_sum[:, n] - conf_sum[rows, tail])
            rights.append(hit_sum[rows, top] + hit_sum[:, n] - hit_sum[rows, tail])
        else:  # every confidence is >= 0.5
            counts.append(np.full(b, n))
            confs.append(conf_sum[:, n])
            rights.append(hit_sum[:, n])
    counts.append(np.full(b, n))
    confs.append(conf_sum[:, n])
    rights.append(hit_sum[:, n])
    count = np.diff(np.stack(counts, axis=1), axis=1)
    gap = np.abs(np.diff(np.stack(rights, axis=1), axis=1)
                 - np.diff(np.stack(confs, axis=1), axis=1))
    per_bin = np.divide(gap, count, out=np.zeros_like(gap), where=count > 0)
    return gap.sum(axis=1) / n, per_bin.max(axis=1)


def calibration_errors(p: np.ndarray, y: np.ndarray, n_bins: int = N_BINS
                       ) -> tuple[np.ndarray, np.ndarray]:
    """(ECE, MCE) per row (module docstring)."""
    return _calibration(*_by_score(_rows(p), y), n_bins)


def _ranking(scores: np.ndarray, hits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(average precision, ROC-AUC) per row from rows sorted by p; tied scores form one
    threshold (sklearn's convention for both). Rows without ties take the plain formulas;
    only rows with ties pay for finding their runs."""
    b, n = scores.shape
    n_pos = int(hits[0].sum()) if b else 0
    n_neg = n - n_pos
    tps = np.cumsum(hits, axis=1)
    rank = np.arange(1, n + 1, dtype=float)
    ap = (hits * tps / rank).sum(axis=1) / max(n_pos, 1)
    auc = (hits * (n + 1 - rank)).sum(axis=1)
    tied = ~(scores[:, :-1] != scores[:, 1:]).all(axis=1)
    if tied.any():
        ap[tied], auc[tied] = _tied_ranking(scores[tied], hits[tied], tps[tied])
    auc = (auc - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg) if n_pos and n_neg else \
        np.full(b, np.nan)
    return ap, auc


def _tied_ranking(scores: np.ndarray, hits: np.ndarray, tps: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray]:
    """(average precision, sum of positives' average ascending ranks) for rows with ties."""
    b, n = scores.shape
    positions = np.arange(n)
    boundary = np.ones_like(scores, dtype=bool)
    boundary[:, :-1] = scores[:, :-1] != scores[:, 1:]
    end = np.minimum.accumulate(np.where(boundary, positions, n - 1)[:, ::-1], axis=1)[:, ::-1]
    starts = np.ones_like(boundary)
    starts[:, 1:] = boundary[:, :-1]
    start = np.maximum.accumulate(np.where(starts, positions, 0), axis=1)
    rows = np.arange(b)[:, None]
    ap = (hits * tps[rows, end] / (end + 1)).sum(axis=1) / max(hits[0].sum(), 1)
    average_rank = n - (start + end) / 2  # ascending rank, ties averaged
    return ap, (hits * average_rank).sum(axis=1)


def average_precision(p: np.ndarray, y: np.ndarray) -> np.ndarray:
    """sklearn's average precision per row, ties as one threshold."""
    return _ranking(*_by_score(_rows(p), y))[0]


def roc_auc(p: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Mann-Whitney ROC-AUC per row (average ranks for ties)."""
    return _ranking(*_by_score(_rows(p), y))[1]


def batch_metrics(p: np.ndarray, y: np.ndarray, n_bins: int = N_BINS,
                  coverages: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Every metric of the module docstring, one value per row of `p`; with `coverages`,
    also "error_coverage" (B, G), which needs a second sort (by confidence)."""
    p = _rows(p)
    y = np.asarray(y).astype(int)
    yhat = (p >= 0.5).astype(float)
    scores, hits = _by_score(p, y)
    ece, mce = _calibration(scores, hits, n_bins)
    auc_pr, auc = _ranking(scores, hits)
    clipped = np.clip(p, EPS, 1 - EPS)
    accuracy = (yhat == y).mean(axis=1)
    expected = yhat.mean(axis=1) * y.mean() + (1 - yhat.mean(axis=1)) * (1 - y.mean())
    with np.errstate(invalid="ignore", divide="ignore"):
        kappa = np.where(expected < 1, (accuracy - expected) / (1 - expected), np.nan)
    tp = (yhat * y).sum(axis=1)
    wrong = (yhat != y).sum(axis=1)
    f1 = np.divide(2 * tp, 2 * tp + wrong, out=np.zeros_like(tp), where=(2 * tp + wrong) > 0)
    out = {
        "ece": ece, "mce": mce, "auc_pr": auc_pr,
        "nll": -np.where(y == 1, np.log(clipped), np.log1p(-clipped)).mean(axis=1),
        "brier": ((p - y) ** 2).mean(axis=1), "kappa": kappa, "accuracy": accuracy,
        "roc_auc": auc, "f1": f1,
    }
    if coverages is not None:
        out["error_coverage"] = error_coverage(p, y, coverages)
    return out


def mean_confidence(p: np.ndarray) -> np.ndarray:
    """Seed 002 Table 4: mean top-label confidence (0.5 is ideal on no-preference pairs)."""
    p = _rows(p)
    return np.maximum(p, 1 - p).mean(axis=1)


def error_coverage(p: np.ndarray, y: np.ndarray, coverages: np.ndarray) -> np.ndarray:
    """Seed 002 Fig. 3: at each coverage c, the error rate of the ceil(c n) most confident
    pairs (confidence ties in pair order). Returns (B, len(coverages))."""
    p = _rows(p)
    n = p.shape[1]
    order = np.argsort(-np.maximum(p, 1 - p), axis=1, kind="stable")
    correct = np.take_along_axis((p >= 0.5) == (np.asarray(y) == 1), order, axis=1)
    kept = np.clip(np.ceil(np.asarray(coverages) * n - 1e-9).astype(int), 1, n)
    return 1 - np.cumsum(correct, axis=1)[:, kept - 1] / kept
