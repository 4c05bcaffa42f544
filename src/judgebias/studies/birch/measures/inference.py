"""Intervals and tests for BIRCH's measures: a paired bootstrap over pairs and McNemar's
test of each method against Base (issue 20, items 5 and 6).

Every number of seed 003's Tables 1, 2, 4 and 8 is a mean of 0/1 correctness over a set
of pairs, or a difference of two such means: Acc, Acc_IDS, Acc_CDS (§3.1, §3.4),
IB = Acc_IDS - Acc_CDS (§3.4), LB = Acc(y^c longer) - Acc(y^c shorter) (§3.5), IRS =
Acc(image) - Acc(no image) (§3.2), a method's gain over Base (Tables 3, 4, 8) and the IB
before and after length equalisation (Table 2, Appendix C.5). So each is a *linear
combination of column means* of one table per judge: rows are pairs, a column is one
variant's correctness on one pair set (1 right, 0 wrong, NaN where the pair is not in
the set or the verdict is missing). :func:`estimands` writes the combinations down,
:func:`bootstrap_table` bootstraps all of them at once.

Pairs are the unit (the paper's data are a sample of VQA items): a bootstrap resample
draws pairs with replacement and every variant's verdicts, every subset label and every
method come along with their pair, so a method's gain over Base, IRS and IB are paired
differences (``judgebias.stats.bootstrap.bootstrap_weighted_means``, which lets
``scipy.stats.bootstrap`` do the resampling and the interval). The down-sampling spread
of Appendix C.3 is *not* an interval (it draws without replacement from the data and
measures how much a subsample's bias moves, not how far the estimate is from the truth);
it stays in the ``bias`` table, labelled as the sd over subsamples.

McNemar's test compares a method with Base on the pairs both answered
(``statsmodels.stats.contingency_tables.mcnemar``): only the discordant pairs count,
b (Base right, the method wrong) and c (the reverse); exact binomial when b + c <
:data:`EXACT_BELOW`, else the chi-square without continuity correction. All tests of one
analysis are corrected together with Benjamini-Hochberg
(``statsmodels.stats.multitest.multipletests(method="fdr_bh")``), across judges, methods
and pair sets.

Calibration (``benchmarks/birch_null.py``; the worlds are described there). McNemar,
``--datasets 4000``: never above the nominal 5% beyond Monte-Carlo error in any world
(logistic, right-skewed and discrete judge noise, rare discordance, a population-only
null); where the exact branch runs (few discordant pairs: small n, or verdicts that
rarely differ) it is conservative, down to 0 when fewer than 6 discordant pairs make
p < 0.05 impossible. BH over one judge's 9 tests keeps the family-wise rate <= 0.05.

McNemar under the null (alpha 0.05; 4000 data sets per row; Monte-Carlo 95% band 0.043-0.057)

| world | n | rejection | exact share | BH family (9 tests) |
|---|---|---|---|---|
| logistic | 20 | 0.004 | 0.98 | 0.000 |
| logistic | 50 | 0.019 | 1.00 | 0.003 |
| logistic | 257 | 0.045 | 0.00 | 0.035 |
| logistic | 1000 | 0.046 | 0.00 | 0.041 |
| skewed | 20 | 0.000 | 0.90 | 0.000 |
| skewed | 50 | 0.012 | 1.00 | 0.001 |
| skewed | 257 | 0.044 | 0.25 | 0.022 |
| skewed | 1000 | 0.053 | 0.00 | 0.043 |
| discrete | 20 | 0.000 | 0.91 | 0.000 |
| discrete | 50 | 0.009 | 1.00 | 0.001 |
| discrete | 257 | 0.043 | 0.20 | 0.023 |
| discrete | 1000 | 0.051 | 0.00 | 0.045 |
| rare discordance | 20 | 0.000 | 0.13 | 0.000 |
| rare discordance | 50 | 0.000 | 0.31 | 0.000 |
| rare discordance | 257 | 0.000 | 0.86 | 0.000 |
| rare discordance | 1000 | 0.015 | 1.00 | 0.002 |
| offsetting | 20 | 0.024 | 1.00 | – |
| offsetting | 50 | 0.038 | 0.44 | – |
| offsetting | 257 | 0.048 | 0.00 | – |
| offsetting | 1000 | 0.044 | 0.00 | – |

Coverage of the 95% intervals (``--coverage-datasets 1000 --resamples 999``, Monte-Carlo
95% band 0.936-0.964; all 41 estimands of a judge with Base, no image, BIRCH and
equalised pairs; min / median over them, percentile | BCa; undefined: share of data sets
where a resample drew no pair of some subset, so the interval is NaN and counted a miss):

| world | n pairs | min | median | undefined (max) |
|---|---|---|---|---|
| planted (default's shape) | 257 | 0.931 / 0.935 | 0.944 / 0.946 | 0 |
| no bias (every difference 0) | 257 | 0.932 / 0.928 | 0.953 / 0.954 | 0 |
| ceiling (Acc 0.97, CDS share 0.1) | 257 | 0.786 / 0.761 | 0.921 / 0.922 | 0.049 |
| planted | 50 | 0.571 / 0.562 | 0.914 / 0.928 | 0.373 |
| no bias | 50 | 0.578 / 0.565 | 0.927 / 0.935 | 0.384 |
| ceiling | 50 | 0.007 / 0.007 | 0.503 / 0.487 | 0.986 |

At the default's size both cover within Monte-Carlo error (worst estimand 0.931, just
under the band's 0.936); percentile and BCa do not differ materially, so the default is
percentile (no jackknife, never NaN on a degenerate resample). Where they under-cover:
small subsets with accuracy near 0 or 1 (the ceiling world's ~23 CDS pairs at n = 257:
Acc_CDS, IB, BIRCH's and Table 2's IB 0.78-0.80), and at n = 50 any estimand on a subset
of a few pairs (D_CDS, Table 2's kept pairs), which is often undefined. Read an interval
on fewer than ~30 pairs of a subset (``n_pairs``) as indicative only.
"""

