"""Agreement of caption judges with human judgements: Kendall's tau-b and tau-c.

Seed ``000_dd1ddac0ce03ecfb.txt`` §6.3 (Setup) validates judges and the Pomms ensemble on
Flickr8k-Expert and Nebula with "Kendall's tau_b and tau_c, as evaluation metrics",
following the caption-metric literature. This module computes both, per dataset (and
split), for one or more score columns of a *rating-level* judgement table.

Conventions (caption-metric literature; see ``shared/data/README.md``):

* **One row per human rating.** A candidate caption rated by several annotators appears
  once per rating, and a metric's (judge's) score for that item is repeated on each of
  its rows. Flickr8k-Expert thus has 16,992 rows (5,664 captions x 3 expert ratings),
  not 5,664; Nebula has one rating per row already. `join_scores` attaches an item-level
  score to such a table.
* **tau as is.** Values are Kendall's tau in [-1, 1]; the papers (seed 000 Table 1)
  print them x100 (56.4 means 0.564). Nothing here rescales.
* **Why both variants.** tau-b, ``(P - Q) / sqrt((n0 - n1)(n0 - n2))``, corrects for ties
  in *both* variables (n1, n2: pairs tied in x, in y; n0 = n(n-1)/2). tau-c (Stuart's),
  ``2 (P - Q) / (n^2 (m - 1) / m)`` with ``m = min(#distinct x, #distinct y)``, is meant
  for rectangular contingency tables: with a coarse human scale (Flickr8k-Expert's 1-4)
  against a near-continuous judge score the table is 4 x many and tau-b cannot reach
  +-1, tau-c can. That is why both are reported. Both come from
  `scipy.stats.kendalltau` (``variant="b"`` / ``"c"``).
* **Missing scores are dropped, never imputed.** A NaN score (failed or unparseable judge
  answer) or a NaN human score removes that row pairwise from the computation, and the
  number removed is reported as ``n_missing`` next to ``n`` (rows used). A made-up score
  would be an opinion the judge never gave.
* **Intervals and a test (issue 22, the judge card).** ``agreement(..., cluster=,
  n_resamples=)`` adds a percentile cluster-bootstrap interval and a bootstrap test of
  tau = 0 to each row. Rating rows are not independent (a caption's score repeats on its
  ratings, an image's captions share it), so the resampled unit is a cluster (the image
  or the item column), never the row; `agreement` says why this test and not scipy's
  asymptotic p or a permutation test, and ``benchmarks/kendall_interval.py`` measures
  coverage and size. `resampled_kendall` recomputes tau exactly on every resample from
  cluster counts (no expanded table, no per-resample scipy call: 2,000 resamples of 5,000
  rows x 13 metrics take seconds).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import sparse, stats
from threadpoolctl import threadpool_limits

from judgebias.stats.bootstrap import counts_from_indices

TAU_VARIANTS = ("tau_b", "tau_c")
CHUNK = 2_000_000  # numbers per working array of `resampled_kendall` (16 MB)


def kendall(scores: Any, human: Any) -> dict[str, float | int]:
    """Kendall tau-b and tau-c of judge ``scores`` against ``human`` judgements.

    Seed 000 §6.3 (Setup). Rows where either value is NaN are dropped pairwise and
    counted in ``n_missing``; ``n`` is the number of rows used. With fewer than two rows,
    or a constant input (no ordering to agree with), tau is undefined and NaN is returned
    (without scipy's constant-input warning, which the ensemble's selection loop would
    otherwise print for every degenerate candidate).

    Returns ``{"tau_b", "tau_c", "n", "n_missing"}``.
    """
    x = np.asarray(scores, dtype=float).ravel()
    y = np.asarray(human, dtype=float).ravel()
    if x.shape != y.shape:
        raise ValueError(f"scores and human differ in length: {x.size} vs {y.size}")
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y = x[keep], y[keep]
    n = int(keep.sum())
    out: dict[str, float | int] = {
        "tau_b": float("nan"),
        "tau_c": float("nan"),
        "n": n,
        "n_missing": int(keep.size - n),
    }
    if n < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return out
    out["tau_b"] = float(stats.kendalltau(x, y, variant="b").statistic)
    out["tau_c"] = float(stats.kendalltau(x, y, variant="c").statistic)
    return out


def _dense_ranks(values: np.ndarray) -> tuple[np.ndarray, int]:
    """Dense ranks 0..D-1 of ``values`` (ties share a rank) and D."""
    distinct, ranks = np.unique(values, return_inverse=True)
    return ranks.astype(np.intp).ravel(), int(distinct.size)


def _blocks(ranks: np.ndarray, size: int) -> tuple[np.ndarray, int, np.ndarray]:
    """Cut the rank axis into blocks of consecutive ranks holding about ``size`` atoms.

    A block never splits a tie group: it is either one tie group (of any size; its pairs
    are all tied, so it needs no pair-by-pair term) or several whole tie groups holding at
    most ``size`` atoms together ("mixed"). Returns each atom's block, the number of
    blocks, and which blocks are mixed.
    """
    counts = np.bincount(ranks)
    block_of_rank = np.empty(counts.size, dtype=np.intp)
    mixed: list[bool] = []
    block, filled, groups = 0, 0, 0
    for rank, count in enumerate(counts.tolist()):
        if filled and filled + count > size:
            mixed.append(groups > 1)
            block, filled, groups = block + 1, 0, 0
        block_of_rank[rank] = block
        filled += count
        groups += 1
    mixed.append(groups > 1)
    return block_of_rank[ranks], block + 1, np.array(mixed)


def resampled_kendall(
    scores: Any, human: Any, clusters: Any, counts: np.ndarray, chunk: int = CHUNK
) -> dict[str, np.ndarray]:
    """Kendall tau-b and tau-c of many cluster-bootstrap resamples at once, exactly.

    ``scores``, ``human`` and ``clusters`` (integer codes 0..K-1) describe the rows (no
    NaN); ``counts`` is ``(B, K)``: how often each cluster was drawn in each of B
    resamples. Resample r is the table in which every row of cluster k appears
    ``counts[r, k]`` times; the result equals `scipy.stats.kendalltau` (``variant="b"``
    and ``"c"``) on that expanded table (the tests check it to 1e-12), without building it.

    How: tau needs S = P - Q (concordant minus discordant pairs), the pairs tied in x and
    in y, the number of rows N and, for tau-c, the number of distinct values drawn. Rows
    with the same (cluster, score, human) are merged into weighted *atoms*; a resample's
    weights are the cluster counts times the atom sizes, and copies of one row are pairs
    tied in both (they add to the tie counts, not to S). S is a quadratic form
    ``w' A w / 2`` with ``A[a, c] = sign(x_a - x_c) sign(y_a - y_c)``, evaluated without
    the n x n matrix: atoms are sorted along each variable and cut into blocks of about
    sqrt(n) atoms (never splitting a tie group). Pairs in different score blocks *and*
    different human blocks take the sign of the blocks' order, so their sum is a 2-D
    dominance count on the grid of (score block, human block) weight totals (two cumulative
    sums); pairs inside one score block, or inside one human block across score blocks,
    are few (about n^1.5) and summed as small dense matrix products. Ties are counted per
    tie group from the same weights. Everything is integer-valued in float64, so exact.
    Cost per resample about n^1.5 for continuous data, less with ties (a 1-4 human scale
    needs no inner products at all).
    """
    x = np.asarray(scores, dtype=float).ravel()
    y = np.asarray(human, dtype=float).ravel()
    k = np.asarray(clusters, dtype=np.intp).ravel()
    if not (x.shape == y.shape == k.shape):
        raise ValueError("scores, human and clusters differ in length")
    counts = np.atleast_2d(np.asarray(counts, dtype=float))
    return _resampled_kendall(x, y, k, _count_chunks(counts, x.size, chunk))


def _count_chunks(counts: np.ndarray, rows: int, chunk: int = CHUNK) -> list[np.ndarray]:
    """Cluster counts ``(B, K)`` as contiguous ``(K, b)`` pieces (resamples last), b chosen
    so that a piece times the rows (or clusters) stays near ``chunk`` numbers."""
    step = max(1, chunk // max(rows, counts.shape[1], 1))
    return [
        np.ascontiguousarray(counts[start : start + step].T)
        for start in range(0, counts.shape[0], step)
    ]


def _resampled_kendall(
    x: np.ndarray, y: np.ndarray, k: np.ndarray, chunks: Sequence[np.ndarray]
) -> dict[str, np.ndarray]:
    """`resampled_kendall` on NaN-free rows and count pieces from `_count_chunks`."""
    n_resamples = sum(c.shape[1] for c in chunks)
    n_clusters = chunks[0].shape[0]
    if x.size == 0:
        nan = np.full(n_resamples, np.nan)
        return {"tau_b": nan, "tau_c": nan.copy()}
    # the matrix products are small (sqrt(n) x sqrt(n) by sqrt(n) x b): BLAS threads buy
    # nothing there and, on a loaded machine, cost 10x (5,000 rows x 13 metrics: 50 s
    # instead of 4 s with 2 cores shared)
    with threadpool_limits(limits=1, user_api="blas"):
        return _kendall_parts(x, y, k, chunks, n_resamples, n_clusters)


def _kendall_parts(
    x: np.ndarray,
    y: np.ndarray,
    k: np.ndarray,
    chunks: Sequence[np.ndarray],
    n_resamples: int,
    n_clusters: int,
) -> dict[str, np.ndarray]:
    """The body of `_resampled_kendall` (see `resampled_kendall` for the method)."""
    atoms, size = np.unique(np.stack([k.astype(float), x, y], axis=1), axis=0, return_counts=True)
    cluster = atoms[:, 0].astype(np.intp)
    weight = size.astype(float)
    rank_x, distinct_x = _dense_ranks(atoms[:, 1])
    rank_y, distinct_y = _dense_ranks(atoms[:, 2])
    n = cluster.size
    block_size = max(32, int(np.ceil(2 * np.sqrt(n))))
    block_x, n_blocks_x, mixed_x = _blocks(rank_x, block_size)
    block_y, n_blocks_y, mixed_y = _blocks(rank_y, block_size)

    def incidence(rows: np.ndarray, n_rows: int) -> sparse.csr_array:
        return sparse.csr_array((weight, (rows, cluster)), shape=(n_rows, n_clusters))

    grid = incidence(block_x * n_blocks_y + block_y, n_blocks_x * n_blocks_y)
    ties_x = incidence(rank_x, distinct_x)
    ties_y = incidence(rank_y, distinct_y)
    inner: list[tuple[np.ndarray, np.ndarray]] = []  # (atoms, their weighted sign matrix)
    for block_of, mixed, other in ((block_x, mixed_x, None), (block_y, mixed_y, block_x)):
        for block in np.flatnonzero(mixed):
            idx = np.flatnonzero(block_of == block)
            sign = np.sign(rank_x[idx, None] - rank_x[None, idx]) * np.sign(
                rank_y[idx, None] - rank_y[None, idx]
            )
            if other is not None:  # pairs in one score block were counted above
                sign = sign * (other[idx, None] != other[None, idx])
            if sign.any():
                inner.append((idx, sign * weight[idx, None] * weight[None, idx]))

    out = np.empty((6, n_resamples))
    start = 0
    for c in chunks:
        b = c.shape[1]
        cells = (grid @ c).reshape(n_blocks_x, n_blocks_y, b)
        before = np.cumsum(cells, axis=0)
        before -= cells  # weight in earlier score blocks (same human block)
        below = np.cumsum(before, axis=1)  # ... in human blocks up to this one
        # a cell's concordant partners (earlier score block, lower human block) minus its
        # discordant ones (earlier, higher): (below - before) - (total - below)
        s = 2 * np.einsum("ijb,ijb->b", cells, below)
        s -= np.einsum("ijb,ijb->b", cells, before)
        s -= np.einsum("ib,ib->b", cells.sum(axis=1), below[:, -1, :])
        if inner:
            per_atom = c[cluster]
            for idx, signs in inner:
                w = per_atom[idx]
                s += 0.5 * np.einsum("ib,ib->b", signs @ w, w)
        tx, ty = ties_x @ c, ties_y @ c
        out[:, start : start + b] = (
            s,
            tx.sum(axis=0),
            np.einsum("gb,gb->b", tx, tx),
            np.einsum("gb,gb->b", ty, ty),
            (tx > 0).sum(axis=0),
            (ty > 0).sum(axis=0),
        )
        start += b
    s, rows, square_x, square_y, classes_x, classes_y = out
    pairs = rows * (rows - 1) / 2
    untied_x = pairs - (square_x - rows) / 2  # pairs minus pairs tied in x
    untied_y = pairs - (square_y - rows) / 2
    classes = np.minimum(classes_x, classes_y)
    with np.errstate(invalid="ignore", divide="ignore"):
        tau_b = s / np.sqrt(untied_x) / np.sqrt(untied_y)
        tau_c = 2 * s / (rows**2 * (classes - 1) / classes)
    undefined = (untied_x <= 0) | (untied_y <= 0)  # constant scores or human: no order
    tau_b[undefined] = np.nan
    tau_c[undefined] = np.nan
    return {"tau_b": np.clip(tau_b, -1, 1), "tau_c": np.clip(tau_c, -1, 1)}


def _as_list(value: str | Sequence[str] | None) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return list(value)


def agreement(
    table: pd.DataFrame,
    score_column: str | Sequence[str],
    human_column: str = "human_score",
    by: str | Sequence[str] | None = "dataset",
    *,
    cluster: str | None = None,
    n_resamples: int = 0,
    seed: int = 0,
    confidence_level: float = 0.95,
    versus: str | None = None,
) -> pd.DataFrame:
    """Kendall tau-b / tau-c of score column(s) against the human column, per group.

    ``table`` is rating-level (one row per human rating, see the module docstring).
    Groups are the ``by`` columns, plus ``split`` when the table has that column and
    ``by`` does not already name it (so train / validation / test are never pooled).
    ``score_column`` may name several columns (e.g. every evaluator and Pomms); each gets
    its own row per group.

    Returns one row per (group, metric) with columns ``*by, [split], metric, tau_b,
    tau_c, n, n_missing`` (``n`` rows used, ``n_missing`` rows dropped for a NaN score or
    NaN human rating). Rows whose group key is NaN form their own group instead of
    disappearing.

    **Intervals and a test** (``n_resamples > 0``; with the default 0 the output is the
    one above, unchanged). Each row gains ``tau_b_low, tau_b_high, tau_b_p, tau_c_low,
    tau_c_high, tau_c_p, n_clusters``:

    * ``*_low`` / ``*_high``: a percentile cluster-bootstrap interval at
      ``confidence_level``. Each of ``n_resamples`` resamples draws the group's clusters
      (the distinct values of the ``cluster`` column) with replacement, as many as it
      has, and keeps *all* rows of each drawn cluster (a cluster drawn twice is in twice);
      tau is recomputed exactly on that table (`resampled_kendall`). Rows with a NaN score
      or human rating are dropped after the draw, so a metric's missing answers stay part
      of its sampling. Every metric of a group sees the same draws (paired).
    * ``cluster`` names the independent unit: pass the item column (a caption's ratings
      repeat its score, so its rows are not independent) or, better, the image column
      when several captions of an image are judged (they share the image). With
      ``cluster=None`` every row is its own cluster, which treats the rating rows of one
      caption as independent draws: the interval is then too narrow and the test rejects
      too often on rating-level tables (``benchmarks/kendall_interval.py`` measures by how
      much). ``n_clusters`` is the number of clusters with at least one row used: the
      interval is only as good as that number is large. In the benchmark's Flickr8k-like
      world (5 captions per image, 3 ratings on 1-4 each, a 0-100 judge; images as
      clusters) the 95% interval covers 0.95 with 200 images, 0.92-0.94 with 40 and
      0.90-0.94 with 10 (tau-c lowest: in small rating-level samples it is biased low,
      and the bootstrap repeats that bias), so read an interval from fewer than about 40
      clusters as optimistic.
    * ``*_p``: a two-sided test of tau = 0 by inverting the same bootstrap,
      ``p = 2 min(#{tau* <= 0} + 1, #{tau* >= 0} + 1) / (B + 1)`` (capped at 1; B counts
      the resamples where tau is defined). Why this test: scipy's asymptotic p-value
      assumes independent pairs, so it is anti-conservative on rating-level rows (a
      caption's score repeated on its 3 ratings, captions sharing an image); a cluster
      permutation test needs exchangeable clusters (equal sizes and structure, which
      Flickr8k-Expert's images, with 1 to 10 captions, and dropped NaN rows are not) and
      tests independence, not tau = 0 (it can reject for a judge whose tau is 0 but whose
      scores depend on the human ones in a non-monotone way). The bootstrap test assumes
      only independent clusters, tests tau = 0 itself, costs nothing more and agrees with
      the interval: p < 1 - ``confidence_level`` exactly when the interval excludes 0, up
      to the resolution of B. Under a true null (the benchmark, images as clusters) it
      rejects 0.055-0.058 of data sets at alpha 0.05 from 10 to 200 images; with captions
      as clusters (the shared image ignored) 0.07-0.09, with rows 0.25-0.29, scipy's
      asymptotic p 0.25-0.30. ``tau_b_p`` and ``tau_c_p`` are equal whenever both are
      defined: either variant is 0 exactly when P - Q is, so it is one test reported
      under both names.

    **A paired difference** (``versus``, with ``n_resamples > 0``): ``versus`` names one
    of the score columns (e.g. the Pomms ensemble), and every row gains ``tau_b_diff,
    tau_b_diff_low, tau_b_diff_high, tau_b_diff_p`` and the same for tau-c: tau(versus)
    - tau(this metric), each on its own non-missing rows, with a percentile interval
    and the same bootstrap test (of no difference) computed from the differences of the
    two taus *on the same resamples* (both see every draw, so the interval reflects how
    the two metrics co-vary over the clusters: two unpaired intervals would ignore that
    they score the same items and be far wider). The ``versus`` row's own difference is
    0 and left NaN. ``benchmarks/kendall_difference.py`` measures the size of the test
    (two judges of one law, independent or sharing noise; normal, skewed and discrete
    scores) and the coverage of the interval (a less noisy judge, and an ensemble that
    contains the judge): from 40 images on, size 0.044-0.058 and coverage 0.925-0.968;
    with 10 images the test is liberal (0.062-0.096) and covers 0.90-0.94.

    Resamples where tau is undefined (every drawn row tied in the score or in the human
    rating) are left out of the interval and the test. Each group draws from its own
    stream, ``SeedSequence(seed)`` spawned in the groups' sorted order, so the same
    ``seed`` gives the same numbers, and adding a metric does not change the others.
    """
    keys = _as_list(by)
    if "split" in table.columns and "split" not in keys:
        keys.append("split")
    metrics = _as_list(score_column)
    needed = [*keys, human_column, *metrics, *_as_list(cluster)]
    missing = [c for c in needed if c not in table.columns]
    if missing:
        raise ValueError(f"table lacks columns {missing}")
    if n_resamples < 0:
        raise ValueError(f"n_resamples must be >= 0, not {n_resamples}")
    if not 0 < confidence_level < 1:
        raise ValueError(f"confidence_level must be in (0, 1), not {confidence_level}")
    if versus is not None and (versus not in metrics or not n_resamples):
        raise ValueError(f"versus={versus!r} needs to be one of the score columns "
                         f"{metrics} and n_resamples > 0")
    columns = [*keys, "metric", *TAU_VARIANTS, "n", "n_missing"]
    if n_resamples:
        columns += [f"{v}_{s}" for v in TAU_VARIANTS for s in ("low", "high", "p")]
        columns.append("n_clusters")
    if versus is not None:
        columns += [f"{v}_diff{s}" for v in TAU_VARIANTS for s in ("", "_low", "_high", "_p")]
    groups = list(table.groupby(keys, sort=True, dropna=False)) if keys else [((), table)]
    streams = np.random.SeedSequence(seed).spawn(len(groups))
    rows: list[dict[str, Any]] = []
    for (key, group), stream in zip(groups, streams, strict=True):
        key_values = key if isinstance(key, tuple) else (key,)
        points = {m: kendall(group[m], group[human_column]) for m in metrics}
        resampled: dict[str, dict[str, np.ndarray]] = {}
        if n_resamples:
            codes, n_clusters = _cluster_codes(group, cluster)
            draws = _draw(np.random.default_rng(stream), n_clusters, n_resamples, len(group))
            resampled = {m: _resampled(group[m], group[human_column], codes, draws, points[m])
                         for m in metrics}
        for metric in metrics:
            row = {**dict(zip(keys, key_values, strict=True)), "metric": metric,
                   **points[metric]}
            if metric in resampled:
                row["n_clusters"] = int(np.unique(codes[_used(group[metric],
                                                              group[human_column])]).size)
                for variant in TAU_VARIANTS:
                    row |= _percentile(resampled[metric][variant], variant, confidence_level)
            if versus is not None:
                row |= _difference(points, resampled, versus, metric, confidence_level)
            rows.append(row)
    return pd.DataFrame(rows, columns=columns)


def _draw(
    rng: np.random.Generator, n_clusters: int, n_resamples: int, rows: int
) -> list[np.ndarray]:
    """Cluster counts of ``n_resamples`` bootstraps of ``n_clusters`` clusters, drawn piece
    by piece as `_count_chunks` cuts them (the same numbers as one draw, less memory)."""
    step = max(1, CHUNK // max(rows, n_clusters, 1))
    pieces = []
    for start in range(0, n_resamples, step):
        drawn = rng.integers(0, max(n_clusters, 1), (min(step, n_resamples - start), n_clusters))
        pieces.append(np.ascontiguousarray(counts_from_indices(drawn, n_clusters).T))
    return pieces


def _cluster_codes(group: pd.DataFrame, cluster: str | None) -> tuple[np.ndarray, int]:
    """Integer cluster codes 0..K-1 of a group's rows (each row its own without a column)."""
    if cluster is None:
        return np.arange(len(group)), len(group)
    codes, uniques = pd.factorize(group[cluster], use_na_sentinel=True)
    return codes, len(uniques)


def _used(scores: pd.Series, human: pd.Series) -> np.ndarray:
    """The rows with both a score and a human rating."""
    return ~(np.isnan(scores.to_numpy(dtype=float)) | np.isnan(human.to_numpy(dtype=float)))


def _resampled(
    scores: pd.Series,
    human: pd.Series,
    codes: np.ndarray,
    draws: Sequence[np.ndarray],
    point: dict[str, Any],
) -> dict[str, np.ndarray]:
    """tau-b and tau-c of one metric on every resample (NaN where undefined, and all NaN
    for a variant undefined on the data itself); see `agreement`."""
    keep = _used(scores, human)
    if (codes[keep] < 0).any():
        raise ValueError("the cluster column has missing values on rows with scores")
    size = sum(d.shape[1] for d in draws)  # each piece is (clusters, resamples)
    if all(np.isnan(point[v]) for v in TAU_VARIANTS):
        return {v: np.full(size, np.nan) for v in TAU_VARIANTS}
    x, y = scores.to_numpy(dtype=float)[keep], human.to_numpy(dtype=float)[keep]
    taus = _resampled_kendall(x, y, codes[keep], draws)
    return {v: taus[v] if not np.isnan(point[v]) else np.full(size, np.nan)
            for v in TAU_VARIANTS}


def _percentile(values: np.ndarray, name: str, confidence_level: float) -> dict[str, float]:
    """``name_low``, ``name_high``: the percentile interval of the resampled ``values``;
    ``name_p``: the two-sided bootstrap test of 0 that inverts it (`agreement`). NaN when
    no resample is defined."""
    values = values[~np.isnan(values)]
    if not values.size:
        return {f"{name}_low": np.nan, f"{name}_high": np.nan, f"{name}_p": np.nan}
    alpha = 1 - confidence_level
    low, high = np.quantile(values, [alpha / 2, 1 - alpha / 2])
    tail = min(int((values <= 0).sum()), int((values >= 0).sum())) + 1
    return {f"{name}_low": float(low), f"{name}_high": float(high),
            f"{name}_p": min(1.0, 2 * tail / (values.size + 1))}


def _difference(
    points: dict[str, dict[str, Any]],
    resampled: dict[str, dict[str, np.ndarray]],
    versus: str,
    metric: str,
    confidence_level: float,
) -> dict[str, float]:
    """tau(versus) - tau(metric) with its paired interval and test (`agreement`)."""
    out: dict[str, float] = {}
    for variant in TAU_VARIANTS:
        name = f"{variant}_diff"
        if metric == versus:
            out |= dict.fromkeys([name, f"{name}_low", f"{name}_high", f"{name}_p"], np.nan)
            continue
        out[name] = float(points[versus][variant] - points[metric][variant])
        paired = resampled[versus][variant] - resampled[metric][variant]
        out |= _percentile(paired, name, confidence_level)
    return out


def read_scores(path: str | Path, on: str = "item_id") -> pd.DataFrame:
    """Read an external tool's score file (CSV or Parquet) for `join_scores`.

    The ``on`` column is read as text so that ids like ``007`` keep their leading zeros.
    """
    path = Path(path)
    if path.suffix.lower() in {".parquet", ".pq"}:
        return pd.read_parquet(path)
    if path.suffix.lower() in {".csv", ".tsv"}:
        sep = "\t" if path.suffix.lower() == ".tsv" else ","
        return pd.read_csv(path, sep=sep, dtype={on: str})
    raise ValueError(f"unsupported score file type: {path} (use .csv, .tsv or .parquet)")


def join_scores(
    judgements: pd.DataFrame,
    scores: pd.DataFrame | str | Path,
    on: str = "item_id",
    score_column: str = "score",
    name: str | None = None,
) -> pd.DataFrame:
    """Attach an item-level score column to the rating-level judgement table.

    ``scores`` has one row per item (``on`` + ``score_column``); it may be a DataFrame or
    the path of an external tool's CSV/TSV/Parquet file (read with `read_scores`). The
    score is repeated on every rating row of its item (the module's convention). Item ids
    are matched as text on both sides, so an integer id in a JSON table matches the same
    id read from a CSV.

    * Duplicate item ids in ``scores`` raise ValueError naming them (which score would
      count?).
    * Judgement rows whose item has no score get NaN (never imputed) and are counted;
      a NaN score in the file stays NaN too. Both are then dropped, and counted, by
      `kendall` / `agreement`.
    * The attached column is called ``name`` (default: ``score_column``); an existing
      column of that name in ``judgements`` raises ValueError instead of being suffixed.

    Returns a copy of ``judgements`` with the new column, in the original row order.
    Counts go to ``result.attrs["join_scores"][name]``: ``n_rows``, ``n_unmatched_rows``
    (rating rows without a score row), ``n_unmatched_items`` (distinct such items),
    ``unmatched_items`` (up to 20 of them), ``n_nan_scores`` (rows matched to a NaN
    score) and ``n_unused_items`` (score rows for items not in the judgement table).
    """
    if not isinstance(scores, pd.DataFrame):
        scores = read_scores(scores, on=on)
    name = score_column if name is None else name
    if on not in judgements.columns:
        raise ValueError(f"judgement table lacks the key column {on!r}")
    missing = [c for c in (on, score_column) if c not in scores.columns]
    if missing:
        raise ValueError(f"score table lacks columns {missing}")
    if name in judgements.columns:
        raise ValueError(f"judgement table already has a column {name!r}")
    keys = scores[on].astype(str)
    duplicated = keys[keys.duplicated(keep=False)]
    if len(duplicated):
        dups = sorted(set(duplicated))
        raise ValueError(f"duplicate {on} in score table: {dups[:20]} ({len(dups)} ids)")
    lookup = pd.Series(scores[score_column].to_numpy(dtype=float), index=keys.to_numpy())
    judge_keys = judgements[on].astype(str)
    matched = judge_keys.isin(lookup.index).to_numpy()
    values = judge_keys.map(lookup).to_numpy(dtype=float)
    out = judgements.copy()
    out[name] = values
    unmatched = sorted(set(judge_keys[~matched]))
    report = {
        "n_rows": len(out),
        "n_unmatched_rows": int((~matched).sum()),
        "n_unmatched_items": len(unmatched),
        "unmatched_items": unmatched[:20],
        "n_nan_scores": int((matched & np.isnan(values)).sum()),
        "n_unused_items": int((~lookup.index.isin(judge_keys)).sum()),
    }
    out.attrs = {**judgements.attrs}
    out.attrs["join_scores"] = {**judgements.attrs.get("join_scores", {}), name: report}
    return out
