"""Philautia-Eval: model-specific (self-)preference bias of MLLM judges.

Implements the analysis of seed ``000_dd1ddac0ce03ecfb.txt`` (Philautia-Eval, arXiv
2604.11589) on a long table of per-image scores for one setting (reference-based or
reference-free):

* the generator x evaluator mean-score matrix Phi (§4.1, eq. for Phi_ij; Algorithm 1
  lines 3-5),
* its column-then-row standardisation Phi-tilde (§4.1 Step 3; Algorithm 1 lines 6-7),
* the philautia score, the diagonal Phi-tilde_i(i) (§4.1),
* the §6.1 readings: the diagonal against its evaluator column (1 and 2 sd), and the
  recomputation without one model ("when we computed Phi-tilde without LLaVA-1.5"), read
  both ways: without its evaluator column only (`leave_one_evaluator_out`) and without
  the model altogether, row and column (`leave_one_model_out`),
* the §6.2 family sub-matrices and their rank among all principal sub-matrices of the
  same size ("second-largest number of positive off-diagonal entries among all C(12,4)
  possible 4x4 submatrices"), as a dense rank (the paper's wording) and a competition
  rank; a model may sit in several families (Fig. 6),
* the diagonal-vs-off-diagonal significance test that the earlier version of the paper
  (seed ``001_47811129d5d0433a.txt`` §5.2, where Phi is called S, Phi-tilde S-tilde and the
  philautia score the Self-Preference Index) reports as p < 0.05 without naming the test;
  here it is a permutation test of generator labels,
* image-bootstrap intervals for the philautia scores (not in the paper, which reports
  point values only; added because the scores are means over 4,500 images).

Conventions (all matrices): rows are generators i, columns evaluators j, in the order of
the ``models`` argument; the same list is both axes, so the matrix is square.

Why this module is long: it is §4.1 and §6.1-6.2 of one paper as one chain (Phi ->
Phi-tilde -> philautia score -> its test, intervals and leave-one-out readings), each
step reading the previous one's result type; split, every piece would import the rest.
The self-preference regression beyond the paper is its own module (.selfpref).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
from scipy import stats

from judgebias.stats.bootstrap import (
    BootstrapMethod,
    BootstrapSummary,
    bootstrap_weighted_means,
    standardise,
)

REQUIRED_COLUMNS = ("image_id", "generator", "evaluator", "score")
SeedLike = int | np.random.Generator | None


# --------------------------------------------------------------------------------------
# Phi, Phi-tilde, philautia score
# --------------------------------------------------------------------------------------


def score_tensor(scores: pd.DataFrame, models: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Pivot the long score table into ``S[k, i, j]`` (image, generator, evaluator).

    Seed 000 §4.1 Step 2: psi_{E(j)}(x_e^{(i,k)}) in [0, 1] is evaluator j's score of
    generator i's caption of image k. Returns ``(image_ids, S)`` with image ids sorted
    (so the tensor does not depend on row order) and ``S`` of shape ``(N, M, M)``. A score
    that is NaN (failed / unparseable answer) or a cell with no row at all stays NaN, so
    that downstream means exclude it instead of imputing it.

    Raises ValueError on unknown generator/evaluator names (a typo would otherwise silently
    drop a model), duplicate (image, generator, evaluator) rows (which one would count?),
    and scores outside [0, 1] (seed 000 §5 normalises the 0-100 judge scale to [0, 1]; a
    raw 0-100 score here means the normalisation was skipped).
    """
    missing = [c for c in REQUIRED_COLUMNS if c not in scores.columns]
    if missing:
        raise ValueError(f"score table lacks columns {missing}")
    models = list(models)
    if len(set(models)) != len(models):
        raise ValueError("models must be distinct")
    m = len(models)
    model_index = pd.Index(models)
    gen_names = scores["generator"].astype(str)
    eval_names = scores["evaluator"].astype(str)
    gen = model_index.get_indexer(gen_names)
    evl = model_index.get_indexer(eval_names)
    unknown = sorted(set(gen_names[gen < 0]) | set(eval_names[evl < 0]))
    if unknown:
        raise ValueError(f"generators/evaluators not in models: {unknown}")
    img_codes, image_ids = pd.factorize(scores["image_id"].astype(str), sort=True)
    n = len(image_ids)
    values = scores["score"].to_numpy(dtype=float)
    finite = values[~np.isnan(values)]
    if finite.size and (finite.min() < 0.0 or finite.max() > 1.0):
        raise ValueError("scores must lie in [0, 1] (NaN for failed answers)")
    flat = (img_codes.astype(np.int64) * m + gen) * m + evl
    if np.bincount(flat, minlength=n * m * m).max(initial=0) > 1:
        raise ValueError("duplicate (image_id, generator, evaluator) rows")
    tensor = np.full(n * m * m, np.nan)
    tensor[flat] = values
    return np.asarray(image_ids, dtype=object), tensor.reshape(n, m, m)