from __future__ import annotations

import math
import warnings
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests

from judgebias.stats.bootstrap import BootstrapMethod, bootstrap_weighted_means

EXACT_BELOW = 25
"""McNemar is exact (binomial on the discordant pairs) below this many discordant pairs,
where the chi-square approximation is poor (the usual rule; statsmodels' docs advise the
exact test for small counts)."""

METHODS = ("caption", "standard_ref", "birch", "no_image")
"""Variants compared with Base on the same pairs (no_image: the IRS test, §3.2)."""

PAIR_SETS = ("labelled", "all", "IDS", "CDS", "longer", "shorter")
"""Where a variant's correctness is averaged: ``labelled`` = D_IDS ∪ D_CDS (the pairs IB
rests on, so Acc = (1 - r) Acc_IDS + r Acc_CDS holds exactly), ``all`` = every pair with
a human preference (labelled or not), the two IB subsets (§3.4) and the two LB subsets
(§3.5)."""

# statistic -> {pair set: coefficient}: each per-variant statistic as a combination of
# that variant's column means.
STATISTICS: dict[str, dict[str, float]] = {
    "acc": {"labelled": 1.0},
    "acc_all": {"all": 1.0},
    "acc_ids": {"IDS": 1.0},
    "acc_cds": {"CDS": 1.0},
    "balanced": {"IDS": 0.5, "CDS": 0.5},
    "ib": {"IDS": 1.0, "CDS": -1.0},
    "lb": {"longer": 1.0, "shorter": -1.0},
}


@dataclass(frozen=True)
class Estimand:
    """One reported number: a combination of column means of the correctness table."""

    variant: str
    statistic: str
    versus: str  # "" (a level), "base" (a gain over Base on the same pairs)
    terms: Mapping[tuple[str, str], float]  # (variant, pair set) -> coefficient


