"""The calls the leaderboard will make, for `judgebias plan`: each model system's panel
model captions every image of its task, and every judge scores every system's caption.
Where a task's images (for the captions) or its outputs table (for the scores) are built,
the requests are keyed one by one, as the jobs will send them; before that they are
estimated from the task's size (one call per image; per image and system).

And how many human labels an interval width needs, for `judgebias plan --power --pilot
DIR` (`power_section`, issue 43 item 4). From the pilot's leaderboard files (each task's
outputs, every judge's scores and the labels; its Pomms ensemble for a pomms method), each
method's scores are rebuilt as the rank step builds them (`methods.method_scores`), and
for every system's mean and every pairwise difference (the targets of
`measures.ppi_rows`) the labels' and the method's moments are estimated on the pilot
(judgebias.stats.ppi_power.label_moments). With them, judgebias.stats.ppi_power predicts the PPI++
interval's half-width at the configured task's images and labels (`ppi_halfwidth`) and
the fewest labels for the target half-width (`labels_for_width`), beside the human-only
count for the same width: what the judge saves. Per task and method it prints the
target that needs the most labels (the labels after which every mean and difference is
within the target); ``--json`` gives every target.

The target half-width is ``--label-width`` (the +- of the interval, in the labels' unit).
Without it, each task's default is the half-width at which a two-sided test at
``--alpha`` detects, with power ``--power-level``, the mean gap ``d`` between neighbouring
systems under the baseline method: ``z_{level} d / (z_{1 - alpha/2} + z_{power})``
(Bloom 1995, eq. 1, as judgebias.stats.power), ``d`` the span of the systems' PPI++
means in the pilot over one less than their number. So the default answers "how many
labels until a leaderboard this spread, evenly spaced, orders its neighbours". Not the
closest pair's own gap, which the spec's wording suggests: in a pilot of a few labels the
smallest of several noisy differences is mostly noise, and two tied systems would ask
for infinitely many labels (`default_halfwidth`). Counts below
judgebias.stats.ppi_power.FEW_LABELS are starred: there the normal interval under-covers
(`few_labels`)."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from judgebias.io.artifacts import read_table
from judgebias.judging.tasks import build_requests
from judgebias.models.context import RunContext
from judgebias.plan import NotCounted, PlannedCalls, PowerSection
from judgebias.stats.power import PowerSettings
from judgebias.stats.ppi import (
    ppi_mean,
)
from judgebias.stats.ppi_power import (
    FEW_LABELS,
    LabelMoments,
    label_moments,
    labels_for_width,
    ppi_halfwidth,
)
from judgebias.studies.leaderboard.jobs import judged_rows
from judgebias.studies.leaderboard.params import (
    LeaderboardParams,
    method_judges,
    model_systems,
)
from judgebias.studies.leaderboard.tables import (
    LABELS,
    OUTPUTS,
    SCORES,
    images_table,
    labels_path,
    outputs_path,
    scores_path,
)
from judgebias.studies.philautia.jobs import caption_task, judge_task
from judgebias.studies.philautia.params import Setting
from judgebias.studies.philautia.tables import IMAGES

NO_IMAGES = "the task's images not built: one call per image"
NO_OUTPUTS = ("the task's captions not gathered: one call per image and system (a "
              "failed caption is not scored)")


def planned_calls(params: Mapping[str, Any]) -> list[PlannedCalls | NotCounted]:
    run, board = RunContext(params), params["leaderboard"]
    calls: dict[tuple[str, str], PlannedCalls] = {}
    extra: list[PlannedCalls | NotCounted] = []
    for name, task in board["tasks"].items():
        if task["kind"] == "vqa":
            from judgebias.studies.leaderboard.vqa import planned_calls as vqa_calls

            extra += vqa_calls(params, name)
            continue
        if task["kind"] == "images":
            _comparisons(params, run, name, task, calls)
            continue
        if task["kind"] == "scored_images":
            from judgebias.studies.leaderboard.params import LeaderboardParams
            from judgebias.studies.leaderboard.scored import planned_scores

            planned_scores(LeaderboardParams.from_params(params),
                           method_judges(params, "scored_images"), run, name, calls)
            continue
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
    return [*calls.values(), *extra]


NO_PICTURES = ("the task's images not gathered: every pair of systems on every prompt, "
               "per instruction asked and order shown")


def _comparisons(params: Mapping[str, Any], run: RunContext, name: str,
                 task: Mapping[str, Any], calls: dict[tuple[str, str], PlannedCalls]) -> None:
    """An images task's comparisons: each judge's, keyed one by one as the compare step
    sends them where its prompts, images and MMB's pool are built; else counted from the
    task's size (a sampled judge: times its samples)."""
    from itertools import combinations

    from judgebias.studies.leaderboard.jobs import system_pairs
    from judgebias.studies.leaderboard.params import LeaderboardParams
    from judgebias.studies.leaderboard.steps import compared_instructions
    from judgebias.studies.leaderboard.tables import PICTURES, PROMPTS, pictures_path
    from judgebias.studies.leaderboard.tables import prompts_path as prompts_table
    from judgebias.studies.mmb.jobs import judge_task as pairwise_task
    from judgebias.studies.mmb.jobs import pair_items
    from judgebias.studies.mmb.params import MmbParams, judge_prompt
    from judgebias.studies.mmb.tables import INSTRUCTIONS_PATH, read_pool

    view, mmb = LeaderboardParams.from_params(params), MmbParams.from_params(params)
    asking = pairwise_task(judge_prompt(mmb.prompt, mmb.layout))
    built = all(Path(p).exists() for p in (prompts_table(name), pictures_path(name),
                                           INSTRUCTIONS_PATH))
    pool = (list(read_pool(INSTRUCTIONS_PATH)["id"]) if built
            else [entry["id"] for entry in _builtin_pool()])
    systems = list(task["systems"])
    for judge in method_judges(params, "images"):
        planned = calls.setdefault((judge, "judge"), PlannedCalls(judge, task=asking))
        asked = compared_instructions(view, mmb, judge, pool)
        how = mmb.probability.of(judge)
        samples = how.n if how is not None else 1
        if built:
            pairs = system_pairs(read_table(prompts_table(name), PROMPTS),
                                 read_table(pictures_path(name), PICTURES), systems)
            pool_table = read_pool(INSTRUCTIONS_PATH)
            items = pair_items(pairs, pool_table[pool_table["id"].isin(asked)],
                               task["order"], task["order_seed"])
            requests, _ = build_requests(run, judge, asking, items, range(samples))
            planned.requests += [r for r in requests if r is not None]
        else:
            n_prompts = task["prompts"].get("synthetic", {}).get("n_prompts", 0)
            orders = 2 if task["order"] == "both" else 1
            planned.estimated += (n_prompts * len(list(combinations(systems, 2)))
                                  * len(asked) * orders * samples)
            planned.note = NO_PICTURES


