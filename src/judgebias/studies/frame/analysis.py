"""FRAME's analysis step: every table and figure of the report from the score tables, as
pure computation (seed 004 Tables 2-7, 9-12, Figs. 2-3; spec frame.md). Changing an
analysis option reruns this step only, never a judge call."""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from judgebias.artifacts import read_table, write_frame, write_json
from judgebias.judging.values import failed_calls
from judgebias.studies.frame import effects, figures, humans
from judgebias.studies.frame import pairwise as pairs
from judgebias.studies.frame.benchmark import ITEMS
from judgebias.studies.frame.recipes import DOMAINS, ORIGINAL, SHORT_NAMES
from judgebias.studies.frame.steps import read_scores
from judgebias.studies.frame.tables import PAIRWISE, RENDERS
from judgebias.study import simulated_models

log = logging.getLogger(__name__)


def _per_judge(function, judges: list[str], *args: Any, **kwargs: Any) -> pd.DataFrame:
    frames = [function(*args, judge, **kwargs).assign(judge=judge) for judge in judges]
    return pd.concat(frames, ignore_index=True)


def answer_counts(scores: pd.DataFrame, pairwise: pd.DataFrame) -> pd.DataFrame:
    """Answers per judge and prompt by status: failed, unparseable or out-of-range answers
    are counted here and never become a score."""
    single = scores.groupby(["judge", "prompt", "status"]).size()
    double = pairwise.assign(prompt="pairwise").groupby(["judge", "prompt", "status"]).size()
    counts = pd.concat([single, double]).unstack("status", fill_value=0)
    return counts.reset_index()


def attack_success(in_sample: pd.DataFrame, cross: pd.DataFrame) -> pd.DataFrame:
    """Fig. 2's success rates per judge, each beside the chance level a judge with no
    visual bias has under the same rule (effects.attack_success): the paper's in-sample
    reading (chance from the cross-fitted table's permutation null of the same cells) and
    the gain of a setting chosen on half the items."""
    chance = cross[["judge", *effects.CELL, "chance_in_sample"]]
    return pd.concat([
        effects.attack_success(in_sample.merge(chance, on=["judge", *effects.CELL],
                                               how="left"), chance="chance_in_sample"
                               ).assign(reading="in_sample"),
        effects.attack_success(cross.assign(percent_change=cross["cross_fitted_percent"]),
                               chance="chance_cross_fitted").assign(reading="cross_fitted")],
        ignore_index=True)


def gallery(config: Mapping[str, Any], items: pd.DataFrame, scores: pd.DataFrame,
            best: pd.DataFrame, renders: pd.DataFrame) -> pd.DataFrame:
    """Example items (frame.analysis.examples per domain, the first ids) with the original
    and each manipulation at the analysis judge's best setting, and every judge's score."""
    n = config["frame"]["analysis"]["examples"]
    chosen = items.sort_values("item_id").groupby("domain", sort=False).head(n)
    standard = scores[scores["prompt"] == "standard"]
    rows = []
    for item in chosen.itertuples():
        shown = [(ORIGINAL, "Orig.", item.image)]
        mine = best[best["domain"] == item.domain]
        for recipe, manipulation in zip(mine["recipe"], mine["manipulation"], strict=True):
            found = renders[(renders["item_id"] == item.item_id)
                            & (renders["recipe"] == recipe) & (renders["status"] == "ok")]
            if not found.empty:
                shown.append((recipe, SHORT_NAMES[manipulation], found["image"].iloc[0]))
        for recipe, label, image in shown:
            got = standard[(standard["item_id"] == item.item_id)
                           & (standard["recipe"] == recipe)]
            text = " ".join(f"{j}:{s:.1f}" for j, s in zip(got["judge"], got["score"],
                                                            strict=True) if pd.notna(s))
            rows.append({"item_id": item.item_id, "domain": item.domain, "recipe": recipe,
                         "label": label, "image": image, "scores": text})
    return pd.DataFrame(rows, columns=["item_id", "domain", "recipe", "label", "image",
                                       "scores"])