def _members(subsets: Mapping[str, pd.Series], index: pd.Index) -> dict[str, np.ndarray]:
    """Boolean membership of every pair (``index``) in each pair set of PAIR_SETS."""
    ib = subsets["ib"].reindex(index)
    lb = subsets["lb"].reindex(index)
    return {"labelled": ib.isin(["IDS", "CDS"]).to_numpy(),
            "all": np.ones(len(index), dtype=bool),
            "IDS": ib.isin(["IDS"]).to_numpy(), "CDS": ib.isin(["CDS"]).to_numpy(),
            "longer": lb.isin(["longer"]).to_numpy(),
            "shorter": lb.isin(["shorter"]).to_numpy()}


def _as_float(correct: pd.Series, index: pd.Index) -> np.ndarray:
    """1.0 / 0.0 / NaN (missing) correctness aligned on ``index``."""
    values = correct.astype("boolean").reindex(index)
    return values.astype("Float64").to_numpy(dtype=float, na_value=np.nan)


def correctness_table(correct: Mapping[str, pd.Series], subsets: Mapping[str, pd.Series],
                      index: pd.Index, equalised: pd.Series | None = None) -> pd.DataFrame:
    """The per-judge table the bootstrap resamples: one row per pair of ``index``.

    Columns are ``(variant, pair set)``: the variant's correctness (1/0, NaN when missing
    or outside the set) on each pair set of :data:`PAIR_SETS`. With Base and no-image
    present, ``irs_<set>`` columns for both hold the pairs *both* answered (IRS is paired,
    seed 003 §3.2; ``formulas.image_reliance``). With ``equalised`` (the IB subset of each
    pair kept by length equalisation, Appendix C.5; NaN for pairs not kept), the
    ``equalised`` variant on its IDS / CDS and Base on the *same* kept pairs
    (``kept_IDS`` / ``kept_CDS``), so Table 2's before and after share their pairs.
    Human ties are never in a set (their correctness is missing).
    """
    members = _members(subsets, index)
    columns: dict[tuple[str, str], np.ndarray] = {}
    for variant, series in correct.items():
        if variant == "equalised":
            continue
        values = _as_float(series, index)
        for name, inside in members.items():
            columns[variant, name] = np.where(inside, values, np.nan)
    if "base" in correct and "no_image" in correct:
        with_image = _as_float(correct["base"], index)
        without = _as_float(correct["no_image"], index)
        both = ~np.isnan(with_image) & ~np.isnan(without)
        for name in ("all", "IDS", "CDS"):
            inside = both & members[name]
            columns["base", f"irs_{name}"] = np.where(inside, with_image, np.nan)
            columns["no_image", f"irs_{name}"] = np.where(inside, without, np.nan)
    if equalised is not None and "equalised" in correct and "base" in correct:
        kept = equalised.reindex(index)
        after = _as_float(correct["equalised"], index)
        before = _as_float(correct["base"], index)
        for name in ("IDS", "CDS"):
            inside = kept.isin([name]).to_numpy()
            columns["equalised", name] = np.where(inside, after, np.nan)
            columns["base", f"kept_{name}"] = np.where(inside, before, np.nan)
    names = pd.MultiIndex.from_tuples(list(columns), names=["variant", "pair_set"])
    values = np.column_stack(list(columns.values())) if columns else np.empty((len(index), 0))
    return pd.DataFrame(values, index=index, columns=names)


