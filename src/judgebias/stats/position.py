"""Position bias of a pairwise judge: PC, PF, RS and the one-order fallbacks, with inference.

A pairwise judge that prefers whatever is shown first (primacy) or last (recency) is not
judging the answers. Shi et al. (arXiv 2406.07791) measure this by judging every pair in
both orders; ``specs/judge-card.md`` §1 gives their definitions, §3 the inference we take
and §4 the headline measures. This module computes them from one canonical table of
verdicts, so that every study (mmb, birch, frame, ...) reports them the same way; it
imports no study.

**Input** (:func:`position_bias`, :func:`classify_pairs`): a DataFrame, one row per
judgement, with

* ``item``: the pair, which is also the resampling cluster (its two orders and its repeats
  travel together in a bootstrap);
* ``order``: ``"ab"`` (order 1, answer X shown first) or ``"ba"`` (order 2, swapped);
* ``slot``: the shown slot the judge preferred, ``"A"`` (first shown), ``"B"`` or
  ``"tie"``; missing (None / NaN / <NA>) for an answer that failed or could not be parsed;
* ``repeat`` (optional, 0 when absent): the index of identical re-asks;
* ``gold`` (optional): ``"A"`` or ``"B"``, the slot the gold-preferred answer was shown in
  on that row, or missing. Only the one-order measures use it.

**Codes** (§1). A pair judged in both orders gets the two-letter code order-1 slot +
order-2 slot, C for a tie and N for an unparsed answer: AB, BA and CC are consistent;
AA, AC and CA primacy-preferred; BB, BC and CB recency-preferred; any N unparsed. A tie
plus a slot thus counts for that slot.

**Measures and their inference** (§1, §3; one row each in :func:`position_bias`):

* ``pc`` = consistent / (consistent + primacy + recency): Wilson interval.
* ``pf`` = (recency − primacy) / n with n the valid pairs (§1 shows that Shi et al.'s
  normalised score reduces to this). Percentile cluster-bootstrap interval over items;
  test of PF = 0 by the exact binomial of recency vs primacy counts (exact McNemar on the
  discordant pairs: under a fair judge a discordant pair leans either way with
  probability 1/2).
* ``extraction_rate`` = valid pairs / all pairs (Shi et al.'s extraction success rate):
  Wilson interval.
* ``rs`` (at least 2 repeats) = mean over instances (item, order) of the modal verdict's
  share over its repeats: percentile cluster bootstrap over items, shown with its chance
  floor (the exact RS of a uniformly random judge, :func:`rs_chance`).
* ``first_slot_rate`` = share of parsed non-tie verdicts that pick slot A. One order:
  Wilson, exact binomial vs 0.5 (the verdicts are independent). Both orders (a balanced
  design, so 0.5 under a fair judge): a pair's two verdicts are not independent, so the
  interval is the cluster bootstrap over items and the test an exact sign-flip of each
  pair's slot-A surplus (:func:`first_slot_pair_test`; a binomial over the pooled
  verdicts rejects a true null too often when the judge's slot habit varies by item,
  ``benchmarks/position_bias.py``, null ``habit``).
* ``gold_slot_gap`` (one order, with gold) = Acc(gold in slot A) − Acc(gold in slot B)
  over parsed verdicts, a tie counting as wrong: Newcombe hybrid-score interval,
  two-proportion score test.

Every row also carries ``chance``, the value of a judge without the bias (a uniformly
random judge for PC and RS, 0 for PF and the gap, 0.5 for the first-slot rate), and the
repeat-0 pair counts ``n_consistent``, ``n_primacy``, ``n_recency``, ``n_unparsed``
(the same on every row, <NA> with one order), so one table holds the card's numbers.

Shi et al. define PC and PF on single judgements, so PC, PF, the extraction rate, the
first-slot rate and the gold-slot gap use repeat 0 only (each item is then one pair, or
one verdict, which is why the Wilson and Newcombe intervals are valid: no item weighs
twice); RS, which is about the repeats, uses them all. With one order only there is no
PC or PF (§3): those rows stay, with NaN numbers and a note, and the first-slot rate and
the gold-slot gap take their place. Both are valid only when slots were randomised with
a recorded seed; without it (``randomised=False``) their numbers are kept, the p-value is
NaN and the note says the bias is not identifiable.

Formulas cite "specs/judge-card.md §1; Shi et al. arXiv 2406.07791" where they come from.

Why this module is long: it is one family of measures with the inference each needs
(input checks, pair codes, five count-level tests and intervals, a cluster bootstrap, the
exact RS floor, and the rows that assemble them), and benchmarks/position_bias.py calls
the count-level functions directly; split, each half would be read only with the other.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.stats.proportion import (
    confint_proportions_2indep,
    proportion_confint,
    test_proportions_2indep,
)

ORDERS = ("ab", "ba")
SLOTS = ("A", "B", "tie")
GOLDS = ("A", "B")
LETTERS = ("A", "B", "C", "N")
"""Verdict letters by integer code: slot A, slot B, tie (C), unparsed (N)."""
CLASSES = ("consistent", "primacy", "recency", "unparsed")
"""Pair classes by integer code (specs/judge-card.md §1)."""

CLASS_TABLE = np.array([
    # ba:  A  B  C  N
    [1, 0, 1, 3],  # ab = A
    [0, 2, 2, 3],  # ab = B
    [1, 2, 0, 3],  # ab = C
    [3, 3, 3, 3],  # ab = N
])
"""``CLASS_TABLE[order-1 letter, order-2 letter]`` -> class code (specs/judge-card.md §1;
Shi et al. arXiv 2406.07791): AB, BA, CC consistent; AA, AC, CA primacy; BB, BC, CB
recency; any N unparsed. Letters and classes are coded as in :data:`LETTERS` and
:data:`CLASSES`."""

COLUMNS = ("measure", "estimate", "ci_low", "ci_high", "interval", "p_value", "test", "n",
           "chance", "note", "n_consistent", "n_primacy", "n_recency", "n_unparsed")
"""Columns of :func:`position_bias`: one row per measure, the pair counts repeated."""

PAIR_COLUMNS = ("item", "repeat", "slot_ab", "slot_ba", "code", "class")
"""Columns of :func:`classify_pairs`."""

NOT_RANDOMISED = ("slots not randomised with a recorded seed: position bias not "
                  "identifiable and accuracy confounded")
ONE_ORDER = "one order only: PC and PF need both orders"


# --------------------------------------------------------------------------- input


@dataclass(frozen=True)
class _Table:
    """A validated verdict table as arrays, one entry per judgement (row order kept)."""

    item: np.ndarray  # the item labels (object)
    item_code: np.ndarray  # items numbered by first appearance
    order: np.ndarray  # 0 = "ab", 1 = "ba"
    repeat: np.ndarray
    letter: np.ndarray  # 0 A, 1 B, 2 tie (C), 3 unparsed (N)
    gold: np.ndarray  # 0 A, 1 B, -1 missing

    @property
    def pair_key(self) -> np.ndarray:
        """One integer per (item, repeat)."""
        span = int(self.repeat.max()) + 1 if self.repeat.size else 1
        return self.item_code * span + self.repeat


def _plain(value: Any) -> Any:
    """A numpy scalar as its Python value, for readable error messages."""
    return value.item() if isinstance(value, np.generic) else value


def _fail(column: str, frame: pd.DataFrame, mask: np.ndarray, why: str) -> None:
    """Raise ``ValueError`` naming ``column`` and the first row where ``mask`` holds."""
    position = int(np.flatnonzero(mask)[0])
    value, label = _plain(frame[column].iloc[position]), _plain(frame.index[position])
    raise ValueError(f"column {column!r}: row {position} (index {label!r}) has {value!r}; "
                     f"{why}")


def _coded(frame: pd.DataFrame, column: str, allowed: Sequence[str], *, missing_ok: bool
           ) -> np.ndarray:
    """Position of each value of ``column`` in ``allowed`` (-1 for missing); raises (via
    :func:`_fail`) on a missing value unless ``missing_ok`` and on any other value."""
    found, distinct = pd.factorize(frame[column])  # missing values: -1
    missing = found < 0
    if not missing_ok and missing.any():
        _fail(column, frame, missing, "a value is required")
    # a trailing -1 so that found = -1 (missing) looks up -1
    codes = np.append(pd.Index(list(allowed)).get_indexer(distinct), -1)[found]
    bad = (codes < 0) & ~missing
    if bad.any():
        expected = ", ".join(repr(a) for a in allowed)
        _fail(column, frame, bad,
              f"expected one of {expected}{' or missing' if missing_ok else ''}")
    return codes


def _repeats(frame: pd.DataFrame) -> np.ndarray:
    """The ``repeat`` column as whole numbers >= 0 (0 everywhere when absent)."""
    if "repeat" not in frame.columns:
        return np.zeros(len(frame), dtype=np.int64)
    numeric = pd.to_numeric(frame["repeat"], errors="coerce").astype(float).to_numpy()
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(numeric) | (numeric < 0) | (numeric != np.round(numeric))
    if bad.any():
        _fail("repeat", frame, bad, "expected a whole number >= 0")
    return numeric.astype(np.int64)


def _validate(verdicts: pd.DataFrame) -> _Table:
    """Check the canonical verdict table (module docstring) and turn it into arrays.

    Raises ``ValueError`` naming the column and the first bad row: a missing required
    column, a missing item, an order outside ``ORDERS``, a slot outside ``SLOTS``, a
    repeat that is missing, negative or not whole, a gold outside ``GOLDS``, or a
    duplicated (item, order, repeat).
    """
    if not isinstance(verdicts, pd.DataFrame):
        raise TypeError(f"verdicts must be a pandas DataFrame, got {type(verdicts).__name__}")
    for column in ("item", "order", "slot"):
        if column not in verdicts.columns:
            raise ValueError(f"verdicts lack the column {column!r} (required: item, order, "
                             "slot; optional: repeat, gold)")
    missing_item = verdicts["item"].isna().to_numpy()
    if missing_item.any():
        _fail("item", verdicts, missing_item, "a value is required")
    slot = _coded(verdicts, "slot", SLOTS, missing_ok=True)
    gold = (_coded(verdicts, "gold", GOLDS, missing_ok=True) if "gold" in verdicts.columns
            else np.full(len(verdicts), -1))
    item = verdicts["item"].to_numpy(dtype=object)
    table = _Table(item=item, item_code=pd.factorize(item)[0],
                   order=_coded(verdicts, "order", ORDERS, missing_ok=False),
                   repeat=_repeats(verdicts), letter=np.where(slot < 0, 3, slot), gold=gold)
    duplicated = pd.Index(table.pair_key * 2 + table.order).duplicated()
    if duplicated.any():
        position = int(np.flatnonzero(duplicated)[0])
        key = (_plain(item[position]), ORDERS[table.order[position]],
               int(table.repeat[position]))
        raise ValueError(f"columns ('item', 'order', 'repeat'): row {position} (index "
                         f"{_plain(verdicts.index[position])!r}) repeats {key!r}; each "
                         "judgement must appear once")
    return table


# --------------------------------------------------------------------------- pairs


@dataclass(frozen=True)
class _Pairs:
    """The (item, repeat) keys judged in both orders: letters and class per pair."""

    row: np.ndarray  # a row of the table holding the pair (for its item label)
    item_code: np.ndarray
    repeat: np.ndarray
    ab: np.ndarray  # order-1 letter code
    ba: np.ndarray  # order-2 letter code
    klass: np.ndarray  # class code (CLASSES)
    incomplete_items: int  # items with a repeat-0 key judged in one order only

    def at_repeat(self, repeat: int) -> _Pairs:
        keep = self.repeat == repeat
        return _Pairs(self.row[keep], self.item_code[keep], self.repeat[keep], self.ab[keep],
                      self.ba[keep], self.klass[keep], self.incomplete_items)


def _pairs(table: _Table) -> _Pairs:
    """Pairs of a validated table, vectorised: ``np.unique`` numbers the (item, repeat)
    keys (so pairs come by item in order of first appearance, then by repeat) and the
    two orders' letters are scattered into two arrays; keys with one order only are
    dropped (and their repeat-0 items counted)."""
    keys, first, key = np.unique(table.pair_key, return_index=True, return_inverse=True)
    letters = np.full((2, keys.size), -1)
    letters[table.order, key] = table.letter
    complete = (letters >= 0).all(axis=0)
    ab, ba = letters[0, complete], letters[1, complete]
    half = ~complete & (table.repeat[first] == 0)
    return _Pairs(first[complete], table.item_code[first[complete]],
                  table.repeat[first[complete]], ab, ba, CLASS_TABLE[ab, ba],
                  int(half.sum()))


def classify_pairs(verdicts: pd.DataFrame) -> pd.DataFrame:
    """Code and classify every pair judged in both orders (specs/judge-card.md §1).

    Parameters
    ----------
    verdicts
        The canonical verdict table (module docstring); it is validated first.

    Returns
    -------
    pandas.DataFrame
        One row per (item, repeat) that has both orders, items in order of first
        appearance, then by repeat, with columns :data:`PAIR_COLUMNS`: ``slot_ab`` and
        ``slot_ba`` (the letters A, B, C for a tie, N for unparsed), ``code`` (order-1
        letter + order-2 letter) and ``class``: ``consistent`` (AB, BA, CC), ``primacy``
        (AA, AC, CA), ``recency`` (BB, BC, CB) or ``unparsed`` (any N). An (item, repeat)
        judged in one order only is no pair and is left out.

    Raises
    ------
    ValueError
        On a missing column, a bad value or a duplicated (item, order, repeat), naming the
        column and the first bad row.
    """
    table = _validate(verdicts)
    pairs = _pairs(table)
    names = np.array(LETTERS)
    return pd.DataFrame({
        "item": table.item[pairs.row], "repeat": pairs.repeat,
        "slot_ab": names[pairs.ab], "slot_ba": names[pairs.ba],
        "code": np.char.add(names[pairs.ab], names[pairs.ba]).astype(object),
        "class": np.array(CLASSES, dtype=object)[pairs.klass]})


# ----------------------------------------------------------------------- statistics


def _row(measure: str, estimate: float = math.nan, low: float = math.nan,
         high: float = math.nan, interval: str = "", p_value: float = math.nan,
         test: str = "", n: int = 0, chance: float = math.nan, note: str = ""
         ) -> dict[str, Any]:
    return {"measure": measure, "estimate": estimate, "ci_low": low, "ci_high": high,
            "interval": interval, "p_value": p_value, "test": test, "n": n,
            "chance": chance, "note": note}


def wilson(count: int, nobs: int, confidence_level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of ``count / nobs`` (NaN, NaN when ``nobs`` is 0).

    Wilson rather than Wald because it stays inside [0, 1] and keeps its coverage near 0
    and 1 and for small n, where PC and the extraction rate often sit (specs/judge-card.md
    §3). statsmodels' ``proportion_confint(method="wilson")``.
    """
    if nobs == 0:
        return math.nan, math.nan
    low, high = proportion_confint(count, nobs, alpha=1 - confidence_level, method="wilson")
    return float(low), float(high)


