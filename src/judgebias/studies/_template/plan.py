"""The calls the template study will make, for `judgebias plan`: one per answer and judge
(estimated from ``n_items``: the answers are drawn by its first step); and how its card
measure grows with params, for `judgebias plan --power`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from judgebias.plan import NotCounted, PlannedCalls
from judgebias.study import study_models


def planned_calls(params: Mapping[str, Any]) -> list[PlannedCalls | NotCounted]:
    n_items = params["_template"]["n_items"]
    return [PlannedCalls(m, estimated=n_items, note="one call per synthetic answer")
            for m in study_models(params, "_template")]


def power_sizes(params: Mapping[str, Any]) -> dict[str, float]:
    """Card measure -> design size: the verbosity slope's standard error shrinks with the
    root of the number of answers (judgebias.stats.power)."""
    return {"length_slope": float(params["_template"]["n_items"])}
