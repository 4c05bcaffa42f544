"""The calls FRAME will make, for `judgebias plan`: the instruction writer's (when
`frame.dataset.synthetic.writer` names a panel model: one per distinct concept set, keyed
from the concepts, which need no model); each judge's standard-prompt score of every
original and every manipulated image whose render set exists (keyed, so journaled ones
are recognised), estimated where the items or renders are not built yet (items x grid
values of the domains each manipulation applies to; with `frame.presets: paper`, items x
the preset recipes of their domain: judgebias.studies.frame.presets); and the analysis
judge's follow-ups (mitigation prompts, combinations, pairwise), keyed once its best
recipes exist, else estimated from the grid (one best recipe per usable manipulation and
domain).

The estimates assume every item and render is usable: an upper bound where the writer
drops an item or a render is unavailable (e.g. no object box to draw)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from math import comb
from pathlib import Path
from typing import Any

import pandas as pd

from judgebias.io.artifacts import read_table
from judgebias.judging.tasks import build_requests
from judgebias.models.context import RunContext
from judgebias.plan import NotCounted, PlannedCalls
from judgebias.studies.frame import presets
from judgebias.studies.frame.params import Prompts
from judgebias.studies.frame.recipes import MANIPULATIONS, applies
from judgebias.studies.frame.tables import (
    COMBINED,
    CONCEPTS_PATH,
    ITEMS,
    ITEMS_PATH,
    RENDERS,
    recipes_path,
    renders_path,
)

NO_RENDERS = ("items or renders not built: one score per original, and per grid value and "
              "item of the domains each manipulation applies to")


def _per_domain(params: Mapping[str, Any]) -> dict[str, int] | None:
    """Items per domain: from the item table if built, else from the dataset block (a
    FRAME table read where it lies, or, it or its images not downloaded yet, its declared
    ``n_per_domain``: the importer checks every image); None for a table not downloaded
    that declares no size."""
    from judgebias.studies.frame.data import _counts, read_frame_table

    dataset = params["frame"]["dataset"]
    table = dataset.get("table") or {}
    if Path(ITEMS_PATH).exists():
        items = read_table(ITEMS_PATH, ITEMS)
    elif (dataset["name"] == "table" and Path(table["path"]).is_file()
          and Path(table["image_root"]).is_dir()):
        items = read_frame_table(table["path"], table["image_root"])
    else:
        block = dataset[dataset["name"]]
        if "n_per_domain" not in block:
            return None
        return _counts(block["n_per_domain"], block.get("domains"))
    return items["domain"].value_counts().to_dict()


def _writer(params: Mapping[str, Any], run: RunContext) -> list[PlannedCalls]:
    """The instruction writer's calls: the original and the perturbed concepts of every
    item (one call where they are the same), keyed from the concept table, drawn here
    if it is not built (it needs no model)."""
    from judgebias.studies.frame.data import draw_concepts
    from judgebias.studies.frame.writer import concept_lines, writer_task

    block = params["frame"]["dataset"].get("synthetic") or {}
    writer = block.get("writer")
    if params["frame"]["dataset"]["name"] != "synthetic" or not writer:
        return []
    concepts = (pd.read_parquet(CONCEPTS_PATH) if Path(CONCEPTS_PATH).exists() else
                draw_concepts(block["n_per_domain"], block["domains"], block["k_weights"],
                              block["seed"]))
    items = pd.DataFrame({
        "domain": [*concepts["domain"], *concepts["domain"]],
        "concept_lines": [concept_lines(json.loads(c)) for c in
                          [*concepts["concepts"], *concepts["perturbed_concepts"]]]})
    requests, _ = build_requests(run, writer, writer_task(), items)
    return [PlannedCalls(writer, [r for r in requests if r is not None])]


def planned_calls(params: Mapping[str, Any]) -> list[PlannedCalls | NotCounted]:
    from judgebias.studies.frame.jobs import images_to_score, score_task

    frame = params["frame"]
    run = RunContext(params)
    prompts = Prompts(**frame["prompts"])
    grid = frame["manipulations"]
    counts = _per_domain(params)
    if counts is None:
        table = frame["dataset"]["table"]
        return [NotCounted(f"every judge call: {table['path']} or {table['image_root']} is "
                           "not downloaded yet and frame.dataset.table.n_per_domain "
                           "declares no size")]
    items = read_table(ITEMS_PATH, ITEMS) if Path(ITEMS_PATH).exists() else None
    sets: list[tuple[str, Any]] = [("original", None)]
    sets += [(m, renders_path(m)) for m in grid]
    if presets.enabled(frame):  # the paper's recipes, Tables 9-10
        sets.append((presets.PRESETS, renders_path(presets.PRESETS)))
    planned: list[PlannedCalls | NotCounted] = []
    for judge in frame["models"]:
        calls = PlannedCalls(judge, task=score_task(prompts, "standard"))
        for name, path in sets:
            n = (sum(counts.values()) if path is None else
                 presets.expected_scores(frame, counts) if name == presets.PRESETS else
                 len(grid[name]) * sum(c for d, c in counts.items() if applies(name, d)))
            if items is None or (path is not None and not Path(path).exists()):
                calls.estimated += n
                calls.note = NO_RENDERS
                continue
            renders = None if path is None else read_table(path, RENDERS)
            requests, _ = build_requests(run, judge, score_task(prompts, "standard"),
                                         images_to_score(items, renders))
            calls.requests += [r for r in requests if r is not None]
        planned.append(calls)
    planned.append(_follow_ups(frame, run, items, counts))
    images = (frame["dataset"].get("synthetic") or {}).get("images") or {}
    if frame["dataset"]["name"] == "synthetic":
        planned.append(NotCounted(
            f"text-to-image generation of sets A and B (backend {images.get('backend')}; "
            "cached per prompt and seed, not a panel model)"))
    return [*_writer(params, run), *planned]


def _follow_ups(frame: Mapping[str, Any], run: RunContext, items: Any,
                counts: Mapping[str, int]) -> PlannedCalls:
    """The analysis judge's follow-ups: mitigation prompts (Table 5), combinations
    (Table 6) and pairwise (Fig. 3), each keyed once its inputs (best recipes, renders)
    exist, else estimated from the grid (:func:`_estimated_follow_ups`)."""
    from judgebias.studies.frame.jobs import (
        images_to_score,
        mitigation_images,
        pairwise_shown,
        pairwise_task,
        prompt_items,
        score_task,
    )
    from judgebias.studies.frame.tables import read_renders

    judge, prompts = frame["analysis_judge"], Prompts(**frame["prompts"])
    follow = PlannedCalls(judge)
    renders = [renders_path(m) for m in frame["manipulations"]]
    pairwise_renders = renders_path(frame["pairwise"]["manipulation"])
    best = (pd.read_parquet(recipes_path(judge))
            if items is not None and Path(recipes_path(judge)).exists() else None)
    tasks, waiting = [], []
    if best is not None and all(Path(p).exists() for p in renders):
        shown = mitigation_images(frame["mitigation"], items, best, read_renders(renders))
        tasks += [(score_task(prompts, prompt), prompt_items(prompt, images))
                  for prompt, images in shown.items()]
    else:
        waiting.append("mitigation")
    if items is not None and Path(renders_path(COMBINED)).exists():
        combined = read_table(renders_path(COMBINED), RENDERS)
        tasks.append((score_task(prompts, "standard"),
                      images_to_score(items, combined)))
    else:
        waiting.append("combinations")
    if best is not None and Path(pairwise_renders).exists():
        tasks.append((pairwise_task(frame["pairwise"]["prompt"]),
                      pairwise_shown(frame["pairwise"]["manipulation"], items, best,
                                     read_renders([pairwise_renders]))))
    else:
        waiting.append("pairwise")
    for task, table in tasks:
        requests, _ = build_requests(run, judge, task, table)
        follow.requests += [r for r in requests if r is not None]
    follow.estimated = _estimated_follow_ups(frame, counts, waiting)
    if waiting:
        follow.note = (f"{', '.join(waiting)} before the analysis judge's best recipes or "
                       "their renders exist: one best recipe per usable manipulation and "
                       "domain, every render usable")
    return follow


def _estimated_follow_ups(frame: Mapping[str, Any], counts: Mapping[str, int],
                          parts: list[str]) -> int:
    """The follow-up calls of `parts`, from the items per domain and the grid: per domain
    of n items with u usable manipulations, each mitigation prompt scores the originals
    and the u best recipes (the bias-definition prompt an original once per manipulation
    it names: 2nu), the combinations score n x sum_k C(u, k), and the pairwise judge sees
    set A and, where the manipulation applies, its best recipe, against set B in both
    orders."""
    grid, total = frame["manipulations"], 0
    for domain, n in counts.items():
        u = len([m for m in MANIPULATIONS if m in grid and applies(m, domain)])
        if "mitigation" in parts:
            total += sum(2 * n * u if prompt == "bias_definition" else n * (1 + u)
                         for prompt in frame["mitigation"])
        if "combinations" in parts:
            total += n * sum(comb(u, k) for k in frame["combinations"])
        if "pairwise" in parts:
            applies_here = frame["pairwise"]["manipulation"] in grid and applies(
                frame["pairwise"]["manipulation"], domain)
            total += n * 2 * (1 + applies_here)
    return total


def power_sizes(params: Mapping[str, Any]) -> dict[str, float]:
    """The design size of the card's per-cell inflation (``max_gain``): the items of a
    domain, the items a cell's difference is averaged over (judgebias.stats.power)."""
    counts = _per_domain(params)
    if not counts:
        return {}
    return {"max_gain": sum(counts.values()) / len(counts)}