def pf_test(n_primacy: int, n_recency: int) -> float:
    """Two-sided p-value of PF = 0: exact binomial of recency vs primacy counts.

    Under a fair judge each discordant (primacy or recency) pair leans either way with
    probability 1/2 whatever its content, so the recency count given the discordant total
    is Binomial(n, 1/2): exact McNemar on the discordant pairs (specs/judge-card.md §3).
    No discordant pair: p = 1 (nothing to test).
    """
    total = int(n_primacy) + int(n_recency)
    if total == 0:
        return 1.0
    return float(stats.binomtest(int(n_recency), total, 0.5).pvalue)


def first_slot_test(n_first: int, n_second: int) -> float:
    """Two-sided exact binomial p-value of P(slot A) = 0.5 among non-tie verdicts.

    Valid only when every verdict is an independent draw whose slot assignment is fair:
    slots randomised with a recorded seed (one order), or the balanced both-order design
    (specs/judge-card.md §3). No verdict: NaN.
    """
    total = int(n_first) + int(n_second)
    if total == 0:
        return math.nan
    return float(stats.binomtest(int(n_first), total, 0.5).pvalue)


def first_slot_pair_test(n_aa: int, n_bb: int, n_a_tie: int, n_b_tie: int) -> float:
    """Two-sided p-value of no net slot preference from pairs judged in both orders.

    The first-slot rate over both orders pools two verdicts per pair, which are not
    independent: a judge whose slot habit varies by item (AA on some, BB on others, no
    net lean) makes them positively correlated, and a binomial test over verdicts then
    rejects too often (``benchmarks/position_bias.py``, world ``habit``). So the test
    works on pairs: each pair's surplus of slot-A over slot-B verdicts is +2 (AA), +1 (AC,
    CA, or A beside an unparsed answer), -1 (BC, CB, B beside N), -2 (BB) or 0. Under a
    fair judge (and answers failing at random) a pair's surplus is symmetric about 0
    (swapping the slots swaps AA and BB, AC and CB, CA and BC), so given their sizes the
    signs are fair coins. The p-value is exact under that sign-flip distribution:
    total = 2 (2X - n2) + (2Y - n1) with X ~ Bin(n2 = n_aa + n_bb, 1/2) and
    Y ~ Bin(n1 = n_a_tie + n_b_tie, 1/2), p = P(|total| >= |observed|). Without ties and
    unparsed answers it is the exact binomial of AA vs BB, i.e. PF's test. No such pair:
    p = 1.
    """
    n2, n1 = int(n_aa) + int(n_bb), int(n_a_tie) + int(n_b_tie)
    if n1 + n2 == 0:
        return 1.0
    observed = abs(2 * (int(n_aa) - int(n_bb)) + int(n_a_tie) - int(n_b_tie))
    # condition on X = x: total = c + 2Y with c = 2 (2x - n2) - n1; both tails of Y
    x = np.arange(n2 + 1)
    c = 2 * (2 * x - n2) - n1
    upper = stats.binom.sf(np.ceil((observed - c) / 2) - 1, n1, 0.5)  # P(2Y >= obs - c)
    lower = stats.binom.cdf(np.floor((-observed - c) / 2), n1, 0.5)  # P(2Y <= -obs - c)
    # the two tails overlap only when observed = 0, where p = 1 anyway
    tails = np.minimum(upper + lower, 1.0)
    return float(min(1.0, stats.binom.pmf(x, n2, 0.5) @ tails))


