"""Score changes under manipulation (seed 004 Tables 3-6, 9-12, Fig. 2; spec frame.md).

Every change is *paired*: an item counts in a cell only if the judge gave a usable score
both to its original and to its manipulated image under the same prompt (for the
bias-definition prompt, to the original told the same manipulation). The paper's percent
change is ``(mean_manipulated - mean_original) / mean_original * 100`` from unrounded
means (§5.1; spec frame.md).

The paper's Table 3 reports, per cell, the setting with the highest mean on the very items
it is scored on: the maximum over 16, 5 or 7 settings, which "gains" even for a judge with
no susceptibility. :func:`in_sample_table` reproduces that number; :func:`cross_fitted_table`
adds the spec's decision: choose the setting on one half of the items, score it on the
other, swap, and average, with a t interval and an exact sign-flip permutation p-value of
the whole procedure, plus the permutation null of the in-sample maximum itself.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.stats.multitest import multipletests

from judgebias.studies.frame.recipes import ORIGINAL, applies

CELL = ["domain", "manipulation"]


def paired(scores: pd.DataFrame, judge: str, prompt: str = "standard",
           n_steps: int | None = 1) -> pd.DataFrame:
    """One row per (item, manipulated recipe) with both scores usable: the original's
    (matched on `named` too) and the manipulated image's, and their difference."""
    mine = scores[(scores["judge"] == judge) & (scores["prompt"] == prompt)]
    mine = mine[mine["score"].notna()]
    originals = mine[mine["recipe"] == ORIGINAL][["item_id", "named", "score"]]
    changed = mine[mine["recipe"] != ORIGINAL]
    if n_steps is not None:
        changed = changed[changed["n_steps"] == n_steps]
    both = changed.merge(originals.rename(columns={"score": "original"}),
                         on=["item_id", "named"])
    return both.assign(difference=both["score"] - both["original"])


