"""BIRCH's part of the HTML report (seed 003 Tables 1, 2, 3, 4/8, 7 and Figs. 1, 3, 4, 5,
6, 8, 10 analogues). It reads the files `report_inputs` lists, which the report rule
declares."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from judgebias.judging.values import failed_note
from judgebias.report.html import Figure, Section, Table
from judgebias.studies.birch.supplement import FIGURE as SUPPLEMENT_FIGURE
from judgebias.studies.birch.supplement import TABLES as SUPPLEMENT_TABLES
from judgebias.studies.birch.supplement import outputs as supplement_outputs
from judgebias.studies.birch.tables import FIGURES, TABLES, results_dir, summary_path

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
    "kappa": "Cohen's kappa",
}


def _readable(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.rename(columns=lambda c: HEADERS.get(c, c))


def report_inputs(config: Mapping[str, Any]) -> list[str]:
    """Every dataset's metrics, summary, tables and figures."""
    inputs = []
    for name in config["birch"]["datasets"]:
        results = results_dir(name)
        inputs += [f"{results}/metrics.json", summary_path(name),
                   *(f"{results}/{t}.parquet" for t in TABLES),
                   *(f"{results}/figures/{f}.png" for f in FIGURES),
                   *supplement_outputs(results)]
    return inputs


def _percent(frame: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    out = frame.copy()
    for column in columns:
        out[column] = out[column] * 100
    return out


def table3(accuracy: pd.DataFrame) -> pd.DataFrame:
    """Accuracy (%) per judge and method in the primary order (Table 3's layout)."""
    primary = accuracy[accuracy["order"] == "ab"]
    wide = primary.pivot(index="judge", columns="variant", values="accuracy") * 100
    columns = [v for v in ("base", "caption", "standard_ref", "birch") if v in wide.columns]
    return wide[columns].rename(columns=VARIANT_TITLES)


def table4(methods: pd.DataFrame) -> pd.DataFrame:
    """Acc, Acc_IDS, Acc_CDS, IB, LB (%) per judge and method, with the change from Base
    (Tables 4 and 8)."""
    out = _percent(methods, ["acc", "acc_ids", "acc_cds", "ib", "lb"])
    base = out[out["method"] == "base"].set_index("judge")
    for column in ("acc", "acc_ids", "acc_cds", "ib", "lb"):
        out[f"Δ {HEADERS[column]}"] = out[column] - out["judge"].map(base[column])
    out["method"] = out["method"].map(VARIANT_TITLES)
    return out.set_index(["judge", "method"])


def dataset_section(config: Mapping[str, Any], name: str, out: Path) -> Section:
    """One dataset's part: its tables and figures (``out``: its results folder)."""
    block = config["birch"]
    metrics = json.loads((out / "metrics.json").read_text())
    summary = json.loads(Path(summary_path(name)).read_text())
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
            tables=[Table(_percent(read["table1"], ["acc_image", "acc_no_image", "irs"])
                          .set_index("judge"),
                          "Table 1 analogue: accuracy (%) with and without the image on "
                          "the pairs both answered, and IRS = the difference.", "{:.2f}")]),
        Section("Informativeness and length bias (Figs. 1, 3, 6, 10; Table 2)", figures=[
            Figure(figure["fig1"], "Fig. 1 analogue: Acc_IDS and Acc_CDS, Base and BIRCH."),
            Figure(figure["fig3"], "Fig. 3 analogue: IB and LB of Base, mean ± sd over the "
                   "160 down-sampling draws of Appendix C.3 (the paper's 'variance' bars; "
                   "we show the standard deviation)."),
            Figure(figure["fig6"], "Fig. 6 analogue: IB with and without the image."),
            Figure(figure["fig10"], "Fig. 10 analogue: IB and LB of the judge with the "
                   "lowest IB.")],
            tables=[Table(_percent(read["bias"], ["value", "acc_plus", "acc_minus",
                                                  "ds_mean", "ds_sd", "ds_min", "ds_max"])
                          .set_index(["judge", "variant", "statistic"]),
                          "IB = Acc_IDS − Acc_CDS and LB = Acc(y^c longer) − Acc(y^c "
                          "shorter), % (plus / minus: the two subsets' accuracies), with "
                          "the down-sampled mean, sd, min and max.", "{:.2f}"),
                    Table(_percent(read["table2"], ["ib_before", "ib_after"])
                          .set_index("judge"),
                          "Table 2 analogue: IB (%) before → after equalising answer "
                          f"lengths (the lengthener: {block['lengthener']}; pairs within "
                          f"{block['equalise_tolerance']} words kept).", "{:.2f}")]),
        Section("Accuracy vs the share of misleading informativeness (Fig. 4)", figures=[
            Figure(figure["fig4"], "Fig. 4 analogue: accuracy of Base as the CDS share "
                   "grows (points: mean of the down-sampling draws; line: r·Acc_CDS + "
                   "(1 − r)·Acc_IDS; dotted: the data's own share).")]),
        Section("Methods (Tables 3, 4 and 8)", tables=[
            Table(table3(read["accuracy"]), "Table 3 analogue: accuracy (%) per method.",
                  "{:.2f}"),
            Table(table4(read["table4"]), "Tables 4 and 8 analogue: Acc, Acc_IDS, Acc_CDS, "
                  "IB, LB (%) and the change from Base.", "{:+.2f}"),
            Table(read["accuracy"].set_index(["judge", "variant", "order"]),
                  "Every verdict job: pairs, usable verdicts, accuracy, the judge's ties, "
                  "failed or unparseable answers, human ties (dropped). Order 'ba' (if "
                  "present) is the swapped order, reported separately.", "{:.3f}")]),
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
                   subsections=sections, notes=failed_note(metrics.get("failed_calls", {})))


TITLE = "BIRCH: image reliance, informativeness bias and the truthful anchor"


def report_section(config: Mapping[str, Any], out: Path) -> Section:
    """BIRCH's section: one dataset's parts directly; several datasets each in their own
    subsection, after Tables 1-3 side by side (`out`: results/birch)."""
    names = list(config["birch"]["datasets"])
    parts = [dataset_section(config, name, out / name) for name in names]
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
        parts = [f"IRS {_points(row.get('irs'))}" if "irs" in row else "",
                 f"IB {_points(base.get('ib'))} → {_points(birch.get('ib'))}",
                 f"accuracy {_points(base.get('acc'))} → {_points(birch.get('acc'))}"]
        judges.append(f"{judge}: " + ", ".join(p for p in parts if p))
    return ("Image reliance (IRS: accuracy with minus without the image), informativeness "
            "bias (IB: Acc_IDS − Acc_CDS) and accuracy, Base → BIRCH, in %: "
            + "; ".join(judges) + ".")


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
