"""FRAME's summaries across the score tables (seed 004 Fig. 2; spec frame.md): answers
counted by status, attack success in both readings beside its chance level, and the DVC
metrics; the analysis step (steps.analysis) writes them with the tables of effects.py,
humans.py and pairwise.py."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from judgebias.studies.frame.measures import effects
from judgebias.studies.frame.recipes import DOMAINS


def per_judge(function, judges: list[str], *args: Any, **kwargs: Any) -> pd.DataFrame:
    """`function(*args, judge, **kwargs)` of every judge, stacked, with a judge column."""
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


def metrics(items: pd.DataFrame, tables: Mapping[str, pd.DataFrame], judges: Sequence[str],
            alpha: float) -> dict[str, Any]:
    """metrics.json: per judge of `judges`, attack success (both readings) and its chance
    level, the cells whose inflation is significant after Benjamini-Hochberg FDR at `alpha` (the
    permutation test of the max over the grid), the correlation with the humans; item
    counts per domain."""
    success = tables["attack_success"].set_index(["judge", "reading"])
    cross = tables["table3_cross_fitted"]
    correlation = tables["human_correlation"].set_index("judge")
    out: dict[str, Any] = {"items": {d: int((items["domain"] == d).sum()) for d in DOMAINS
                                     if (items["domain"] == d).any()}, "judges": {}}
    for judge in judges:
        mine = cross[cross["judge"] == judge]
        out["judges"][judge] = {
            "attack_success_in_sample": _number(success, (judge, "in_sample"),
                                                "success_rate"),
            "chance_in_sample": _number(success, (judge, "in_sample"), "chance_rate"),
            "attack_success_cross_fitted": _number(success, (judge, "cross_fitted"),
                                                   "success_rate"),
            "chance_cross_fitted": _number(success, (judge, "cross_fitted"), "chance_rate"),
            "cells_significant": int((mine["in_sample_q"]
                                      < alpha).sum()),
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
