"""How much validation data MMB needs before it helps (issue 20, item 8): the judge's ECE
under AVG, BPE and MMB, and MMB's top-instruction recovery, against validation pairs per
cluster, at the report's prompt count and K.

MMB fits K weight vectors where BPE fits one, so each cluster sees about n_val / K of the
validation pairs; with few of them per cluster its weights stay near uniform (eq. 9's
entropy term: no data is AVG) or follow noise. The curve shows where it starts to pay.
"Per cluster" is n_val / K, nominal: soft clusters are not equal in size.
Recovery (the Fig. 4 check, as data grow): MMB fitted on the first n_val validation
candidates of each training seed with the whole pool, clustering seed 0; the share of
clusters dominated by one style whose top instruction is the planted best one (simulated
judges only; NaN otherwise).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from judgebias.studies.mmb.estimator import MultimodalBayesianEnsemble
from judgebias.studies.mmb.measures.comparison import cell_predictions, weighted_ece
from judgebias.studies.mmb.measures.factorial import Split, validation_order
from judgebias.studies.mmb.measures.factorial_inputs import FactorialInputs

PER_CLUSTER = (0, 1, 2, 5, 10, 20, 50, 100, 256)


def per_cluster_grid(n_candidates: int, k: int) -> list[int]:
    """Validation pairs per cluster to try: PER_CLUSTER up to what the candidates allow,
    and the most they allow."""
    most = n_candidates // k
    return sorted({*(n for n in PER_CLUSTER if n <= most), most})


def recovery(split: Split, R: np.ndarray, n_val: int, planted: Sequence[int | None], *,
             train_seeds: Sequence[int], entropy: str = "per_group") -> float:
    """Share of (training seed, cluster) with a planted best instruction (a column) whose
    top instruction is that one, MMB fitted on the seed's first n_val candidates with
    responsibilities R (NaN when no cluster has one)."""
    wanted = [(z, want) for z, want in enumerate(planted) if want is not None]
    if not wanted:
        return float("nan")
    hits = []
    for t in train_seeds:
        val = validation_order(t, len(split.y_pool))[:n_val]
        top = MultimodalBayesianEnsemble(entropy=entropy).fit(
            split.P_pool[val], split.y_pool[val], responsibilities=R[val]).top_prompts_
        hits += [top[z] == want for z, want in wanted]
    return float(np.mean(hits))


def power_curve(inputs: FactorialInputs, top: pd.DataFrame, *, k: int, n_prompts: int
                ) -> pd.DataFrame:
    """One row per validation size: pairs per cluster, mean ECE of AVG, BPE and MMB over
    the replicate runs (MMB also over clustering seeds) and MMB's recovery. `top` is the
    judge's top_prompts table (its planted column gives each cluster's planted best)."""
    split = inputs.hps
    column = {name: i for i, name in enumerate(inputs.pool)}
    planted = [column.get(p) if isinstance(p, str) else None
               for p in top.sort_values("cluster")["planted"]]
    ones = np.ones(len(split.y_test))
    rows = []
    for per_cluster in per_cluster_grid(len(split.y_pool), k):
        n_val = per_cluster * k
        runs = cell_predictions(split, inputs.design, n_prompts, n_val, k)
        rows.append({"per_cluster": per_cluster, "n_val": n_val,
                     **{m: float(weighted_ece(p, split.y_test, ones).mean())
                        for m, p in runs.items()},
                     "recovery": recovery(split, split.R_pool[(k, 0)], n_val, planted,
                                          train_seeds=inputs.design.train_seeds,
                                          entropy=inputs.design.entropy)})
    return pd.DataFrame(rows)
