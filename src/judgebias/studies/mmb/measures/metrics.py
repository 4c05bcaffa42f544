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

Speed (issue 24; benchmarks/mmb_factorial.py): rows are independent, so batch_metrics
works through `p` in blocks of BLOCK_ROWS rows that stay in the processor's cache, and
both sorts (by p, and by confidence for the error-coverage curve) sort one 64-bit integer
key per pair instead of arg-sorting floats and gathering: a float in [0, 1] orders as its
bit pattern, which leaves the lowest bit free for the pair's label (or correctness).
Every number is the same as the plain route's, to the bit (tests/mmb/test_mmb_metrics.py
compares them): the order within tied scores, the one thing the key changes, changes no
metric (each treats a tie as one threshold, and tied pairs have equal confidences), and
the curve's ties, which do depend on pair order, take the stable sort.
"""

from __future__ import annotations

import numpy as np

EPS = 1e-12
N_BINS = 15
BLOCK_ROWS = 32  # rows per pass of batch_metrics: 32 x 14,400 pairs is 3.7 MB a matrix

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


def _sortable(p: np.ndarray, y: np.ndarray) -> bool:
    """Whether the integer keys apply: every p in [0, 1] (no NaN) and labels 0 or 1."""
    return bool(p.size and p.min() >= 0.0 and p.max() <= 1.0 and ((y == 0) | (y == 1)).all())


def _ascending_keys(values: np.ndarray, bit: np.ndarray) -> np.ndarray:
    """Each row's (value, bit) keys sorted by value, lowest first, for `values` in [0, 1]:
    a non-negative float orders as its bit pattern, whose top (sign) bit the shift drops
    (-0.0 becomes 0.0, its equal), which frees the lowest bit for `bit`."""
    key = values.view(np.uint64) << np.uint64(1)
    key |= bit
    key.sort(axis=1)
    return key


def _by_score(p: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
    """(p, y) per row sorted by p, highest first: the one sort every metric but the
    error-coverage curve needs, and whether the integer keys sorted them (ties then in
    another order than the arg-sort's: _ranking)."""
    y = np.asarray(y)
    if _sortable(p, y):
        key = _ascending_keys(p, y == 1)[:, ::-1]
        return ((key >> np.uint64(1)).view(np.float64), (key & np.uint64(1)).astype(float),
                True)
    return (*_argsorted(p, y), False)


def _argsorted(p: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(p, y) per row in the order of np.argsort(-p) (ties in that sort's order)."""
    order = np.argsort(-p, axis=1)
    return np.take_along_axis(p, order, axis=1), np.asarray(y)[order].astype(float)


def _prefix(values: np.ndarray) -> np.ndarray:
    """Per row: 0, then the running sum (np.cumsum's, element by element)."""
    out = np.empty((len(values), values.shape[1] + 1))
    out[:, 0] = 0.0
    np.cumsum(values, axis=1, out=out[:, 1:])
    return out


def _at_least(scores: np.ndarray, one_minus: np.ndarray, edges: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray]:
    """Per row and edge e: the number of pairs with p >= e (a prefix of the row sorted by
    p) and n minus the number with 1 - p >= e (where that suffix starts). A binary search
    per row, as `one_minus` rises along the row; rows with NaN (sorted last) count by
    comparison."""
    b, n = scores.shape
    if n == 0 or np.isnan(scores[:, -1]).any():
        return ((scores[:, :, None] >= edges).sum(axis=1),
                n - (one_minus[:, :, None] >= edges).sum(axis=1))
    top, tail = np.empty((b, len(edges)), dtype=int), np.empty((b, len(edges)), dtype=int)
    negated = -edges
    for i in range(b):
        top[i] = np.searchsorted(-scores[i], negated, side="right")
        tail[i] = np.searchsorted(one_minus[i], edges, side="left")
    return top, tail


def _calibration(scores: np.ndarray, positives: np.ndarray, n_bins: int
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ECE, MCE, pairs with p >= 0.5) from rows sorted by p (highest first), with
    `positives` = _prefix(hits == 1). A pair's confidence is >= an edge e > 0.5 exactly
    when p >= e (a prefix of the row, predicted positive: right where a positive) or
    1 - p >= e (a suffix, predicted negative: right where a negative), so every bin's
    count and sums come from prefix sums, without sorting by confidence."""
    b, n = scores.shape
    one_minus = 1 - scores
    conf_sum = _prefix(np.maximum(scores, one_minus))
    edges = np.arange(n_bins - 1, 0, -1) / n_bins  # bin lower edges, highest first
    high = edges[edges > 0.5]  # below them every confidence (>= 0.5) counts
    top, tail = _at_least(scores, one_minus, np.append(high, 0.5))
    rows = np.arange(b)[:, None]
    predicted = top[:, -1]
    top, tail = top[:, :-1], tail[:, :-1]

    def right(start: np.ndarray, end: np.ndarray) -> np.ndarray:  # right in [0, start), [end, n)
        return (positives[rows, start] + (n - end)
                - (positives[:, n:] - positives[rows, end])).astype(float)

    counts = np.full((b, n_bins + 1), float(n))
    confs = np.repeat(conf_sum[:, n:], n_bins + 1, axis=1)
    rights = np.repeat(right(predicted[:, None], predicted[:, None]), n_bins + 1, axis=1)
    counts[:, 0], confs[:, 0], rights[:, 0] = 0, 0.0, 0.0
    span = slice(1, 1 + len(high))
    counts[:, span] = top + n - tail
    confs[:, span] = conf_sum[rows, top] + conf_sum[:, n:] - conf_sum[rows, tail]
    rights[:, span] = right(top, tail)
    count = np.diff(counts, axis=1)
    gap = np.abs(np.diff(rights, axis=1) - np.diff(confs, axis=1))
    per_bin = np.divide(gap, count, out=np.zeros_like(gap), where=count > 0)
    return gap.sum(axis=1) / n, per_bin.max(axis=1), predicted


def calibration_errors(p: np.ndarray, y: np.ndarray, n_bins: int = N_BINS
                       ) -> tuple[np.ndarray, np.ndarray]:
    """(ECE, MCE) per row (module docstring)."""
    scores, hits, _ = _by_score(_rows(p), y)
    return _calibration(scores, _prefix(hits == 1), n_bins)[:2]


def _ranking(scores: np.ndarray, hits: np.ndarray,
             source: tuple[np.ndarray, np.ndarray] | None = None,
             tps: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(average precision, ROC-AUC) per row from rows sorted by p; tied scores form one
    threshold (sklearn's convention for both). Rows without ties take the plain formulas;
    only rows with ties pay for finding their runs. The average precision of a row with
    ties sums its positives' terms pairwise in the row's order, so its last bit depends on
    where the tied positives sit: with `source` (p, y), rows with ties are put in
    np.argsort(-p)'s order first, the order this module has always used. `tps`: the
    running count of positives, when the caller has it."""
    b, n = scores.shape
    n_pos = int(hits[0].sum()) if b else 0
    n_neg = n - n_pos
    tps = np.cumsum(hits, axis=1) if tps is None else tps
    rank = np.arange(1, n + 1, dtype=float)
    ap = (hits * tps / rank).sum(axis=1) / max(n_pos, 1)
    auc = (hits * (n + 1 - rank)).sum(axis=1)
    tied = ~(scores[:, :-1] != scores[:, 1:]).all(axis=1)
    if tied.any():
        if source is None:
            ap[tied], auc[tied] = _tied_ranking(scores[tied], hits[tied], tps[tied])
        else:
            again, again_hits = _argsorted(source[0][tied], source[1])
            ap[tied], auc[tied] = _tied_ranking(again, again_hits,
                                                np.cumsum(again_hits, axis=1))
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
    p = _rows(p)
    scores, hits, keyed = _by_score(p, y)
    return _ranking(scores, hits, (p, y) if keyed else None)[0]


def roc_auc(p: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Mann-Whitney ROC-AUC per row (average ranks for ties)."""
    p = _rows(p)
    scores, hits, keyed = _by_score(p, y)
    return _ranking(scores, hits, (p, y) if keyed else None)[1]


def batch_metrics(p: np.ndarray, y: np.ndarray, n_bins: int = N_BINS,
                  coverages: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Every metric of the module docstring, one value per row of `p`; with `coverages`,
    also "error_coverage" (B, G), which needs a second sort (by confidence). Rows are
    independent: they are worked through in blocks of BLOCK_ROWS."""
    p = _rows(p)
    y = np.asarray(y).astype(int)
    if len(p) <= BLOCK_ROWS:
        return _block_metrics(p, y, n_bins, coverages)
    parts = [_block_metrics(p[i:i + BLOCK_ROWS], y, n_bins, coverages)
             for i in range(0, len(p), BLOCK_ROWS)]
    return {name: np.concatenate([part[name] for part in parts]) for name in parts[0]}


def _block_metrics(p: np.ndarray, y: np.ndarray, n_bins: int,
                   coverages: np.ndarray | None) -> dict[str, np.ndarray]:
    """batch_metrics for one block of rows. With 0/1 labels and p in [0, 1] (keyed), the
    counts behind accuracy, kappa and F1 come from the sorted rows' running count of
    positives: of the `predicted` pairs with p >= 0.5 (a prefix), tp are positives."""
    n = p.shape[1]
    scores, hits, keyed = _by_score(p, y)
    positives = _prefix(hits if keyed else hits == 1)
    ece, mce, predicted = _calibration(scores, positives, n_bins)
    auc_pr, auc = _ranking(scores, hits, (p, y) if keyed else None,
                           positives[:, 1:] if keyed else None)
    if keyed:
        tp = positives[np.arange(len(p)), predicted]
        correct = tp + (n - predicted) - (positives[:, n] - tp)
        accuracy, share, wrong = correct / n, predicted / n, n - correct
    else:
        yhat = (p >= 0.5).astype(float)
        accuracy, share = (yhat == y).mean(axis=1), yhat.mean(axis=1)
        tp, wrong = (yhat * y).sum(axis=1), (yhat != y).sum(axis=1)
    expected = share * y.mean() + (1 - share) * (1 - y.mean())
    with np.errstate(invalid="ignore", divide="ignore"):
        kappa = np.where(expected < 1, (accuracy - expected) / (1 - expected), np.nan)
    f1 = np.divide(2 * tp, 2 * tp + wrong, out=np.zeros_like(tp), where=(2 * tp + wrong) > 0)
    positive = y == 1  # log p(y): log p for the positives, log(1 - p) for the others
    log_likelihood = np.empty_like(p)
    log_likelihood[:, positive] = np.log(np.clip(p[:, positive], EPS, 1 - EPS))
    log_likelihood[:, ~positive] = np.log1p(-np.clip(p[:, ~positive], EPS, 1 - EPS))
    out = {
        "ece": ece, "mce": mce, "auc_pr": auc_pr, "nll": -log_likelihood.mean(axis=1),
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
    y = np.asarray(y)
    correct = (p >= 0.5) == (y == 1)
    kept = np.clip(np.ceil(np.asarray(coverages) * n - 1e-9).astype(int), 1, n)
    return 1 - np.cumsum(_by_confidence(p, correct), axis=1)[:, kept - 1] / kept


def _by_confidence(p: np.ndarray, correct: np.ndarray) -> np.ndarray:
    """`correct` per row in the order of confidence max(p, 1 - p), highest first, ties in
    pair order (a stable sort). Rows whose confidences are all distinct have one such
    order, which the integer keys give (confidence in [0.5, 1], correctness in the low
    bit); rows with a tie, or p outside [0, 1], take the stable sort."""
    confidence = np.maximum(p, 1 - p)
    if not (p.size and p.min() >= 0.0 and p.max() <= 1.0):
        order = np.argsort(-confidence, axis=1, kind="stable")
        return np.take_along_axis(correct, order, axis=1)
    key = _ascending_keys(confidence, correct)[:, ::-1]
    ordered = (key & np.uint64(1)).astype(bool)
    key = key >> np.uint64(1)
    tied = (key[:, 1:] == key[:, :-1]).any(axis=1)
    if tied.any():
        order = np.argsort(-confidence[tied], axis=1, kind="stable")
        ordered[tied] = np.take_along_axis(correct[tied], order, axis=1)
    return ordered