def _builtin_pool() -> list[dict[str, str]]:
    from judgebias.studies.mmb.params import builtin_pool

    return builtin_pool()


# `judgebias plan --power`: the human labels a target interval half-width needs.

# The --json rows: per task, method and target (a mean, or the difference system - other),
# the pilot's labelled and scored images behind it and the labels' correlation with the
# method's scores there; the configured images and labels; the predicted PPI++ and
# human-only half-widths at those labels; the target half-width and the labels each
# needs for it (None: more than the task's images).
LABEL_COLUMNS = ["task", "method", "target", "system", "other", "pilot_labelled",
                 "pilot_items", "correlation", "items", "labelled", "halfwidth",
                 "halfwidth_human", "target_halfwidth", "labels", "labels_human"]


@dataclass(frozen=True)
class Target:
    """One PPI++ estimand of a method in the pilot: a system's mean (``other`` empty) or
    the difference ``system - other``, with the pilot's labelled and unlabelled items."""

    system: str
    other: str
    y_labelled: np.ndarray
    f_labelled: np.ndarray
    f_unlabelled: np.ndarray


def label_targets(matrix: pd.DataFrame, labels: pd.DataFrame) -> Iterator[Target]:
    """Every system's mean and every pairwise difference of `matrix` (images x systems,
    a method's scores) with the human labels of `labels` (image_id, system, label), as
    `measures.ppi_rows` pairs them: an image counts where the method scored it, as
    labelled where it has the label(s) too; a target needs two of each."""
    truth = labels.pivot(index="image_id", columns="system", values="label").reindex(
        index=matrix.index, columns=matrix.columns)
    pairs = [(s, "", matrix[s], truth[s]) for s in matrix.columns]
    pairs += [(a, b, matrix[a] - matrix[b], truth[a] - truth[b])
              for a, b in combinations(matrix.columns, 2)]
    for system, other, f, y in pairs:
        scored = f.notna().to_numpy()
        labelled = scored & y.notna().to_numpy()
        unlabelled = scored & y.isna().to_numpy()
        if labelled.sum() >= 2 and unlabelled.sum() >= 2:
            yield Target(system, other, y.to_numpy()[labelled], f.to_numpy()[labelled],
                         f.to_numpy()[unlabelled])


