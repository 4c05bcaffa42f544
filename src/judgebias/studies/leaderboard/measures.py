"""The leaderboard's statistics: each judging method's scores (`methods`) turned into the
leaderboard, the pairwise comparisons, the PPI++ intervals and the order changes.

* **Leaderboard and pairs** (judgebias.stats.ranking): each system's mean score over the
  items with a paired bootstrap interval (items are the resampling unit: every system's
  output on an item moves together, spec leaderboard.md "Units"), its rank interval from
  the same resamples, and every pairwise difference with its interval, test and
  Benjamini-Hochberg adjusted p-value over the method's pairs.
* **Human labels** (judgebias.stats.ppi): for each system's mean and each pairwise
  difference, PPI++ (Angelopoulos, Duchi and Zrnic, arXiv 2311.01453; power-tuned
  lambda) beside the human-only and the judge-only intervals, so the user sees what the
  labels buy. The labelled images must be a random sample of the task's images. An
  output whose method score is missing (a failed judge answer, an excluded judge) is
  left out of both parts; so is, for a difference, an image where either system's is.
* **Triage** (images tasks, mmb methods; spec leaderboard.md "Triage (MMB)"): the
  confidence threshold the MMB audit certifies for the target accuracy
  (judgebias.stats.triage), and per new pair whether the judge decides it or leaves it
  for humans.
* **Order changes**: every pair of systems a method orders unlike the baseline (the
  plain judge), said in words, with both methods' differences and whether each is
  significant after FDR.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import combinations

import numpy as np
import pandas as pd

from judgebias.stats.ppi import human_only_mean, judge_only_mean, ppi_mean
from judgebias.stats.ranking import leaderboard
from judgebias.stats.triage import TriageRule, triage
from judgebias.studies.leaderboard.methods import MethodScores
from judgebias.studies.leaderboard.params import Inference

PPI_COLUMNS = ("method", "target", "system", "other", "estimator", "unit", "estimate",
               "ci_low", "ci_high", "n_labelled", "n_unlabelled", "lam")
HUMAN_UNIT = "human labels"


def ppi_rows(method: str, matrix: pd.DataFrame, unit: str, labels: pd.DataFrame,
             confidence: float) -> pd.DataFrame:
    """Judge-only, human-only and PPI++ intervals of every system's mean and every
    pairwise difference (a minus b, in the method's system order) under `method`.

    `matrix` is images x systems (the method's scores, NaN: none); `labels` the
    (image_id, system, label) table. A system (or pair) needs two labelled and two
    unlabelled images with a score; with fewer it has no row.
    """
    truth = labels.pivot(index="image_id", columns="system", values="label").reindex(
        index=matrix.index, columns=matrix.columns)
    rows = []
    targets: list[tuple[str, str, pd.Series, pd.Series]] = [
        (s, "", matrix[s], truth[s]) for s in matrix.columns]
    targets += [(a, b, matrix[a] - matrix[b], truth[a] - truth[b])
                for a, b in combinations(matrix.columns, 2)]
    for system, other, f, y in targets:
        scored = f.notna().to_numpy()
        labelled = scored & y.notna().to_numpy()
        unlabelled = scored & y.isna().to_numpy()
        if labelled.sum() < 2 or unlabelled.sum() < 2:
            continue
        f_lab, f_unlab = f.to_numpy()[labelled], f.to_numpy()[unlabelled]
        y_lab = y.to_numpy()[labelled]
        estimates = (("judge_only", unit, judge_only_mean(f.to_numpy()[scored], confidence)),
                     ("human_only", HUMAN_UNIT, human_only_mean(y_lab, confidence)),
                     ("ppi++", HUMAN_UNIT, ppi_mean(y_lab, f_lab, f_unlab,
                                                    confidence=confidence)))
        for estimator, in_unit, interval in estimates:
            rows.append({"method": method, "target": "difference" if other else "mean",
                         "system": system, "other": other, "estimator": estimator,
                         "unit": in_unit, "estimate": interval.estimate,
                         "ci_low": interval.ci_low, "ci_high": interval.ci_high,
                         "n_labelled": int(labelled.sum()) if estimator != "judge_only" else 0,
                         "n_unlabelled": int(unlabelled.sum()) if estimator == "ppi++"
                         else int(scored.sum()) if estimator == "judge_only" else 0,
                         "lam": float("nan") if interval.lam is None else interval.lam})
    return pd.DataFrame(rows, columns=list(PPI_COLUMNS))


def order_changes(pairs: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """Every pair of systems a method orders unlike `baseline`, in words.

    `pairs` holds every method's pairwise table (method, system_a, system_b, difference,
    significant: judgebias.stats.ranking's pairs with the method's name). A change is a
    pair whose difference has the other sign under the method (a tie under either is no
    change)."""
    base = pairs[pairs["method"] == baseline].set_index(["system_a", "system_b"])
    rows = []
    for record in pairs[pairs["method"] != baseline].to_dict("records"):
        key = (record["system_a"], record["system_b"])
        if key not in base.index:
            continue
        plain = base.loc[key]
        if not np.sign(record["difference"]) * np.sign(plain["difference"]) < 0:
            continue
        above, below = key if record["difference"] > 0 else key[::-1]
        rows.append({
            "method": record["method"], "above": above, "below": below,
            "difference": abs(record["difference"]), "significant": bool(record["significant"]),
            "baseline_difference": abs(plain["difference"]),
            "baseline_significant": bool(plain["significant"]),
            "text": (f"{record['method']} ranks {above} above {below} "
                     f"({_verdict(record['significant'])}); the plain judge {baseline} "
                     f"ranked {below} above {above} ({_verdict(plain['significant'])})"),
        })
    return pd.DataFrame(rows, columns=["method", "above", "below", "difference",
                                       "significant", "baseline_difference",
                                       "baseline_significant", "text"])


def _verdict(significant: bool) -> str:
    return "significant after FDR" if significant else "not significant"


def summary(systems: pd.DataFrame, changes: pd.DataFrame) -> dict[str, object]:
    """metrics.json: per method, each system's mean and interval and its rank interval,
    and the number of order changes against the baseline."""
    out: dict[str, object] = {}
    for method, group in systems.groupby("method", sort=False):
        out[str(method)] = {
            "unit": str(group["unit"].iloc[0]),
            "systems": {r["system"]: {k: r[k] for k in ("mean", "low", "high", "rank",
                                                         "rank_low", "rank_high", "n")}
                        for r in group.to_dict("records")},
            "order_changes": int((changes["method"] == method).sum()),
        }
    return out



def rank_methods(scored: Mapping[str, MethodScores], systems: Sequence[str],
                 inference: Inference) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every method's leaderboard (per system: mean, interval, rank interval, the judges
    it kept) and pairwise table (differences, tests, FDR), from one paired bootstrap over
    items per method (judgebias.stats.ranking.leaderboard), seeded alike so methods are
    compared on the same resamples."""
    boards, pairs = [], []
    for name, method in scored.items():
        ranked = leaderboard(method.matrix.to_numpy(), list(systems),
                             n_resamples=inference.resamples,
                             confidence_level=inference.level, fdr=inference.fdr,
                             rng=inference.seed)
        boards.append(ranked.systems.assign(
            method=name, unit=method.unit,
            judges=[",".join(method.judges[s]) for s in ranked.systems["system"]]))
        pairs.append(ranked.pairs.assign(method=name, unit=method.unit))
    return pd.concat(boards, ignore_index=True), pd.concat(pairs, ignore_index=True)


def triage_rows(method: str, calibrated: pd.DataFrame, rule: TriageRule) -> pd.DataFrame:
    """Each compared pair under an mmb method with its calibrated p(system_a preferred),
    the judge's confidence max(p, 1 - p), and whether triage lets the judge decide it
    (its confidence reaches the threshold the audit certifies, judgebias.stats.triage);
    a pair without a calibrated p is left for humans."""
    p = calibrated["p"].to_numpy(dtype=float)
    confidence = np.maximum(p, 1 - p)
    usable = ~np.isnan(p)
    decided = np.zeros(len(p), dtype=bool)
    decided[usable] = triage(rule, confidence[usable])
    return calibrated[["pair_id", "item_id", "system_a", "system_b", "p"]].assign(
        method=method, confidence=confidence, decided=decided, target_accuracy=rule.target,
        threshold=np.nan if rule.threshold is None else rule.threshold
    )[list(TRIAGE_COLUMNS)]


TRIAGE_COLUMNS = ("method", "pair_id", "item_id", "system_a", "system_b", "p",
                  "confidence", "decided", "target_accuracy", "threshold")


def triage_summary(rows: pd.DataFrame, rule: TriageRule) -> dict[str, object]:
    """metrics.json's triage of one mmb method: the certified threshold and the audit's
    evidence for it, and how many new pairs the judge decides and leave for humans."""
    return {"target_accuracy": rule.target, "risk": rule.delta,
            "threshold": rule.threshold, "audit_accuracy": rule.audit_accuracy,
            "audit_accuracy_interval": [rule.accuracy_low, rule.accuracy_high],
            "audit_pairs": rule.n_audit, "decided": int(rows["decided"].sum()),
            "for_humans": int((~rows["decided"]).sum()),
            "decided_share": float(rows["decided"].mean()) if len(rows) else 0.0}
