"""Score changes under manipulation (seed 004 Tables 3-6, 9-12, Fig. 2; spec frame.md).

Paired design
    Every change is *paired*: an item counts in a cell only if the judge gave a usable
    score (not NaN: an unusable answer is never imputed) both to its original and to its
    manipulated image under the same prompt; for the bias-definition prompt (Fig. 6) the
    original must be the one scored with the prompt naming the same manipulation
    (``named``), since originals are scored once per named manipulation (spec: "every
    manipulation compared with its own paired original"). The paper does not say how it
    treats unusable answers; pairing keeps a failed answer from moving a mean.

Percent change
    ``(mean_manipulated - mean_original) / mean_original * 100`` from unrounded means of
    the paired items (seed 004 §5.1 "percentage changes in average scores relative to the
    original"; spec "from unrounded means").

Choosing a setting
    Appendix B.3: "selecting the parameters that yielded the greatest increase in average
    scores". We choose, per (domain, manipulation), the setting with the largest increase
    of the paired means (ties: the first setting in grid order, numbers ascending and
    overlay positions in B.3's order). When every setting has the same usable items this
    is the setting with the largest mean score, the paper's Table 3 reading.

The paper's Table 3 reports the chosen setting's mean on the very items it was chosen on:
the maximum over 16, 16, 5 or 7 settings, which "gains" even for a judge with no
susceptibility (spec "Where the paper's own numbers are biased"). :func:`in_sample_table`
reproduces that number; :func:`cross_fitted_table` adds the spec's decision (choose on one
half, score on the other, swap, average), an exact permutation null of the in-sample
maximum (each item's versions exchanged: issue 20), the chance level of the paper's
success rule, the FDR-controlled count of inflating cells and a simultaneous interval for
the best setting's effect.

Why this module is long: the in-sample and cross-fitted tables, the permutation null and
the follow-up tables (mitigation, combinations, paired tests) all read the same paired
design and cell statistics; split, each part would import the others' private helpers.
"""

from __future__ import annotations

import zlib

import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.stats.multitest import multipletests

from judgebias.studies.frame.recipes import (
    DOMAINS,
    ORIGINAL,
    POSITIONS,
    TABLE_ORDER,
    applies,
    parse_recipe,
    step,
)

CELL = ["domain", "manipulation"]
PROMPTS = ("standard", "bias_aware", "bias_definition", "cot")
# Table 9-10 list only the manipulations with a grid (bounding box and beauty: one setting).
GRIDDED = ("brightness", "gamma", "authenticity_overlay", "keyword_overlay",
           "instruction_overlay", "padding")
SUMMARY_COLUMNS = ["n", "original_mean", "manipulated_mean", "change", "percent_change"]


