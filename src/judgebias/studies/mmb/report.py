"""MMB's part of the HTML report (seed 002 Fig. 1, Tables 1-4, Fig. 3, Fig. 4). It reads
the files `tables.report_inputs` lists, which the report rule declares."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from judgebias.report.html import Figure, Section, Table
from judgebias.studies.mmb.embed import EmbeddingSpec
from judgebias.studies.mmb.measures.factorial import BASELINES, REFERENCE_METHODS
from judgebias.studies.mmb.measures.metrics import METRICS
from judgebias.studies.mmb.tables import (
    TABLES,
    layout_check_on,
    read_pool,
)

METHODS = [*BASELINES, *REFERENCE_METHODS.values(), "MMB"]  # the tables' column order
# Displayed headers (the parquet files keep their column names).
INDEX_NAMES = {"n_prompts": "prompts", "n_val": "validation pairs"}
TOP_COLUMNS = {"top": "top instruction", "planted": "planted best instruction",
               "matches": "top = planted", "size": "pairs"}


def _label(metric: str) -> str:
    label, higher = METRICS[metric]
    return f"{label} {'↑' if higher else '↓'}"


def paper_table(tests: pd.DataFrame, index: list[str], column: str = "method",
                order: list[Any] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(values, bold) with rows `index` and columns (metric, method) as the paper lays
    its tables out; bold = best or not significantly different after BY."""
    tests = tests.assign(metric=tests["metric"].map(_label))
    values = tests.pivot_table(index=index, columns=["metric", column], values="mean",
                               sort=False)
    bold = tests.pivot_table(index=index, columns=["metric", column], values="bold",
                             aggfunc="max", sort=False).astype(bool)
    if order is not None:
        columns = [(m, c) for m in dict.fromkeys(tests["metric"]) for c in order
                   if (m, c) in values.columns]
        values, bold = values[columns], bold[columns]
    names = [INDEX_NAMES.get(n, n) for n in values.index.names]
    return values.rename_axis(index=names), bold.rename_axis(index=names)


