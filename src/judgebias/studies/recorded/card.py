"""The recorded study's rows of the judge card: each measure its tables computed, per judge
and table (the card's ``setting``), copied with the interval and test the measure's own
module gives (never a new statistic). Each row's note says the judgements were recorded
elsewhere, so the card says where every number came from."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from judgebias.card.schema import card_row
from judgebias.card.text import signed_phrase
from judgebias.studies.recorded.tables import measures_path

NOTE = "recorded judgements (no call made)"
POSITION = {"pc": ("Position consistency (Shi et al.)", "share"),
            "pf": ("Preference fairness (Shi et al.)", "share"),
            "first_slot_rate": ("First-slot rate", "share")}
ACCURACY = {"acc_all": ("Accuracy against human preferences", "share"),
            "ib": ("Informativeness bias IB (seed 003 §3.4)", "accuracy points")}


def inputs(params: Mapping[str, Any]) -> dict[str, str]:
    return {name: measures_path(name) for name in params["recorded"]["tables"]}


def rows(params: Mapping[str, Any], files: Mapping[str, Path]) -> pd.DataFrame:
    out: list[dict[str, Any]] = []
    for name, path in files.items():
        table = pd.read_parquet(path)
        source = str(path)
        for kind, group in table.groupby("table", sort=False):
            records = group.to_dict("records")
            if kind == "self_preference":
                out += [_self_row(r, name, source) for r in records]
            elif kind == "agreement":
                out += [_agreement_row(r, name, source) for r in records]
            elif kind == "position":
                out += [_position_row(r, name, source) for r in records
                        if r["measure"] in POSITION]
            elif kind == "accuracy":
                out += [_accuracy_row(r, name, source) for r in records
                        if r["statistic"] in ACCURACY]
    return pd.DataFrame(out)


def _finite(value: Any) -> float:
    return float(value) if value is not None and np.isfinite(value) else float("nan")


def _self_row(record: Mapping[str, Any], table: str, source: str) -> dict[str, Any]:
    identified = bool(record["own_identified"]) and np.isfinite(record["own_effect"])
    return card_row(
        record["model"], "recorded", "self_preference", setting=table,
        label="Self-preference (score points)", unit="score points",
        estimate=_finite(record["own_effect"]), ci_low=_finite(record["own_ci_low"]),
        ci_high=_finite(record["own_ci_high"]),
        interval="" if not identified else "Wald 95%, image-clustered",
        p_value=_finite(record["own_p_value"]), test="" if not identified else "Wald",
        n=int(record["own_n"]), null_value=0.0, headline=identified, source=source,
        reading="" if not identified else signed_phrase(
            record["own_effect"], record["own_ci_low"], record["own_ci_high"],
            "gives its own outputs {} points more", "gives its own outputs {} points less"),
        note=NOTE if identified else f"{NOTE}; not identified (a model only generating or "
                                     "only judging, or no other judge of its outputs)")


def _agreement_row(record: Mapping[str, Any], table: str, source: str) -> dict[str, Any]:
    return card_row(
        record["judge"], "recorded", "agreement_tau_b", setting=table,
        label="Agreement with humans (Kendall tau-b)", unit="tau",
        estimate=_finite(record["tau_b"]), ci_low=_finite(record.get("tau_b_low")),
        ci_high=_finite(record.get("tau_b_high")),
        interval="percentile cluster bootstrap over items",
        p_value=_finite(record.get("tau_b_p")), test="bootstrap",
        n=int(record["n"]), null_value=0.0, source=source, note=NOTE)


def _position_row(record: Mapping[str, Any], table: str, source: str) -> dict[str, Any]:
    label, unit = POSITION[record["measure"]]
    return card_row(
        record["judge"], "recorded", record["measure"], setting=table, label=label,
        unit=unit, estimate=_finite(record["estimate"]), ci_low=_finite(record["ci_low"]),
        ci_high=_finite(record["ci_high"]), interval=str(record["interval"] or ""),
        p_value=_finite(record["p_value"]), test=str(record["test"] or ""),
        n=int(record["n"]) if np.isfinite(record["n"]) else 0,
        chance=_finite(record["chance"]),
        headline=record["measure"] == "pf", source=source,
        note="; ".join(x for x in (NOTE, str(record["note"] or "")) if x))


def _accuracy_row(record: Mapping[str, Any], table: str, source: str) -> dict[str, Any]:
    label, unit = ACCURACY[record["statistic"]]
    return card_row(
        record["judge"], "recorded", record["statistic"], setting=table, label=label,
        unit=unit, estimate=_finite(record["estimate"]), ci_low=_finite(record["low"]),
        ci_high=_finite(record["high"]), interval="percentile bootstrap over pairs",
        n=int(record["n_pairs"]), null_value=0.0 if record["statistic"] == "ib" else
        float("nan"), headline=record["statistic"] == "ib", source=source, note=NOTE)