def gold_gap_test(correct_a: int, n_a: int, correct_b: int, n_b: int) -> float:
    """Two-sided p-value of Acc(gold in A) = Acc(gold in B): two-proportion score test.

    statsmodels' ``test_proportions_2indep(method="score")`` (Miettinen-Nurminen), the
    test that matches the Newcombe interval's score construction. Both accuracies 0 or
    both 1: p = 1 (the score statistic is 0/0 there, and there is no evidence of a gap).
    An empty group: NaN.
    """
    if n_a == 0 or n_b == 0:
        return math.nan
    if correct_a + correct_b in (0, n_a + n_b):
        return 1.0
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        result = test_proportions_2indep(correct_a, n_a, correct_b, n_b, method="score",
                                         compare="diff", return_results=True)
    return float(min(1.0, result.pvalue))


def cluster_bootstrap_ratio(numerator: np.ndarray, denominator: np.ndarray, *,
                            n_resamples: int, confidence_level: float,
                            rng: np.random.Generator) -> tuple[float, float]:
    """Percentile interval of sum(numerator) / sum(denominator), resampling clusters.

    Parameters
    ----------
    numerator, denominator
        One value per cluster (item), e.g. recency − primacy and valid pairs for PF.
    n_resamples, confidence_level, rng
        Bootstrap size, level and the seeded generator.

    Returns
    -------
    tuple[float, float]
        The percentile interval. Replicates with a zero denominator (every resampled
        cluster empty) are left out of the quantiles; no cluster: NaN, NaN.

    Notes
    -----
    Drawing N clusters with replacement only matters through how often each *distinct*
    (numerator, denominator) value is drawn, which is Multinomial(N, share of clusters
    with that value). So the replicates are drawn as multinomial counts of the distinct
    values: the same bootstrap distribution as resampling items (specs/judge-card.md §3:
    cluster bootstrap over items), at a cost of ``n_resamples`` x distinct values instead
    of ``n_resamples`` x N (PF has at most 4 distinct values).
    """
    values = np.column_stack([np.asarray(numerator, float), np.asarray(denominator, float)])
    n = values.shape[0]
    if n == 0:
        return math.nan, math.nan
    distinct, counts = np.unique(values, axis=0, return_counts=True)
    draws = rng.multinomial(n, counts / n, size=n_resamples).astype(float)
    top, bottom = draws @ distinct[:, 0], draws @ distinct[:, 1]
    ratios = top[bottom > 0] / bottom[bottom > 0]
    if ratios.size == 0:
        return math.nan, math.nan
    alpha = 1 - confidence_level
    low, high = np.quantile(ratios, [alpha / 2, 1 - alpha / 2])
    return float(low), float(high)


