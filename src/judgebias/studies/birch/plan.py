"""The calls BIRCH will make, for `judgebias plan`: the labeller (both orders); each
judge's preparatory passes (reference, caption, anchor: one per pair) and its verdicts in
every variant (one per pair and order shown); the lengthener (one per pair whose answers
differ in length).

Once the pair table exists (or, for an imported benchmark, once its file is readable:
it is read where it lies, as the data job will) every call is keyed, except those that
wait on a model's text: a variant on a reference, caption or anchor not written yet
(counted one per pair and order: an upper bound, since a pair whose text failed is not
asked), and the equalised variant before the lengthener ran (counted one per lengthened
pair and order: an upper bound, since pairs still too far apart are dropped; pairs of
equal length are the base variant's own requests, asked once). A synthetic pair table
not built yet is counted from `n_pairs`, the lengthener as if every pair needed it; so is
a benchmark not downloaded yet, from its declared `n_pairs` (configs/birch.yaml: the
published sizes), and one whose images are not there yet, from its file's rows."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from judgebias.io.artifacts import read_table
from judgebias.judging.tasks import build_requests
from judgebias.models.context import RunContext
from judgebias.plan import NotCounted, PlannedCalls
from judgebias.studies.birch.tables import (
    PAIRS,
    TEXTS,
    equalised_path,
    images_dir,
    pairs_path,
    texts_path,
)

WAITS_ON_TEXT = "variants on a reference, caption or anchor not written yet: one per " \
    "pair and order (an upper bound: a pair whose text failed is not asked)"
WAITS_ON_LENGTHENER = "equalised variant before the lengthener ran: one per pair of " \
    "unequal length and order (an upper bound: pairs still too far apart are dropped)"
NO_PAIRS = "pair table not built: counted from birch.datasets.<name>.n_pairs"
NOT_DOWNLOADED = ("benchmark not downloaded yet: counted from birch.datasets.<name>.n_pairs "
                  "(its declared size)")
NO_IMAGES = "benchmark images not downloaded yet: counted from the file's rows"


def _pairs(params: Mapping[str, Any], name: str) -> pd.DataFrame | tuple[int, str] | None:
    """Dataset `name`'s pair table: built, or an imported benchmark read in place; else
    how many pairs to count and why (a synthetic table not built, a benchmark whose file
    or images are not downloaded yet); None where no size is known."""
    from judgebias.studies.birch.data import importers
    from judgebias.studies.birch.data.pairs import load_pairs

    if Path(pairs_path(name)).exists():
        return read_table(pairs_path(name), PAIRS)
    dataset = params["birch"]["datasets"][name]
    if dataset["format"] == "synthetic":
        return dataset["n_pairs"], NO_PAIRS
    if not Path(dataset["path"]).is_file():
        return (dataset["n_pairs"], NOT_DOWNLOADED) if "n_pairs" in dataset else None
    if not Path(dataset["images"]).is_dir():
        read = (importers.read_vl_rewardbench if dataset["format"] == "vl_rewardbench"
                else importers.read_mllm_judge)
        return len(read(dataset["path"], dataset["images"], dataset["order_seed"])), NO_IMAGES
    return load_pairs(name, dataset, Path(images_dir(name)), params["seed"])  # no image written


def _built(run: RunContext, model: str, task: Any, items: pd.DataFrame,
           samples: range = range(1)) -> list:
    requests, _ = build_requests(run, model, task, items, samples)
    return [r for r in requests if r is not None]


def _variant(run: RunContext, name: str, judge: str, variant: str,
             pairs: pd.DataFrame, orders: tuple[str, ...]) -> PlannedCalls:
    """One (judge, variant) verdicts job: keyed if its pairs and texts exist."""
    from judgebias.studies.birch.jobs import NEEDS, judge_task, lengthen_items, shown, with_texts

    if variant == "equalised" and not Path(equalised_path(name)).exists():
        return PlannedCalls(judge, estimated=len(lengthen_items(pairs)) * len(orders),
                            note=WAITS_ON_LENGTHENER)
    if variant in NEEDS and not Path(texts_path(name, judge, NEEDS[variant])).exists():
        return PlannedCalls(judge, estimated=len(pairs) * len(orders), note=WAITS_ON_TEXT)
    texts = (read_table(texts_path(name, judge, NEEDS[variant]), TEXTS) if variant in NEEDS
             else None)
    table = read_table(equalised_path(name), PAIRS) if variant == "equalised" else pairs
    return PlannedCalls(judge, _built(run, judge, judge_task(variant),
                                      shown(with_texts(table, texts), orders)))


def _keyed(params: Mapping[str, Any], run: RunContext, name: str, pairs: pd.DataFrame
           ) -> list[PlannedCalls]:
    """Every call of dataset `name` keyed from its pair table (`run`: the run context
    of `params`, which builds the requests)."""
    from judgebias.studies.birch.jobs import (
        NEEDS,
        ORDERS,
        judge_task,
        label_task,
        lengthen_items,
        shown,
        text_task,
    )

    block = params["birch"]
    orders = ORDERS if block["swap_order"] else ORDERS[:1]
    planned = [PlannedCalls(block["labeller"], _built(run, block["labeller"], label_task(),
                                                      shown(pairs, ORDERS)))]
    steps = sorted({NEEDS[v] for v in block["variants"] if v in NEEDS})
    for judge in block["models"]:
        planned += [_variant(run, name, judge, v, pairs, orders)
                    for v in block["variants"]]
        if block["repeats"] > 1:  # the Base judgement asked again (steps.repeat)
            planned.append(PlannedCalls(judge, _built(
                run, judge, judge_task("base"), shown(pairs, orders),
                range(1, block["repeats"]))))
        planned += [PlannedCalls(judge, _built(run, judge,
                                               text_task(step, block["caption_prompt"]),
                                               shown(pairs, ORDERS[:1]))) for step in steps]
    if "equalised" in block["variants"]:
        planned.append(PlannedCalls(block["lengthener"], _built(
            run, block["lengthener"], text_task("lengthen", ""), lengthen_items(pairs))))
    return planned


def _counted(params: Mapping[str, Any], n: int, why: str) -> list[PlannedCalls]:
    """Every call counted from `n` pairs (the pair table cannot be built yet: `why`), each
    group with its task (judgebias.plan.template_size sizes their prompts)."""
    from judgebias.studies.birch.jobs import NEEDS, judge_task, label_task, text_task

    block = params["birch"]
    orders = 2 if block["swap_order"] else 1
    steps = sorted({NEEDS[v] for v in block["variants"] if v in NEEDS})
    note = f"{why}; {WAITS_ON_TEXT}; {WAITS_ON_LENGTHENER}"
    planned = [PlannedCalls(block["labeller"], estimated=2 * n, note=why, task=label_task())]
    for judge in block["models"]:
        planned += [PlannedCalls(judge, estimated=n * orders, note=note,
                                 task=judge_task(variant)) for variant in block["variants"]]
        if block["repeats"] > 1:
            planned.append(PlannedCalls(judge, estimated=n * orders * (block["repeats"] - 1),
                                        note=f"{why} (birch.repeats)",
                                        task=judge_task("base")))
        planned += [PlannedCalls(judge, estimated=n, note=note,
                                 task=text_task(step, block["caption_prompt"]))
                    for step in steps]
    if "equalised" in block["variants"]:
        planned.append(PlannedCalls(block["lengthener"], estimated=n,
                                    note=f"{why} (the lengthener: at most one per pair)",
                                    task=text_task("lengthen", "")))
    return planned


def planned_calls(params: Mapping[str, Any]) -> list[PlannedCalls | NotCounted]:
    """Every dataset's calls (each judges every benchmark of ``birch.datasets``); the
    requests are built with the run context of `params` (judgebias.models.context)."""
    run = RunContext(params)
    planned: list[PlannedCalls | NotCounted] = []
    for name, dataset in params["birch"]["datasets"].items():
        pairs = _pairs(params, name)
        if pairs is None:
            planned.append(NotCounted(
                f"dataset {name}: {dataset['path']} is not downloaded yet and "
                f"birch.datasets.{name}.n_pairs declares no size"))
        elif isinstance(pairs, tuple):
            planned += _counted(params, *pairs)
        else:
            planned += _keyed(params, run, name, pairs)
    return planned


POWERED = ("ib", "irs", "lb", "birch_gain")  # card measures over pairs (judgebias.stats.power)


def power_sizes(params: Mapping[str, Any]) -> dict[str, float]:
    """The design size of the card's accuracy differences: the pairs of the first
    dataset, the one the card's headline rows come from (judgebias.stats.power)."""
    name = next(iter(params["birch"]["datasets"]))
    found = _pairs(params, name)
    if found is None:
        return {}
    pairs = len(found) if isinstance(found, pd.DataFrame) else found[0]
    return {measure: float(pairs) for measure in POWERED} if pairs else {}