def default_halfwidth(targets: list[Target], settings: PowerSettings, level: float
                      ) -> tuple[float, str] | None:
    """The half-width at which the mean gap between neighbouring systems is detected at
    the settings' alpha and power: the span of the systems' PPI++ means in the pilot over
    one less than their number (the gap of an evenly spaced leaderboard of that spread),
    times ``z_{level} / (z_{1 - alpha/2} + z_{power})``; with a line saying so, or None
    with fewer than two systems. (Not the closest pair's gap: with a few labels the
    smallest of several noisy differences is mostly noise, and two tied systems would ask
    for infinitely many labels.)"""
    means = [ppi_mean(t.y_labelled, t.f_labelled, t.f_unlabelled).estimate
             for t in targets if not t.other]
    if len(means) < 2:
        return None
    gap = (max(means) - min(means)) / (len(means) - 1)
    if gap <= 0:
        return None
    z_level = float(stats.norm.ppf(0.5 + level / 2))
    return z_level * gap / settings.multiplier, (
        f"detects the mean gap between neighbours, {gap:.3g} (the {len(means)} systems' "
        f"PPI++ means span {max(means) - min(means):.3g} in the pilot), at alpha "
        f"{settings.alpha:g} and power {settings.power:g}")


def target_row(target: Target, moments: LabelMoments, items: int, labelled: int | None,
               halfwidth: float, level: float) -> dict[str, Any]:
    """One target's row: the predicted half-widths at the configured labels (PPI++ and
    human-only) and the labels each needs for `halfwidth`."""
    now = labelled if labelled is not None and 2 <= labelled <= items - 2 else None
    return {
        "target": "difference" if target.other else "mean", "system": target.system,
        "other": target.other, "pilot_labelled": int(target.y_labelled.size),
        "pilot_items": int(target.y_labelled.size + target.f_unlabelled.size),
        "correlation": moments.correlation, "items": items, "labelled": labelled,
        "halfwidth": (None if now is None
                      else ppi_halfwidth(moments, now, items - now, confidence=level)),
        "halfwidth_human": (None if now is None
                            else ppi_halfwidth(moments, now, 0, confidence=level, lam=0.0)),
        "target_halfwidth": halfwidth,
        "labels": labels_for_width(halfwidth, moments, items, confidence=level),
        "labels_human": labels_for_width(halfwidth, moments, items, confidence=level,
                                         human_only=True),
    }


