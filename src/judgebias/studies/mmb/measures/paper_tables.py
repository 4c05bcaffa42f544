"""The data of MMB's tables and figures (seed 002 §6): Tables 1-4, Fig. 1, Fig. 3 and the
top instruction per cluster (Fig. 4), each per judge, with the paper's significance procedure
(paired permutation tests against the best method per cell, Benjamini-Yekutieli per
metric) and the checks the spec adds (tau sweep, answers without log-probs).

The replicate unit of every test is (training seed, sampling seed): every method is fitted
on the same validation pairs and prompt subset within a unit (spec mmb.md). MMB's rows are
averaged over clustering seeds within a unit, at the report's K unless the table varies K.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from judgebias.models.base import STATUS_FAILED
from judgebias.studies.mmb.estimator import MultimodalBayesianEnsemble
from judgebias.studies.mmb.measures.bands import crossed_bootstrap_band, unit_curves
from judgebias.studies.mmb.measures.cluster import mean_entropy
from judgebias.studies.mmb.measures.comparison import judge_comparisons, verdicts
from judgebias.studies.mmb.measures.factorial import run_factorial
from judgebias.studies.mmb.measures.factorial_inputs import (
    FactorialInputs,
    coverage_grid,
    factorial_inputs,
)
from judgebias.studies.mmb.measures.metrics import METRICS
from judgebias.studies.mmb.measures.power import power_curve
from judgebias.studies.mmb.measures.significance import compare_to_best

if TYPE_CHECKING:
    from judgebias.studies.mmb.params import MmbParams, Report

CELL = ["n_prompts", "n_val"]
UNIT = ["train_seed", "sampling_seed"]
TABLE1_METRICS = ("ece", "mce", "auc_pr")
TABLE2_METRICS = ("nll", "brier", "kappa", "accuracy", "roc_auc", "f1")
TABLE3_METRICS = ("ece", "nll", "brier", "kappa", "accuracy", "roc_auc", "f1")


def at_k(configurations: pd.DataFrame, k: int) -> pd.DataFrame:
    """Baseline rows and MMB rows at K = k, MMB averaged over clustering seeds per unit."""
    metrics = [m for m in METRICS if m in configurations.columns]
    base = configurations[configurations["method"] != "MMB"]
    mmb = configurations[(configurations["method"] == "MMB") & (configurations["k"] == k)]
    mmb = mmb.groupby([*CELL, *UNIT, "method"], as_index=False)[metrics].mean()
    return pd.concat([base[[*CELL, *UNIT, "method", *metrics]], mmb], ignore_index=True)


def significance_table(runs: pd.DataFrame, metrics: Sequence[str], *, table: str,
                       report: Report, cell: Sequence[str] = tuple(CELL),
                       method: str = "method") -> pd.DataFrame:
    """compare_to_best for each metric (BY within a metric, over this table's tests)."""
    frames = []
    for metric in metrics:
        result = compare_to_best(runs, metric=metric, higher_is_better=METRICS[metric][1],
                                 cell=list(cell), method=method, unit=UNIT,
                                 n_resamples=report.n_resamples, alpha=report.alpha,
                                 seed=report.seed)
        frames.append(result.assign(metric=metric, table=table))
    return pd.concat(frames, ignore_index=True)


def error_coverage_bands(configurations: pd.DataFrame, k: int, coverages: np.ndarray,
                         report: Report) -> pd.DataFrame:
    """Fig. 3 (the report's prompt count) and Appendix D's Fig. 5 (every prompt count):
    mean error at each coverage over replicate runs, with a 95 % bootstrap band of that
    mean that resamples training and sampling seeds as the crossed factors they are
    (bands.py: runs resampled as independent undercover), per (prompts, validation size,
    method)."""
    rows = configurations[configurations["error_coverage"].notna()
                          & ((configurations["method"] != "MMB")
                             | (configurations["k"] == k))]
    out = []
    for (n_prompts, n_val, method), group in rows.groupby(["n_prompts", "n_val", "method"]):
        mean, low, high = crossed_bootstrap_band(unit_curves(group), n_boot=report.n_boot,
                                                 ci=0.95, seed=report.seed)
        out.append(pd.DataFrame({"n_prompts": n_prompts, "n_val": n_val, "method": method,
                                 "coverage": coverages, "error": mean, "low": low,
                                 "high": high}))
    return pd.concat(out, ignore_index=True)


def answer_counts(judgements: pd.DataFrame) -> pd.DataFrame:
    """Per judge: answers by status and by where p(y | x, a) came from."""
    status = judgements.groupby(["judge", "status"]).size().unstack(fill_value=0)
    source = judgements.groupby(["judge", "p_source"]).size().unstack(fill_value=0)
    return pd.concat([status.add_prefix("status: "), source.add_prefix("p from: ")],
                     axis=1).fillna(0).astype(int).reset_index()


def section_tables(params: MmbParams, pairs: pd.DataFrame, pool: pd.DataFrame,
                   clusters: pd.DataFrame, judged: Mapping[str, pd.DataFrame],
                   configurations: Mapping[str, pd.DataFrame],
                   nopref: Mapping[str, pd.DataFrame]
                   ) -> tuple[dict[str, pd.DataFrame], dict[str, Any]]:
    """Every table of the MMB section (by name, tables.TABLES) and metrics.json's content,
    for every judge of ``mmb.models``: `judged`, `configurations` and `nopref` hold each
    judge's judgements and its factorial's two tables; `pairs`, `pool` and `clusters` are
    the pair table, the instruction pool and the clusters table."""
    report = params.report
    k, cell = report.k, report.cell
    coverages = coverage_grid(params.design.coverages)
    tables: dict[str, list[pd.DataFrame]] = {name: [] for name in (
        "table1", "table2", "table3", "table4", "significance", "error_coverage",
        "top_prompts", "tau_sweep", "comparisons", "power")}
    answers = []
    summary: dict[str, Any] = {}
    for judge in params.models:
        judgements, runs_of_judge = judged[judge], configurations[judge]
        answers.append(answer_counts(judgements))
        if runs_of_judge.empty:  # left out by its factorial (accepted failed calls)
            summary[judge] = {"left_out": True,
                              "failed_answers": int((judgements["status"]
                                                     == STATUS_FAILED).sum()),
                              "answers": len(judgements)}
            continue
        runs = at_k(runs_of_judge, k)
        first = significance_table(runs, TABLE1_METRICS, table="table1", report=report)
        in_cell = runs[(runs["n_prompts"] == cell[0]) & (runs["n_val"] == cell[1])]
        second = significance_table(in_cell, [*TABLE1_METRICS, *TABLE2_METRICS],
                                    table="table2", report=report)
        third = significance_table(k_runs(runs_of_judge, cell), TABLE3_METRICS,
                                   table="table3", report=report, method="k")
        fourth = (significance_table(at_k(nopref[judge], k), ["confidence"], table="table4",
                                     report=report)
                  if not nopref[judge].empty else pd.DataFrame())
        for name, frame in (("table1", first), ("table2", second), ("table3", third),
                            ("table4", fourth)):
            tables[name].append(frame.assign(judge=judge))
            tables["significance"].append(frame.assign(judge=judge))
        tables["error_coverage"].append(error_coverage_bands(
            runs_of_judge, k, coverages, report).assign(judge=judge))
        frames = (pairs, pool, judgements, clusters)
        inputs = factorial_inputs(params, *frames)
        top = top_prompts(params, inputs, judge)
        tables["top_prompts"].append(top)
        tables["tau_sweep"].append(tau_sweep(params, frames).assign(judge=judge))
        tables["comparisons"].append(comparisons(inputs, report, k, cell).assign(judge=judge))
        tables["power"].append(power_curve(inputs, top, k=k, n_prompts=cell[0]).assign(
            judge=judge))
        summary[judge] = judge_summary(second, top, inputs)
        how = params.sampled.get(judge)
        summary[judge]["probability"] = (
            {"source": "logprobs"} if how is None else
            {"source": "samples", "samples": how.n, "prior": how.prior,
             "usable_samples": int((judgements["p_source"] == "samples").sum())})
    if not tables["table1"]:
        raise ValueError("mmb.models: no judge has enough pairs with a usable answer for "
                         "every instruction (every one was left out by its failed calls)")
    out = {name: pd.concat(parts, ignore_index=True) for name, parts in tables.items()}
    out["comparisons"] = verdicts(out["comparisons"], report.alpha)
    for row in out["comparisons"].itertuples():
        summary[row.judge].setdefault("comparisons", {})[row.comparison] = row.verdict
    out["answers"] = pd.concat(answers, ignore_index=True)
    return out, {"k": k, "cell": {"n_prompts": cell[0], "n_val": cell[1]},
                 "judges": summary}


def comparisons(inputs: FactorialInputs, report: Report, k: int,
                cell: tuple[int, int]) -> pd.DataFrame:
    """MMB against AVG and BPE at the report cell over test groups (Brier
    test, ECE estimate; comparison.py), before the adjustment over judges."""
    hps = inputs.hps_pairs
    groups = hps.loc[hps["split"] == "test", "group"].to_numpy()
    return judge_comparisons(inputs.hps, inputs.design, groups, n_prompts=cell[0],
                             n_val=cell[1], k=k, n_boot=report.n_boot, seed=report.seed)


def k_runs(configurations: pd.DataFrame, cell: tuple[int, int]) -> pd.DataFrame:
    """Table 3: MMB at each K in the report cell, averaged over clustering seeds."""
    metrics = [m for m in METRICS if m in configurations.columns]
    rows = configurations[(configurations["method"] == "MMB")
                          & (configurations["n_prompts"] == cell[0])
                          & (configurations["n_val"] == cell[1])]
    return rows.groupby([*CELL, *UNIT, "k"], as_index=False)[metrics].mean()


def top_prompts(params: MmbParams, inputs: FactorialInputs, judge: str,
                per_cluster: int = 4) -> pd.DataFrame:
    """Fig. 4 analogue: MMB fitted on every validation candidate with the whole pool, at
    the report's K (clustering seed 0); per cluster its top instruction, the style most of
    its pairs carry (synthetic data), and the instruction planted as best for that style
    when the judge is simulated."""
    from judgebias.studies.mmb.sim import JudgeTraits, expert_instruction

    k = params.report.k
    split = inputs.hps
    fitted = MultimodalBayesianEnsemble(entropy=params.entropy).fit(
        split.P_pool, split.y_pool, responsibilities=split.R_pool[(k, 0)])
    R = np.concatenate([split.R_pool[(k, 0)], split.R_test[(k, 0)]])
    members = inputs.hps_pairs.reset_index(drop=True)
    assigned = R.argmax(axis=1)
    traits = (JudgeTraits(experts=params.experts[judge]) if judge in params.simulated
              else None)
    texts = dict(zip(inputs.pool, inputs.pool_texts, strict=True))
    rows = []
    for z in range(k):
        mine = members[assigned == z]
        styles = mine["style_a"].dropna()
        style = (styles.mode().iloc[0] if not styles.empty
                 and (styles == styles.mode().iloc[0]).mean() >= 0.5 else None)
        planted = expert_instruction(traits, style, texts) if traits and style else None
        top = inputs.pool[int(fitted.top_prompts_[z])]
        order = np.argsort(-R[:, z])[:per_cluster]
        rows.append({"judge": judge, "cluster": z, "size": len(mine), "style": style,
                     "top": top, "weight": float(fitted.weights_[z].max()),
                     "planted": planted, "matches": None if planted is None
                     else bool(planted == top),
                     "examples": members.loc[order, "image_a"].tolist()})
    return pd.DataFrame(rows)


def tau_sweep(params: MmbParams, frames: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """MMB's ECE at the report cell and K, and the mean entropy of p(z | pair) on the test
    pairs, for every tau of the sweep and the configured one (spec mmb.md: tau is never
    given; a badly set tau should show here). `frames`: factorial_inputs' four frames."""
    report, clustering = params.report, params.clustering
    rows = []
    for tau in sorted({*clustering.tau_sweep, clustering.tau}):
        inputs = factorial_inputs(params, *frames, tau=tau)
        keep = {kc: r for kc, r in inputs.hps.R_pool.items() if kc[0] == report.k}
        split = replace(inputs.hps, R_pool=keep, R_test={kc: inputs.hps.R_test[kc]
                                                          for kc in keep})
        design = replace(inputs.design, n_prompts=[report.n_prompts],
                         n_val=[report.n_val], bpe_reference=(), curves_for=())
        runs = run_factorial(split, design)
        mmb_runs = runs[runs["method"] == "MMB"]
        rows.append({"tau": tau, "configured": tau == clustering.tau,
                     "ece": float(mmb_runs["ece"].mean()),
                     "mean_entropy": float(np.mean([mean_entropy(r) for r in
                                                    split.R_test.values()]))})
    return pd.DataFrame(rows)


def judge_summary(second: pd.DataFrame, top: pd.DataFrame, inputs: FactorialInputs
                  ) -> dict[str, Any]:
    """The headline numbers of one judge for metrics.json and the report's notes."""
    ece = second[second["metric"] == "ece"].set_index("method")
    styled = top[top["planted"].notna()]
    return {
        "ece": {m: float(v) for m, v in ece["mean"].items()},
        "ece_best": str(ece["mean"].idxmin()),
        "mmb_ece_significantly_below": [m for m in ("AVG", "BPE") if m in ece.index
                                        and ece.loc["MMB", "is_best"]
                                        and not ece.loc[m, "bold"]],
        "pairs_used": inputs.pairs_used, "pairs_dropped": inputs.pairs_dropped,
        "smoothed_answers": inputs.smoothed_answers, "failed_answers": inputs.failed_answers,
        "top_prompt_matches": int(styled["matches"].sum()) if len(styled) else None,
        "clusters_with_style": len(styled),
    }