def _grid(tests: pd.DataFrame, index: str, columns: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    tests = tests.assign(metric=tests["metric"].map(_label))
    values = tests.pivot_table(index=index, columns=columns, values="mean", sort=False)
    bold = tests.pivot_table(index=index, columns=columns, values="bold", aggfunc="max",
                             sort=False).astype(bool)
    return values, bold


def top_instructions(top: pd.DataFrame, pool: pd.DataFrame) -> pd.DataFrame:
    """Fig. 4's table: each cluster's top instruction and the planted best one, each as
    "id: its text" (an id alone tells a reader nothing), one row per cluster."""
    texts = dict(zip(pool["id"], pool["text"], strict=True))

    def spelled(ids: pd.Series) -> pd.Series:
        return ids.map(lambda i: i if pd.isna(i) or i not in texts else f"{i}: {texts[i]}")

    table = top[["cluster", "style", "top", "weight", "planted", "matches", "size"]]
    return table.assign(top=spelled(table["top"]), planted=spelled(table["planted"])
                        ).set_index("cluster").rename(columns=TOP_COLUMNS)


def by_k(tests: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Table 3's layout: one row per K, one column per metric."""
    values, bold = _grid(tests, "k", "metric")
    return values.rename_axis(index="K"), bold.rename_axis(index="K")


def by_metric(tests: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Table 2's layout, transposed to fit a page: one row per metric, one column per
    method."""
    values, bold = _grid(tests, "metric", "method")
    columns = [m for m in METHODS if m in values.columns]
    return values[columns], bold[columns]


def report_section(params: Mapping[str, Any], out: Path, data: Mapping[str, Path]) -> Section:
    """MMB's part of the HTML report, from its results folder `out` and the data summary
    and instruction pool `data` names (tables.report_inputs)."""
    mmb = params["mmb"]
    metrics = json.loads((out / "metrics.json").read_text())
    summary = json.loads(data["summary"].read_text())
    read = {name: pd.read_parquet(out / f"{name}.parquet") for name in TABLES}
    pool = read_pool(data["instructions"])
    k, cell = metrics["k"], metrics["cell"]
    subsections = []
    for judge in mmb["models"]:
        if metrics["judges"][judge].get("left_out"):
            subsections.append(Section(title=f"Judge {judge}", notes=judge_notes(
                metrics["judges"][judge])))
            continue
        mine = {name: frame[frame["judge"] == judge] for name, frame in read.items()
                if "judge" in frame.columns}
        first = paper_table(mine["table1"], ["n_prompts", "n_val"], order=METHODS)
        second = by_metric(mine["table2"])
        third = by_k(mine["table3"])
        tables = [
            Table(second[0], f"Table 2 analogue ({judge}): every metric at "
                  f"{cell['n_prompts']} prompts, {cell['n_val']} validation pairs, MMB at "
                  f"K = {k}; bold = best or not significantly different (paired sign-flip "
                  "permutation test, Benjamini-Yekutieli per metric, α = "
                  f"{mmb['report']['alpha']})", bold=second[1]),
            *(Table(first[0][metric], f"Table 1 analogue ({judge}), {metric}: per "
                    "(prompts, validation pairs) cell; bold as in the paper (one table per "
                    "metric, the paper's column blocks)", bold=first[1][metric])
              for metric in dict.fromkeys(first[0].columns.get_level_values(0))),
            Table(top_instructions(mine["top_prompts"], pool),
                  f"Fig. 4 analogue ({judge}): the top instruction of each cluster "
                  "(MMB fitted on every validation candidate) and the planted best "
                  "instruction of the cluster's dominant style", "{:.2f}"),
            Table(third[0], f"Table 3 analogue ({judge}): MMB by cluster count K",
                  bold=third[1]),
        ]
        if not mine["table4"].empty:
            fourth = paper_table(mine["table4"], ["n_prompts", "n_val"], order=METHODS)
            tables.append(Table(fourth[0], f"Table 4 analogue ({judge}): mean confidence "
                                "on MJBench no-preference pairs (0.5 is ideal; lower is "
                                "better)", bold=fourth[1]))
        tables.insert(3, power_table(mine["power"], judge, k, cell["n_prompts"]))
        sweep = mine["tau_sweep"].drop(columns="judge").set_index("tau").rename_axis(
            "τ").rename(columns={"ece": "ECE", "mean_entropy": "mean entropy (nats)"})
        tables.append(Table(sweep, f"tau sweep ({judge}): MMB's ECE at the report cell and "
                            "the mean entropy of p(z | pair) (nats)"))
        subsections.append(Section(
            title=f"Judge {judge}",
            figures=[Figure(out / "figures/fig1.png", "Fig. 1 analogue: F1 and ECE of AVG, "
                            "BPE and MMB at the report cell"),
                     Figure(out / "figures/fig3.png", "Fig. 3 analogue: error-coverage "
                            "curves, mean over runs with 95 % bootstrap bands (training and "
                            "sampling seeds resampled as crossed factors; on planted worlds "
                            "they cover 90-95 % for AVG and STD, 84-91 % for methods fitted "
                            "on D_val: benchmarks/mmb_bands.py)"),
                     Figure(out / "figures/fig4.png", "Fig. 4 analogue: example images of "
                            "each cluster and its top instruction"),
                     Figure(out / "figures/fig5.png", "Fig. 5 analogue (Appendix D): the "
                            "error-coverage curves for every prompt count"),
                     Figure(out / "figures/power.png", "Power view: ECE and MMB's "
                            "top-instruction recovery against validation pairs per cluster "
                            "(how much validation data MMB needs before it helps)")],
            tables=tables,
            notes=judge_notes(metrics["judges"][judge]),
        ))
    answers = read["answers"].set_index("judge")
    checked = ([json.loads((out / "layout_check" / f"{judge}.json").read_text())
                for judge in mmb["models"]] if layout_check_on(params) else [])
    return Section(
        title="MMB: calibrating a pairwise image judge with multimodal prompt ensembles",
        intro=intro(params, summary),
        tables=[comparison_table(read["comparisons"], mmb["report"], k, cell),
                Table(answers, "Answers per judge: status and where p(y | x, a) came from "
                      "(log-probs; the parsed choice smoothed to 2/3 or 1/3 when an answer "
                      "carried none; or n sampled verdicts, mmb.probability)", "{:.0f}"),
                *([layout_table(checked, mmb["layout"])] if checked else [])],
        notes=protocol_notes(params, summary),
        subsections=subsections,
    )


def intro(params: Mapping[str, Any], summary: Mapping[str, Any]) -> str:
    mmb = params["mmb"]
    design = mmb["design"]
    reference = design["bpe_reference"]["regularisers"]
    return (
        f"Seed 002. {summary.get('description', mmb['dataset']['name'])}. Each judge "
        "compares two images generated for one prompt under every instruction of the pool; "
        "p(y | x, a) is the softmax of the two answer tokens' log-probs. STD (one random "
        "instruction), BEST (highest validation accuracy), AVG, BPE (eq. 5, solved exactly: "
        "softmax of the validation log-likelihoods) and MMB (eq. 9-10, entropy "
        f"{mmb['entropy']}) are fitted for every configuration: prompts {design['n_prompts']}"
        f" x validation pairs {design['n_val']} x {design['train_seeds']} training seeds x "
        f"{design['sampling_seeds']} sampling seeds x ({4 + len(reference)} baselines + K "
        f"{mmb['clustering']['ks']} x {mmb['clustering']['seeds']} clustering seeds). "
        f"{reference_text(reference, design['bpe_reference']['weight'])}ECE and MCE use "
        f"{design['calibration_bins']} equal-width bins of the top-label confidence (the "
        "reference BPE code uses 10; MCE moves a lot with the binning). HPSv2 test pairs: "
        f"{orientation_text(summary)}.\n\n"
        f"Embeddings: {embedding_text(mmb['embedding'])}")


def reference_text(regularisers: list[str], weight: float) -> str:
    """What the BPE-ref columns are (studies/mmb/bpe_reference.py), or nothing."""
    if not regularisers:
        return ""
    return ("BPE-ref is BPE as the reference code (amzn/BayesPE) fits it: the validation "
            "likelihood mixed inside the log, with its regulariser at weight "
            f"{weight}: 'printed' is the code's sum w exp(w), 'corrected' the entropy its "
            "docstring names. A published BPE number most likely comes from that code, "
            "not from eq. 5. ")


def orientation_text(summary: Mapping[str, Any]) -> str:
    """Which image is A in the test pairs (AUC-PR and F1 take 'A preferred' as positive)."""
    orientation = summary.get("test_orientation") or {}
    share = orientation.get("a_preferred")
    shown = "" if share is None else f"; A preferred in {share:.1%} of them"
    if orientation.get("mode") == "random":
        return f"A drawn per pair with seed {orientation['seed']}{shown}"
    return f"A is the earlier image of the file{shown}"


def embedding_text(block: Mapping[str, Any]) -> str:
    text = EmbeddingSpec.from_params(block).description() + "."
    if block["checkpoint"] or block["pretrained"]:
        return text
    return (text + " The synthetic styles still separate, because they differ in palette "
            "and texture, which a random patch projection keeps apart (the top-instruction "
            "table shows each cluster's dominant style); real images need pretrained CLIP.")


def protocol_notes(params: Mapping[str, Any], summary: Mapping[str, Any]) -> list[str]:
    mmb = params["mmb"]
    notes = [
        "Eq. 9 as printed weights each cluster's entropy by its mass, so K = 1 would not "
        "give BPE; entropy per_group (the default) puts one entropy term per cluster: K = 1 "
        "is BPE exactly, no validation data is AVG (spec mmb.md).",
        f"tau = {mmb['clustering']['tau']} (never given by the paper); p(z | pair) = "
        f"{mmb['clustering']['pair']}; D_sup = {mmb['clustering']['support_per_cluster']} "
        + ("x K images for each K (seed 002 §5)." if mmb["clustering"]["support"] == "per_k"
           else "x max(K) images for every K (mmb.clustering.support: max_k)."),
    ]
    if mmb.get("layout", "paper") != "paper":
        notes.append("The judges were asked in the shared-first layout (mmb.layout: "
                     "shared_first): the two images and the fixed text first, the "
                     "instruction last, instead of the default instruction first and images "
                     "last (seed 002 prints no prompt: both are ours); the same words, so a "
                     "provider's prompt cache serves the requests about a pair. Whether "
                     "that changes the answers is what mmb.layout_check measures.")
    if summary.get("tied_pairs_dropped"):
        notes.append(f"{summary['tied_pairs_dropped']} HPSv2 test pairs with tied human "
                     "ranks were dropped.")
    return notes


def judge_notes(summary: Mapping[str, Any]) -> list[str]:
    if summary.get("left_out"):
        return [f"Left out of every table and figure: {summary['failed_answers']} of its "
                f"{summary['answers']} calls failed (accepted by max_failures), leaving too "
                "few pairs with a usable answer for every instruction."]
    notes = []
    if summary.get("failed_answers"):
        notes.append(f"{summary['failed_answers']} failed calls were accepted "
                     "(max_failures); they are left out.")
    notes.append(f"{summary['pairs_used']} pairs with a usable answer for every instruction; "
                 f"{summary['pairs_dropped']} left out (a failed or unparseable answer is "
                 "never imputed).")
    probability = summary.get("probability", {})
    if probability.get("source") == "samples":
        notes.append(
            f"p(y | x, a) is estimated from {probability['samples']} verdicts sampled per "
            f"(pair, instruction, order) at the judge's temperature, (k + "
            f"{probability['prior']:g}) / (n + {2 * probability['prior']:g}) with k of the "
            "n usable verdicts choosing the image (mmb.probability; the judge gives no "
            "log-probs). The estimate is shrunk towards 1/2 and noisier than the log-prob "
            "route's, so ECE, Brier and NLL describe the judge as sampled; the comparison's "
            "intervals resample test groups, whose sampling noise they carry "
            "(benchmarks/mmb_sampling.py).")
    if summary.get("smoothed_answers"):
        notes.append(f"{summary['smoothed_answers']} answers had no log-probs: p comes from "
                     "the parsed choice (2/3 or 1/3), so calibration metrics are coarse.")
    if summary.get("top_prompt_matches") is not None:
        notes.append(f"The top instruction is the planted best one in "
                     f"{summary['top_prompt_matches']} of {summary['clusters_with_style']} "
                     "clusters dominated by one style.")
    return notes


COMPARISON_COLUMNS = {"brier_mmb": "Brier MMB", "brier_baseline": "Brier baseline",
                      "difference": "Brier difference", "low": "95 % low",
                      "high": "95 % high", "p_value": "p (t)", "p_sign_flip": "p (sign flip)",
                      "p_adjusted": "p (t, BY)", "verdict": "verdict",
                      "ece_mmb": "ECE MMB", "ece_baseline": "ECE baseline",
                      "ece_difference": "ECE difference", "ece_low": "ECE 95 % low (approx.)",
                      "ece_high": "ECE 95 % high (approx.)", "n_groups": "test groups"}


def comparison_table(comparisons: pd.DataFrame, report: Mapping[str, Any], k: int,
                     cell: Mapping[str, int]) -> Table:
    """Issue 20: does MMB beat AVG and BPE, for every judge, whichever way it comes out
    (measures/comparison.py)."""
    table = comparisons.set_index(["judge", "comparison"])[list(COMPARISON_COLUMNS)]
    return Table(table.rename(columns=COMPARISON_COLUMNS),
                 f"Does MMB beat AVG and BPE? At {cell['n_prompts']} prompts, "
                 f"{cell['n_val']} validation pairs, K = {k}, mean over replicate runs. "
                 "Verdict on the Brier score (strictly proper; its reliability part is "
                 "calibration): difference MMB - baseline (below 0: MMB better) of the "
                 "per-pair scores, with a 95 % t-interval over test groups (the test pairs "
                 "are a sample too, unlike the bold marks of the paper's tables, which hold "
                 "them fixed), the t-test's p, Benjamini-Yekutieli over every row, verdict "
                 f"at α = {report['alpha']}, and the exact sign-flip p as a check. The ECE "
                 "difference is an estimate only: its percentile bootstrap interval over "
                 "test groups is approximate (measured coverage 0.89-0.98 for a nominal "
                 "0.95, benchmarks/mmb_power.py)", "{:.3f}")


LAYOUT_MEASURES = {"p_first": "p(first shown preferred)",
                   "verdict_first": "verdicts for the first shown",
                   "changed": "verdicts changed"}


def layout_table(checked: list[Mapping[str, Any]], layout: str) -> Table:
    """Issue 45: the layout's own effect per judge (steps.layout_check, measures/layout.py):
    each measure in both layouts, the difference shared_first - paper with its 95 %
    t-interval over pairs and the test of no difference."""
    rows = []
    for found in checked:
        for measure, label in LAYOUT_MEASURES.items():
            m = found["measures"][measure]
            rows.append({"judge": found["judge"], "measure": label,
                         "paper": m.get("paper"), "shared first": m.get("shared_first"),
                         "difference": m.get("difference", m.get("estimate")),
                         "95 % low": m["low"], "95 % high": m["high"],
                         "p (t)": m.get("p_value"), "pairs": m["n_pairs"],
                         "items": m["n_items"]})
    frame = pd.DataFrame(rows).set_index(["judge", "measure"]).astype(
        {c: float for c in ("paper", "shared first", "difference", "95 % low", "95 % high",
                            "p (t)")})
    first = checked[0]
    sample = first["sample"]
    instructions = (f"{sample['n_instructions']} instructions" if sample["n_instructions"]
                    else "every instruction")
    return Table(frame, (
        f"What the layout costs in bias (mmb.layout: {layout}; issue 45): {sample['pairs']} "
        f"pairs drawn with seed {sample['seed']}, {instructions} each, asked in both "
        f"layouts (paper: `{first['templates']['paper']}`, the instruction first and the "
        f"images last; shared first: `{first['templates']['shared_first']}`, the images "
        "first and the instruction last, so a provider's prompt cache serves a pair's "
        "requests). p is the judge's p(image shown first preferred); the verdict rows are "
        "the share of its verdicts for the image shown first, and the share of verdicts "
        "that change between the layouts. Difference shared first - paper, mean over pairs "
        "of each pair's mean, with a 95 % t-interval over pairs and the t-test of no "
        "difference (equal to the cluster-robust Wald test clustered by pair; its level "
        "and coverage: benchmarks/layout_effect.py). A difference whose interval excludes "
        "0 is what the cheaper layout changes in the judge's answers."), "{:.3f}")


def power_table(power: pd.DataFrame, judge: str, k: int, n_prompts: int) -> Table:
    """The numbers behind the power figure (measures/power.py)."""
    table = power.drop(columns="judge").set_index("per_cluster").rename_axis(
        "validation pairs per cluster").rename(columns={
            "n_val": "validation pairs", "AVG": "ECE AVG", "BPE": "ECE BPE",
            "MMB": "ECE MMB", "recovery": "top = planted (share)"})
    return Table(table, f"Power view ({judge}): mean ECE over replicate runs at {n_prompts} "
                 f"prompts, K = {k}, and the share of style-dominated clusters whose top "
                 "instruction is the planted best one, against validation pairs per cluster "
                 "(n_val / K)", "{:.3f}")