class PhiMatrix(NamedTuple):
    """Phi with the number of images behind each cell (valid) and left out (excluded)."""

    phi: np.ndarray
    n_valid: np.ndarray
    n_excluded: np.ndarray


def phi_matrix(tensor: np.ndarray) -> PhiMatrix:
    """Phi_ij = mean over images of evaluator j's score of generator i's caption.

    Seed 000 §4.1, Phi_ij = (1/N) sum_k psi_{E(j)}(x_e^{(i,k)}) (Algorithm 1 line 4). The
    paper has a score for every (i, j, k); here a failed answer is NaN and is *excluded*
    from its cell's mean (1/N_ij over the N_ij valid images), never imputed, because a
    made-up score would be a judge's opinion it never gave. ``n_excluded = N - n_valid``
    counts NaN scores and absent rows alike. A cell without any valid score is NaN.
    """
    tensor = np.asarray(tensor, dtype=float)
    valid = ~np.isnan(tensor)
    n_valid = valid.sum(axis=0)
    total = np.where(valid, tensor, 0.0).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        phi = total / n_valid
    phi[n_valid == 0] = np.nan
    return PhiMatrix(phi, n_valid, tensor.shape[0] - n_valid)


def phi_tilde(phi: np.ndarray, ddof: int = 0) -> np.ndarray:
    """Standardise Phi column-wise (per evaluator), then row-wise (per generator).

    Seed 000 Algorithm 1 line 6 (Phi~[:, j] <- Standardize(Phi[:, j]), evaluator-wise) then
    line 7 (Phi~[i, :] <- Standardize(Phi~[i, :]), generator-wise); §4.1 Step 3 and
    Appendix B.1 explain why: evaluators differ in mean and spread of their scores
    (columns), generators in caption quality (rows). Seed 001 Algorithm 1 line 7 writes
    Standardize(S[i, :]) but its text (§3.1 Step 3) describes the same two sequential
    stages, so the row step acts on the column-standardised matrix.

    The paper does not state the sd convention. ``ddof=0`` (population sd, as
    `scipy.stats.zscore` and sklearn's StandardScaler) is the default. Because the row
    step is invariant to a common scale of its row, the column step's convention cancels
    and only the row step's matters: with K entries per row, ``phi_tilde(phi, ddof=1) ==
    sqrt((K-1)/K) * phi_tilde(phi, ddof=0)`` exactly, i.e. sqrt((M-1)/M) on the square
    matrix (0.957 for M = 12). Signs, orderings, ranks and permutation p-values are
    therefore the same under either convention; only magnitudes (e.g. the paper's 1 / 2 sd
    thresholds) move.

    Works on any ``(..., G, E)`` stack (G generators by E evaluators, need not be square),
    which the bootstrap and the leave-one-evaluator-out analysis use. NaN cells are
    ignored by the means/sds and stay NaN.
    """
    by_evaluator = standardise(phi, axis=-2, ddof=ddof)
    return standardise(by_evaluator, axis=-1, ddof=ddof)


def philautia_scores(phi_t: np.ndarray) -> np.ndarray:
    """Philautia score of each model: the diagonal Phi~_i(i) of Phi-tilde.

    Seed 000 §4.1 ("Phi~_i(i) indicates the degree of self-preference, which we name the
    philautia score"); seed 001 §3.2 calls it the Self-Preference Index. Stack-aware.
    """
    return np.diagonal(phi_t, axis1=-2, axis2=-1).copy()


# --------------------------------------------------------------------------------------
# Diagonal test and the per-column reading of §6.1
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DiagonalTest:
    """Permutation test of "the diagonal of Phi-tilde exceeds its off-diagonal entries"."""

    mean_diagonal: float
    mean_off_diagonal: float
    difference: float
    p_value: float
    n_resamples: int
    exact: bool
    alternative: str
    null_distribution: np.ndarray = field(repr=False)


