"""BIRCH's formulas: accuracy, IRS, IB, LB, their down-sampled spread and labeller checks.

Seed ``003_6a8a290eb195f311.txt`` (BIRCH) reads every result off a handful of accuracy
differences over subsets of pairwise VQA items: the Image Reliance Score (§3.2), the
Informativeness Bias (§3.4), the Length Bias (§3.5), their spread under down-sampling
(Appendix C.3), accuracy against the share of correctness-driven pairs (Fig. 4), the
labeller check (Appendix C.1, Table 7) and the per-domain break-down (Fig. 8). This
module holds them as pure functions so that every table and figure computes them the same
way, and so that the conventions of ``shared/specs/birch.md`` live in one place:

* **One entry per pair.** Inputs are pandas Series indexed by pair (``pair_id``) and are
  aligned by index, not by position. A pair that one Series lacks is missing there. Two
  non-empty Series that share no label at all raise (a RangeIndex against ``pair_id`` is a
  bug, not missing data), as do duplicated labels.
* **Nothing is guessed.** A judge's tie is not y^c, so it counts as wrong. A failed or
  unparseable verdict is missing (<NA>), never a coin flip; it is left out of every
  accuracy and counted in ``n_missing``. Pairs whose human label is a tie are dropped
  (<NA>) too, as are equal-length pairs for LB.
* **Down-sampling is reproducible.** One ``numpy.random.Generator`` per call, seeded by
  the caller; samples are drawn without replacement.

Why this module is long: every formula rests on the same alignment and missing-data
helpers (the conventions above, at the top); split, each part would import the others'
private helpers.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.metrics import cohen_kappa_score

RATIOS = (0.4, 0.6, 0.8, 1.0)
"""Down-sampling ratios per subset (seed 003 Appendix C.3: 40%, 60%, 80%, 100%)."""

DRAWS = 10
"""Draws per ratio cell (seed 003 Appendix C.3: 4 x 4 x 10 = 160 draws per IB or LB)."""

ANSWERS = ("A", "B")
VERDICTS = ("A", "B", "tie")
PREFERENCES = ("A", "B", "tie")
CDS_RATIOS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)

DOWNSAMPLE_COLUMNS = (
    "ratio_plus", "ratio_minus", "draw", "n_plus", "n_minus", "acc_plus", "acc_minus", "bias",
)
CURVE_COLUMNS = (
    "target_ratio", "draw", "kept", "n_ids", "n_cds", "ratio", "accuracy", "analytic",
)
DOMAIN_COLUMNS = (
    "domain", "n", "accuracy", "acc_ids", "acc_cds", "ib", "acc_longer", "acc_shorter", "lb",
)


# --------------------------------------------------------------------------- helpers


def _align(*series: pd.Series) -> list[pd.Series]:
    """Align Series on the union of their index labels (first Series' order first).

    Raises ``ValueError`` on a duplicated label, or when two non-empty Series share no
    label (positional indexes against pair ids).
    """
    for s in series:
        if not isinstance(s, pd.Series):
            raise TypeError(f"expected a pandas Series, got {type(s).__name__}")
        if not s.index.is_unique:
            raise ValueError("index labels must be unique (one entry per pair)")
    index = series[0].index
    for s in series[1:]:
        if len(index) and len(s) and not index.isin(s.index).any():
            raise ValueError("the Series share no index label: align them by pair id")
        if not index.equals(s.index):
            index = index.append(s.index.difference(index, sort=False))
    return [s if s.index.equals(index) else s.reindex(index) for s in series]


def _check_values(s: pd.Series, allowed: Sequence[str], name: str) -> None:
    """Raise ``ValueError`` if a non-missing value of ``s`` is not in ``allowed``."""
    present = s[s.notna()]
    bad = present[~present.isin(list(allowed))]
    if len(bad):
        shown = sorted({repr(v) for v in bad.unique()})[:5]
        raise ValueError(f"{name} has values outside {tuple(allowed)}: {', '.join(shown)}")


def _usable(correct: pd.Series) -> pd.Series:
    """``correct`` as a pandas "boolean" Series (NaN/None become <NA>)."""
    return correct.astype("boolean")


def _labels(values: np.ndarray, missing: np.ndarray, index: pd.Index) -> pd.Series:
    """Object Series of ``values`` with <NA> where ``missing``."""
    out = np.asarray(values, dtype=object).copy()
    out[missing] = pd.NA
    return pd.Series(out, index=index, dtype=object)


def _sample_size(ratio: float, n: int) -> int:
    """k = max(1, floor(r * n + 0.5)), at most n (seed 003 Appendix C.3; our rounding)."""
    return min(n, max(1, math.floor(ratio * n + 0.5)))


def _check_ratios(ratios: Sequence[float], *, allow_one: bool) -> None:
    """Raise ``ValueError`` for a ratio outside (0, 1] (``allow_one``) or (0, 1)."""
    for r in ratios:
        if not (0 < r < 1 or (allow_one and r == 1)):
            bound = "(0, 1]" if allow_one else "(0, 1)"
            raise ValueError(f"ratio {r!r} is outside {bound}")


def _obj(s: pd.Series) -> np.ndarray:
    """Values of ``s`` as an object array, missing values (NA/NaN/None) as None."""
    out = s.astype(object).to_numpy().copy()
    out[s.isna().to_numpy()] = None
    return out


def _population(correct: pd.Series, subsets: pd.Series, label: str) -> np.ndarray:
    """Usable correctness values (bool array) of the pairs whose subset is ``label``."""
    c, s = _align(_usable(correct), subsets)
    values = c[s.isin([label]).to_numpy() & c.notna().to_numpy()]
    return values.to_numpy(dtype=bool)


# --------------------------------------------------------------------------- accuracy


def correctness(verdict: pd.Series, preference: pd.Series) -> pd.Series:
    """Whether the judge picked the human-preferred answer, pair by pair.

    Seed 003 §3.1 (Acc equation): the indicator 1(f(Q, I, y^c, y^r) = y^c).

    Parameters
    ----------
    verdict : pd.Series
        The judge's answer per pair: ``"A"``, ``"B"``, ``"tie"`` or missing (None/NA: a
        failed or unparseable answer).
    preference : pd.Series
        The human preference per pair: ``"A"``, ``"B"`` or ``"tie"``.

    Returns
    -------
    pd.Series
        pandas ``"boolean"`` dtype: True where ``verdict == preference``; False where the
        verdict is the other answer or ``"tie"`` (a judge's tie is not y^c: wrong, never
        guessed); <NA> where the verdict is missing or the human preference is a tie
        (dropped, spec birch.md) or missing.

    Raises
    ------
    ValueError
        If a value lies outside the ones above.
    """
    _check_values(verdict, VERDICTS, "verdict")
    _check_values(preference, PREFERENCES, "preference")
    v, p = _align(verdict, preference)
    usable = (v.notna() & p.isin(list(ANSWERS))).to_numpy()
    same = (_obj(v) == _obj(p)) & usable
    values = pd.arrays.BooleanArray(np.asarray(same, dtype=bool), ~usable)
    return pd.Series(values, index=v.index, name="correct")


@dataclass(frozen=True)
class Accuracy:
    """An accuracy and how many pairs it rests on.

    Attributes
    ----------
    value : float
        Mean of the usable (non-missing) correctness values; nan if there are none.
    n : int
        Number of usable entries.
    n_missing : int
        Number of missing entries left out.
    """

    value: float
    n: int
    n_missing: int


def accuracy(correct: pd.Series) -> Accuracy:
    """Accuracy against human preferences, missing entries left out and counted.

    Seed 003 §3.1 (Acc equation): Acc = E[1(f(Q, I, y^c, y^r) = y^c)].

    Parameters
    ----------
    correct : pd.Series
        Correctness per pair (see `correctness`); <NA>/NaN/None is missing.

    Returns
    -------
    Accuracy
        ``value`` (nan if no entry is usable), ``n`` usable and ``n_missing`` entries.
    """
    c = _usable(correct)
    usable = c.dropna()
    n = len(usable)
    value = float(usable.to_numpy(dtype=bool).mean()) if n else math.nan
    return Accuracy(value=value, n=n, n_missing=len(c) - n)


# --------------------------------------------------------------------------- subsets


def informativeness_subsets(preference: pd.Series, more_informative: pd.Series) -> pd.Series:
    """Split pairs into the informativeness- and correctness-driven subsets.

    Seed 003 §3.4: D_IDS holds the pairs with y^c = y^i (the preferred answer is the more
    informative one), D_CDS those with y^r = y^i (informativeness misleads).

    Parameters
    ----------
    preference : pd.Series
        Human preference per pair: ``"A"``, ``"B"`` or ``"tie"``.
    more_informative : pd.Series
        The labeller's more informative answer y^i: ``"A"``, ``"B"``, or missing (also
        ``"tie"``, treated as missing; e.g. an inconsistent label, see `consistent_label`).

    Returns
    -------
    pd.Series
        Object dtype: ``"IDS"``, ``"CDS"`` or <NA> (human tie, or y^i missing).
    """
    _check_values(preference, PREFERENCES, "preference")
    _check_values(more_informative, VERDICTS, "more_informative")
    p, m = _align(preference, more_informative)
    usable = (p.isin(list(ANSWERS)) & m.isin(list(ANSWERS))).to_numpy()
    same = _obj(p) == _obj(m)
    values = np.where(same, "IDS", "CDS")
    return _labels(values, ~usable, p.index).rename("ib_subset")


def word_count(text: str) -> int:
    """Number of whitespace-separated words: ``len(text.split())`` (seed 003 §3.5)."""
    return len(text.split())


def length_subsets(
    preference: pd.Series, answer_a: pd.Series, answer_b: pd.Series
) -> pd.Series:
    """Split pairs by whether the preferred answer is the longer one, in words.

    Seed 003 §3.5 (LB): D_{y^c is longer} and D_{y^c is shorter}; lengths in words
    (`word_count`).

    Parameters
    ----------
    preference : pd.Series
        Human preference per pair: ``"A"``, ``"B"`` or ``"tie"``.
    answer_a, answer_b : pd.Series
        The two answers' texts as shown (A, B).

    Returns
    -------
    pd.Series
        Object dtype: ``"longer"`` if the preferred answer has more words than the other,
        ``"shorter"`` if fewer, <NA> for equal word counts, a human tie or a missing text
        (spec birch.md: dropped and counted).
    """
    _check_values(preference, PREFERENCES, "preference")
    p, a, b = _align(preference, answer_a, answer_b)
    usable = (p.isin(list(ANSWERS)) & a.notna() & b.notna()).to_numpy()
    words_a = np.array([word_count(t) if ok else 0 for t, ok in zip(a, usable, strict=True)],
                       dtype=int)
    words_b = np.array([word_count(t) if ok else 0 for t, ok in zip(b, usable, strict=True)],
                       dtype=int)
    preferred_is_a = p.isin(["A"]).to_numpy()
    diff = np.where(preferred_is_a, words_a - words_b, words_b - words_a)
    values = np.where(diff > 0, "longer", "shorter")
    return _labels(values, ~usable | (diff == 0), p.index).rename("lb_subset")


# --------------------------------------------------------------------------- biases


@dataclass(frozen=True)
class Bias:
    """A difference of subset accuracies (IB or LB).

    Attributes
    ----------
    plus, minus : Accuracy
        Accuracy on the first (IDS / longer) and second (CDS / shorter) subset.
    value : float
        ``plus.value - minus.value`` (nan if either is nan).
    """

    plus: Accuracy
    minus: Accuracy
    value: float


def bias(
    correct: pd.Series, subsets: pd.Series, plus: str = "IDS", minus: str = "CDS"
) -> Bias:
    """Accuracy on one subset minus accuracy on another.

    Seed 003 §3.4 (IB equation): IB = Acc_IDS - Acc_CDS. With ``plus="longer"``,
    ``minus="shorter"`` it is seed 003 §3.5 (LB): LB = Acc_{y^c longer} - Acc_{y^c shorter}.

    Parameters
    ----------
    correct : pd.Series
        Correctness per pair (see `correctness`).
    subsets : pd.Series
        Subset label per pair (`informativeness_subsets` or `length_subsets`); pairs whose
        label is <NA> (or neither ``plus`` nor ``minus``) are ignored.
    plus, minus : str
        The two subset labels.

    Returns
    -------
    Bias
        Both subset accuracies (with their ``n`` and ``n_missing``) and their difference.
    """
    c, s = _align(_usable(correct), subsets)
    acc_plus = accuracy(c[s.isin([plus]).to_numpy()])
    acc_minus = accuracy(c[s.isin([minus]).to_numpy()])
    return Bias(plus=acc_plus, minus=acc_minus, value=acc_plus.value - acc_minus.value)


def balanced_accuracy(ib: Bias) -> float:
    """Balanced accuracy (Acc_IDS + Acc_CDS) / 2: accuracy at a CDS share of one half.

    Seed 003 §4.2 / Fig. 4: accuracy at CDS ratio r is (1 - r) Acc_IDS + r Acc_CDS, and
    "a balanced ratio (50%) ... better reflects their real performance"; at r = 0.5 that
    is this mean, which no longer depends on how many misleading pairs a benchmark has.

    Parameters
    ----------
    ib : Bias
        `bias` with plus = IDS and minus = CDS.

    Returns
    -------
    float
        nan if either subset accuracy is nan.
    """
    return (ib.plus.value + ib.minus.value) / 2


@dataclass(frozen=True)
class Reliance:
    """Image Reliance Score and the two paired accuracies it compares.

    Attributes
    ----------
    with_image, without_image : Accuracy
        Accuracy with and without the image over the same pairs; ``n_missing`` counts the
        pairs dropped because either verdict was missing.
    value : float
        ``with_image.value - without_image.value``.
    n_pairs : int
        Number of pairs usable in both variants.
    """

    with_image: Accuracy
    without_image: Accuracy
    value: float
    n_pairs: int


def image_reliance(
    correct_image: pd.Series,
    correct_no_image: pd.Series,
    subsets: pd.Series | None = None,
    subset: str | None = None,
) -> Reliance:
    """Image Reliance Score: accuracy with the image minus accuracy without it.

    Seed 003 §3.2 (IRS equation; Table 1). Computed paired, over the pairs usable in both
    variants, so that a verdict missing in one variant does not change the other's pairs.
    With ``subset`` given, only pairs whose ``subsets`` value equals it (seed 003 §4.3,
    Fig. 5: IRS on D_IDS and D_CDS).

    Parameters
    ----------
    correct_image, correct_no_image : pd.Series
        Correctness per pair when judged with and without the image.
    subsets : pd.Series, optional
        Subset label per pair; needed when ``subset`` is given, ignored otherwise.
    subset : str, optional
        Restrict to the pairs with this label (e.g. ``"IDS"`` or ``"CDS"``).

    Returns
    -------
    Reliance
    """
    if subset is not None and subsets is None:
        raise ValueError("subset given without subsets")
    if subset is not None:
        ci, cn, s = _align(_usable(correct_image), _usable(correct_no_image), subsets)
        keep = s.isin([subset]).to_numpy()
        ci, cn = ci[keep], cn[keep]
    else:
        ci, cn = _align(_usable(correct_image), _usable(correct_no_image))
    both = (ci.notna() & cn.notna()).to_numpy()
    dropped = int((~both).sum())
    a_img = accuracy(ci[both])
    a_no = accuracy(cn[both])
    with_image = Accuracy(value=a_img.value, n=a_img.n, n_missing=dropped)
    without_image = Accuracy(value=a_no.value, n=a_no.n, n_missing=dropped)
    return Reliance(
        with_image=with_image,
        without_image=without_image,
        value=with_image.value - without_image.value,
        n_pairs=int(both.sum()),
    )


# --------------------------------------------------------------------------- down-sampling


def downsample(
    correct: pd.Series,
    subsets: pd.Series,
    plus: str = "IDS",
    minus: str = "CDS",
    ratios: Sequence[float] = RATIOS,
    draws: int = DRAWS,
    seed: int = 0,
) -> pd.DataFrame:
    """Bias over independent down-samples of its two subsets.

    Seed 003 Appendix C.3: each subset (D_IDS and D_CDS for IB, §3.4; longer and shorter
    for LB, §3.5) is down-sampled at 40/60/80/100%, 10 draws per ratio pair:
    4 x 4 x 10 = 160 draws. Each subset's population is its usable (non-missing) pairs;
    it is sampled without replacement at k = max(1, floor(r * n + 0.5)) (our rounding;
    the paper prints none). Ratio 1.0 takes the whole subset, so the (1.0, 1.0) cell is
    the same in every draw and equals ``bias(correct, subsets, plus, minus).value``.

    Parameters
    ----------
    correct : pd.Series
        Correctness per pair.
    subsets : pd.Series
        Subset label per pair.
    plus, minus : str
        The two subset labels.
    ratios : sequence of float
        Ratios in (0, 1], applied to each subset independently.
    draws : int
        Draws per (ratio_plus, ratio_minus) cell.
    seed : int
        Seed of the single ``np.random.default_rng`` used for all draws.

    Returns
    -------
    pd.DataFrame
        ``len(ratios) ** 2 * draws`` rows with columns ratio_plus, ratio_minus, draw,
        n_plus, n_minus, acc_plus, acc_minus, bias.

    Raises
    ------
    ValueError
        If a subset has no usable pair, or a ratio is outside (0, 1].
    """
    _check_ratios(ratios, allow_one=True)
    if draws < 1:
        raise ValueError(f"draws must be at least 1, got {draws}")
    pops = {label: _population(correct, subsets, label) for label in (plus, minus)}
    for label, pop in pops.items():
        if pop.size == 0:
            raise ValueError(f"subset {label!r} has no usable pair to down-sample")
    rng = np.random.default_rng(seed)

    def draw_mean(pop: np.ndarray, k: int) -> float:
        if k >= pop.size:
            return float(pop.mean())
        return float(pop[rng.choice(pop.size, size=k, replace=False)].mean())

    rows = []
    for r_plus in ratios:
        k_plus = _sample_size(r_plus, pops[plus].size)
        for r_minus in ratios:
            k_minus = _sample_size(r_minus, pops[minus].size)
            for d in range(draws):
                acc_plus = draw_mean(pops[plus], k_plus)
                acc_minus = draw_mean(pops[minus], k_minus)
                rows.append((float(r_plus), float(r_minus), d, k_plus, k_minus,
                             acc_plus, acc_minus, acc_plus - acc_minus))
    return pd.DataFrame(rows, columns=list(DOWNSAMPLE_COLUMNS))


def summarise_draws(draws: pd.DataFrame, column: str = "bias") -> dict[str, float | int]:
    """Mean and spread of a column over down-sampling draws.

    Seed 003 Appendix C.3 ("we report the mean across all samples, and show variance
    bars"). The paper says "variance"; we report the *standard deviation* (``sd``,
    ``ddof=1``; nan with fewer than two draws), as spec birch.md decides.

    Parameters
    ----------
    draws : pd.DataFrame
        Output of `downsample` (or `cds_ratio_curve`).
    column : str
        The column to summarise.

    Returns
    -------
    dict
        ``{"mean", "sd", "min", "max", "n_draws"}``.
    """
    values = draws[column].astype(float)
    n = len(values)
    return {
        "mean": float(values.mean()) if n else math.nan,
        "sd": float(values.std(ddof=1)) if n > 1 else math.nan,
        "min": float(values.min()) if n else math.nan,
        "max": float(values.max()) if n else math.nan,
        "n_draws": n,
    }


def observed_cds_ratio(subsets: pd.Series) -> float:
    """Share of correctness-driven pairs, N_CDS / (N_IDS + N_CDS), over labelled pairs.

    Seed 003 §4.2 and Fig. 4 (32% on MLLM-as-a-Judge); subsets as in §3.4. nan if no
    pair is labelled IDS or CDS.
    """
    n_ids = int(subsets.isin(["IDS"]).sum())
    n_cds = int(subsets.isin(["CDS"]).sum())
    total = n_ids + n_cds
    return n_cds / total if total else math.nan


def _curve_plan(ratio: float, n_ids: int, n_cds: int) -> tuple[str, int, int] | None:
    """Which subset to keep whole at CDS ratio ``ratio``, and the sizes; None if neither."""
    options = []
    ids_for_cds = math.floor(n_cds * (1 - ratio) / ratio + 0.5)
    if 1 <= ids_for_cds <= n_ids:
        options.append(("CDS", ids_for_cds, n_cds))
    cds_for_ids = math.floor(n_ids * ratio / (1 - ratio) + 0.5)
    if 1 <= cds_for_ids <= n_cds:
        options.append(("IDS", n_ids, cds_for_ids))
    if not options:
        return None
    # larger total wins; on a tie the first option ("keep CDS") stays (max is stable)
    return max(options, key=lambda o: o[1] + o[2])


def cds_ratio_curve(
    correct: pd.Series,
    subsets: pd.Series,
    ratios: Sequence[float] = CDS_RATIOS,
    draws: int = DRAWS,
    seed: int = 0,
) -> pd.DataFrame:
    """Accuracy against the share of correctness-driven pairs, by down-sampling.

    Seed 003 §4.2, Fig. 4; the procedure is our decision (spec birch.md). For each
    target CDS ratio r, two options: keep D_CDS whole (n_cds = N_C,
    n_ids = floor(N_C (1 - r) / r + 0.5)) or keep D_IDS whole (n_ids = N_I,
    n_cds = floor(N_I r / (1 - r) + 0.5)); an option is feasible if the other size is
    between 1 and that subset's size. The feasible option with the larger total is kept
    (a tie keeps CDS); r is skipped if neither is feasible. The other subset is
    down-sampled without replacement, ``draws`` times. ``analytic`` is
    r Acc_CDS + (1 - r) Acc_IDS with the full subsets (seed 003 §3.4 subsets).

    Parameters
    ----------
    correct : pd.Series
        Correctness per pair; only usable (non-missing) pairs count in N_I and N_C.
    subsets : pd.Series
        ``"IDS"`` / ``"CDS"`` / <NA> per pair (`informativeness_subsets`).
    ratios : sequence of float
        Target CDS ratios, each in (0, 1).
    draws : int
        Draws per ratio.
    seed : int
        Seed of the single ``np.random.default_rng`` used for all draws.

    Returns
    -------
    pd.DataFrame
        Columns target_ratio, draw, kept (``"IDS"``/``"CDS"``: the subset kept whole),
        n_ids, n_cds, ratio (actual n_cds / (n_ids + n_cds)), accuracy (pooled over the
        sampled pairs), analytic.

    Raises
    ------
    ValueError
        If D_IDS or D_CDS has no usable pair, or a ratio is outside (0, 1).
    """
    _check_ratios(ratios, allow_one=False)
    if draws < 1:
        raise ValueError(f"draws must be at least 1, got {draws}")
    ids = _population(correct, subsets, "IDS")
    cds = _population(correct, subsets, "CDS")
    for label, pop in (("IDS", ids), ("CDS", cds)):
        if pop.size == 0:
            raise ValueError(f"subset {label!r} has no usable pair")
    acc_ids, acc_cds = float(ids.mean()), float(cds.mean())
    rng = np.random.default_rng(seed)

    def sample_sum(pop: np.ndarray, k: int) -> int:
        if k >= pop.size:
            return int(pop.sum())
        return int(pop[rng.choice(pop.size, size=k, replace=False)].sum())

    rows = []
    for r in ratios:
        plan = _curve_plan(r, ids.size, cds.size)
        if plan is None:
            continue
        kept, n_ids, n_cds = plan
        analytic = r * acc_cds + (1 - r) * acc_ids
        for d in range(draws):
            hits = sample_sum(ids, n_ids) + sample_sum(cds, n_cds)
            total = n_ids + n_cds
            rows.append((float(r), d, kept, n_ids, n_cds, n_cds / total, hits / total,
                         analytic))
    return pd.DataFrame(rows, columns=list(CURVE_COLUMNS))


# --------------------------------------------------------------------------- labeller


def consistent_label(label_ab: pd.Series, label_ba: pd.Series) -> pd.Series:
    """The labeller's answer where both presentation orders agree.

    Spec birch.md ("Labeller position bias"): informativeness is labelled in both orders;
    a pair whose two labels disagree is inconsistent and excluded. Labels refer to the
    pair's own A/B in both orders (the swapped order already mapped back).

    Parameters
    ----------
    label_ab, label_ba : pd.Series
        The label per pair when shown as (A, B) and as (B, A).

    Returns
    -------
    pd.Series
        Object dtype: the agreed label, or <NA> where the orders disagree or either is
        missing.
    """
    ab, ba = _align(label_ab, label_ba)
    present = (ab.notna() & ba.notna()).to_numpy()
    x, y = _obj(ab), _obj(ba)
    agree = np.zeros(len(x), dtype=bool)
    agree[present] = x[present] == y[present]
    return _labels(x, ~agree, ab.index).rename("more_informative")


def label_counts(label_ab: pd.Series, label_ba: pd.Series) -> dict[str, int]:
    """Counts behind `consistent_label` (spec birch.md, "Labeller position bias").

    Returns
    -------
    dict
        ``n_pairs``; ``n_consistent`` (both present, equal); ``n_inconsistent`` (both
        present, different); ``n_missing`` (either missing). The last three sum to
        ``n_pairs``.
    """
    ab, ba = _align(label_ab, label_ba)
    present = (ab.notna() & ba.notna()).to_numpy()
    x, y = _obj(ab), _obj(ba)
    n_consistent = int((x[present] == y[present]).sum())
    return {
        "n_pairs": len(ab),
        "n_consistent": n_consistent,
        "n_inconsistent": int(present.sum()) - n_consistent,
        "n_missing": int((~present).sum()),
    }


def labeller_agreement(labels: pd.Series, truth: pd.Series) -> dict[str, float | int]:
    """Agreement of the labeller with reference labels: match rate and Cohen's kappa.

    Seed 003 Appendix C.1, Table 7 (human vs GPT-4o on 100 pairs per benchmark): match
    rate in [0, 1] and Cohen's kappa in [-1, 1], kappa = (p_o - p_e) / (1 - p_e), from
    ``sklearn.metrics.cohen_kappa_score``. Pairs where either label is missing are left
    out. Kappa is nan when undefined: no pair, or a single class in both (p_e = 1).

    Parameters
    ----------
    labels : pd.Series
        The labeller's label per pair.
    truth : pd.Series
        The reference (human or planted) label per pair.

    Returns
    -------
    dict
        ``{"match_rate", "kappa", "n"}``, ``n`` the pairs where both are present.
    """
    lab, tru = _align(labels, truth)
    both = (lab.notna() & tru.notna()).to_numpy()
    x = _obj(lab)[both]
    y = _obj(tru)[both]
    n = int(both.sum())
    match_rate = float((x == y).mean()) if n else math.nan
    kappa = math.nan
    if n and len(set(x) | set(y)) > 1:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            kappa = float(cohen_kappa_score(y.astype(str), x.astype(str)))
    return {"match_rate": match_rate, "kappa": kappa, "n": n}


# --------------------------------------------------------------------------- domains


def per_domain(
    correct: pd.Series, ib_subsets: pd.Series, lb_subsets: pd.Series, domain: pd.Series
) -> pd.DataFrame:
    """Accuracy, IB and LB per source domain.

    Seed 003 Appendix C.4, Fig. 8 (IB vs LB per MLLM-as-a-Judge domain) and Fig. 9
    (Acc_IDS, Acc_CDS); IB as in §3.4, LB as in §3.5. Pairs without a domain are left out.

    Parameters
    ----------
    correct : pd.Series
        Correctness per pair.
    ib_subsets : pd.Series
        ``"IDS"`` / ``"CDS"`` / <NA> per pair.
    lb_subsets : pd.Series
        ``"longer"`` / ``"shorter"`` / <NA> per pair.
    domain : pd.Series
        Domain per pair.

    Returns
    -------
    pd.DataFrame
        One row per domain (sorted): domain, n (usable pairs), accuracy, acc_ids,
        acc_cds, ib, acc_longer, acc_shorter, lb; nan where a subset is empty.
    """
    c, ib_s, lb_s, dom = _align(_usable(correct), ib_subsets, lb_subsets, domain)
    rows = []
    for name in sorted(dom.dropna().unique()):
        keep = dom.isin([name]).to_numpy()
        acc = accuracy(c[keep])
        ib = bias(c[keep], ib_s[keep], "IDS", "CDS")
        lb = bias(c[keep], lb_s[keep], "longer", "shorter")
        rows.append((name, acc.n, acc.value, ib.plus.value, ib.minus.value, ib.value,
                     lb.plus.value, lb.minus.value, lb.value))
    return pd.DataFrame(rows, columns=list(DOMAIN_COLUMNS))


# Fig. 11 of seed 003 (Appendix C.2) as a table, one row per (judge, domain).
RELIANCE_COLUMNS = ["judge", "domain", "n_pairs", "acc_image", "acc_no_image", "irs"]


def domain_reliance(judge: str, correct_image: pd.Series, correct_no_image: pd.Series,
                    domain: pd.Series) -> pd.DataFrame:
    """Fig. 11 of seed 003 (Appendix C.2) as a table: per domain, accuracy with and
    without the image over the pairs usable in both, and their difference, the IRS of
    §3.2 restricted to the domain (:func:`image_reliance` with the domain as the subset).
    Rows in the order the domains first appear."""
    rows = []
    for name in dict.fromkeys(domain.dropna()):
        irs = image_reliance(correct_image, correct_no_image, domain, name)
        rows.append({"judge": judge, "domain": name, "n_pairs": irs.n_pairs,
                     "acc_image": irs.with_image.value,
                     "acc_no_image": irs.without_image.value, "irs": irs.value})
    return pd.DataFrame(rows, columns=RELIANCE_COLUMNS)


def correct_of(verdicts: pd.DataFrame, variant: str, preference: pd.Series) -> pd.Series:
    """Correctness per pair of one judge's variant, in the order shown first."""
    rows = verdicts[(verdicts["variant"] == variant) & (verdicts["order"] == "ab")]
    rows = rows.set_index("pair_id")
    return correctness(rows["verdict"], preference.reindex(rows.index))
