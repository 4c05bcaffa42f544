"""The calls Pomms will make, for `judgebias plan`: every panel evaluator on every item of
every judgement dataset. A built dataset, or an imported one (read where it lies, as its
judgements job will), is keyed item by item; a synthetic one not built yet is estimated
from its `n_items` (one call per item and evaluator), and so is an imported one not
downloaded yet, from its declared `n_items` (configs/philautia_eval.yaml: the published
sizes), or one whose images are not there yet, from its file's items."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

import pandas as pd

from judgebias.judging.tasks import build_requests
from judgebias.models.context import RunContext
from judgebias.plan import NotCounted, PlannedCalls
from judgebias.studies.philautia.jobs import judge_task
from judgebias.studies.philautia.params import settings_of
from judgebias.studies.pomms.jobs import item_rows
from judgebias.studies.pomms.params import judgement_setting
from judgebias.studies.pomms.tables import judgements_path
from judgebias.study import study_models

NOT_BUILT = "synthetic judgement datasets not built: one call per item"
NOT_DOWNLOADED = ("judgement files not downloaded yet: one call per item of the declared "
                  "size (pomms.datasets.<name>.n_items)")
NO_IMAGES = "judgement images not downloaded yet: one call per item of the file"


def _rows(dataset: str, spec: Mapping[str, Any]) -> pd.DataFrame | tuple[int, str]:
    """The items to score: from the built table, else from the imported file; else how
    many to count and why (a synthetic set not built, a file or its images not
    downloaded yet). Raises LookupError for a file absent with no declared size."""
    from judgebias.studies.pomms.data import build_judgements, items

    path = judgements_path(dataset)
    if Path(path).exists():
        return item_rows(path)
    if spec["format"] == "synthetic":
        return spec.get("n_items", 0), NOT_BUILT
    if not Path(spec["path"]).is_file():
        if "n_items" not in spec:
            raise LookupError(f"{spec['path']} is not downloaded yet and "
                              f"pomms.datasets.{dataset}.n_items declares no size")
        return spec["n_items"], NOT_DOWNLOADED
    images = spec.get("image_dir")
    with TemporaryDirectory() as unused:  # an import writes no image; plan writes nothing
        if images and not Path(images).is_dir():
            table = build_judgements(dataset, {**spec, "image_dir": None}, Path(unused))
            return len(items(table)), NO_IMAGES
        table = build_judgements(dataset, spec, Path(unused))
    return items(table).rename(columns={"candidate": "caption"})


def planned_calls(params: Mapping[str, Any]) -> list[PlannedCalls | NotCounted]:
    pomms, run = params["pomms"], RunContext(params)
    task = judge_task(settings_of(params["philautia"])[judgement_setting(pomms)])
    planned: list[PlannedCalls | NotCounted] = []
    calls = [PlannedCalls(m, task=task) for m in study_models(params, "philautia")]
    for dataset, spec in pomms["datasets"].items():
        try:
            rows = _rows(dataset, spec)
        except (OSError, ValueError, LookupError) as error:
            planned.append(NotCounted(f"dataset {dataset}: cannot be read yet ({error})"))
            continue
        for evaluator in calls:
            if isinstance(rows, tuple):
                evaluator.estimated += rows[0]
                evaluator.note = rows[1]
                continue
            requests, _ = build_requests(run, evaluator.model, task, rows)
            evaluator.requests += [r for r in requests if r is not None]
    return [*calls, *planned]