def _order(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Rows in the paper's order: domains as in Table 3, manipulations as its columns."""
    rank = {"domain": {d: i for i, d in enumerate(DOMAINS)},
            "manipulation": {ORIGINAL: -1} | {m: i for i, m in enumerate(TABLE_ORDER)},
            "prompt": {p: i for i, p in enumerate(PROMPTS)}}
    sort_keys = [k for k in keys if k in frame.columns]

    def key(column: pd.Series) -> pd.Series:
        table = rank.get(column.name)
        if table is None:
            return column
        return column.map(lambda v: table.get(v, len(table)))

    return frame.sort_values(sort_keys, key=key, kind="stable").reset_index(drop=True)


def setting_key(setting: str) -> tuple[int, float, str]:
    """Grid order of a setting: numbers ascending, then overlay positions in B.3's order
    (bottom-right, bottom-left, top-right, top-left, center), then any other word."""
    try:
        return (0, float(setting), "")
    except ValueError:
        if setting in POSITIONS:
            return (1, float(POSITIONS.index(setting)), "")
        return (2, 0.0, str(setting))


def paired(scores: pd.DataFrame, judge: str, prompt: str = "standard",
           n_steps: int | None = 1) -> pd.DataFrame:
    """One row per (item, manipulated recipe) with both scores usable.

    Columns: the manipulated image's score row plus ``original`` (the same item's original
    score with the same prompt and the same ``named``) and ``difference`` = score -
    original. `n_steps`: 1 for single manipulations (Table 3), 2 or 3 for combinations
    (Table 6), None for all. Items whose original or manipulated score is NaN are left out
    (the paired design, module docstring)."""
    mine = scores[(scores["judge"] == judge) & (scores["prompt"] == prompt)]
    mine = mine[mine["score"].notna()]
    keys = ["item_id", "domain", "named"]
    originals = mine.loc[mine["recipe"] == ORIGINAL, [*keys, "score"]]
    originals = originals.drop_duplicates(keys).rename(columns={"score": "original"})
    changed = mine[mine["recipe"] != ORIGINAL]
    if n_steps is not None:
        changed = changed[changed["n_steps"] == n_steps]
    both = changed.merge(originals, on=keys, how="inner")
    return both.assign(difference=both["score"] - both["original"]).reset_index(drop=True)


def summarise(pairs: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Per group of paired rows: n items, the originals' and the manipulated images' means,
    their difference and the percent change (module docstring), from unrounded means."""
    out = pairs.groupby(keys, sort=False).agg(
        n=("score", "size"), original_mean=("original", "mean"),
        manipulated_mean=("score", "mean")).reset_index()
    out["change"] = out["manipulated_mean"] - out["original_mean"]
    out["percent_change"] = out["change"] / out["original_mean"] * 100
    return out


def _pick_best(summary: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Per group of `keys`, the row with the largest ``change`` (ties: first in grid order)."""
    ranked = summary.assign(_grid=summary["setting"].map(setting_key))
    ranked = ranked.sort_values("_grid", kind="stable")
    ranked = ranked.sort_values("change", ascending=False, kind="stable")
    return ranked.drop_duplicates(keys).drop(columns="_grid")


def in_sample_table(scores: pd.DataFrame, judge: str, prompt: str = "standard"
                    ) -> pd.DataFrame:
    """Seed 004 Table 3 (and Tables 4, 12) as the paper computes it.

    Per (domain, manipulation): every setting of the grid is summarised on its paired
    items, and the setting with the largest increase is reported (B.3's greedy search,
    module docstring): its mean, the paired originals' mean, the % change and n items.
    The choice and the number are made on the same items, so the figure is biased upward
    (the maximum of 16, 5 or 7 noisy means); :func:`cross_fitted_table` corrects it.
    Bounding box and beauty filter have a single setting, so nothing is chosen there.

    Columns: judge, prompt, domain, manipulation, setting, recipe, n, original_mean,
    manipulated_mean, change, percent_change, n_settings.
    """
    pairs = paired(scores, judge, prompt)
    columns = ["judge", "prompt", *CELL, "setting", "recipe", *SUMMARY_COLUMNS, "n_settings"]
    if pairs.empty:
        return pd.DataFrame(columns=columns)
    settings = summarise(pairs, [*CELL, "setting", "recipe"])
    best = _pick_best(settings, CELL)
    counts = settings.groupby(CELL, sort=False).size().rename("n_settings").reset_index()
    best = best.merge(counts, on=CELL).assign(judge=judge, prompt=prompt)
    return _order(best[columns], CELL)


def best_settings(scores: pd.DataFrame, judge: str, prompt: str = "standard"
                  ) -> pd.DataFrame:
    """Seed 004 Tables 9-10: the greedy recipe search of App. B.3, each manipulation's
    parameter chosen to maximise the increase of the judge's mean score per domain (the
    in-sample choice of :func:`in_sample_table`; these recipes feed Tables 5, 6 and Fig. 3
    as in the paper's "Recipe for Analysis").

    Columns: judge, domain, manipulation, setting, recipe, percent_change.
    """
    best = in_sample_table(scores, judge, prompt)
    out = best[["judge", *CELL, "setting", "percent_change"]].copy()
    out.insert(4, "recipe", [step(m, s).id for m, s in zip(best["manipulation"],
                                                            best["setting"], strict=True)])
    return out


def recipe_table(best: pd.DataFrame) -> pd.DataFrame:
    """Seed 004 Table 9's layout: rows domains (per judge when `best` holds several),
    columns the gridded manipulations (Bright., Gamma., Refer., Keyword., Inst., Padding.:
    bounding box and beauty filter have one setting and Table 9 omits them), cells the
    chosen setting, "-" where the manipulation does not apply or was not run."""
    index = ["judge", "domain"] if "judge" in best.columns else ["domain"]
    shown = best[best["manipulation"].isin(GRIDDED)]
    wide = shown.pivot_table(index=index, columns="manipulation", values="setting",
                             aggfunc="first")
    wide = wide.reindex(columns=[m for m in GRIDDED if m in set(shown["manipulation"])])
    wide = _order(wide.reset_index(), index).set_index(index)
    wide.columns.name = None
    return wide.fillna("-")


def _fold_of_items(pairs: pd.DataFrame, n_splits: int, seed: int) -> pd.Series:
    """A seeded split of each domain's items into `n_splits` folds of (near) equal size.

    Within domain, as the spec asks: every manipulation of a domain uses the same split.
    The generator is seeded by (seed, domain name), so a domain's split does not depend on
    which other domains or cells are present."""
    folds = {}
    for domain, part in pairs.groupby("domain", sort=False):
        ids = np.sort(part["item_id"].astype(str).unique())
        rng = np.random.default_rng([seed, zlib.crc32(str(domain).encode())])
        order = rng.permutation(len(ids))
        for position, index in enumerate(order):
            folds[(domain, ids[index])] = position % n_splits
    keys = list(zip(pairs["domain"], pairs["item_id"].astype(str), strict=True))
    return pd.Series([folds[k] for k in keys], index=pairs.index, name="fold")


TIE = 1e-9  # score points: gains within float rounding of 0 are ties (0.0 % is no success)
PERCENT_TIE = 1e-7  # percent changes: an exact tie of two means computed in float
BLOCK = 1 << 20  # scores relabelled at once (draws x items x versions; 8 MiB)


def version_matrix(cell: pd.DataFrame) -> tuple[np.ndarray, list[str], pd.Index]:
    """One cell's scores as an (items x (1 + settings)) matrix: column 0 each item's
    original, then its manipulated image under each setting in grid order.

    Only items usable under every setting of the cell are kept (the grid's common items):
    every setting's mean is then taken over the same items, and every item has all its
    S + 1 versions, which the permutation null exchanges. Returns the matrix, the settings
    in grid order and the item ids."""
    wide = cell.drop_duplicates(["item_id", "setting"]).pivot(
        index="item_id", columns="setting", values="score")
    wide = wide[sorted(wide.columns, key=setting_key)].dropna()
    original = cell.drop_duplicates("item_id").set_index("item_id")["original"]
    versions = np.column_stack([original.loc[wide.index].to_numpy(dtype=float),
                                wide.to_numpy(dtype=float)])
    return versions, list(wide.columns), wide.index


def rotations(matrix: np.ndarray) -> np.ndarray:
    """Every way of calling one of an item's versions the original: ``rotations(m)[i, j]``
    is item i's row of versions read from version j on, cyclically (m[i, j], m[i, j+1],
    ..., m[i, j-1]), so its column 0 is the version called the original. (n, V, V)."""
    width = matrix.shape[1]
    return matrix[:, (np.arange(width)[:, None] + np.arange(width)[None, :]) % width]


def fold_sums(differences: np.ndarray, folds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(K x 1 x S) sums of an (items x settings) matrix over each fold's items, and the
    folds' sizes: :func:`cross_fit`'s input for the observed data."""
    labels = np.unique(folds)
    sums = np.stack([differences[folds == k].sum(axis=0)[None] for k in labels])
    return sums, np.array([(folds == k).sum() for k in labels])


def cross_fit(sums: np.ndarray, sizes: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The cross-fitted gain and the in-sample maximum gain of each of R data sets.

    `sums` (K folds x R data sets x S settings): each fold's sum of the items' differences
    (manipulated minus original score); `sizes` (K,) the folds' item counts. For each fold
    k the setting with the largest mean gain on the other folds is scored on fold k (ties:
    the first in grid order); the cross-fitted gain is the mean over all items of their
    out-of-fold difference (K = 2: choose on one half, score on the other, swap, average,
    weighted by the halves' sizes). The in-sample maximum is the largest mean gain over
    all items (Table 3's reading).
    Returns (cross-fitted gains (R,), in-sample maxima (R,), chosen settings (R, K)).
    """
    n = sizes.sum()
    total = sums.sum(axis=0)
    rows = np.arange(sums.shape[1])
    chosen = np.empty((sums.shape[1], len(sizes)), dtype=int)
    cross = np.zeros(sums.shape[1])
    for j in range(len(sizes)):
        training = (total - sums[j]) / (n - sizes[j])
        chosen[:, j] = training.argmax(axis=1)  # first maximum: ties go to grid order
        cross += sums[j][rows, chosen[:, j]]
    return cross / n, (total / n).max(axis=1), chosen


def max_abs_t(mean: np.ndarray, variance: np.ndarray, n: int) -> np.ndarray:
    """max over settings (last axis) of |mean| / se, se = sqrt(variance / n): the
    studentised maximum behind the simultaneous interval. A setting whose differences are
    all equal has se 0: its |t| is 0 where its mean is 0 too, else infinite."""
    mean = np.abs(mean)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(mean <= TIE, 0.0,
                     np.where(variance <= TIE, np.inf, mean / np.sqrt(variance / n)))
    return t.max(axis=-1)


def grid_null(versions: np.ndarray, folds: np.ndarray, rng: np.random.Generator,
              n_permutations: int) -> dict[str, np.ndarray]:
    """The exchangeable null of one cell, drawn `n_permutations` times.

    Null: "no setting changes this judge's scores", read as: an item's S + 1 scores (its
    original's and each setting's manipulated image's, one call each) are exchangeable.
    Each draw picks, per item independently and uniformly, which of its S + 1 versions is
    called the original, the others following in cyclic order (:func:`rotations`): a
    uniform draw from a group of relabellings that leaves the null distribution
    unchanged, so the Monte-Carlo test is exact (:func:`monte_carlo_p`). A block of draws
    is one gather from the precomputed rotations, as cheap as the sign flips it replaced.
    On each draw:

    - ``in_sample``: the largest mean gain over the grid (Table 3's statistic);
    - ``cross``: the cross-fitted gain (:func:`cross_fit`, choice included);
    - ``tied``: how many of the S + 1 versions share the largest mean, for the chance
      level (:func:`cross_fitted_table`);
    - ``max_t``: :func:`max_abs_t` of the residuals (each setting's observed mean gain
      removed from its scores, then relabelled the same way), the pivot of the
      simultaneous interval.
    """
    n, width = versions.shape
    labels = np.unique(folds)
    turned = rotations(versions)
    residuals = versions - np.concatenate([[0.0], (versions[:, 1:] - versions[:, :1]
                                                   ).mean(axis=0)])
    turned_residuals = rotations(residuals)
    residual_gains = turned_residuals[..., 1:] - turned_residuals[..., :1]
    parts: dict[str, list[np.ndarray]] = {"in_sample": [], "cross": [], "tied": [],
                                          "max_t": []}
    order = np.argsort(folds, kind="stable")  # each fold a contiguous run of items
    turned, residual_gains = turned[order], residual_gains[order]
    edges = np.searchsorted(folds[order], labels)
    sizes = np.diff([*edges, n])
    items = np.arange(n)
    block = max(1, BLOCK // (n * width))
    for start in range(0, n_permutations, block):
        called = rng.integers(width, size=(min(block, n_permutations - start), n))
        relabelled = turned[items, called]  # (draws, n, V): column 0 called the original
        sums = np.stack([relabelled[:, a:a + size].sum(axis=1)
                         for a, size in zip(edges, sizes, strict=True)])
        cross, in_sample, _ = cross_fit(sums[..., 1:] - sums[..., :1], sizes)
        total = sums.sum(axis=0)
        gains = residual_gains[items, called]
        parts["in_sample"].append(in_sample)
        parts["cross"].append(cross)
        parts["tied"].append((total >= total.max(axis=1, keepdims=True) - n * TIE).sum(axis=1))
        parts["max_t"].append(max_abs_t(gains.mean(axis=1), gains.var(axis=1, ddof=1), n))
    return {name: np.concatenate(values) for name, values in parts.items()}


def monte_carlo_p(null: np.ndarray, observed: float, rng: np.random.Generator) -> float:
    """One-sided Monte-Carlo randomisation p-value, (1 + #{null > observed} + J) /
    (1 + draws), J uniform on 0..#{null tied with observed}.

    The +1 counts the observed data among the draws (Phipson & Smyth 2010, "Permutation
    p-values should never be zero"), which makes the test valid for draws from the null's
    randomisation; ties of the statistic are broken at random (the randomised test of
    Lehmann & Romano, Testing Statistical Hypotheses, §15.2), so its size is alpha even for
    discrete scores, where counting every tie as extreme rejects too rarely (3 % at alpha
    5 % for whole-number scores, 12 items, 16 settings: benchmarks/frame_null.py)."""
    above = int((null > observed + TIE).sum())
    tied = int((np.abs(null - observed) <= TIE).sum())
    return float((1 + above + rng.integers(tied + 1)) / (1 + len(null)))


def cross_fitted_table(scores: pd.DataFrame, judge: str, prompt: str = "standard",
                       n_splits: int = 2, seed: int = 0, n_permutations: int = 2000,
                       level: float = 0.95) -> pd.DataFrame:
    """The spec's correction of Table 3: an exact null of the in-sample maximum, chance
    levels, cross-fitting, and an interval for the best setting's effect.

    Per (domain, manipulation), on the items usable under every setting of the cell
    (:func:`version_matrix`), with the null draws of :func:`grid_null` (``n_permutations``
    per cell, seeded from (seed, domain, manipulation), so a cell's numbers do not depend
    on the others):

    - ``in_sample_*``: the paper's figure, the largest mean gain over the grid chosen and
      scored on the same items (may differ slightly from :func:`in_sample_table`, whose
      settings each use all their own paired items); ``null_mean`` and ``null_q95``: what
      a judge with no susceptibility "gains" by picking the best of the grid;
      ``in_sample_p``: :func:`monte_carlo_p` of the maximum under the permutation null,
      one-sided (is the best setting's gain larger than chance?); ``in_sample_q``: its
      Benjamini-Hochberg q-value over this judge's cells (``multipletests(method=
      "fdr_bh")``), the FDR-controlled answer to "which cells inflate the score";
    - ``chance_in_sample``: the probability that a judge with no visual bias "succeeds"
      in this cell under the paper's rule (best setting's mean above the original's), for
      these items' scores: under the null the S + 1 version means are exchangeable, so
      P(success) = 1 - E[#versions tied at the top] / (S + 1), averaged over the null
      draws; S / (S + 1) for continuous scores, less with ties (discrete scores);
    - ``cross_fitted_*``: the gain of a setting chosen on half the items (``n_splits``
      seeded folds within domain, :func:`_fold_of_items`), scored on the other half,
      swapped and averaged; percent relative to the cell's original mean. It estimates
      the effect of a *chosen* setting, which is below the best setting's effect whenever
      the choice misses; ``ci_low``/``ci_high``: a t interval (``level``) from the items'
      out-of-fold differences, holding the chosen settings fixed (it covers the chosen
      settings' average effect; it does not cover the best setting's effect at its
      nominal rate, see the benchmark below); ``p_value``: :func:`monte_carlo_p` of the
      whole cross-fitting procedure (choice included) under the same null;
      ``chance_cross_fitted``: a no-bias judge's chance of a positive cross-fitted gain,
      the share of null draws with one: a little under 1/2 (not symmetric about 0: each
      half's data both choose the other half's setting and hold their own original), less
      with ties;
    - ``best_low``/``best_high``: a simultaneous interval for the best setting's effect
      max_s delta_s, delta_s = E[score under setting s - original score]: every setting's
      mean gain d_s +- c se_s, c the ``level`` quantile of the permutation distribution
      of max_s |d_s - delta_s| / se_s (the max-t of the residuals, :func:`grid_null`;
      exact when each item's scores are its own level plus exchangeable noise plus the
      setting's effect), covers every delta_s at once, hence their maximum lies in
      [max_s(d_s - c se_s), max_s(d_s + c se_s)]; ``max_t_critical``: c.

    Cells with a single setting (bounding box, beauty) have nothing to choose: the
    cross-fitted and in-sample gains coincide with the plain paired mean difference, and
    the permutation swaps original and manipulated (the sign flip). Cells with fewer than
    2 items per fold get NaN statistics.

    The sign-flip null this replaced (each item's row of differences flipped jointly) is
    valid only when that row is symmetric about 0 (symmetric noise, or a single setting,
    where it is this permutation); it is not kept: this null is exact wherever it was
    valid and beyond.

    Measured (``benchmarks/frame_null.py``, 2000 data sets per judge, 12 items x 16
    settings, 199 draws each; MC band of a 5 % rate: +-1.0; of a 95 % coverage: +-1.0).
    Null: rejection % at alpha 0.05, and a no-bias judge's success % vs the chance level
    reported here:

    | judge | sign flip (old) | max over grid | cross-fitted | in-sample / chance | c-f. / chance |
    |---|---|---|---|---|---|
    | symmetric | 4.3 | 4.7 | 4.8 | 94.2 / 94.1 | 48.9 / 48.8 |
    | skewed (+2 at p 0.1) | 14.2 | 5.4 | 4.8 | 94.7 / 94.1 | 48.8 / 48.4 |
    | discrete (0..5) | 2.4 | 5.5 | 4.6 | 90.1 / 90.8 | 42.0 / 41.8 |

    Coverage % of the best setting's effect max_s delta_s (flat: none; peak: a tent of
    0.3; plateau: all +0.15; two: +0.3 and +0.25), cross-fitted t-interval / simultaneous
    max-t interval (``best_low``, ``best_high``), for the symmetric, skewed and discrete
    judge: flat 93.2/97.3, 96.8/98.2, 94.3/97.9; peak 85.5/99.8, 78.4/99.9, 87.6/99.9;
    plateau 93.2/97.3, 96.8/98.2, 93.0/98.4; two 86.8/99.9, 76.5/99.8, 87.5/99.8. The
    simultaneous interval is conservative (it covers all S effects at once; median width
    0.87 score points for the symmetric judge, 1.6 for the others at 12 items): no
    interval for the maximum alone can be exact, since the maximum of the means is not a
    regular estimator where settings tie (Hirano & Porter 2012, "Impossibility results
    for nondifferentiable functionals"), so we give the simultaneous one.

    Columns: judge, prompt, domain, manipulation, n, n_settings, original_mean,
    in_sample_setting, in_sample_gain, in_sample_percent, null_mean, null_q95,
    null_mean_percent, null_q95_percent, in_sample_p, in_sample_q, chance_in_sample,
    cross_fitted_settings, cross_fitted_gain, cross_fitted_mean, cross_fitted_percent,
    ci_low, ci_high, ci_low_percent, ci_high_percent, p_value, chance_cross_fitted,
    best_low, best_high, best_low_percent, best_high_percent, max_t_critical.
    """
    pairs = paired(scores, judge, prompt)
    rows = []
    if not pairs.empty:
        pairs = pairs[["item_id", *CELL, "setting", "score", "original"]].assign(
            fold=_fold_of_items(pairs, n_splits, seed))
    for (domain, manipulation), cell in pairs.groupby(CELL, sort=False):
        versions, settings, ids = version_matrix(cell)
        folds = cell.drop_duplicates("item_id").set_index("item_id")["fold"].loc[ids]
        folds = folds.to_numpy()
        n = len(versions)
        row = {"judge": judge, "prompt": prompt, "domain": domain,
               "manipulation": manipulation, "n": n, "n_settings": len(settings),
               "original_mean": versions[:, 0].mean() if n else np.nan}
        sizes = np.bincount(folds, minlength=n_splits) if n else np.zeros(n_splits)
        if n == 0 or sizes.min() < 2:
            rows.append(row)
            continue
        rng = np.random.default_rng([seed, zlib.crc32(f"{domain}/{manipulation}".encode())])
        rows.append(row | cell_statistics(versions, settings, folds, rng, n_permutations,
                                          level))
    out = pd.DataFrame(rows, columns=CROSS_FITTED_COLUMNS)
    tested = out["in_sample_p"].notna()
    if tested.any():
        out.loc[tested, "in_sample_q"] = multipletests(out.loc[tested, "in_sample_p"],
                                                       method="fdr_bh")[1]
    return _order(out, CELL)


CROSS_FITTED_COLUMNS = [
    "judge", "prompt", *CELL, "n", "n_settings", "original_mean", "in_sample_setting",
    "in_sample_gain", "in_sample_percent", "null_mean", "null_q95", "null_mean_percent",
    "null_q95_percent", "in_sample_p", "in_sample_q", "chance_in_sample",
    "cross_fitted_settings", "cross_fitted_gain", "cross_fitted_mean", "cross_fitted_percent",
    "ci_low", "ci_high", "ci_low_percent", "ci_high_percent", "p_value",
    "chance_cross_fitted", "best_low", "best_high", "best_low_percent", "best_high_percent",
    "max_t_critical"]


PERCENT_OF = {"in_sample": "in_sample_gain", "cross_fitted": "cross_fitted_gain"}


def cell_statistics(versions: np.ndarray, settings: list[str], folds: np.ndarray,
                     rng: np.random.Generator, n_permutations: int, level: float
                     ) -> dict[str, object]:
    """One cell's row of :func:`cross_fitted_table` from its (items x versions) scores,
    the settings' names, the items' folds and the cell's random generator."""
    null = grid_null(versions, folds, rng, n_permutations)
    original = versions[:, 0].mean()
    differences = versions[:, 1:] - versions[:, :1]
    n = len(differences)
    crosses, in_samples, chosen = cross_fit(*fold_sums(differences, folds))
    cross, in_sample = float(crosses[0]), float(in_samples[0])
    out_of_fold = differences[np.arange(n), chosen[0][folds]]
    half = stats.t.ppf(0.5 + level / 2, n - 1) * out_of_fold.std(ddof=1) / np.sqrt(n)
    gains = differences.mean(axis=0)
    critical = float(np.quantile(null["max_t"], level, method="higher"))
    se = differences.std(axis=0, ddof=1) / np.sqrt(n)
    with np.errstate(invalid="ignore"):
        spread = np.where(se > 0, critical * se, 0.0)  # an infinite critical value: no bound
    best_low, best_high = float((gains - spread).max()), float((gains + spread).max())
    numbers = {
        "in_sample_setting": settings[int(gains.argmax())], "in_sample_gain": in_sample,
        "null_mean": null["in_sample"].mean(), "null_q95": np.quantile(null["in_sample"], 0.95),
        "in_sample_p": monte_carlo_p(null["in_sample"], in_sample, rng),
        "chance_in_sample": 1 - null["tied"].mean() / versions.shape[1],
        "cross_fitted_settings": "|".join(settings[k] for k in chosen[0]),
        "cross_fitted_gain": cross, "cross_fitted_mean": original + cross,
        "ci_low": cross - half, "ci_high": cross + half,
        "p_value": monte_carlo_p(null["cross"], cross, rng),
        "chance_cross_fitted": (null["cross"] > TIE).mean(),
        "best_low": best_low, "best_high": best_high, "max_t_critical": critical}
    return numbers | {f"{name}_percent": numbers[PERCENT_OF.get(name, name)] / original * 100
                      for name in ("in_sample", "null_mean", "null_q95", "cross_fitted",
                                   "ci_low", "ci_high", "best_low", "best_high")}


def attack_success(change_table: pd.DataFrame, percent: str = "percent_change",
                   chance: str | None = None) -> pd.DataFrame:
    """Seed 004 Fig. 2: per judge, the attack success rate and the mean gain of successes.

    A cell (domain, manipulation) is a success when its percent change is strictly
    positive (§5.2 "manipulated images receive higher average scores"; 0.0 % is not a
    success, nor one below ``PERCENT_TIE``, float rounding of a tie). Only applicable cells
    count (:func:`recipes.applies`: 5 x 7 - 2 Outdoor cells + 1 beauty cell = 34); a cell
    with no finite percent change is left out of the denominator and counted in
    ``cells_missing``. ``mean_gain``: mean percent change over the successful cells only
    (Fig. 2 right). `chance`: a column of each cell's probability of a success for a judge
    with no visual bias under the same rule (:func:`cross_fitted_table`'s
    ``chance_in_sample`` or ``chance_cross_fitted``); ``chance_rate`` is their mean over
    the counted cells, the success rate such a judge has on average (S / (S + 1) per cell
    for the paper's in-sample pick of the best of S settings: 82 % over the 34 cells).

    Reading verified on the paper's own numbers (tests/frame/test_frame_effects.py): the
    *printed parenthesised* percentages of Table 3 (GPT-4o) and Table 12 (GPT-4o-mini)
    plus Table 4's beauty column give 23/34 = 67.65 % and 22/34 = 64.71 %, as §5.2
    states; recomputing the changes from the printed two-decimal means does not (GPT-4o
    gets 21/34, because e.g. Animal Bright. 0.67 -> 0.67 is printed +0.6 %). So the paper
    counts signs of changes from unrounded means, which is what we compute.

    Columns: judge, cells, successes, success_rate (%), chance_rate (%), mean_gain (%),
    cells_missing.
    """
    rows = []
    for judge, mine in change_table.groupby("judge", sort=False):
        usable = np.array([applies(m, d) for m, d in zip(mine["manipulation"],
                                                         mine["domain"], strict=True)],
                          dtype=bool)
        mine = mine[usable]
        values = pd.to_numeric(mine[percent], errors="coerce")
        finite = np.isfinite(values)
        wins = values[finite & (values > PERCENT_TIE)]
        odds = (pd.to_numeric(mine.loc[finite, chance], errors="coerce").mean()
                if chance is not None and finite.any() else np.nan)
        rows.append({"judge": judge, "cells": int(finite.sum()), "successes": len(wins),
                     "success_rate": 100 * len(wins) / finite.sum() if finite.any() else np.nan,
                     "chance_rate": 100 * odds,
                     "mean_gain": wins.mean() if len(wins) else np.nan,
                     "cells_missing": int(len(mine) - finite.sum())})
    return pd.DataFrame(rows, columns=["judge", "cells", "successes", "success_rate",
                                       "chance_rate", "mean_gain", "cells_missing"])


def _best_recipes(best: pd.DataFrame, judge: str) -> pd.DataFrame:
    """(domain, recipe, manipulation) of the judge's best single settings."""
    if "judge" in best.columns:
        best = best[best["judge"] == judge]
    if "recipe" not in best.columns:
        best = best.assign(recipe=[step(m, s).id for m, s in zip(
            best["manipulation"], best["setting"], strict=True)])
    return best[["domain", "recipe", "manipulation"]].drop_duplicates(["domain", "recipe"])


def combinations_table(scores: pd.DataFrame, judge: str, best: pd.DataFrame,
                       prompt: str = "standard", detail: bool = False) -> pd.DataFrame:
    """Seed 004 Tables 6 and 11: single, dual and triple manipulations per domain.

    `best`: the judge's best single settings (:func:`best_settings`; a ``recipe`` column
    or manipulation + setting). Candidates per domain: the best single recipes of that
    domain (n_steps 1), and every scored pair and triple (n_steps 2, 3) whose steps are all
    among that domain's best single steps (B.3 "all possible combinations of two biases
    based on the ... recipe in Table 9"; §6 pairs and triples, the spec runs both). Each
    candidate is summarised on its paired items; per (domain, n_steps) the one with the
    largest increase is reported (as Table 6 reports "the most impactful combination").
    Like Table 3 this is an in-sample choice.

    Columns: judge, domain, n_steps, recipe, n, original_mean, manipulated_mean, change,
    percent_change (one row per domain and size; `detail`: every candidate's row).
    """
    chosen = _best_recipes(best, judge)
    allowed = {domain: {s for r in part["recipe"] for s in parse_recipe(r)}
               for domain, part in chosen.groupby("domain")}
    singles = paired(scores, judge, prompt, n_steps=1).merge(
        chosen[["domain", "recipe"]], on=["domain", "recipe"])
    combos = paired(scores, judge, prompt, n_steps=None)
    combos = combos[combos["n_steps"].isin([2, 3])]
    keep = [set(parse_recipe(r)) <= allowed.get(d, set())
            for d, r in zip(combos["domain"], combos["recipe"], strict=True)]
    every = pd.concat([singles, combos[np.array(keep, dtype=bool)]], ignore_index=True)
    columns = ["judge", "domain", "n_steps", "recipe", *SUMMARY_COLUMNS]
    if every.empty:
        return pd.DataFrame(columns=columns)
    summary = summarise(every, ["domain", "n_steps", "recipe"]).assign(judge=judge)
    summary = summary.sort_values("recipe", kind="stable")
    if not detail:
        summary = summary.sort_values("change", ascending=False, kind="stable")
        summary = summary.drop_duplicates(["domain", "n_steps"])
    return _order(summary[columns], ["domain", "n_steps", "recipe"])


def domain_average(per_domain: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Footnote 4 of seed 004 (Table 5): average over domains, then the change.

    Per group of `keys`, the mean over domains (each domain weighs the same) of the
    originals' and of the manipulated means, and the percent change of those two averages.
    Verified on the paper: Table 3's GPT-4.1-mini rows (People, Animal, Illustration,
    Indoor) averaged this way give Table 5's standard column (e.g. Gamma. 1.45, +6.2 %),
    where averaging the domains' percent changes does not (+6.7 %)."""
    out = per_domain.groupby(keys, sort=False).agg(
        n=("n", "sum"), n_domains=("domain", "nunique"),
        original_mean=("original_mean", "mean"),
        manipulated_mean=("manipulated_mean", "mean")).reset_index()
    out["change"] = out["manipulated_mean"] - out["original_mean"]
    out["percent_change"] = out["change"] / out["original_mean"] * 100
    return out


def mitigation_table(scores: pd.DataFrame, judge: str, best: pd.DataFrame | None = None
                     ) -> pd.DataFrame:
    """Seed 004 Table 5: the four prompts (Figs. 4-7) on the same manipulated images.

    Recipes: the judge's best single settings (`best`, B.3 "Recipe for Analysis");
    without `best`, the single-step recipes scored with a non-standard prompt (the
    follow-up jobs run exactly those). Domains: the four non-Outdoor ones (footnote 4;
    the beauty filter applies to People only and is not in Table 5, so it is left out).
    Per prompt and manipulation, each domain's paired means (the manipulated images vs the
    same items' originals under the *same* prompt; for bias-definition vs the originals
    scored with the prompt naming that manipulation), then :func:`domain_average`.
    The "original" row of each prompt: per domain the mean of all its usable original
    scores under that prompt (for bias-definition: over the originals told of each
    manipulation, pooled), averaged over domains; its change is 0 by definition.

    Columns (long; the report pivots it to Table 5's layout): prompt, manipulation, n,
    n_domains, original_mean, manipulated_mean, change, percent_change.
    """
    mine = scores[(scores["judge"] == judge) & (scores["domain"] != "outdoor")]
    if best is not None:
        studied = _best_recipes(best, judge)[["domain", "recipe"]]
        studied = studied[studied["domain"] != "outdoor"]
    else:
        studied = mine.loc[(mine["prompt"] != "standard") & (mine["n_steps"] == 1),
                           ["domain", "recipe"]].drop_duplicates()
    prompts = [p for p in PROMPTS if p in set(mine["prompt"])]
    columns = ["prompt", "manipulation", "n", "n_domains", "original_mean",
               "manipulated_mean", "change", "percent_change"]
    tables = []
    for prompt in prompts:
        pairs = paired(mine, judge, prompt).merge(studied, on=["domain", "recipe"])
        pairs = pairs[pairs["manipulation"] != "beauty_filter"]
        originals = mine[(mine["prompt"] == prompt) & (mine["recipe"] == ORIGINAL)
                         & mine["score"].notna()]
        if prompt == "bias_definition" and not pairs.empty:
            originals = originals[originals["named"].isin(set(pairs["manipulation"]))]
        if originals.empty:
            continue
        base = originals.groupby("domain", sort=False).agg(
            n=("score", "size"), original_mean=("score", "mean")).reset_index()
        base = base.assign(manipulated_mean=base["original_mean"], manipulation=ORIGINAL)
        per_domain = pd.concat([base, summarise(pairs, ["domain", "manipulation"])],
                               ignore_index=True)
        tables.append(domain_average(per_domain, ["manipulation"]).assign(prompt=prompt))
    if not tables:
        return pd.DataFrame(columns=columns)
    return _order(pd.concat(tables, ignore_index=True)[columns], ["prompt", "manipulation"])


EXACT_WILCOXON_MAX = 16  # nonzero differences up to which every sign pattern is enumerated


def _wilcoxon_p(d: np.ndarray) -> float:
    """Two-sided Wilcoxon signed-rank p-value, zero differences dropped (scipy's default
    "wilcox"), ties given average ranks. Up to EXACT_WILCOXON_MAX nonzero differences the
    null distribution is enumerated exactly over all 2^n sign patterns (with ties too: the
    scores are rounded to 0.1, so ties are the rule); above, scipy's normal approximation
    with the tie correction (scipy's "auto" runs a permutation test there, minutes per
    table)."""
    nonzero = d[d != 0]
    n = len(nonzero)
    if n == 0:
        return 1.0
    if n > EXACT_WILCOXON_MAX:
        return float(stats.wilcoxon(nonzero, method="approx").pvalue)
    ranks = stats.rankdata(np.abs(nonzero))
    observed = ranks[nonzero > 0].sum()
    patterns = (np.arange(2**n)[:, None] >> np.arange(n)) & 1
    null = patterns @ ranks
    centre = ranks.sum() / 2
    extreme = np.abs(null - centre) >= abs(observed - centre) - 1e-9
    return float(extreme.mean())


def paired_tests(scores: pd.DataFrame, judge: str, settings: pd.DataFrame | None = None,
                 prompt: str = "standard") -> pd.DataFrame:
    """Beyond the paper: a paired test of each cell at a given setting.

    `settings`: rows (domain, manipulation, setting), e.g. :func:`best_settings` of a
    *different* run or half of the items (a setting chosen on the same items makes the
    test anticonservative, as for Table 3); None tests every setting of every grid (then
    nothing is selected and the FDR holds for the whole grid). Per test, on the paired
    items: mean difference with a 95 % t interval, the paired t-test
    (``scipy.stats.ttest_rel``) and the Wilcoxon signed-rank test (``scipy.stats.wilcoxon``,
    zero differences dropped, scipy's exact/normal choice), both two-sided, and
    Benjamini-Hochberg q-values (``multipletests(method="fdr_bh")``) across all the judge's
    tests, for each of the two p-values. A cell whose differences are all zero gets p = 1.

    Columns: judge, domain, manipulation, setting, n, mean_difference, ci_low, ci_high,
    t_p, wilcoxon_p, t_q, q_value (the Wilcoxon q-value).
    """
    pairs = paired(scores, judge, prompt)
    if settings is not None:
        pairs = pairs.merge(settings[[*CELL, "setting"]].drop_duplicates(),
                            on=[*CELL, "setting"])
    rows = []
    for keys, cell in pairs.groupby([*CELL, "setting"], sort=False):
        d = cell["difference"].to_numpy(dtype=float)
        n = len(d)
        if n < 2:
            continue
        spread = d.std(ddof=1)
        half = stats.t.ppf(0.975, n - 1) * spread / np.sqrt(n)
        if spread > 0:
            t_p = float(stats.ttest_rel(cell["score"], cell["original"]).pvalue)
        else:  # a constant difference: no variance, the t-test is undefined
            t_p = 1.0 if d[0] == 0 else 0.0
        w_p = _wilcoxon_p(d)
        rows.append(dict(zip([*CELL, "setting"], keys, strict=True)) | {
            "judge": judge, "n": n, "mean_difference": d.mean(), "ci_low": d.mean() - half,
            "ci_high": d.mean() + half, "t_p": t_p, "wilcoxon_p": w_p})
    columns = ["judge", *CELL, "setting", "n", "mean_difference", "ci_low", "ci_high",
               "t_p", "wilcoxon_p", "t_q", "q_value"]
    out = pd.DataFrame(rows, columns=[c for c in columns if c not in ("t_q", "q_value")])
    if out.empty:
        return pd.DataFrame(columns=columns)
    out["t_q"] = multipletests(out["t_p"], method="fdr_bh")[1]
    out["q_value"] = multipletests(out["wilcoxon_p"], method="fdr_bh")[1]
    out = out.assign(_grid=out["setting"].map(setting_key)).sort_values("_grid",
                                                                         kind="stable")
    return _order(out.drop(columns="_grid")[columns], CELL)
