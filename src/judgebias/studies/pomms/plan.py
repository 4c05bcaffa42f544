"""The calls Pomms will make, for `judgebias plan`: every panel evaluator on every item of
every judgement dataset. A built dataset, or an imported one (read where it lies, as its
judgements job will), is keyed item by item; a synthetic one not built yet is estimated
from its `n_items` (one call per item and evaluator)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

import pandas as pd

from judgebias.judging.tasks import build_requests
from judgebias.plan import NotCounted, PlannedCalls
from judgebias.studies.philautia.jobs import judge_task
from judgebias.studies.pomms.jobs import item_rows
from judgebias.studies.pomms.params import judgement_setting
from judgebias.studies.pomms.tables import judgements_path
from judgebias.study import study_models


def _rows(dataset: str, spec: Mapping[str, Any]) -> pd.DataFrame | None:
    """The items to score: from the built table, else from the imported file (None for a
    synthetic dataset not built yet)."""
    from judgebias.studies.pomms.data import build_judgements, items

    path = judgements_path(dataset)
    if Path(path).exists():
        return item_rows(path)
    if spec["format"] == "synthetic":
        return None
    with TemporaryDirectory() as unused:  # an import writes no image; plan writes nothing
        table = build_judgements(dataset, spec, Path(unused))
    return items(table).rename(columns={"candidate": "caption"})


def planned_calls(config: Mapping[str, Any]) -> list[PlannedCalls | NotCounted]:
    pomms = config["pomms"]
    task = judge_task(config, judgement_setting(pomms))
    planned: list[PlannedCalls | NotCounted] = []
    calls = [PlannedCalls(m) for m in study_models(config, "philautia")]
    for dataset, spec in pomms["datasets"].items():
        try:
            rows = _rows(dataset, spec)
        except (OSError, ValueError) as error:
            planned.append(NotCounted(f"dataset {dataset}: cannot be read yet ({error})"))
            continue
        for evaluator in calls:
            if rows is None:
                evaluator.estimated += spec.get("n_items", 0)
                evaluator.note = "synthetic judgement datasets not built: one call per item"
                continue
            requests, _ = build_requests(config, evaluator.model, task, rows)
            evaluator.requests += [r for r in requests if r is not None]
    return [*calls, *planned]