def expected_modal_share(probs: np.ndarray, repeats: int) -> np.ndarray:
    """Exact expected share of the modal verdict over ``repeats`` i.i.d. verdicts.

    Parameters
    ----------
    probs
        ``(..., k)`` probabilities of the k verdict options; whatever mass is missing from
        1 is an unparsed answer, which counts in the denominator but is never the mode
        (the RS convention of :func:`position_bias`).
    repeats
        t, the number of repeats.

    Returns
    -------
    numpy.ndarray
        ``(...)``: E[max_k c_k / t], by enumerating every composition of t into the k
        options and the unparsed remainder with its multinomial probability (Shi et al.'s
        RS, specs/judge-card.md §1, for a judge with these verdict probabilities).
    """
    probs = np.asarray(probs, dtype=float)
    k = probs.shape[-1]
    full = np.concatenate([probs, 1.0 - probs.sum(axis=-1, keepdims=True)], axis=-1)
    full = np.clip(full, 0.0, 1.0)
    cells = np.array([np.bincount(c, minlength=k + 1) for c in
                      itertools.combinations_with_replacement(range(k + 1), repeats)])
    log_coef = (math.lgamma(repeats + 1)
                - np.sum([[math.lgamma(c + 1) for c in row] for row in cells], axis=1))
    with np.errstate(divide="ignore", invalid="ignore"):
        log_p = np.log(full)
        # 0 ** 0 = 1: a zero probability with a zero count contributes log 1 = 0
        terms = np.where(cells == 0, 0.0, log_p[..., None, :] * cells)
    probability = np.exp(log_coef + terms.sum(axis=-1))
    share = cells[:, :k].max(axis=1) / repeats
    return np.asarray(probability @ share)


