"""The calls the template study will make, for `judgebias plan`: one per answer and judge
(estimated from ``n_items``: the answers are drawn by its first step)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from judgebias.plan import NotCounted, PlannedCalls
from judgebias.study import study_models


def planned_calls(params: Mapping[str, Any]) -> list[PlannedCalls | NotCounted]:
    n_items = params["_template"]["n_items"]
    return [PlannedCalls(m, estimated=n_items, note="one call per synthetic answer")
            for m in study_models(params, "_template")]