def analyse(config: Mapping[str, Any], items_path: str, score_paths: list[str],
            recipe_paths: list[str], mitigation_path: str, combinations_path: str,
            pairwise_path: str, render_paths: list[str], out: Path) -> None:
    frame = config["frame"]
    judges, analyst = frame["models"], frame["analysis_judge"]
    options = frame["analysis"]
    items = read_table(items_path, ITEMS)
    scores = read_scores(score_paths)
    follow = read_scores([mitigation_path, combinations_path])
    verdicts = read_table(pairwise_path, PAIRWISE)
    best = pd.concat([pd.read_parquet(p) for p in recipe_paths], ignore_index=True)
    renders = pd.concat([read_table(p, RENDERS) for p in render_paths], ignore_index=True)

    in_sample = _per_judge(effects.in_sample_table, judges, scores)
    cross = _per_judge(effects.cross_fitted_table, judges, scores,
                       n_permutations=options["n_permutations"], seed=options["seed"])
    success = attack_success(in_sample, cross)
    analyst_best = best[best["judge"] == analyst]
    everything = pd.concat([scores, follow], ignore_index=True)
    tables = {
        "table2": humans.score_distribution(items),
        "table7": humans.inter_annotator(items),
        "table3_in_sample": in_sample,
        "table3_cross_fitted": cross,
        "attack_success": success,
        "table4": in_sample[in_sample["manipulation"] == "beauty_filter"],
        "table5": effects.mitigation_table(everything, analyst),
        "table6": effects.combinations_table(everything, analyst, analyst_best),
        "recipes": best,
        "combinations": effects.combinations_table(everything, analyst, analyst_best,
                                                   detail=True),
        "win_rates": pairs.win_rates(verdicts),
        "significance": _per_judge(effects.paired_tests, judges, scores),
        "human_correlation": humans.human_correlation(scores, items),
        "answers": answer_counts(pd.concat([scores, follow], ignore_index=True), verdicts),
    }
    for name, table in tables.items():
        write_frame(table.reset_index(drop=True), out / f"{name}.parquet")
    simulated = simulated_models(config, judges)
    figures.fig2(success, simulated, out / "figures/fig2.png")
    figures.fig3(tables["win_rates"], analyst, simulated, out / "figures/fig3.png")
    figures.null_figure(cross, simulated, out / "figures/null.png")
    figures.examples(gallery(config, items, scores, analyst_best, renders), simulated,
                     out / "figures/examples.png")
    failed = failed_calls(pd.concat([scores, follow, verdicts], ignore_index=True), "judge")
    write_json(metrics(config, items, tables) | {"failed_calls": failed},
               out / "metrics.json")


def metrics(config: Mapping[str, Any], items: pd.DataFrame,
            tables: Mapping[str, pd.DataFrame]) -> dict[str, Any]:
    """DVC metrics: per judge, attack success (both readings) and its chance level, the
    cells whose inflation is significant after Benjamini-Hochberg FDR at alpha (the
    permutation test of the max over the grid), the correlation with the humans; item
    counts per domain."""
    success = tables["attack_success"].set_index(["judge", "reading"])
    cross = tables["table3_cross_fitted"]
    correlation = tables["human_correlation"].set_index("judge")
    out: dict[str, Any] = {"items": {d: int((items["domain"] == d).sum()) for d in DOMAINS
                                     if (items["domain"] == d).any()}, "judges": {}}
    for judge in config["frame"]["models"]:
        mine = cross[cross["judge"] == judge]
        out["judges"][judge] = {
            "attack_success_in_sample": _number(success, (judge, "in_sample"),
                                                "success_rate"),
            "chance_in_sample": _number(success, (judge, "in_sample"), "chance_rate"),
            "attack_success_cross_fitted": _number(success, (judge, "cross_fitted"),
                                                   "success_rate"),
            "chance_cross_fitted": _number(success, (judge, "cross_fitted"), "chance_rate"),
            "cells_significant": int((mine["in_sample_q"]
                                      < config["frame"]["analysis"]["alpha"]).sum()),
            "pearson_with_humans": _number(correlation, judge, "pearson"),
        }
    return json.loads(json.dumps(out))


def _number(table: pd.DataFrame, key: Any, column: str) -> float | None:
    """One judge's metric; None where it has none (no usable answer: every call failed,
    accepted by max_failures)."""
    if key not in table.index:
        return None
    value = float(table.loc[key, column])
    return None if math.isnan(value) else value