def rs_chance(options: int, repeats: int) -> float:
    """RS of a uniformly random judge: ``options`` equally likely verdicts, ``repeats``.

    The floor RS is read against (specs/judge-card.md §1, §4: biased when "near its
    floor"): 0.75 for 2 options and 3 repeats, 17/27 for 3 options and 3 repeats.
    """
    return float(expected_modal_share(np.full(options, 1.0 / options), repeats))


# ------------------------------------------------------------------------ measures


def _pair_rows(pairs: _Pairs, level: float, n_resamples: int, rng: np.random.Generator,
               interval: str, ties: bool) -> list[dict[str, Any]]:
    """PC, PF, extraction rate and the balanced-design first-slot rate from the repeat-0
    pairs (each item one pair; specs/judge-card.md §1, §3; Shi et al. arXiv 2406.07791)."""
    consistent, primacy, recency, _ = (int(c) for c in np.bincount(pairs.klass, minlength=4))
    valid = consistent + primacy + recency
    note = "repeat 0 only (Shi et al. define PC and PF on single judgements)"
    if pairs.incomplete_items:
        note += f"; {pairs.incomplete_items} item(s) judged in one order only left out"
    pc = _row("pc", consistent / valid if valid else math.nan,
              *wilson(consistent, valid, level), "wilson", n=valid,
              chance=1 / 3 if ties else 1 / 2,  # P(AB, BA or CC) of a random judge
              note=note)
    lean = (pairs.klass == 2).astype(float) - (pairs.klass == 1).astype(float)
    pf = _row("pf", (recency - primacy) / valid if valid else math.nan,
              *cluster_bootstrap_ratio(lean, (pairs.klass < 3).astype(float),
                                       n_resamples=n_resamples, confidence_level=level,
                                       rng=rng),
              interval, pf_test(primacy, recency) if valid else math.nan,
              "exact binomial of recency vs primacy (exact McNemar)", n=valid, chance=0.0,
              note=note + "; PF = (recency − primacy) / valid pairs")
    total = pairs.klass.size
    extraction = _row("extraction_rate", valid / total if total else math.nan,
                      *wilson(valid, total, level), "wilson", n=total,
                      note="valid pairs / all pairs judged in both orders, repeat 0")
    return [pc, pf, extraction, _pair_first_slot_row(pairs, level, n_resamples, rng,
                                                     interval)]