def _to_rng(seed: SeedLike) -> np.random.Generator:
    return seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)


def diagonal_test(
    phi: np.ndarray,
    ddof: int = 0,
    n_resamples: int = 10_000,
    seed: SeedLike = None,
) -> DiagonalTest:
    """Test whether self-scores (diagonal of Phi-tilde) exceed the cross scores.

    Seed 001 §5.2 compares the mean diagonal (1.51) with the mean off-diagonal (-0.21)
    entry of S-tilde and reports a significant difference (p < 0.05) without naming the
    test. Here: statistic = mean diagonal - mean off-diagonal of Phi-tilde; null = the
    generator labels are exchangeable with respect to the evaluator labels (no pairing of
    a generator with "its" evaluator is special). Permuting the rows of Phi permutes the
    rows of Phi-tilde (the column means/sds do not depend on row order and the row step is
    row-wise), so under a permutation pi the statistic is computed from the generalised
    diagonal Phi~[pi(i), i] without re-standardising. `scipy.stats.permutation_test` with
    ``permutation_type='pairings'`` permutes the row-index vector; it enumerates all M!
    permutations when M! <= n_resamples (exact p), else samples n_resamples of them (p
    with the +1 correction). One-sided (alternative "greater").

    With complete data each row of Phi-tilde sums to 0, so mean off-diagonal = -mean
    diagonal / (M-1) and the difference is a monotone function of the mean diagonal.
    The p-value does not depend on ``ddof`` (the statistic only rescales).
    """
    phi_t = phi_tilde(np.asarray(phi, dtype=float), ddof=ddof)
    m = phi_t.shape[0]
    if phi_t.shape != (m, m):
        raise ValueError("diagonal_test needs a square Phi")
    columns = np.arange(m)
    finite = ~np.isnan(phi_t)
    total_sum = float(np.nansum(phi_t))
    total_count = int(finite.sum())

    def _difference(rows: np.ndarray, axis: int = -1) -> np.ndarray:
        rows = np.moveaxis(np.asarray(rows), axis, -1)
        diag = phi_t[rows, columns]
        diag_sum = np.nansum(diag, axis=-1)
        diag_count = (~np.isnan(diag)).sum(axis=-1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return diag_sum / diag_count - (total_sum - diag_sum) / (total_count - diag_count)

    result = stats.permutation_test(
        (columns,),
        _difference,
        permutation_type="pairings",
        n_resamples=n_resamples,
        alternative="greater",
        vectorized=True,
        rng=_to_rng(seed),
    )
    diag = philautia_scores(phi_t)
    off = phi_t[~np.eye(m, dtype=bool)]
    return DiagonalTest(
        mean_diagonal=float(np.nanmean(diag)),
        mean_off_diagonal=float(np.nanmean(off)),
        difference=float(result.statistic),
        p_value=float(result.pvalue),
        n_resamples=int(result.null_distribution.size),
        exact=math.factorial(m) <= n_resamples,
        alternative="greater",
        null_distribution=np.asarray(result.null_distribution),
    )


def column_deviation(phi_t: np.ndarray, models: Sequence[str], ddof: int = 0) -> pd.DataFrame:
    """Each philautia score against the entries of its own evaluator column (z-score).

    Seed 000 §6.1 reads a philautia score Phi~_j(j) against "the mean of
    {Phi~_j(G^(i))}_{i=1}^M" (Gemma3: 1.37 vs mean -0.0478, "more than two standard
    deviations"; GPT-4o "less than one standard deviation"). Following that wording the
    column mean and sd run over all M generators, the diagonal included, with the same
    ``ddof`` as the standardisation. ``z = (Phi~_jj - mean_j) / sd_j``; the flags are
    one-sided (z above 1 / 2), the self-favouring direction the paper discusses. With the
    diagonal inside its own column, z cannot exceed sqrt(M-1) for ddof=0.
    """
    phi_t = np.asarray(phi_t, dtype=float)
    diag = philautia_scores(phi_t)
    mean = np.nanmean(phi_t, axis=0)
    sd = np.nanstd(phi_t, axis=0, ddof=ddof)
    with np.errstate(invalid="ignore", divide="ignore"):
        z = (diag - mean) / sd
    return pd.DataFrame(
        {
            "column_mean": mean,
            "column_sd": sd,
            "column_z": z,
            "above_1sd": z > 1.0,
            "above_2sd": z > 2.0,
        },
        index=pd.Index(list(models), name="model"),
    )


# --------------------------------------------------------------------------------------
# Family sub-matrices (§6.2)
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FamilyResult:
    """One model family's principal sub-matrix of Phi-tilde and its rank among all."""

    family: str
    members: list[str]
    block: pd.DataFrame
    n_off_diagonal: int
    n_positive: int
    share_positive: float
    mean_off_diagonal: float
    rank_dense: float
    rank_competition: float
    n_ties: float
    n_subsets: int
    share_subsets_geq: float
    method: str
    n_evaluated: int

    def as_dict(self) -> dict[str, Any]:
        """JSON-friendly summary (the block itself goes to `tables()`)."""
        return {
            "members": list(self.members),
            "k": len(self.members),
            "n_off_diagonal": self.n_off_diagonal,
            "n_positive": self.n_positive,
            "share_positive": _json_float(self.share_positive),
            "mean_off_diagonal": _json_float(self.mean_off_diagonal),
            # exact enumeration gives integers; Monte Carlo gives estimates
            "rank_dense": int(self.rank_dense),
            "rank_competition": (int(self.rank_competition) if self.method == "exact"
                                 else _json_float(self.rank_competition)),
            "n_ties": int(self.n_ties) if self.method == "exact" else _json_float(self.n_ties),
            "n_subsets": self.n_subsets,
            "share_subsets_geq": _json_float(self.share_subsets_geq),
            "method": self.method,
            "n_evaluated": self.n_evaluated,
        }


def _positive_off_diagonal_counts(positive: np.ndarray, subsets: np.ndarray) -> np.ndarray:
    """Number of positive off-diagonal entries of each principal sub-matrix (rows = subsets)."""
    out = np.empty(len(subsets), dtype=np.int64)
    chunk = 65_536
    for start in range(0, len(subsets), chunk):
        sub = subsets[start : start + chunk]
        out[start : start + chunk] = positive[sub[:, :, None], sub[:, None, :]].sum(axis=(1, 2))
    return out


def family_groups(
    models: Sequence[str], families: Mapping[str, str | Sequence[str]]
) -> dict[str, list[str]]:
    """Family name -> its members among ``models`` (in ``models`` order).

    ``families`` maps a model to one family name or to a sequence of them: seed 000 Fig. 6
    puts LLaVA-OneVision-7B both in the Qwen-based block (i) (its LLM is Qwen2-7B,
    Appendix Table A) and in the LLaVA-family block (ii) (§6.2, "successor models to
    LLaVA-1.5-13B"), so membership is a set, not a partition. Models absent from
    ``models`` are ignored (one mapping can serve several panels); families appear in
    the order their first member appears in ``models``.
    """
    groups: dict[str, list[str]] = {}
    for model in models:
        names = families.get(model, ())
        for family in [names] if isinstance(names, str) else names:
            members = groups.setdefault(family, [])
            if model not in members:
                members.append(model)
    return groups


def family_submatrices(
    phi_t: np.ndarray,
    models: Sequence[str],
    families: Mapping[str, str | Sequence[str]],
    *,
    max_exact: int = 200_000,
    n_samples: int | None = None,
    seed: SeedLike = None,
) -> list[FamilyResult]:
    """Principal sub-matrices of Phi-tilde for model families, ranked against all subsets.

    Seed 000 §6.2 / Fig. 6: the 4x4 sub-matrix of the Qwen-based models has 9 of 12
    off-diagonal entries > 0, "the second-largest number of positive off-diagonal entries
    among all C(12,4) possible 4x4 submatrices". For each family with >= 2 members among
    `models` (``families`` maps model -> family name or list of names, see
    `family_groups`: a model may belong to several families, as LLaVA-OneVision-7B does in
    Fig. 6) this reports the block, the number and share of positive off-diagonal
    entries, their mean, and the rank of that count among all C(M, k) principal k x k
    sub-matrices of the same Phi-tilde (no re-standardisation).

    Two ranks, because the paper's wording fixes one and the usual convention is another:

    * ``rank_dense`` -- the paper's wording: "the second-largest *number*" ranks the
      distinct counts, so rank = 1 + (number of distinct counts larger than the
      family's). Several subsets sharing the largest count still leave the family
      "second".
    * ``rank_competition`` -- 1 + (number of subsets with strictly more positive
      entries), the "1224" convention of sports tables; it says how many subsets beat
      the family.

    E.g. counts (over all subsets) 12, 12, 10, 9, 9 and the family at 10: dense rank 2,
    competition rank 3. ``n_ties`` = other subsets with exactly as many;
    ``share_subsets_geq`` = share of subsets with at least as many (the family's own
    included), an exact p-value for "a random k-subset of models looks at least this
    mutually favourable". Enumerated exactly when C(M, k) <= max_exact; otherwise
    ``n_samples`` (default max_exact) uniformly random k-subsets are drawn, the
    competition rank and ties are estimated by scaling the sample shares to C(M, k), the
    dense rank counts the distinct larger counts seen in the sample (a lower bound), the
    share uses the (1 + hits) / (1 + draws) estimate, and ``method`` says "monte_carlo".
    """
    phi_t = np.asarray(phi_t, dtype=float)
    models = list(models)
    m = len(models)
    index = {name: i for i, name in enumerate(models)}
    groups = family_groups(models, families)
    positive = phi_t > 0
    np.fill_diagonal(positive, False)
    positive = positive.astype(np.int64)
    rng = _to_rng(seed)
    results = []
    for family, members in groups.items():
        k = len(members)
        if k < 2:
            continue
        idx = np.array([index[name] for name in members])
        block = phi_t[np.ix_(idx, idx)]
        off = block[~np.eye(k, dtype=bool)]
        observed = int((off > 0).sum())
        n_subsets = math.comb(m, k)
        subsets: np.ndarray
        if n_subsets <= max_exact:
            subsets = np.fromiter(
                combinations(range(m), k), dtype=np.dtype((np.intp, k)), count=n_subsets
            )
        else:
            draws = n_samples or max_exact
            subsets = np.argsort(rng.random((draws, m)), axis=1)[:, :k]
        counts = _positive_off_diagonal_counts(positive, subsets)
        n_more = int((counts > observed).sum())
        n_equal = int((counts == observed).sum())
        rank_dense = float(1 + np.unique(counts[counts > observed]).size)
        if n_subsets <= max_exact:
            rank, n_ties = float(1 + n_more), float(n_equal - 1)
            share_geq = (n_more + n_equal) / n_subsets
            method, n_evaluated = "exact", n_subsets
        else:
            rank = 1.0 + n_subsets * n_more / draws
            n_ties = max(n_subsets * n_equal / draws - 1.0, 0.0)
            share_geq = (1 + n_more + n_equal) / (1 + draws)
            method, n_evaluated = "monte_carlo", draws
        results.append(
            FamilyResult(
                family=family,
                members=members,
                block=pd.DataFrame(
                    block,
                    index=pd.Index(members, name="generator"),
                    columns=pd.Index(members, name="evaluator"),
                ),
                n_off_diagonal=k * (k - 1),
                n_positive=observed,
                share_positive=observed / (k * (k - 1)),
                mean_off_diagonal=float(np.nanmean(off)),
                rank_dense=rank_dense,
                rank_competition=rank,
                n_ties=n_ties,
                n_subsets=n_subsets,
                share_subsets_geq=float(share_geq),
                method=method,
                n_evaluated=n_evaluated,
            )
        )
    return results


# --------------------------------------------------------------------------------------
# Robustness: leave one evaluator out, image bootstrap
# --------------------------------------------------------------------------------------


def leave_one_evaluator_out(
    phi: np.ndarray, ddof: int = 0, models: Sequence[str] | None = None
) -> pd.DataFrame:
    """Philautia scores recomputed with one evaluator's column removed, for each evaluator.

    Seed 000 §6.1: Qwen2.5-VL's low philautia score "might be skewed by the evaluations
    by LLaVA-1.5" (an outlier Phi~ = -3.25 inflating the row sd); "when we computed Phi~
    without LLaVA-1.5, the philautia score for Qwen2.5-VL-7B was 0.934". The sentence fits
    two computations; this is the first, `leave_one_model_out` the second. Here only the
    evaluator's *column* goes: the concern is that evaluator's judgements, while its row
    holds its captions as a generator, scored by the other (kept) evaluators. Phi-tilde
    is recomputed on the M x (M-1) matrix (columns then rows, as Algorithm 1) and each
    remaining model's philautia score read at (i, its own column). Rows = dropped
    evaluator, columns = model; the dropped model itself is NaN.

    This is the variant that reproduces §6.1's number. Dropping a column leaves every
    other column's standardisation (Algorithm 1 line 6) unchanged, and the row step is
    invariant to an affine map of the row, so the new score is the z-score of Phi~_i(i)
    within row i of the *published* Phi~ with the dropped entry removed. With ddof = 0 a
    row of Phi~ has mean 0 and sum of squares M; removing x = -3.25 from Qwen2.5-VL's
    row (M = 12) leaves 11 entries with mean 3.25/11 and population sd
    sqrt((12 - 3.25^2)/11 - (3.25/11)^2) = 0.2083, and (0.49 - 0.2955) / 0.2083 = 0.934,
    the printed value (Fig. 4 (i): Phi~_Qwen(Qwen) = 0.49). ddof = 1 cannot even produce
    a -3.25 in a row of 12 (|z| <= 11/sqrt(12) = 3.18). The whole-model variant needs
    Phi itself (Fig. A is printed as a heat map only), so it cannot be checked from the
    paper; tests/philautia/test_philautia.py carries this arithmetic.
    """
    phi = np.asarray(phi, dtype=float)
    m = phi.shape[0]
    names = list(models) if models is not None else list(range(m))
    out = np.full((m, m), np.nan)
    for e in range(m):
        keep = np.delete(np.arange(m), e)
        reduced = phi_tilde(phi[:, keep], ddof=ddof)
        out[e, keep] = reduced[keep, np.arange(m - 1)]
    return pd.DataFrame(
        out,
        index=pd.Index(names, name="dropped_evaluator"),
        columns=pd.Index(names, name="model"),
    )


def leave_one_model_out(
    phi: np.ndarray, ddof: int = 0, models: Sequence[str] | None = None
) -> pd.DataFrame:
    """Philautia scores recomputed on the panel without one model, for each model.

    The second reading of seed 000 §6.1's "when we computed Phi~ without LLaVA-1.5" (see
    `leave_one_evaluator_out` for the first): the model leaves the panel entirely, as
    generator *and* evaluator, so Phi~ is recomputed from the (M-1) x (M-1) principal
    sub-matrix of Phi (Algorithm 1 lines 6-7 on the smaller panel, as if the study had
    been run with M-1 models). Unlike the column-only variant, every kept column's
    standardisation changes too (its mean and sd lose the dropped generator's caption
    scores). Rows = dropped model, columns = model; the dropped model itself is NaN.
    """
    phi = np.asarray(phi, dtype=float)
    m = phi.shape[0]
    if phi.shape != (m, m):
        raise ValueError("leave_one_model_out needs a square Phi")
    names = list(models) if models is not None else list(range(m))
    out = np.full((m, m), np.nan)
    for e in range(m):
        keep = np.delete(np.arange(m), e)
        out[e, keep] = philautia_scores(phi_tilde(phi[np.ix_(keep, keep)], ddof=ddof))
    return pd.DataFrame(
        out,
        index=pd.Index(names, name="dropped_model"),
        columns=pd.Index(names, name="model"),
    )


def bootstrap_philautia(
    tensor: np.ndarray,
    ddof: int = 0,
    n_boot: int = 1000,
    ci: float = 0.95,
    seed: SeedLike = None,
    method: BootstrapMethod = "percentile",
) -> BootstrapSummary:
    """Image bootstrap of the philautia scores (percentile intervals and bootstrap sd).

    Not in seed 000 (which reports point values); the scores are functions of means over
    N images, so their sampling uncertainty comes from which images were drawn. Each
    replicate resamples images with replacement, *the same draw for every cell* (all
    cells score the same images, and Phi-tilde couples all cells), recomputes Phi with
    NaN-aware means (§4.1 Phi_ij over the valid images of the replicate), Phi-tilde
    (Algorithm 1 lines 6-7) and the diagonal.

    Vectorised as weights: a replicate is a multinomial count vector w over images and
    Phi_ij = sum_k w_k S_kij / sum_k w_k [S_kij valid], i.e. W (B x N) @ values (N x M^2)
    over the valid mask. `scipy.stats.bootstrap` cannot take the (N, M, M) tensor as a
    sample (it would treat the M^2 cells as independent scalar statistics and gather a
    B x N x M^2 array), so it resamples the image-index vector and the statistic turns
    each index row into counts; see `judgebias.stats.bootstrap.bootstrap_weighted_means`. scipy
    supplies the resampling, the interval (``method``: "percentile" default, "basic",
    "BCa") and the standard error (sd of the replicates, ddof=1).
    """
    tensor = np.asarray(tensor, dtype=float)
    n, m, _ = tensor.shape

    def _scores(means: np.ndarray) -> np.ndarray:
        return philautia_scores(phi_tilde(means.reshape(-1, m, m), ddof=ddof))

    return bootstrap_weighted_means(
        tensor.reshape(n, m * m),
        _scores,
        n_resamples=n_boot,
        confidence_level=ci,
        method=method,
        rng=_to_rng(seed),
    )


# --------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------


def _json_float(value: Any) -> float | None:
    """Float for JSON; NaN/inf become None so the output is strict JSON."""
    value = float(value)
    return value if math.isfinite(value) else None


@dataclass
class PhilautiaResult:
    """Everything Philautia-Eval computes for one setting; see `analyse`."""

    models: list[str]
    n_images: int
    ddof: int
    phi: pd.DataFrame
    phi_tilde: pd.DataFrame
    n_valid: pd.DataFrame
    n_excluded: pd.DataFrame
    philautia: pd.DataFrame
    diagonal_test: DiagonalTest
    families: list[FamilyResult]
    loo: pd.DataFrame
    loo_model: pd.DataFrame
    bootstrap: BootstrapSummary
    excluded_by_status: dict[str, int]
    n_nan_scores: int
    settings: dict[str, Any]

    def metrics(self) -> dict[str, Any]:
        """JSON-serialisable summary (strict JSON: NaN becomes null)."""
        loo_min = self.loo.min(axis=0)
        loo_max = self.loo.max(axis=0)
        model_min = self.loo_model.min(axis=0)
        model_max = self.loo_model.max(axis=0)
        per_model = {}
        for model, row in self.philautia.iterrows():
            per_model[str(model)] = {
                "score": _json_float(row["score"]),
                "ci_low": _json_float(row["ci_low"]),
                "ci_high": _json_float(row["ci_high"]),
                "boot_sd": _json_float(row["boot_sd"]),
                "column_mean": _json_float(row["column_mean"]),
                "column_sd": _json_float(row["column_sd"]),
                "column_z": _json_float(row["column_z"]),
                "above_1sd": bool(row["above_1sd"]),
                "above_2sd": bool(row["above_2sd"]),
                "loo_min": _json_float(loo_min[model]),
                "loo_max": _json_float(loo_max[model]),
                "loo_model_min": _json_float(model_min[model]),
                "loo_model_max": _json_float(model_max[model]),
            }
        n_cells = self.n_images * len(self.models) ** 2
        n_valid = int(self.n_valid.to_numpy().sum())
        test = self.diagonal_test
        return {
            "ddof": self.ddof,
            "models": list(self.models),
            "n_images": self.n_images,
            "counts": {
                "n_scores_expected": n_cells,
                "n_valid": n_valid,
                "n_excluded": n_cells - n_valid,
                "n_nan_scores": self.n_nan_scores,
                "n_absent": n_cells - n_valid - self.n_nan_scores,
                "share_excluded": _json_float((n_cells - n_valid) / n_cells) if n_cells else None,
                "min_valid_per_cell": int(self.n_valid.to_numpy().min()) if n_cells else 0,
                "excluded_by_status": dict(self.excluded_by_status),
            },
            "philautia": per_model,
            "diagonal_test": {
                "mean_diagonal": _json_float(test.mean_diagonal),
                "mean_off_diagonal": _json_float(test.mean_off_diagonal),
                "difference": _json_float(test.difference),
                "p_value": _json_float(test.p_value),
                "alternative": test.alternative,
                "n_resamples": test.n_resamples,
                "exact": test.exact,
            },
            "families": {f.family: f.as_dict() for f in self.families},
            "bootstrap": {
                "n_boot": self.bootstrap.n_resamples,
                "ci": self.bootstrap.confidence_level,
                "method": self.bootstrap.method,
            },
            "settings": dict(self.settings),
        }

    def tables(self) -> dict[str, pd.DataFrame]:
        """Tables for parquet: flat frames with string column names and a plain index."""
        counts = (
            self.n_valid.stack()
            .rename("n_valid")
            .to_frame()
            .join(self.n_excluded.stack().rename("n_excluded"))
            .reset_index()
        )
        families = pd.DataFrame(
            [{"family": f.family, **f.as_dict()} for f in self.families],
            columns=[
                "family",
                "members",
                "k",
                "n_off_diagonal",
                "n_positive",
                "share_positive",
                "mean_off_diagonal",
                "rank_dense",
                "rank_competition",
                "n_ties",
                "n_subsets",
                "share_subsets_geq",
                "method",
                "n_evaluated",
            ],
        )
        families["members"] = families["members"].map(lambda ms: ",".join(ms))
        return {
            "phi": self.phi.reset_index(),
            "phi_tilde": self.phi_tilde.reset_index(),
            "counts": counts,
            "loo": self.loo.reset_index(),
            "loo_model": self.loo_model.reset_index(),
            "families": families,
            "philautia": self.philautia.reset_index(),
        }


def analyse(
    scores: pd.DataFrame,
    models: Sequence[str],
    families: Mapping[str, str | Sequence[str]] | None = None,
    ddof: int = 0,
    n_boot: int = 1000,
    n_permutations: int = 10_000,
    seed: int = 0,
    *,
    ci: float = 0.95,
    max_exact: int = 200_000,
) -> PhilautiaResult:
    """Run Philautia-Eval (seed 000 §4.1 / Algorithm 1, §6.1, §6.2) on one setting.

    ``scores``: long table (image_id, generator, evaluator, score[, status]); NaN scores
    are excluded from every mean. ``families``: model -> family name or list of names
    for §6.2 (`family_groups`). Both leave-one-out readings of §6.1 are computed
    (`leave_one_evaluator_out`, `leave_one_model_out`). The
    bootstrap, the permutation test and any Monte Carlo family ranking draw from
    independent streams spawned from ``seed``, so the result is reproducible and one
    component's draws do not shift when another's size changes.
    """
    models = list(models)
    image_ids, tensor = score_tensor(scores, models)
    phi, n_valid, n_excluded = phi_matrix(tensor)
    phi_t = phi_tilde(phi, ddof=ddof)
    boot_seed, perm_seed, family_seed = np.random.SeedSequence(seed).spawn(3)
    boot = bootstrap_philautia(
        tensor, ddof=ddof, n_boot=n_boot, ci=ci, seed=np.random.default_rng(boot_seed)
    )
    test = diagonal_test(
        phi, ddof=ddof, n_resamples=n_permutations, seed=np.random.default_rng(perm_seed)
    )
    fams = family_submatrices(
        phi_t,
        models,
        families or {},
        max_exact=max_exact,
        seed=np.random.default_rng(family_seed),
    )
    gen_axis = pd.Index(models, name="generator")
    eval_axis = pd.Index(models, name="evaluator")
    philautia = pd.DataFrame(
        {
            "score": philautia_scores(phi_t),
            "ci_low": boot.low,
            "ci_high": boot.high,
            "boot_sd": boot.se,
        },
        index=pd.Index(models, name="model"),
    ).join(column_deviation(phi_t, models, ddof=ddof))
    excluded_by_status: dict[str, int] = {}
    if "status" in scores.columns:
        failed = scores.loc[scores["score"].isna(), "status"].fillna("<missing>").astype(str)
        excluded_by_status = {str(k): int(v) for k, v in failed.value_counts().items()}
    return PhilautiaResult(
        models=models,
        n_images=len(image_ids),
        ddof=ddof,
        phi=pd.DataFrame(phi, index=gen_axis, columns=eval_axis),
        phi_tilde=pd.DataFrame(phi_t, index=gen_axis, columns=eval_axis),
        n_valid=pd.DataFrame(n_valid, index=gen_axis, columns=eval_axis),
        n_excluded=pd.DataFrame(n_excluded, index=gen_axis, columns=eval_axis),
        philautia=philautia,
        diagonal_test=test,
        families=fams,
        loo=leave_one_evaluator_out(phi, ddof=ddof, models=models),
        loo_model=leave_one_model_out(phi, ddof=ddof, models=models),
        bootstrap=boot,
        excluded_by_status=excluded_by_status,
        n_nan_scores=int(scores["score"].isna().sum()),
        settings={
            "n_boot": n_boot,
            "n_permutations": n_permutations,
            "seed": seed,
            "ci": ci,
            "max_exact": max_exact,
        },
    )
