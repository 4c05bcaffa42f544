"""The recorded study's measures: each paper's own estimator, applied to a recorded table
(none is new here; each keeps the inference its module documents and benchmarks).

**Scores** (seed 000, Philautia-Eval). The table's scores are put on [0, 1] by the
judge's stated scale, ``(score - low) / (high - low)``, and back in scale points for the
effects, exactly as philautia puts G-VEval's 0-100 on [0, 1] (seed 000 §5):

* self- and family-preference per judge, in score points with clustered intervals:
  :func:`judgebias.studies.philautia.selfpref.self_preference`, on every model that
  generates or judges (a model only generating or only judging is allowed: its own
  effect is not identified and says so);
* the paper's philautia score (Phi-tilde's diagonal, seed 000 §4.1, Algorithm 1) and its
  diagonal test, on the square sub-panel (the models that are both generator and judge;
  the paper's measure needs a square panel, so models outside it are listed as left
  out): :func:`judgebias.studies.philautia.measures.analyse`;
* with human ratings, each judge's Kendall tau-b and tau-c against them with an item
  cluster bootstrap: :func:`judgebias.stats.agreement.agreement`.

**Pairwise** (judge-card.md §1, Shi et al.; seed 003 §3.4). Each verdict is coded by the
pair (item and the two outputs, whichever was shown first), the order (``ab`` when the
output with the smaller id was shown first) and the slot picked:

* the position measures (PC, PF, first-slot rate, extraction rate, gold-slot gap):
  :func:`judgebias.stats.position.position_bias`;
* with human preferences, accuracy (a judge's tie counts as wrong; a human tie leaves
  the pair out), and with informativeness labels BIRCH's Acc_IDS, Acc_CDS and
  IB = Acc_IDS - Acc_CDS (seed 003 §3.4): a pair's correctness is the mean over its
  verdicts (both orders and repeats travel together), and the intervals are BIRCH's
  paired bootstrap over pairs (judgebias.studies.birch.measures.inference.bootstrap_table).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from judgebias.studies.recorded.data import TIE, pair_id

SLOTS = {"first": "A", "second": "B", "tie": "tie"}
MIN_SQUARE = 3  # Phi-tilde standardises each evaluator's column over the generators


def model_order(table: pd.DataFrame) -> list[str]:
    """Generators then judges, each once, in the order the table first names them."""
    named = [g for g in table["generator"] if g]
    return list(dict.fromkeys([*named, *table["judge"]]))


def philautia_long(table: pd.DataFrame, scale: tuple[float, float]) -> pd.DataFrame:
    """The rows that name their generator, as philautia's long score table on [0, 1]."""
    rows = table[table["generator"] != ""]
    low, high = scale
    return pd.DataFrame({"image_id": rows["item"].to_numpy(),
                         "generator": rows["generator"].to_numpy(),
                         "evaluator": rows["judge"].to_numpy(),
                         "score": ((rows["score"] - low) / (high - low)).to_numpy()})


def family_of(models: list[str], families: Mapping[str, str]) -> dict[str, str]:
    """Each model's family; a model not listed is alone in a family of its own."""
    return {m: families.get(m, f"\x00{m}") for m in models}


def score_measures(table: pd.DataFrame, scale: tuple[float, float],
                   families: Mapping[str, str], *, ci: float, resamples: int, seed: int,
                   human: pd.DataFrame | None = None) -> tuple[dict[str, pd.DataFrame],
                                                                  dict[str, Any]]:
    """The scores table's measures (module docstring): tables by name, and metrics."""
    from judgebias.studies.philautia.measures import analyse
    from judgebias.studies.philautia.selfpref import self_preference

    long = philautia_long(table, scale)
    models = model_order(table[table["generator"] != ""])
    fams = family_of(models, families)
    tables: dict[str, pd.DataFrame] = {}
    metrics: dict[str, Any] = {"models": models, "n_scores": len(table),
                               "n_without_generator": int((table["generator"] == "").sum())}
    if len(models) >= 2 and len(long):
        tables["self_preference"] = self_preference(long, models, fams, ci=ci,
                                                    scale=scale[1] - scale[0])
    generators, judges = set(long["generator"]), set(long["evaluator"])
    square = [m for m in models if m in generators and m in judges]
    metrics["square_panel"] = square
    metrics["left_out_of_square"] = [m for m in models if m not in square]
    if len(square) >= MIN_SQUARE:
        inside = long[long["generator"].isin(square) & long["evaluator"].isin(square)]
        result = analyse(inside, square, fams, n_boot=resamples, n_permutations=10_000,
                         seed=seed, ci=ci)
        tables["philautia"] = result.philautia.reset_index(names="model")
        metrics["philautia"] = result.metrics()
    else:
        metrics["philautia"] = (f"needs a square panel of at least {MIN_SQUARE} models "
                                f"that both generate and judge (have: {len(square)})")
    if human is not None:
        tables["agreement"] = agreement_table(table, human, ci=ci, resamples=resamples,
                                              seed=seed)
    return tables, metrics