def _pair_first_slot_row(pairs: _Pairs, level: float, n_resamples: int,
                         rng: np.random.Generator, interval: str) -> dict[str, Any]:
    """Share of slot-A verdicts among parsed non-tie verdicts of both orders (repeat 0).

    Unbiased because the design is balanced, but a pair's two verdicts are not
    independent, so the interval is the cluster bootstrap over items and the test is
    :func:`first_slot_pair_test`, not Wilson and a binomial over verdicts."""
    a = (pairs.ab == 0).astype(float) + (pairs.ba == 0)
    b = (pairs.ab == 1).astype(float) + (pairs.ba == 1)
    surplus = (a - b).astype(int)
    n = int((a + b).sum())
    return _row("first_slot_rate", a.sum() / n if n else math.nan,
                *cluster_bootstrap_ratio(a, a + b, n_resamples=n_resamples,
                                         confidence_level=level, rng=rng),
                interval,
                first_slot_pair_test(*(int((surplus == k).sum()) for k in (2, -2, 1, -1)))
                if n else math.nan,
                "exact sign-flip of per-pair slot-A surplus", n=n, chance=0.5,
                note="all parsed non-tie verdicts of both orders, repeat 0: balanced "
                     "design; verdicts clustered in pairs")


def _first_slot_row(n_first: int, n_second: int, level: float, *, valid_test: bool,
                    note: str) -> dict[str, Any]:
    """Share of non-tie verdicts for slot A: Wilson, exact binomial vs 0.5 (§3)."""
    n = n_first + n_second
    return _row("first_slot_rate", n_first / n if n else math.nan,
                *wilson(n_first, n, level), "wilson",
                first_slot_test(n_first, n_second) if valid_test else math.nan,
                "exact binomial vs 0.5", n=n, chance=0.5, note=note)