def estimands(table: pd.DataFrame) -> list[Estimand]:
    """Every reported number the columns of ``table`` support (:func:`correctness_table`).

    Per variant: Acc (over D_IDS ∪ D_CDS), Acc over all pairs, Acc_IDS, Acc_CDS, balanced
    accuracy (Acc_IDS + Acc_CDS) / 2, IB and LB. Per method of :data:`METHODS`: each of
    those minus Base's (``versus="base"``). IRS on all pairs, D_IDS and D_CDS (variant
    ``base``, statistics ``irs``, ``irs_ids``, ``irs_cds``). Table 2: IB of Base on the
    kept pairs (``ib_kept``), of the equalised pairs (variant ``equalised``, ``ib``) and
    their difference (``versus="base"``). An estimand whose columns hold no value at all
    (e.g. a judge whose every verdict failed) is left out.
    """
    have = {c for c in table.columns if table[c].notna().any()}
    variants = [v for v in dict.fromkeys(table.columns.get_level_values(0))
                if v != "equalised"]
    out: list[Estimand] = []

    def add(variant: str, statistic: str, versus: str,
            terms: Mapping[tuple[str, str], float]) -> None:
        if all(key in have for key in terms):
            out.append(Estimand(variant, statistic, versus, dict(terms)))

    def level(variant: str, statistic: str) -> dict[tuple[str, str], float]:
        return {(variant, s): w for s, w in STATISTICS[statistic].items()}

    for variant in variants:
        for statistic in STATISTICS:
            add(variant, statistic, "", level(variant, statistic))
    for method in (m for m in METHODS if m in variants and "base" in variants):
        for statistic in STATISTICS:
            add(method, statistic, "base", _minus(level(method, statistic),
                                                  level("base", statistic)))
    for name, statistic in (("all", "irs"), ("IDS", "irs_ids"), ("CDS", "irs_cds")):
        add("base", statistic, "", {("base", f"irs_{name}"): 1.0,
                                    ("no_image", f"irs_{name}"): -1.0})
    kept = {("base", "kept_IDS"): 1.0, ("base", "kept_CDS"): -1.0}
    after = {("equalised", "IDS"): 1.0, ("equalised", "CDS"): -1.0}
    add("base", "ib_kept", "", kept)
    add("equalised", "ib", "", after)
    add("equalised", "ib", "base", _minus(after, kept))
    return out


def _minus(a: Mapping[tuple[str, str], float], b: Mapping[tuple[str, str], float]
           ) -> dict[tuple[str, str], float]:
    out = dict(a)
    for key, weight in b.items():
        out[key] = out.get(key, 0.0) - weight
    return out


def coefficients(table: pd.DataFrame, wanted: Sequence[Estimand]) -> np.ndarray:
    """(columns, estimands) matrix C with estimand values = column means @ C."""
    position = {c: i for i, c in enumerate(table.columns)}
    matrix = np.zeros((len(position), len(wanted)))
    for j, estimand in enumerate(wanted):
        for key, weight in estimand.terms.items():
            matrix[position[key], j] += weight
    return matrix