def pilot_matrices(pilot: LeaderboardParams, pilot_dir: Path, task: str,
                   methods: list[str], judges: list[str], pomms_file: Path
                   ) -> tuple[dict[str, pd.DataFrame], pd.DataFrame | None, list[str]]:
    """The pilot's scores of `task` under each of `methods` (images x systems, as the
    rank step builds them from `judges`' scores), its labels, and a line for each file
    missing (no matrices where a table is)."""
    from judgebias.studies.leaderboard.methods import judge_values, method_scores

    files = [pilot_dir / outputs_path(task), pilot_dir / labels_path(task),
             *(pilot_dir / scores_path(task, judge) for judge in judges)]
    missing = [str(path) for path in files if not path.is_file()]
    if missing:
        return {}, None, [f"not in the pilot: {', '.join(missing)}"]
    table = read_table(files[0], OUTPUTS)
    values = judge_values(pd.concat([read_table(p, SCORES) for p in files[2:]],
                                    ignore_index=True), pilot.score)
    fitted = (_ensemble(pomms_file)
              if any(pilot.methods[m].kind == "pomms" for m in methods) else None)
    images, systems = sorted(table["image_id"].unique()), list(pilot.tasks[task].systems)
    matrices, notes = {}, []
    for name in methods:
        if pilot.methods[name].kind == "pomms" and fitted is None:
            notes.append(f"method {name}: no fitted ensemble in the pilot ({pomms_file})")
            continue
        matrices[name] = method_scores(pilot, task, name, values, images, systems,
                                       fitted).matrix
    return matrices, read_table(files[1], LABELS), notes


def _ensemble(path: Path) -> Any:
    """The pilot's fitted Pomms ensemble, or None where it has none."""
    if not path.is_file():
        return None
    from judgebias.io.saved import load
    from judgebias.study import saved_classes

    return load(path, trusted=saved_classes()).estimator


def configured_labels(task: Mapping[str, Any], pilot_labelled: int) -> int | None:
    """The labelled images of the configured `task`: its synthetic raters' count, a
    labels file's as in the pilot (`pilot_labelled`), None without labels."""
    labels = task.get("human_labels")
    if labels is None:
        return None
    return int(labels["synthetic"]["n_items"]) if "synthetic" in labels else pilot_labelled


def power_section(params: Mapping[str, Any], pilot_params: Mapping[str, Any],
                  pilot_dir: Path, settings: PowerSettings) -> PowerSection:
    """The leaderboard's part of `judgebias plan --power` (module docstring): per captions
    task of `params` the pilot ran with labels, and per method of both, the human labels
    the target half-width needs, beside the human-only count; every target in ``rows``."""
    from judgebias.studies.pomms.tables import ENSEMBLE

    configured = LeaderboardParams.from_params(params)
    pilot = LeaderboardParams.from_params(pilot_params)
    level = configured.inference.level
    lines = [f"human labels for the leaderboard: PPI++ {level:.0%} intervals "
             "(judgebias.stats.ppi), +- in the labels' unit; each method's moments from "
             f"the pilot's labelled images ({pilot_dir})"]
    rows: list[dict[str, Any]] = []
    for task, spec in params["leaderboard"]["tasks"].items():
        if spec["kind"] != "captions":  # human labels are a captions task's
            continue
        if task not in pilot.tasks or pilot.tasks[task].human_labels is None:
            lines.append(f"  {task}: the pilot has no such task with human labels")
            continue
        named = configured.task_methods(task)
        methods = [m for m in named if m in pilot.methods]
        matrices, labels, notes = pilot_matrices(pilot, pilot_dir, task, methods,
                                                 method_judges(pilot_params),
                                                 pilot_dir / ENSEMBLE)
        lines += [f"  {task}: {note}" for note in notes]
        lines += [f"  {task}: method {m} is not in the pilot" for m in named
                  if m not in pilot.methods]
        if labels is None or not matrices:
            continue
        task_rows, task_lines = _task(task, spec, matrices, labels, settings, level)
        rows += task_rows
        lines += task_lines
    return PowerSection(lines, rows)