def _one_order_rows(table: _Table, level: float, randomised: bool) -> list[dict[str, Any]]:
    """No PC or PF; extraction over verdicts, first-slot rate and gold-slot gap, from
    repeat 0 (specs/judge-card.md §3)."""
    caveat = "one order, slots randomised" if randomised else NOT_RANDOMISED
    rows = [_row("pc", note=ONE_ORDER), _row("pf", note=ONE_ORDER)]
    first = table.repeat == 0
    letter, gold = table.letter[first], table.gold[first]
    parsed, total = int((letter < 3).sum()), letter.size
    rows.append(_row("extraction_rate", parsed / total if total else math.nan,
                     *wilson(parsed, total, level), "wilson", n=total,
                     note="parsed verdicts / all verdicts, one order, repeat 0"))
    rows.append(_first_slot_row(int((letter == 0).sum()), int((letter == 1).sum()), level,
                                valid_test=randomised, note=caveat + "; repeat 0"))
    if (gold >= 0).any():
        rows.append(_gold_gap_row(gold, letter, level, randomised, caveat))
    return rows


def _gold_gap_row(gold: np.ndarray, letter: np.ndarray, level: float, randomised: bool,
                  caveat: str) -> dict[str, Any]:
    """Acc(gold in slot A) − Acc(gold in slot B) over parsed verdicts (a tie is wrong):
    Newcombe interval, score test (specs/judge-card.md §3)."""
    parsed = letter < 3
    in_a, in_b = parsed & (gold == 0), parsed & (gold == 1)
    n_a, n_b = int(in_a.sum()), int(in_b.sum())
    right_a, right_b = int((in_a & (letter == 0)).sum()), int((in_b & (letter == 1)).sum())
    low = high = estimate = math.nan
    if n_a and n_b:
        estimate = right_a / n_a - right_b / n_b
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            low, high = (float(x) for x in confint_proportions_2indep(
                right_a, n_a, right_b, n_b, method="newcomb", compare="diff",
                alpha=1 - level))
    p_value = gold_gap_test(right_a, n_a, right_b, n_b) if randomised else math.nan
    return _row("gold_slot_gap", estimate, low, high, "newcombe", p_value,
                "two-proportion score test", n=n_a + n_b, chance=0.0,
                note=caveat + "; repeat 0, ties count wrong, unparsed left out")


def _rs_row(table: _Table, level: float, n_resamples: int, rng: np.random.Generator,
            interval: str) -> dict[str, Any] | None:
    """RS over instances (item, order) with at least 2 repeats, or None if there are none
    (specs/judge-card.md §1; Shi et al. arXiv 2406.07791)."""
    keys, first, instance = np.unique(table.item_code * 2 + table.order, return_index=True,
                                      return_inverse=True)
    counts = np.bincount(instance * 4 + table.letter,
                         minlength=4 * keys.size).reshape(keys.size, 4)
    repeats = counts.sum(axis=1)
    keep = repeats >= 2
    if not keep.any():
        return None
    # unparsed repeats stay in the denominator and are never the mode (Shi et al.'s code)
    share = counts[keep, :3].max(axis=1) / repeats[keep]
    items = table.item_code[first[keep]]
    n_items = int(table.item_code.max()) + 1
    share_sum = np.bincount(items, weights=share, minlength=n_items)
    per_item = np.bincount(items, minlength=n_items).astype(float)
    options = 3 if (table.letter == 2).any() else 2
    ts, t_counts = np.unique(repeats[keep], return_counts=True)
    floors = np.array([rs_chance(options, int(t)) for t in ts])
    return _row("rs", float(share.mean()),
                *cluster_bootstrap_ratio(share_sum, per_item, n_resamples=n_resamples,
                                         confidence_level=level, rng=rng),
                interval, n=int(keep.sum()), chance=float(floors @ t_counts / keep.sum()),
                note=(f"all repeats; instances = (item, order) with >= 2 repeats; unparsed "
                      f"repeats stay in the denominator; chance = random judge with "
                      f"{options} options, t = {', '.join(str(t) for t in ts)}"))


