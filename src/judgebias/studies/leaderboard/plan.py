"""The calls the leaderboard will make, for `judgebias plan`: each model system's panel
model captions every image of its task, and every judge scores every system's caption.
Where a task's images (for the captions) or its outputs table (for the scores) are built,
the requests are keyed one by one, as the jobs will send them; before that they are
estimated from the task's size (one call per image; per image and system)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from judgebias.io.artifacts import read_table
from judgebias.judging.tasks import build_requests
from judgebias.models.context import RunContext
from judgebias.plan import NotCounted, PlannedCalls
from judgebias.studies.leaderboard.jobs import judged_rows
from judgebias.studies.leaderboard.params import method_judges, model_systems
from judgebias.studies.leaderboard.tables import images_table, outputs_path
from judgebias.studies.philautia.jobs import caption_task, judge_task
from judgebias.studies.philautia.params import Setting
from judgebias.studies.philautia.tables import IMAGES

NO_IMAGES = "the task's images not built: one call per image"
NO_OUTPUTS = ("the task's captions not gathered: one call per image and system (a "
              "failed caption is not scored)")


def planned_calls(params: Mapping[str, Any]) -> list[PlannedCalls | NotCounted]:
    run, board = RunContext(params), params["leaderboard"]
    calls: dict[tuple[str, str], PlannedCalls] = {}
    for name, task in board["tasks"].items():
        n_images = task["images"]["synthetic"]["n_images"]
        captioning = caption_task(task["caption_prompt"])
        for model in model_systems(task).values():
            planned = calls.setdefault((model, "caption"), PlannedCalls(model, task=captioning))
            if Path(images_table(name)).exists():
                requests, _ = build_requests(run, model, captioning,
                                             read_table(images_table(name), IMAGES))
                planned.requests += [r for r in requests if r is not None]
            else:
                planned.estimated += n_images
                planned.note = NO_IMAGES
        judging = judge_task(Setting(prompt=task["prompt"], references=task["references"]))
        built = Path(outputs_path(name)).exists()
        rows = judged_rows(images_table(name), outputs_path(name)) if built else None
        for judge in method_judges(params):
            planned = calls.setdefault((judge, "judge"), PlannedCalls(judge, task=judging))
            if rows is not None:
                requests, _ = build_requests(run, judge, judging, rows)
                planned.requests += [r for r in requests if r is not None]
            else:
                planned.estimated += n_images * len(task["systems"])
                planned.note = NO_OUTPUTS
    return list(calls.values())
