"""The calls FRAME will make, for `judgebias plan`: each judge's standard-prompt score of
every original and every manipulated image whose render set exists (keyed, so journaled
ones are recognised), counted as waiting where the items or renders are not built yet;
and the analysis judge's follow-ups (mitigation prompts, combinations, pairwise), which
wait on its best recipes, counted from the grid."""

from __future__ import annotations

from collections.abc import Mapping
from math import comb
from pathlib import Path
from typing import Any

from judgebias.artifacts import read_table
from judgebias.judging.tasks import build_requests
from judgebias.plan import PlannedCalls
from judgebias.studies.frame.recipes import DOMAINS, MANIPULATIONS, applies
from judgebias.studies.frame.steps import images_to_score
from judgebias.studies.frame.tables import (
    COMBINED,
    ITEMS_PATH,
    RENDERS,
    recipes_path,
    renders_path,
)


def _per_domain(config: Mapping[str, Any]) -> dict[str, int]:
    """Items per domain: from the item table if built, else from the synthetic block."""
    if Path(ITEMS_PATH).exists():
        from judgebias.studies.frame.benchmark import ITEMS

        return read_table(ITEMS_PATH, ITEMS)["domain"].value_counts().to_dict()
    block = config["frame"]["dataset"].get("synthetic") or {}
    return {d: block.get("n_per_domain", 0) for d in block.get("domains", DOMAINS)}


def planned_calls(config: Mapping[str, Any]) -> list[PlannedCalls]:
    from judgebias.studies.frame.benchmark import ITEMS
    from judgebias.studies.frame.jobs import score_task

    frame = config["frame"]
    grid = frame["manipulations"]
    counts = _per_domain(config)
    items = read_table(ITEMS_PATH, ITEMS) if Path(ITEMS_PATH).exists() else None
    sets: list[tuple[str, Any]] = [("original", None)]
    sets += [(m, renders_path(m)) for m in grid]
    planned = []
    for judge in frame["models"]:
        calls = PlannedCalls(judge)
        for name, path in sets:
            n = (sum(counts.values()) if path is None else
                 len(grid[name]) * sum(c for d, c in counts.items() if applies(name, d)))
            if items is None or (path is not None and not Path(path).exists()):
                calls.waiting += n
                calls.note = "FRAME items or renders not built yet"
                continue
            renders = None if path is None else read_table(path, RENDERS)
            requests, _ = build_requests(config, judge, score_task(config, "standard"),
                                         images_to_score(items, renders))
            calls.requests += [r for r in requests if r is not None]
        planned.append(calls)
    planned.append(_follow_ups(config, items, counts))
    return planned


def _follow_ups(config: Mapping[str, Any], items: Any, counts: Mapping[str, int]
                ) -> PlannedCalls:
    """The analysis judge's follow-ups: keyed once its best recipes and the renders they
    need exist, else counted from the grid as waiting."""
    from judgebias.studies.frame.jobs import pairwise_task, prompt_items, score_task
    from judgebias.studies.frame.steps import mitigation_images, pairwise_shown

    frame = config["frame"]
    judge = frame["analysis_judge"]
    follow = PlannedCalls(judge)
    renders = [renders_path(m) for m in frame["manipulations"]]
    ready = (items is not None and Path(recipes_path(judge)).exists()
             and all(Path(p).exists() for p in [*renders, renders_path(COMBINED)]))
    if ready:
        import pandas as pd

        best = pd.read_parquet(recipes_path(judge))
        tasks = [(score_task(config, prompt), prompt_items(prompt, shown)) for prompt, shown
                 in mitigation_images(config, items, best, renders).items()]
        combined = read_table(renders_path(COMBINED), RENDERS)
        tasks.append((score_task(config, "standard"), images_to_score(items, combined)))
        shown = pairwise_shown(config, items, best,
                               renders_path(frame["pairwise"]["manipulation"]))
        tasks.append((pairwise_task(config), shown))
        for task, table in tasks:
            requests, _ = build_requests(config, judge, task, table)
            follow.requests += [r for r in requests if r is not None]
        return follow
    follow.note = "FRAME follow-ups (wait on the analysis judge's best recipes)"
    grid = frame["manipulations"]
    for domain, n in counts.items():
        usable = [m for m in MANIPULATIONS if m in grid and applies(m, domain)]
        per_prompt = n * (1 + len(usable))
        for prompt in frame["mitigation"]:
            follow.waiting += per_prompt + (n * (len(usable) - 1)
                                            if prompt == "bias_definition" else 0)
        follow.waiting += n * sum(comb(len(usable), k) for k in frame["combinations"])
        follow.waiting += n * 2 * 2  # Fig. 3: two conditions, both orders
    return follow