def _task(task: str, spec: Mapping[str, Any], matrices: Mapping[str, pd.DataFrame],
          labels: pd.DataFrame, settings: PowerSettings, level: float
          ) -> tuple[list[dict[str, Any]], list[str]]:
    """Every target's row of one task, and its lines: the target half-width, then per
    method the target that needs the most labels."""
    targets = {m: list(label_targets(matrix, labels)) for m, matrix in matrices.items()}
    items = int(spec["images"]["synthetic"]["n_images"])
    pilot_labelled = int(labels["image_id"].nunique())
    labelled = configured_labels(spec, pilot_labelled)
    if settings.halfwidth is not None:
        halfwidth, why = settings.halfwidth, "--label-width"
    else:
        first = next(iter(targets))  # the baseline where the pilot has it
        found = default_halfwidth(targets[first], settings, level)
        if found is None:
            return [], [f"  {task}: fewer than two systems apart in the pilot's labels: "
                        "give --label-width"]
        halfwidth, why = found[0], f"default: {found[1]} under {first}; --label-width sets it"
    rows = [_row(task, method, t, items, labelled, halfwidth, level)
            for method, method_targets in targets.items() for t in method_targets]
    lines = [f"  {task}: configured {items} images, "
             f"{'none' if labelled is None else labelled} labelled (pilot: "
             f"{matrices[next(iter(matrices))].shape[0]} images, {pilot_labelled} labelled); "
             f"target +-{halfwidth:.3g} ({why})"]
    table = _worst(rows, items, labelled, halfwidth)
    lines += ["    " + line for line in _aligned(table)]
    if any(cell.endswith("*") for line in table for cell in line):
        lines.append(f"    * fewer than {FEW_LABELS} labels: there the normal interval "
                     "under-covers (judgebias.stats.ppi_power.few_labels); plan for at least "
                     f"{FEW_LABELS}")
    return rows, lines


def _row(task: str, method: str, target: Target, items: int, labelled: int | None,
         halfwidth: float, level: float) -> dict[str, Any]:
    """One --json row (LABEL_COLUMNS), the target's moments estimated on the pilot."""
    moments = label_moments(target.y_labelled, target.f_labelled, target.f_unlabelled)
    row = {"task": task, "method": method,
           **target_row(target, moments, items, labelled, halfwidth, level)}
    return {column: row[column] for column in LABEL_COLUMNS}


def _worst(rows: list[dict[str, Any]], items: int, labelled: int | None,
           halfwidth: float) -> list[list[str]]:
    """Per method, the target that needs the most labels (None: more than the task's
    images), for people: its half-widths at the configured labels and the labels for
    the target half-width, PPI++ and human-only, under a header line."""
    now = labelled is not None
    table = [["method", "worst target",
              *([f"+- at {labelled}: PPI++", "human-only"] if now else []),
              f"labels for +-{halfwidth:.3g}: PPI++", "human-only"]]
    for method in dict.fromkeys(r["method"] for r in rows):
        mine = [r for r in rows if r["method"] == method]
        worst = max(mine, key=lambda r: (math.inf if r["labels"] is None else r["labels"],
                                         r["halfwidth"] or 0.0))
        table.append([method, (f"{worst['system']} - {worst['other']}" if worst["other"]
                               else f"mean {worst['system']}"),
                      *([_pm(worst["halfwidth"]), _pm(worst["halfwidth_human"])] if now
                        else []),
                      _count(worst["labels"], items), _count(worst["labels_human"], items)])
    return table


def _aligned(table: list[list[str]]) -> list[str]:
    """`table`'s rows as lines, each column left-aligned to its widest cell."""
    widths = [max(len(row[k]) for row in table) for k in range(len(table[0]))]
    return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
            .rstrip() for row in table]


def _pm(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"


def _count(value: int | None, items: int) -> str:
    """A count of labels, starred below FEW_LABELS; None: more than the task's images."""
    if value is None:
        return f"> {items} images"
    return f"{value}*" if value < FEW_LABELS else str(value)
