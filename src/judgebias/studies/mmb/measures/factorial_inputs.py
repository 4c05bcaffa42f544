"""The factorial's inputs (seed 002 §5): one judge's judged probabilities and the clusters
as the arrays every configuration of the design (factorial.py) reweights."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from judgebias.models.base import STATUS_FAILED
from judgebias.studies.mmb.measures.cluster import softmax_cosines
from judgebias.studies.mmb.measures.factorial import Design, Split
from judgebias.studies.mmb.tables import HPS, MJB

if TYPE_CHECKING:
    from judgebias.studies.mmb.params import MmbParams


def pair_probabilities(judgements: pd.DataFrame, pool: list[str]) -> pd.DataFrame:
    """p(A preferred | pair, instruction) as a pairs x instructions frame (the mean over
    orders when both were asked); NaN where no usable answer exists. A sampled judge's
    estimate stands on each usable sample's row (jobs.py): it counts once per order."""
    usable = judgements[judgements["p_a"].notna()].drop_duplicates(
        ["pair_id", "instruction", "order"])
    wide = usable.pivot_table(index="pair_id", columns="instruction", values="p_a",
                              aggfunc="mean")
    return wide.reindex(columns=pool)


def responsibilities(clusters: pd.DataFrame, tau: float, mode: str) -> np.ndarray:
    """p(z | pair) from stored cosines (spec mmb.md): the mean of the two images'
    softmax(cos / tau), or softmax of the normalised mean embedding's cosines."""
    if mode == "mean_embedding":
        return softmax_cosines(np.stack(clusters["cos_mean"].to_numpy()), tau)
    return (softmax_cosines(np.stack(clusters["cos_a"].to_numpy()), tau)
            + softmax_cosines(np.stack(clusters["cos_b"].to_numpy()), tau)) / 2


@dataclass
class FactorialInputs:
    """One judge's arrays for the factorial: the HPSv2 split, the MJBench folds, the
    design, and what was left out."""

    judge: str
    pool: list[str]
    pool_texts: list[str]
    hps: Split
    hps_pairs: pd.DataFrame  # the pool (validation candidates) then the test pairs used
    mjb: dict[int, Split]
    design: Design
    pairs_used: int
    pairs_dropped: int
    smoothed_answers: int
    failed_answers: int  # calls that failed, kept because max_failures accepted them


def factorial_inputs(params: MmbParams, pairs: pd.DataFrame, pool_table: pd.DataFrame,
                     judgements: pd.DataFrame, clusters: pd.DataFrame, *,
                     tau: float | None = None) -> FactorialInputs:
    """Arrays of p(A preferred) for the pairs with a usable answer under every
    instruction, with responsibilities at `tau` (default: the params' tau). The frames are
    the pair table, the instruction pool, one judge's judgements and the clusters table."""
    clustering, design = params.clustering, params.design
    tau = clustering.tau if tau is None else tau
    pool = pool_table["id"].tolist()
    wide = pair_probabilities(judgements, pool)
    usable = pairs[pairs["pair_id"].isin(wide.dropna().index)]

    def split(val: pd.DataFrame, test: pd.DataFrame, part: str, fold: int) -> Split:
        rows = clusters[(clusters["part"] == part) & (clusters["fold"] == fold)]
        R_val, R_test = {}, {}
        for (k, c), group in rows.groupby(["k", "cluster_seed"]):
            # column-major, as a frame's .to_numpy() gave them (the layout a BLAS call
            # sees can change a product's last bit)
            R = responsibilities(group, tau, clustering.pair)
            R_val[(int(k), int(c))] = np.asfortranarray(
                R[_positions(group["pair_id"], val["pair_id"])])
            R_test[(int(k), int(c))] = np.asfortranarray(
                R[_positions(group["pair_id"], test["pair_id"])])
        return Split(wide.loc[val["pair_id"]].to_numpy(float), val["preference"].to_numpy(int),
                     wide.loc[test["pair_id"]].to_numpy(float),
                     (test["preference"].to_numpy() > 0.5).astype(int), R_val, R_test)

    train = usable[usable["split"] == "train"]
    test = usable[usable["split"] == "test"]
    folds = {}
    mjb = usable[usable["split"] == "mjb_train"]
    for fold in sorted(usable.loc[usable["split"] == "mjb_test", "fold"].dropna().unique()):
        held = usable[(usable["split"] == "mjb_test") & (usable["fold"] == fold)]
        folds[int(fold)] = split(mjb[mjb["fold"] != fold], held, MJB, int(fold))
    return FactorialInputs(
        judge=str(judgements["judge"].iloc[0]), pool=pool,
        pool_texts=pool_table["text"].tolist(),
        hps=split(train, test, HPS, -1), hps_pairs=pd.concat([train, test]), mjb=folds,
        design=Design(n_prompts=design.n_prompts, n_val=design.n_val,
                      train_seeds=range(design.train_seeds),
                      sampling_seeds=range(design.sampling_seeds),
                      entropy=params.entropy, coverages=coverage_grid(design.coverages),
                      n_jobs=min(2, os.cpu_count() or 1),
                      calibration_bins=design.calibration_bins,
                      bpe_reference=design.bpe_reference.regularisers,
                      bpe_reference_weight=design.bpe_reference.weight),
        pairs_used=len(usable), pairs_dropped=len(pairs) - len(usable),
        smoothed_answers=int((judgements["p_source"] == "smoothed_choice").sum()),
        failed_answers=int((judgements["status"] == STATUS_FAILED).sum()))


def _positions(index: pd.Series, wanted: pd.Series) -> np.ndarray:
    """Where each of `wanted` sits in `index` (unique pair ids); a KeyError naming the
    missing ones, as ``.loc`` would raise."""
    found = pd.Index(index).get_indexer(wanted)
    if (found < 0).any():
        raise KeyError(f"pair ids without clusters: {list(wanted[found < 0])[:5]}")
    return found


def coverage_grid(points: int) -> np.ndarray:
    """`points` coverages evenly spaced in (0, 1], ending at 1 (Fig. 3's x axis)."""
    return np.linspace(1.0 / points, 1.0, points)



def validation_shortfalls(inputs: FactorialInputs) -> list[tuple[str, int]]:
    """The splits (HPSv2 training, each MJBench fold) with fewer usable validation pairs
    than the largest ``mmb.design.n_val``, each with its count."""
    largest = max(inputs.design.n_val)
    splits = [("HPSv2 training", inputs.hps),
              *((f"MJBench fold {f}", s) for f, s in inputs.mjb.items())]
    return [(name, len(split.y_pool)) for name, split in splits
            if largest > len(split.y_pool)]