def _summary(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    out = frame.groupby(keys, sort=False).agg(n=("score", "size"),
                                             original_mean=("original", "mean"),
                                             manipulated_mean=("score", "mean")).reset_index()
    out["change"] = out["manipulated_mean"] - out["original_mean"]
    out["percent_change"] = out["change"] / out["original_mean"] * 100
    return out


def in_sample_table(scores: pd.DataFrame, judge: str, prompt: str = "standard"
                    ) -> pd.DataFrame:
    """Table 3 as the paper computes it: per (domain, manipulation) the setting with the
    highest mean score on the same items, its mean, the originals' and the % change."""
    settings = _summary(paired(scores, judge, prompt), [*CELL, "setting"])
    best = settings.loc[settings.groupby(CELL, sort=False)["manipulated_mean"].idxmax()]
    return best.reset_index(drop=True)


def best_settings(scores: pd.DataFrame, judge: str, prompt: str = "standard"
                  ) -> pd.DataFrame:
    """Tables 9-10: the greedy recipe search, each manipulation's setting chosen to
    maximise the judge's mean score per domain (App. B.3)."""
    best = in_sample_table(scores, judge, prompt)
    return best[[*CELL, "setting", "percent_change"]].assign(judge=judge)


def _difference_matrix(cell: pd.DataFrame) -> tuple[np.ndarray, list[str], float]:
    wide = cell.pivot_table(index="item_id", columns="setting", values="difference")
    original = cell.drop_duplicates("item_id").set_index("item_id")["original"]
    wide = wide.dropna()  # items scored under every setting (the grid's common items)
    return wide.to_numpy(), list(wide.columns), float(original.loc[wide.index].mean())


def cross_fit(differences: np.ndarray, halves: np.ndarray, signs: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray]:
    """The cross-fitted gain and the in-sample maximum gain for each row of `signs`
    (items' whole rows of differences flipped together: the sign-flip null of "no
    manipulation changes this judge's scores"); row 0 of `signs` is all ones.

    `halves` is a boolean item mask: the setting chosen on one half is scored on the other.
    """
    flipped_sum_a = signs[:, halves] @ differences[halves]
    flipped_sum_b = signs[:, ~halves] @ differences[~halves]
    n_a, n_b = halves.sum(), (~halves).sum()
    choose_a = (flipped_sum_a / n_a).argmax(axis=1)
    choose_b = (flipped_sum_b / n_b).argmax(axis=1)
    rows = np.arange(len(signs))
    cross = (flipped_sum_b[rows, choose_a] + flipped_sum_a[rows, choose_b]) / (n_a + n_b)
    in_sample = ((flipped_sum_a + flipped_sum_b) / (n_a + n_b)).max(axis=1)
    return cross, in_sample


def cross_fitted_table(scores: pd.DataFrame, judge: str, prompt: str = "standard",
                       n_permutations: int = 2000, seed: int = 0) -> pd.DataFrame:
    """Per (domain, manipulation): the paper's in-sample maximum gain with the mean and 95th
    percentile of its permutation null and its p-value; the cross-fitted gain (two
    halves, chosen within the cell by a seeded shuffle) with a t interval over the items'
    out-of-fold differences (the chosen settings held fixed) and an exact sign-flip
    permutation p-value of the whole procedure (one-sided: an increase)."""
    rng = np.random.default_rng(seed)
    rows = []
    for (domain, manipulation), cell in paired(scores, judge, prompt).groupby(CELL, sort=False):
        differences, settings, original = _difference_matrix(cell)
        n = len(differences)
        if n < 4:
            continue
        halves = np.zeros(n, dtype=bool)
        halves[rng.permutation(n)[: n // 2]] = True
        signs = rng.choice([-1.0, 1.0], size=(n_permutations + 1, n))
        signs[0] = 1.0
        cross, in_sample = cross_fit(differences, halves, signs)
        pick_a = differences[halves].mean(axis=0).argmax()
        pick_b = differences[~halves].mean(axis=0).argmax()
        out_of_fold = np.where(halves, differences[:, pick_b], differences[:, pick_a])
        half_width = stats.t.ppf(0.975, n - 1) * out_of_fold.std(ddof=1) / np.sqrt(n)
        rows.append({
            "domain": domain, "manipulation": manipulation, "n": n,
            "original_mean": original,
            "in_sample_setting": settings[int(differences.mean(axis=0).argmax())],
            "in_sample_gain": in_sample[0],
            "in_sample_percent": in_sample[0] / original * 100,
            "null_mean": in_sample[1:].mean(), "null_q95": np.quantile(in_sample[1:], 0.95),
            "in_sample_p": (1 + (in_sample[1:] >= in_sample[0]).sum()) / (n_permutations + 1),
            "cross_fitted_gain": cross[0], "cross_fitted_percent": cross[0] / original * 100,
            "ci_low": out_of_fold.mean() - half_width, "ci_high": out_of_fold.mean() + half_width,
            "p_value": (1 + (cross[1:] >= cross[0]).sum()) / (n_permutations + 1),
        })
    return pd.DataFrame(rows)


def attack_success(changes: pd.DataFrame) -> pd.DataFrame:
    """Fig. 2: per judge, the share of applicable (domain, manipulation) cells whose
    percent change is strictly positive (0.0 % is no success; 34 cells = 5 x 7 - 2 + 1),
    and the mean percent change over the successful cells only."""
    rows = []
    for judge, mine in changes.groupby("judge", sort=False):
        mine = mine[[applies(m, d) for m, d in zip(mine["manipulation"], mine["domain"],
                                                   strict=True)]]
        wins = mine[mine["percent_change"] > 0]
        rows.append({"judge": judge, "cells": len(mine), "successes": len(wins),
                     "success_rate": 100 * len(wins) / len(mine) if len(mine) else np.nan,
                     "mean_gain": wins["percent_change"].mean() if len(wins) else np.nan})
    return pd.DataFrame(rows)


def mitigation_table(scores: pd.DataFrame, judge: str) -> pd.DataFrame:
    """Table 5: per prompt and manipulation (at the recipes the mitigation prompts were
    run on), the mean over the four non-Outdoor domains (footnote 4) of the originals and
    of the manipulated images, and the % change; each prompt's original row (for the
    bias-definition prompt: the originals told of each manipulation, pooled)."""
    mine = scores[(scores["judge"] == judge) & (scores["domain"] != "outdoor")]
    prompts = [p for p in ("standard", "bias_aware", "bias_definition", "cot")
               if p in set(mine["prompt"])]
    studied = mine.loc[(mine["prompt"] != "standard") & (mine["n_steps"] == 1),
                       ["domain", "recipe"]].drop_duplicates()
    rows = []
    for prompt in prompts:
        pairs = paired(mine, judge, prompt).merge(studied, on=["domain", "recipe"])
        originals = mine[(mine["prompt"] == prompt) & (mine["recipe"] == ORIGINAL)]
        rows.append({"prompt": prompt, "manipulation": ORIGINAL,
                     "n": int(originals["score"].notna().sum()),
                     "original_mean": originals["score"].mean(),
                     "manipulated_mean": originals["score"].mean(), "percent_change": 0.0})
        summary = _summary(pairs, ["manipulation"]).assign(prompt=prompt)
        rows += summary.drop(columns="change").to_dict("records")
    return pd.DataFrame(rows, columns=["prompt", "manipulation", "n", "original_mean",
                                       "manipulated_mean", "percent_change"])


def combinations_table(scores: pd.DataFrame, judge: str, best: pd.DataFrame,
                       detail: bool = False) -> pd.DataFrame:
    """Tables 6 and 11: per domain, the originals' mean and the best single recipe (among
    the judge's best settings), best pair and best triple (by mean score), each with its
    % change and recipe. `detail`: every combination's row instead."""
    singles = paired(scores, judge, n_steps=1)
    singles = singles[singles["recipe"].isin(set(best["recipe"]))]
    every = pd.concat([singles, paired(scores, judge, n_steps=2),
                       paired(scores, judge, n_steps=3)], ignore_index=True)
    summary = _summary(every, ["domain", "n_steps", "recipe"])
    if detail:
        return summary
    top = summary.loc[summary.groupby(["domain", "n_steps"], sort=False)[
        "manipulated_mean"].idxmax()]
    return top.reset_index(drop=True)


def paired_tests(scores: pd.DataFrame, judge: str, prompt: str = "standard") -> pd.DataFrame:
    """Beyond the paper: every (domain, manipulation, setting) tested on its paired items:
    mean difference with a 95 % t interval, paired t-test and Wilcoxon signed-rank p-values
    (two-sided), and Benjamini-Hochberg q-values across all of the judge's tests (every
    setting is tested, none selected, so the FDR holds for the whole grid)."""
    rows = []
    for keys, cell in paired(scores, judge, prompt).groupby([*CELL, "setting"], sort=False):
        d = cell["difference"].to_numpy()
        n = len(d)
        if n < 2:
            continue
        spread = d.std(ddof=1)
        half = stats.t.ppf(0.975, n - 1) * spread / np.sqrt(n)
        t_p = stats.ttest_rel(cell["score"], cell["original"]).pvalue if spread > 0 else (
            1.0 if d.mean() == 0 else 0.0)
        w_p = stats.wilcoxon(d).pvalue if np.any(d != 0) else 1.0
        rows.append(dict(zip([*CELL, "setting"], keys, strict=True)) | {
            "n": n, "mean_difference": d.mean(), "ci_low": d.mean() - half,
            "ci_high": d.mean() + half, "t_p": float(t_p), "wilcoxon_p": float(w_p)})
    out = pd.DataFrame(rows)
    if not out.empty:
        out["q_value"] = multipletests(out["wilcoxon_p"], method="fdr_bh")[1]
    return out


