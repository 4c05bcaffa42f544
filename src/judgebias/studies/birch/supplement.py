"""The pieces of seed 003 the main analysis does not print: Fig. 11 (per-domain accuracy
with vs without the image, and per-domain IRS; Appendix C.2), Table 5 (anchor quality,
§6.4: judgebias.studies.birch.anchors) and Table 6 (calls, tokens and cost per pair and
method, §6.5: judgebias.studies.birch.cost). One step per dataset, reading only the
tables its rule declares (and, by their request keys, the journal's usage)."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
from matplotlib.figure import Figure as MplFigure
from matplotlib.lines import Line2D

from judgebias.artifacts import read_table, write_frame
from judgebias.report.figures import display_name, save_figure
from judgebias.studies.birch import measures as m
from judgebias.studies.birch.tables import PAIRS, TEXTS, VERDICTS

log = logging.getLogger(__name__)

TABLES = ("fig11", "table5", "table6")
FIGURE = "fig11"
TAB20 = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
         "#7f7f7f", "#bcbd22", "#17becf", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896")
DOMAIN_COLUMNS = ["judge", "domain", "n_pairs", "acc_image", "acc_no_image", "irs"]


def domain_reliance(judge: str, correct_image: pd.Series, correct_no_image: pd.Series,
                    domain: pd.Series) -> pd.DataFrame:
    """Fig. 11 of seed 003 (Appendix C.2) as a table: per domain, accuracy with and
    without the image over the pairs usable in both, and their difference, the IRS of
    §3.2 restricted to the domain (:func:`measures.image_reliance` with the domain as
    the subset). Rows in the order the domains first appear."""
    rows = []
    for name in dict.fromkeys(domain.dropna()):
        irs = m.image_reliance(correct_image, correct_no_image, domain, name)
        rows.append({"judge": judge, "domain": name, "n_pairs": irs.n_pairs,
                     "acc_image": irs.with_image.value,
                     "acc_no_image": irs.without_image.value, "irs": irs.value})
    return pd.DataFrame(rows, columns=DOMAIN_COLUMNS)


def correct_of(verdicts: pd.DataFrame, variant: str, preference: pd.Series) -> pd.Series:
    """Correctness per pair of one judge's variant, in the order shown first."""
    rows = verdicts[(verdicts["variant"] == variant) & (verdicts["order"] == "ab")]
    rows = rows.set_index("pair_id")
    return m.correctness(rows["verdict"], preference.reindex(rows.index))


def fig11(table: pd.DataFrame, simulated: set[str], path: Path) -> None:
    """Seed 003 Fig. 11: one panel per judge, a point per domain at (accuracy with the
    image, accuracy without), its area the domain's pairs; above the diagonal the image
    hurt, below it helped. Domains are told apart by colour and named in one legend."""
    judges = list(dict.fromkeys(table["judge"])) or [""]
    domains = list(dict.fromkeys(table["domain"]))
    colours = dict(zip(domains, itertools.cycle(TAB20), strict=False))
    columns = min(2, len(judges))
    rows = -(-len(judges) // columns)
    fig = MplFigure(figsize=(3.4 * columns, 3.1 * rows + 0.3 * (len(domains) // 3 + 1)))
    largest = max(float(table["n_pairs"].max()), 1.0) if not table.empty else 1.0
    for i, judge in enumerate(judges, start=1):
        ax = fig.add_subplot(rows, columns, i)
        ax.fill_between([0, 100], [0, 100], [0, 0], color="#2ca02c", alpha=0.08)
        ax.fill_between([0, 100], [0, 100], [100, 100], color="#d62728", alpha=0.08)
        ax.plot([0, 100], [0, 100], color="black", linewidth=0.6)
        for _, row in table[table["judge"] == judge].iterrows():
            ax.scatter(row["acc_image"] * 100, row["acc_no_image"] * 100,
                       s=20 + 200 * row["n_pairs"] / largest, color=colours[row["domain"]],
                       alpha=0.75, label=str(row["domain"]))
        ax.set(xlim=(0, 100), ylim=(0, 100), aspect="equal")
        ax.set_title(display_name(judge, simulated), fontsize=9)
        ax.set_xlabel("accuracy with image (%)", fontsize=8)
        ax.set_ylabel("accuracy without image (%)", fontsize=8)
        ax.tick_params(labelsize=8)
    handles = [Line2D([], [], marker="o", linestyle="", color=colours[d], label=str(d))
               for d in domains]
    if handles:
        fig.legend(handles=handles, loc="lower center", ncol=min(3, len(handles)),
                   fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.1 * (len(domains) // 3 + 1) / rows, 1, 1))
    save_figure(fig, path)


def supplement(config: Mapping[str, Any], pairs_path: str, verdict_paths: list[str],
               text_paths: list[str], out_dir: Path) -> None:
    """Write Fig. 11's table and figure, Table 5 and Table 6 of one dataset."""
    from judgebias.studies.birch.anchors import anchor_quality
    from judgebias.studies.birch.cost import cost_table

    block = config["birch"]
    pairs = read_table(pairs_path, PAIRS).set_index("pair_id", drop=False)
    verdicts = pd.concat([read_table(p, VERDICTS) for p in verdict_paths], ignore_index=True)
    texts = (pd.concat([read_table(p, TEXTS) for p in text_paths], ignore_index=True)
             if text_paths else pd.DataFrame(columns=TEXTS.names))
    domains = []
    if "no_image" in block["variants"]:
        for judge in block["models"]:
            mine = verdicts[verdicts["judge"] == judge]
            domains.append(domain_reliance(
                judge, correct_of(mine, "base", pairs["preference"]),
                correct_of(mine, "no_image", pairs["preference"]), pairs["domain"]))
    anchors = {judge: rows.set_index("pair_id")["text"]
               for judge, rows in texts[texts["step"] == "anchor"].groupby("model")}
    result = {"fig11": (pd.concat(domains, ignore_index=True) if domains
                        else pd.DataFrame(columns=DOMAIN_COLUMNS)),
              "table5": anchor_quality(pairs, anchors),
              "table6": cost_table(config, verdicts, texts)}
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in TABLES:
        write_frame(result[name].reset_index(drop=True), out_dir / f"{name}.parquet")
    simulated = {k for k in block["models"] if config["panel"][k]["backend"] == "sim"}
    fig11(result["fig11"], simulated, out_dir / "figures" / f"{FIGURE}.png")
    log.info("Table 6: %s", result["table6"][["judge", "method", "calls_per_pair"]]
             .to_dict("records"))


def outputs(results_dir: str) -> list[str]:
    """The files the supplement step writes (and the report reads)."""
    return [*(f"{results_dir}/{t}.parquet" for t in TABLES),
            f"{results_dir}/figures/{FIGURE}.png"]
