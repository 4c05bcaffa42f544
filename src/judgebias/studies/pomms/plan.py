"""The calls Pomms will make, for `judgebias plan`: every panel evaluator on every item of
every judgement dataset that has been built (the others are counted as waiting)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from judgebias.judging.tasks import build_requests
from judgebias.plan import PlannedCalls
from judgebias.studies.philautia.jobs import judge_task
from judgebias.studies.pomms.jobs import item_rows
from judgebias.studies.pomms.params import judgement_setting
from judgebias.studies.pomms.tables import judgements_path
from judgebias.study import study_models


def planned_calls(config: Mapping[str, Any]) -> list[PlannedCalls]:
    pomms = config["pomms"]
    task = judge_task(config, judgement_setting(pomms))
    planned = [PlannedCalls(m) for m in study_models(config, "philautia")]
    for dataset, spec in pomms["datasets"].items():
        path = judgements_path(dataset)
        rows = item_rows(path) if Path(path).exists() else None
        for calls in planned:
            if rows is None:
                calls.waiting += spec.get("n_items", 0)
                calls.note = "judgement datasets not built yet"
                continue
            requests, _ = build_requests(config, calls.model, task, rows)
            calls.requests += [r for r in requests if r is not None]
    return planned
