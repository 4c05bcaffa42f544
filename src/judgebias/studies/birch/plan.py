"""The calls BIRCH will make, for `judgebias plan`: the labeller (both orders), each
judge's Base and no-image verdicts and preparatory passes once the pair table exists, and
the variants that wait on a preparatory text (counted as waiting until it exists)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from judgebias.artifacts import read_table
from judgebias.judging.tasks import build_requests
from judgebias.plan import PlannedCalls
from judgebias.studies.birch.tables import PAIRS, PAIRS_PATH


def planned_calls(config: Mapping[str, Any]) -> list[PlannedCalls]:
    from judgebias.studies.birch.jobs import (
        NEEDS,
        ORDERS,
        STEPS,
        judge_task,
        label_task,
        shown,
        text_task,
        with_texts,
    )

    block = config["birch"]
    if not Path(PAIRS_PATH).exists():
        return [PlannedCalls(k, note="BIRCH pairs not built yet")
                for k in dict.fromkeys([block["labeller"], *block["models"]])]
    pairs = read_table(PAIRS_PATH, PAIRS)
    orders = ORDERS if block["swap_order"] else ORDERS[:1]
    labeller = PlannedCalls(block["labeller"], note="informativeness labeller, both orders")
    labeller.requests = _built(config, block["labeller"], label_task(), shown(pairs, ORDERS))
    planned = [labeller]
    for judge in block["models"]:
        calls = PlannedCalls(judge)
        for variant in block["variants"]:
            if variant in NEEDS or variant == "equalised":
                calls.waiting += len(pairs) * len(orders)
                continue
            calls.requests += _built(config, judge, judge_task(variant),
                                     shown(with_texts(pairs, None), orders))
        for step in sorted({NEEDS[v] for v in block["variants"] if v in NEEDS} & set(STEPS)):
            calls.requests += _built(config, judge, text_task(step, block["caption_prompt"]),
                                     shown(pairs, ORDERS[:1]))
        calls.note = "variants on a reference, caption, anchor or equalised pairs wait"
        planned.append(calls)
    if "equalised" in block["variants"]:
        planned.append(PlannedCalls(block["lengthener"], waiting=len(pairs),
                                    note="lengthener (at most one call per pair)"))
    return planned


def _built(config: Mapping[str, Any], model: str, task: Any, items: Any) -> list:
    requests, _ = build_requests(config, model, task, items)
    return [r for r in requests if r is not None]