def agreement_table(table: pd.DataFrame, human: pd.DataFrame, *, ci: float,
                    resamples: int, seed: int) -> pd.DataFrame:
    """Each judge's Kendall tau-b / tau-c against the human ratings (one row per rating:
    an output rated by one human is one row), items as the bootstrap's clusters."""
    from judgebias.stats.agreement import agreement

    rated = table.merge(human, on=["item", "output_id"], how="inner", validate="many_to_one")
    return agreement(rated, "score", human_column="rating", by="judge", cluster="item",
                     n_resamples=resamples, seed=seed, confidence_level=ci)


def verdicts(table: pd.DataFrame, preferred: pd.Series | None = None) -> pd.DataFrame:
    """The pairwise table coded for judgebias.stats.position: pair, order, slot, and
    (with human preferences) gold, the slot the preferred output was shown in."""
    pairs = [pair_id(i, a, b) for i, a, b in zip(table["item"], table["first"],
                                                table["second"], strict=True)]
    coded = pd.DataFrame({
        "judge": table["judge"].to_numpy(), "item": pairs,
        "order": np.where(table["first"] < table["second"], "ab", "ba"),
        "slot": table["verdict"].map(SLOTS).to_numpy(),
        "first": table["first"].to_numpy(), "second": table["second"].to_numpy()})
    if preferred is not None:
        wanted = coded["item"].map(preferred)
        gold = pd.Series(pd.NA, index=coded.index, dtype="object")
        gold[wanted == coded["first"]] = "A"
        gold[wanted == coded["second"]] = "B"
        coded["gold"] = gold
        picked = np.where(coded["slot"] == "A", coded["first"],
                          np.where(coded["slot"] == "B", coded["second"], TIE))
        usable = wanted.notna() & (wanted != TIE)
        coded["correct"] = np.where(usable, (picked == wanted).astype(float), np.nan)
    return coded


def accuracy_table(coded: pd.DataFrame, more_informative: pd.Series | None,
                   preferred: pd.Series, *, ci: float, resamples: int,
                   seed: int) -> pd.DataFrame:
    """Accuracy and, with informativeness labels, Acc_IDS, Acc_CDS and IB per judge
    (module docstring), with BIRCH's paired bootstrap intervals over pairs."""
    from judgebias.studies.birch.measures.inference import bootstrap_table, judge_seed

    rows = []
    for judge, group in coded.groupby("judge", sort=False):
        correct = group.groupby("item")["correct"].mean()
        index = correct.index
        columns = {("judge", "all"): correct.to_numpy()}
        if more_informative is not None:
            wanted = preferred.reindex(index)
            informative = more_informative.reindex(index)
            labelled = (wanted.notna() & (wanted != TIE) & informative.notna()
                        & (informative != ""))
            ids = labelled & (wanted == informative)
            cds = labelled & (wanted != informative)
            for name, inside in (("labelled", labelled), ("IDS", ids), ("CDS", cds)):
                columns["judge", name] = np.where(inside.to_numpy(), correct.to_numpy(),
                                                  np.nan)
        names = pd.MultiIndex.from_tuples(list(columns), names=["variant", "pair_set"])
        frame = pd.DataFrame(np.column_stack(list(columns.values())), index=index,
                             columns=names)
        intervals = bootstrap_table(frame, resamples=resamples, method="percentile",
                                    level=ci, seed=judge_seed(seed, str(judge)))
        rows.append(intervals.drop(columns=["variant", "versus"]).assign(judge=judge))
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame()


def pairwise_measures(table: pd.DataFrame, *, ci: float, resamples: int, seed: int,
                      randomised: bool, preferred: pd.Series | None = None,
                      more_informative: pd.Series | None = None
                      ) -> tuple[dict[str, pd.DataFrame], dict[str, Any]]:
    """The pairwise table's measures (module docstring): tables by name, and metrics."""
    from judgebias.stats.position import position_bias

    coded = verdicts(table, preferred)
    position = []
    for judge, group in coded.groupby("judge", sort=False):
        columns = ["item", "order", "slot", *(["gold"] if preferred is not None else [])]
        position.append(position_bias(group[columns], randomised=randomised,
                                      n_resamples=resamples, confidence_level=ci,
                                      seed=seed).assign(judge=judge))
    tables = {"position": pd.concat(position, ignore_index=True)}
    if preferred is not None:
        tables["accuracy"] = accuracy_table(coded, more_informative, preferred, ci=ci,
                                            resamples=resamples, seed=seed)
    metrics = {"judges": list(dict.fromkeys(table["judge"])), "n_verdicts": len(table),
               "n_pairs": int(coded["item"].nunique())}
    return tables, metrics
