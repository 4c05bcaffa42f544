"""BIRCH's part of the HTML report (seed 003 Tables 1, 2, 3, 4/8, 7 and Figs. 1, 3, 4, 5,
6, 8, 10 analogues). It reads the files `tables.report_inputs` lists, which the report rule
declares."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from judgebias.judging.values import PARSED_VERDICTS, failed_note
from judgebias.report.html import Figure, Section, Table
from judgebias.studies.birch.measures.inference import EXACT_BELOW
from judgebias.studies.birch.tables import (
    FIGURES,
    SUPPLEMENT_FIGURE,
    SUPPLEMENT_TABLES,
    TABLES,
)

VARIANT_TITLES = {"base": "Base", "caption": "Image Caption", "standard_ref": "Standard Ref",
                  "birch": "BIRCH", "no_image": "Base, no image",
                  "equalised": "Base, equalised lengths"}


# Readable headers for the tables' columns (the parquet files keep the short names).
HEADERS = {
    "acc": "Acc", "acc_ids": "Acc IDS", "acc_cds": "Acc CDS", "ib": "IB", "lb": "LB",
    "acc_image": "Acc with image", "acc_no_image": "Acc without image", "irs": "IRS",
    "n_pairs": "pairs", "value": "value", "acc_plus": "Acc plus subset",
    "acc_minus": "Acc minus subset", "n_plus": "pairs plus", "n_minus": "pairs minus",
    "ds_mean": "down-sampled mean", "ds_sd": "down-sampled sd", "ds_min": "min",
    "ds_max": "max", "ds_n_draws": "draws", "ib_before": "IB before", "ib_after": "IB after",
    "n_before": "pairs before", "n_after": "pairs after", "n_usable": "usable",
    "accuracy": "accuracy", "n_judge_tie": "judge ties", "n_failed": "failed",
    "n_human_tie": "human ties", "n": "pairs", "acc_longer": "Acc longer",
    "acc_shorter": "Acc shorter", "against": "against", "n_consistent": "consistent",
    "n_inconsistent": "inconsistent", "n_missing": "missing", "match_rate": "match rate",
    "kappa": "Cohen's kappa", "balanced": "balanced Acc", "acc_all": "Acc, all pairs",
    "n_ids": "IDS pairs", "n_cds": "CDS pairs", "change": "change (same pairs)",
    "ib_before_all": "IB before, all pairs", "n_before_all": "pairs (all)",
    "low": "95% low", "high": "95% high", "se": "bootstrap se",
    "base_only": "Base right only", "method_only": "method right only",
    "gain": "gain", "p_value": "p", "q_value": "q (BH)", "pair_set": "pairs",
    "significant": "significant",
}
STATISTIC_TITLES = {"acc": "Acc", "acc_all": "Acc, all pairs", "acc_ids": "Acc IDS",
                    "acc_cds": "Acc CDS", "balanced": "balanced Acc", "ib": "IB", "lb": "LB",
                    "irs": "IRS", "irs_ids": "IRS on IDS", "irs_cds": "IRS on CDS",
                    "ib_kept": "IB, kept pairs"}


def _readable(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.rename(columns=lambda c: HEADERS.get(c, c))


def _percent(frame: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    out = frame.copy()
    for column in columns:
        out[column] = out[column] * 100
    return out


def table1(table: pd.DataFrame, intervals: pd.DataFrame, tests: pd.DataFrame
           ) -> pd.DataFrame:
    """Table 1 (%): accuracy with and without the image, IRS with its interval and the
    McNemar q-value of no-image against Base on all pairs."""
    out = _percent(table, ["acc_image", "acc_no_image", "irs"]).set_index("judge")
    irs = intervals[(intervals["statistic"] == "irs") & (intervals["versus"] == "")]
    irs = irs.set_index("judge")
    out["IRS 95% interval"] = [_interval(irs.loc[j, "estimate"], irs.loc[j, "low"],
                                         irs.loc[j, "high"]) if j in irs.index else "–"
                               for j in out.index]
    test = tests[(tests["variant"] == "no_image") & (tests["pair_set"] == "all")]
    q = test.set_index("judge")["q_value"]
    out["McNemar q"] = [q.get(j, float("nan")) for j in out.index]
    return out


def table3(accuracy: pd.DataFrame) -> pd.DataFrame:
    """Accuracy (%) per judge and method in the primary order (Table 3's layout)."""
    primary = accuracy[accuracy["order"] == "ab"]
    wide = primary.pivot(index="judge", columns="variant", values="accuracy") * 100
    columns = [v for v in ("base", "caption", "standard_ref", "birch") if v in wide.columns]
    return wide[columns].rename(columns=VARIANT_TITLES)


def _interval(estimate: float, low: float, high: float, scale: float = 100) -> str:
    """'12.3 [4.5, 20.1]' (points); a dash where the bootstrap gave no interval."""
    if pd.isna(estimate):
        return "–"
    if pd.isna(low) or pd.isna(high):
        return f"{scale * estimate:.1f} [–]"
    return f"{scale * estimate:.1f} [{scale * low:.1f}, {scale * high:.1f}]"


def intervals_table(intervals: pd.DataFrame, tests: pd.DataFrame) -> pd.DataFrame:
    """Every estimate with its paired bootstrap interval (points), one row per judge and
    variant, a column per statistic; gains over Base as 'Δ ...' rows, with the McNemar
    q-value of the same contrast on D_IDS ∪ D_CDS (all pairs for no-image)."""
    if intervals.empty:
        return pd.DataFrame()
    cells = intervals.assign(
        cell=[_interval(e, lo, hi) for e, lo, hi in
              zip(intervals["estimate"], intervals["low"], intervals["high"], strict=True)],
        row=[VARIANT_TITLES.get(v, v) + (" − Base" if versus else "")
             for v, versus in zip(intervals["variant"], intervals["versus"], strict=True)],
        column=intervals["statistic"].map(lambda c: STATISTIC_TITLES.get(c, c)))
    wide = cells.pivot_table(index=["judge", "row"], columns="column", values="cell",
                             aggfunc="first", sort=False)
    order = [t for t in STATISTIC_TITLES.values() if t in wide.columns]
    wide = wide[order].fillna("")
    if not tests.empty:
        main = tests[tests["pair_set"].isin(["labelled", "all"])]
        q = {(j, VARIANT_TITLES.get(v, v) + " − Base"): f"{qv:.3g}"
             for j, v, qv in zip(main["judge"], main["variant"], main["q_value"], strict=True)}
        wide["McNemar q"] = [q.get(key, "") for key in wide.index]
    return wide


def table4(methods: pd.DataFrame) -> pd.DataFrame:
    """Acc, Acc_IDS, Acc_CDS, IB, LB (%) per judge and method, with the change from Base
    (Tables 4 and 8)."""
    out = _percent(methods, ["acc", "acc_ids", "acc_cds", "ib", "lb", "balanced", "acc_all"])
    base = out[out["method"] == "base"].set_index("judge")
    for column in ("acc", "acc_ids", "acc_cds", "ib", "lb", "balanced"):
        out[f"Δ {HEADERS[column]}"] = out[column] - out["judge"].map(base[column])
    out["method"] = out["method"].map(VARIANT_TITLES)
    return out.drop(columns=["n_ids", "n_cds"]).set_index(["judge", "method"])


def dataset_section(params: Mapping[str, Any], name: str, out: Path, summary_file: Path
                    ) -> Section:
    """One dataset's part: its tables and figures (``out``: its results folder) and its
    data summary."""
    block = params["birch"]
    metrics = json.loads((out / "metrics.json").read_text())
    summary = json.loads(summary_file.read_text())
    read = {name: pd.read_parquet(out / f"{name}.parquet") for name in TABLES}
    counts = metrics["counts"]
    figure = {name: out / "figures" / f"{name}.png" for name in FIGURES}
    intro = (
        f"{name}: {summary['pairs']} pairwise VQA items ({summary['source']}); human ties "
        "dropped: "
        f"{counts['human_ties']}. Informativeness labels by {block['labeller']} "
        f"(Fig. 18, both orders, image withheld): {counts['labels']['n_consistent']} "
        f"consistent, {counts['labels']['n_inconsistent']} inconsistent (excluded). "
        f"IDS {counts['ids']} / CDS {counts['cds']} pairs (CDS share "
        f"{metrics['cds_ratio']:.2f}; the paper's MLLM-as-a-Judge: 0.32). Verdicts are read "
        "in the order shown (randomised with a recorded seed where the source file is "
        "ordered); a judge's tie counts as wrong, a failed or unparseable answer is "
        "dropped and counted (Accuracy table). The Base, no-image and Image Caption prompts "
        "are ours (the paper prints none): Fig. 21 without its reference block, without "
        "the image, and with the judge's own caption.")
    if summary["source"] == "synthetic":
        intro += (" The data are synthetic scenes with planted correctness, "
                  "informativeness and padding, judged by simulated models: the numbers "
                  "check the method, they are not the paper's findings.")
    sections = [
        Section("Image reliance (Table 1, Fig. 5)", figures=[Figure(figure["fig5"], (
            "Fig. 5 analogue: IRS on the informativeness-driven (IDS) and "
            "correctness-driven (CDS) subsets."))],
            tables=[Table(table1(read["table1"], read["intervals"], read["tests"]),
                          "Table 1 analogue: accuracy (%) with and without the image on "
                          "the pairs both answered, and IRS = the difference, with its "
                          "paired bootstrap 95% interval (pairs resampled, both variants "
                          "together) and McNemar's test of no-image against Base on the "
                          "same pairs (q: Benjamini-Hochberg over every test of this "
                          "section). An interval that covers 0 means the data cannot tell "
                          "the judge's IRS from none; two judges whose intervals overlap "
                          "widely are not shown to differ.", "{:.2f}")]),
        Section("Informativeness and length bias (Figs. 1, 3, 6, 10; Table 2)", figures=[
            Figure(figure["fig1"], "Fig. 1 analogue: Acc_IDS and Acc_CDS, Base and BIRCH."),
            Figure(figure["fig3"], "Fig. 3 analogue: IB and LB of Base, mean ± sd over the "
                   "160 down-sampling draws of Appendix C.3 (the paper's 'variance' bars; "
                   "we show the standard deviation). This is the spread over subsamples of "
                   "the data, not a confidence interval: the intervals are in the "
                   "'Intervals and tests' table."),
            Figure(figure["fig6"], "Fig. 6 analogue: IB with and without the image."),
            Figure(figure["fig10"], "Fig. 10 analogue: IB and LB of the judge with the "
                   "lowest IB.")],
            tables=[Table(_percent(read["bias"], ["value", "acc_plus", "acc_minus",
                                                  "ds_mean", "ds_sd", "ds_min", "ds_max"])
                          .set_index(["judge", "variant", "statistic"]),
                          "IB = Acc_IDS − Acc_CDS and LB = Acc(y^c longer) − Acc(y^c "
                          "shorter), % (plus / minus: the two subsets' accuracies), with "
                          "Appendix C.3's down-sampled mean, sd, min and max: the spread "
                          "over subsamples (sd), not a confidence interval.", "{:.2f}"),
                    Table(_percent(read["table2"], ["ib_before", "ib_after", "change",
                                                    "ib_before_all"]).set_index("judge"),
                          "Table 2 analogue: IB (%) before → after equalising answer "
                          f"lengths (the lengthener: {block['lengthener']}; pairs within "
                          f"{block['equalise_tolerance']} words kept). 'IB before' is on "
                          "the pairs that survived equalisation, the same pairs as 'IB "
                          "after'; 'IB before, all pairs' on every labelled pair (the "
                          "paper's before column equals its Table 8 IB).", "{:.2f}")]),
        Section("Accuracy vs the share of misleading informativeness (Fig. 4)", figures=[
            Figure(figure["fig4"], "Fig. 4 analogue: accuracy of Base as the CDS share "
                   "grows (points: mean of the down-sampling draws; line: r·Acc_CDS + "
                   "(1 − r)·Acc_IDS; dotted: the data's own share).")]),
        Section("Methods (Tables 3, 4 and 8)", tables=[
            Table(table3(read["accuracy"]), "Table 3 analogue: accuracy (%) per method.",
                  "{:.2f}"),
            Table(table4(read["table4"]), "Tables 4 and 8 analogue: Acc, Acc_IDS, Acc_CDS, "
                  "IB, LB (%) and the change from Base. Acc is over the pairs IB rests on "
                  "(D_IDS ∪ D_CDS), so Acc = (1 − r) Acc_IDS + r Acc_CDS exactly, as in "
                  "the paper's Table 8; 'Acc, all pairs' also counts the pairs the "
                  "labeller labelled inconsistently; balanced Acc = (Acc_IDS + "
                  "Acc_CDS) / 2, the accuracy at a CDS share of one half (Fig. 4).",
                  "{:+.2f}"),
            Table(read["accuracy"].set_index(["judge", "variant", "order"]),
                  "Every verdict job: pairs, usable verdicts, accuracy, the judge's ties, "
                  "failed or unparseable answers, human ties (dropped). Order 'ba' (if "
                  "present) is the swapped order, reported separately.", "{:.3f}")]),
        Section("Intervals and tests", tables=[
            Table(intervals_table(read["intervals"], read["tests"]),
                  "Every estimate (%) with its paired bootstrap 95% interval "
                  f"({block['inference']['interval']}, {block['inference']['resamples']} "
                  "resamples of the pairs; every variant resampled together, so the "
                  "'− Base' rows are paired gains on the same pairs). McNemar q: the "
                  "test of that method against Base on D_IDS ∪ D_CDS (no image: all "
                  "pairs), Benjamini-Hochberg over every judge, method and pair set. "
                  "Calibration: benchmarks/birch_null.py.", "{}"),
            Table(read["tests"].set_index(["judge", "variant", "pair_set"]),
                  "McNemar's test of each method against Base on the pairs both "
                  "answered: only the discordant pairs count (Base right only, method "
                  f"right only); exact binomial below {EXACT_BELOW} discordant pairs, "
                  "else chi-square; q: Benjamini-Hochberg at "
                  f"{block['inference']['alpha']}.", "{:.3g}")]),
        Section("Per domain (Fig. 8) and the labeller (Table 7)", figures=[
            Figure(figure["fig8"], "Fig. 8 analogue: IB and LB of Base per domain.")],
            tables=[Table(_percent(read["domains"], ["accuracy", "acc_ids", "acc_cds", "ib",
                                                    "acc_longer", "acc_shorter", "lb"])
                          .set_index(["judge", "domain"]), "Per-domain accuracy, IB and LB "
                          "(%) of Base.", "{:.1f}"),
                    Table(read["table7"].set_index("labeller"), "Table 7 analogue: the "
                          "labeller's match rate and Cohen's kappa against the reference "
                          "labels, and its consistency across the two orders.", "{:.3f}")]),
    ]
    for table in (t for section in sections for t in section.tables if t.frame.empty):
        table.caption += (" No rows: its variants are not all in birch.variants "
                          f"({', '.join(block['variants'])}), or no pair qualified.")
    sections.append(supplement_section(out))
    for section in sections:
        for table in section.tables:
            table.frame = _readable(table.frame)
    return Section(f"{name} ({summary['source']})", headline=headline(metrics), intro=intro,
                   subsections=sections,
                   notes=[PARSED_VERDICTS, *failed_note(metrics.get("failed_calls", {}))])


TITLE = "BIRCH: image reliance, informativeness bias and the truthful anchor"


def report_section(params: Mapping[str, Any], out: Path, data: Mapping[str, Path]) -> Section:
    """BIRCH's section: one dataset's parts directly; several datasets each in their own
    subsection, after Tables 1-3 side by side (`out`: results/birch; `data`: each
    dataset's summary as ``summary.<dataset>``, tables.report_inputs)."""
    names = list(params["birch"]["datasets"])
    parts = [dataset_section(params, name, out / name, data[f"summary.{name}"])
             for name in names]
    if len(parts) == 1:
        part = parts[0]
        return Section(TITLE, headline=part.headline, intro=part.intro,
                       subsections=part.subsections, notes=part.notes)
    return Section(TITLE, headline=" ".join(f"{n}: {p.headline}"
                                            for n, p in zip(names, parts, strict=True)),
                   intro=f"{len(names)} benchmarks, each judged by every judge: "
                         f"{', '.join(names)}.",
                   subsections=[side_by_side(names, out), *parts])


def _points(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}"


def headline(metrics: Mapping[str, Any]) -> str:
    """The result in one sentence: per judge, how much the image matters (IRS), the
    informativeness bias of Base and with the BIRCH anchor, and the accuracy of both."""
    judges = []
    for judge, row in metrics["judges"].items():
        base, birch = row["base"], row.get("birch", {})
        irs = row.get("intervals", {}).get("irs", {})
        bounds = (f" [{_points(irs.get('low'))}, {_points(irs.get('high'))}]"
                  if irs else "")
        parts = [f"IRS {_points(row.get('irs'))}{bounds}" if "irs" in row else "",
                 f"IB {_points(base.get('ib'))} → {_points(birch.get('ib'))}",
                 f"accuracy {_points(base.get('acc'))} → {_points(birch.get('acc'))}"]
        judges.append(f"{judge}: " + ", ".join(p for p in parts if p))
    tests = metrics.get("tests", {})
    return ("Image reliance (IRS: accuracy with minus without the image, with its paired "
            "bootstrap 95% interval), informativeness bias (IB: Acc_IDS − Acc_CDS) and "
            "accuracy on D_IDS ∪ D_CDS, Base → BIRCH, in %: " + "; ".join(judges) + ". "
            f"{tests.get('significant', 0)} of {tests.get('n', 0)} McNemar tests of a "
            "method against Base are significant after Benjamini-Hochberg at "
            f"{tests.get('fdr', 0.05)}.")



def side_by_side(names: list[str], out: Path) -> Section:
    """Tables 1-3 of seed 003 with the benchmarks side by side (the paper prints
    MLLM-as-a-Judge and VL-RewardBench next to each other): one column block per dataset."""
    def joined(table: str, frame_of) -> pd.DataFrame:
        frames = {name: frame_of(pd.read_parquet(out / name / f"{table}.parquet"))
                  for name in names}
        return _readable(pd.concat(frames, axis=1))

    def table1(frame: pd.DataFrame) -> pd.DataFrame:
        return _percent(frame, ["acc_image", "acc_no_image", "irs"]).set_index("judge")[
            ["acc_image", "acc_no_image", "irs", "n_pairs"]]

    def table2(frame: pd.DataFrame) -> pd.DataFrame:
        return _percent(frame, ["ib_before", "ib_after"]).set_index("judge")[
            ["ib_before", "ib_after"]]

    return Section("Benchmarks side by side (Tables 1-3)", tables=[
        Table(joined("table1", table1), "Table 1 analogue per dataset: accuracy (%) with "
              "and without the image, and IRS.", "{:.2f}"),
        Table(joined("table2", table2), "Table 2 analogue per dataset: IB (%) before and "
              "after equalising answer lengths.", "{:.2f}"),
        Table(joined("accuracy", table3), "Table 3 analogue per dataset: accuracy (%) per "
              "method.", "{:.2f}")])


ANCHOR_HEADERS = {"n": "texts", "n_missing": "failed", "truthful": "no false fact",
                  "false_facts": "false facts", "facts": "facts", "repaired": "repaired",
                  "kept": "true facts kept", "n_with_false_candidate": "pairs with a false claim"}
COST_HEADERS = {"n_pairs": "pairs", "calls_per_pair": "calls / pair",
                "prompt_tokens_per_pair": "prompt tokens / pair",
                "completion_tokens_per_pair": "completion tokens / pair",
                "cost_per_pair": "USD / pair", "calls_without_usage": "calls without usage"}


def supplement_section(out: Path) -> Section:
    """The report's part for Fig. 11, Table 5 and Table 6 of one dataset."""
    read = {name: pd.read_parquet(out / f"{name}.parquet") for name in SUPPLEMENT_TABLES}
    domains = read["fig11"].copy().rename(columns={"acc_image": "Acc with image",
                                                   "acc_no_image": "Acc without image"})
    for column in ("Acc with image", "Acc without image", "irs"):
        domains[column] = domains[column] * 100
    table5 = read["table5"].copy()
    table5["text"] = np.where(table5["model"] != "", table5["text"] + " (" + table5["model"]
                              + ")", table5["text"])
    table5 = table5.drop(columns="model").set_index("text").rename(columns=ANCHOR_HEADERS)
    anchors_caption = (
        "Table 5 analogue: each text scored exactly against the planted scene (the paper: "
        "GPT-5 quality scores): the share of texts with no false fact, false facts and "
        "facts per text; for anchors, repaired = the share of pairs with a false claim in "
        "a candidate whose anchor states no false fact, and the share of the candidates' "
        "true facts the anchor keeps; failed anchors are counted, never scored.")
    if table5.empty:
        anchors_caption += (" No rows: this dataset plants no truth (a real benchmark), "
                            "so anchors cannot be scored exactly.")
    return Section("Per-domain image reliance (Fig. 11), anchor quality (Table 5) and cost "
                   "(Table 6)",
                   figures=[Figure(out / "figures" / f"{SUPPLEMENT_FIGURE}.png", (
                       "Fig. 11 analogue: per domain, accuracy with (x) vs without (y) the "
                       "image; point area = pairs; below the diagonal (green) the image "
                       "helps, above it (red) it hurts."))],
                   tables=[Table(domains.set_index(["judge", "domain"]),
                                 "Fig. 11 analogue: per-domain accuracy (%) of Base with and "
                                 "without the image on the pairs both answered, and the "
                                 "per-domain IRS (the difference). Point estimates, no "
                                 "interval: a domain of n pairs moves by chance on the order "
                                 "of 1/√n, so read small domains with care.", "{:.1f}"),
                           Table(table5, anchors_caption, "{:.3f}"),
                           Table(read["table6"].set_index(["judge", "method"])[[
                               "n_pairs", "calls_per_pair", "prompt_tokens_per_pair",
                               "completion_tokens_per_pair", "cost_per_pair",
                               "calls_without_usage"]].rename(columns=COST_HEADERS),
                                 "Table 6 analogue: model calls, prompt and completion "
                                 "tokens per pair of each method (its verdicts plus the "
                                 "caption, reference, anchor or lengthening pass it needs), "
                                 "read from the model-call journal; cost in USD where the "
                                 "panel model has pricing (else blank). Calls without usage: "
                                 "failed calls, counted, never priced.", "{:.4g}")])