def position_bias(verdicts: pd.DataFrame, *, randomised: bool = False,
                  n_resamples: int = 2000, confidence_level: float = 0.95, seed: int = 0
                  ) -> pd.DataFrame:
    """Position-bias measures of one judge with intervals and tests (judge-card.md §1, §3).

    Parameters
    ----------
    verdicts
        The canonical verdict table (module docstring), one row per judgement.
    randomised
        One-order data only: whether the slot of each answer was randomised with a
        recorded seed. Without it the first-slot rate and the gold-slot gap keep their
        numbers but get a NaN p-value and a note (§3: position bias not identifiable,
        accuracy confounded). Ignored when both orders are present (a balanced design).
    n_resamples
        B of the cluster bootstraps over items (PF, the both-order first-slot rate, RS;
        §3: B = 2000).
    confidence_level
        Level of every interval.
    seed
        Seed of the bootstraps (recorded in the ``interval`` column). The pair measures
        and RS draw from two independent children of ``numpy.random.SeedSequence(seed)``,
        so RS's interval does not depend on whether there are pairs.

    Returns
    -------
    pandas.DataFrame
        One row per measure, columns :data:`COLUMNS`: ``measure``, ``estimate``,
        ``ci_low``, ``ci_high``, ``interval`` (method), ``p_value`` and ``test`` (NaN and
        "" where there is no test), ``n`` (the denominator: valid pairs for pc and pf, all
        pairs or verdicts for extraction_rate, instances for rs, non-tie verdicts for
        first_slot_rate, parsed verdicts with gold for gold_slot_gap), ``chance`` (the
        value of a uniformly random or fair judge), ``note``, and the repeat-0 pair counts
        ``n_consistent``, ``n_primacy``, ``n_recency``, ``n_unparsed`` repeated on every
        row (<NA> with one order).

        Rows: with both orders (at least one (item, repeat) judged in both) ``pc``, ``pf``,
        ``extraction_rate`` and ``first_slot_rate`` (both orders, repeat 0); with one order
        ``pc`` and ``pf`` with NaN numbers and a note, ``extraction_rate`` of verdicts,
        ``first_slot_rate`` and, given ``gold``, ``gold_slot_gap``; with at least 2
        repeats, ``rs``. An (item, repeat) judged in one order only, when others have
        both, is left out of the pair measures (the notes count them).

    Raises
    ------
    ValueError
        On a missing column, a bad value or a duplicated (item, order, repeat), naming the
        column and the first bad row.
    """
    table = _validate(verdicts)
    pf_rng, rs_rng = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2))
    interval = f"percentile cluster bootstrap over items (B={n_resamples}, seed={seed})"
    pairs = _pairs(table)
    counts: list[Any] = [pd.NA] * 4
    if pairs.klass.size:
        first = pairs.at_repeat(0)
        rows = _pair_rows(first, confidence_level, n_resamples, pf_rng, interval,
                          ties=bool((table.letter == 2).any()))
        counts = [int(c) for c in np.bincount(first.klass, minlength=4)]
    else:
        rows = _one_order_rows(table, confidence_level, randomised)
    rs = _rs_row(table, confidence_level, n_resamples, rs_rng, interval)
    if rs is not None:
        rows.append(rs)
    data: dict[str, Any] = {c: [row[c] for row in rows] for c in COLUMNS[:-4]}
    for name, value in zip(COLUMNS[-4:], counts, strict=True):
        data[name] = pd.array([value] * len(rows), dtype="Int64")
    return pd.DataFrame(data)
