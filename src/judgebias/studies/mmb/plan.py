"""The calls MMB will make, for `judgebias plan`: each judge on every (pair, instruction,
order shown) once the pair table and the pool exist (counted as waiting before), and the
writer's rephrasings when the pool grows."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from judgebias.judging.tasks import build_requests
from judgebias.plan import PlannedCalls
from judgebias.studies.mmb.tables import INSTRUCTIONS_PATH, PAIRS_PATH


def planned_calls(config: Mapping[str, Any]) -> list[PlannedCalls]:
    from judgebias.studies.mmb.jobs import judge_items, judge_task

    mmb = config["mmb"]
    planned = []
    ready = Path(PAIRS_PATH).exists() and Path(INSTRUCTIONS_PATH).exists()
    items = judge_items(config, PAIRS_PATH, INSTRUCTIONS_PATH) if ready else None
    for judge in mmb["models"]:
        calls = PlannedCalls(judge)
        if items is None:
            calls.note = "MMB pairs or instruction pool not built yet"
        else:
            requests, _ = build_requests(config, judge, judge_task(config), items)
            calls.requests = [r for r in requests if r is not None]
        planned.append(calls)
    grow = mmb["instructions"]["grow"]
    if grow and not Path(INSTRUCTIONS_PATH).exists():
        planned.append(PlannedCalls(grow["writer"], waiting=grow["n"],
                                    note="instruction writer (mmb.instructions.grow)"))
    return planned