def combine(means: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """``means @ matrix`` (:func:`coefficients`), NaN where an estimand uses a NaN mean
    (a pair set a resample happened to miss), never a silent zero."""
    used = matrix != 0
    missing = np.isnan(means).astype(float) @ used.astype(float) > 0
    out = np.nan_to_num(means) @ matrix
    out[missing] = np.nan
    return out


INTERVAL_COLUMNS = ("judge", "variant", "statistic", "versus", "estimate", "low", "high",
                    "se", "n_pairs", "interval", "level")


def bootstrap_table(table: pd.DataFrame, *, resamples: int, method: BootstrapMethod,
                    level: float, seed: int | Sequence[int]) -> pd.DataFrame:
    """Paired bootstrap intervals of every :func:`estimands` of one judge's table.

    One ``scipy.stats.bootstrap`` run resamples the pairs (rows) and evaluates all
    estimands on each resample, so every difference is paired (same resampled pairs for
    both of its terms). ``estimate`` is the estimand on the data (equal to the tables'
    point values), ``se`` the sd of the bootstrap distribution, ``n_pairs`` the pairs with
    a value in any of its columns. ``method``: ``percentile`` or ``BCa`` (scipy's).
    Resamples where an estimand is undefined (a subset not drawn) are NaN; scipy then
    returns NaN bounds, never a made-up interval.
    """
    wanted = estimands(table)
    if not wanted or table.empty:
        return pd.DataFrame(columns=list(INTERVAL_COLUMNS[1:]))
    matrix = coefficients(table, wanted)
    values = table.to_numpy(dtype=float)
    with warnings.catch_warnings():  # an undefined resample: NaN bounds, said above
        warnings.filterwarnings("ignore", message="The BCa confidence interval cannot be")
        summary = bootstrap_weighted_means(
            values, lambda means: combine(means, matrix), n_resamples=resamples,
            confidence_level=level, method=method, rng=np.random.default_rng(seed))
    present = ~np.isnan(values)
    n_pairs = [(present[:, matrix[:, j] != 0].any(axis=1)).sum()
               for j in range(len(wanted))]
    return pd.DataFrame({
        "variant": [e.variant for e in wanted], "statistic": [e.statistic for e in wanted],
        "versus": [e.versus for e in wanted], "estimate": summary.estimate,
        "low": summary.low, "high": summary.high, "se": summary.se,
        "n_pairs": np.asarray(n_pairs, dtype=int), "interval": method, "level": level})


def judge_seed(seed: int, judge: str) -> list[int]:
    """The bootstrap seed of one judge: the block's seed and a stable hash of its name,
    so a judge's intervals do not change when another judge joins the panel."""
    return [seed, zlib.crc32(judge.encode("utf-8"))]


# --------------------------------------------------------------------------- McNemar


@lru_cache(maxsize=65536)
def mcnemar_p(base_only: int, method_only: int) -> tuple[float, float, str]:
    """McNemar's test from the discordant counts: (statistic, p-value, which test).

    b = ``base_only`` (Base right, the method wrong), c = ``method_only``. Exact
    (two-sided binomial on min(b, c), statsmodels ``exact=True``) when b + c <
    :data:`EXACT_BELOW`; otherwise the chi-square (b - c)^2 / (b + c) with one degree of
    freedom, without continuity correction (``correction=False``; the continuity
    correction makes it conservative, ``benchmarks/birch_null.py``). No discordant pair:
    p = 1 (nothing to test).
    """
    b, c = int(base_only), int(method_only)
    if b + c == 0:
        return 0.0, 1.0, "none"
    exact = b + c < EXACT_BELOW
    result = mcnemar([[0, b], [c, 0]], exact=exact, correction=False)
    return (float(result.statistic), float(min(1.0, result.pvalue)),
            "exact binomial" if exact else "chi-square")


TEST_COLUMNS = ("judge", "variant", "versus", "pair_set", "n_pairs", "base_only",
                "method_only", "gain", "statistic", "p_value", "test", "q_value",
                "significant")


def mcnemar_rows(judge: str, correct: Mapping[str, pd.Series],
                 subsets: Mapping[str, pd.Series], index: pd.Index) -> list[dict[str, Any]]:
    """McNemar of each method of :data:`METHODS` against Base on the pairs both answered.

    Pair sets: D_IDS ∪ D_CDS, D_IDS and D_CDS for the methods (Tables 4 and 8); all
    pairs, D_IDS and D_CDS for no-image (Table 1, Fig. 5). ``gain`` = (c - b) / n_pairs,
    the method's accuracy minus Base's on those pairs. q-values come later, over the
    whole analysis (:func:`with_fdr`).
    """
    if "base" not in correct:
        return []
    members = _members(subsets, index)
    base = _as_float(correct["base"], index)
    rows = []
    for method in (m for m in METHODS if m in correct):
        other = _as_float(correct[method], index)
        both = ~np.isnan(base) & ~np.isnan(other)
        sets = ("all", "IDS", "CDS") if method == "no_image" else ("labelled", "IDS", "CDS")
        for name in sets:
            inside = both & members[name]
            b = int(((base == 1) & (other == 0) & inside).sum())
            c = int(((base == 0) & (other == 1) & inside).sum())
            n = int(inside.sum())
            statistic, p_value, test = mcnemar_p(b, c)
            rows.append({"judge": judge, "variant": method, "versus": "base",
                         "pair_set": name, "n_pairs": n, "base_only": b, "method_only": c,
                         "gain": (c - b) / n if n else math.nan, "statistic": statistic,
                         "p_value": p_value, "test": test})
    return rows


def with_fdr(tests: pd.DataFrame, alpha: float) -> pd.DataFrame:
    """Benjamini-Hochberg q-values over every row (judges x methods x pair sets) and
    ``significant`` = q < alpha (statsmodels ``multipletests(method="fdr_bh")``)."""
    out = tests.reindex(columns=list(TEST_COLUMNS)).copy()
    if out.empty:
        return out
    reject, q_values, _, _ = multipletests(out["p_value"].to_numpy(dtype=float),
                                           alpha=alpha, method="fdr_bh")
    out["q_value"] = q_values
    out["significant"] = reject
    return out
