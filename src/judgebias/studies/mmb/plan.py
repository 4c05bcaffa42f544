"""The calls MMB will make, for `judgebias plan`: each judge on every (pair, instruction,
order shown) in ``mmb.layout``'s template, and with ``mmb.layout_check`` the check's
items in the other layout, keyed once the pair table and the instruction pool exist; and
the writer's rephrasings (`mmb.instructions.grow`), always keyed (the instructions it
rephrases are drawn from the built-in pool and the `extra` file, before any model
answers).

Before the pair table exists its size is counted from the data: for the synthetic set
exactly from its params (every pair of each test group, one validation pair per training
group, and per MJBench group an original-vs-degraded pair per image plus every pair of
originals); for HPDv2 / MJ-Bench from their JSON files (tied test pairs and training
groups without both a preferred and a non-preferred image are counted, so an upper
bound), or, not downloaded yet, from the sizes their blocks declare (`n_test_groups`,
`images_per_test_group`, `n_train_groups`; MJ-Bench's `n_groups`, `images_per_group`).
Validation candidates are capped by `val_candidates`, as the data step samples them. A
pool the writer has not grown yet is counted with all `n` rephrasings kept (an upper
bound: failed, multi-line and duplicate rephrasings are dropped)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from math import comb
from pathlib import Path
from typing import Any

from judgebias.judging.tasks import build_requests
from judgebias.models.context import RunContext
from judgebias.plan import NotCounted, PlannedCalls
from judgebias.studies.mmb.params import judge_prompt, other_layout, sampled
from judgebias.studies.mmb.tables import INSTRUCTIONS_PATH, PAIRS_PATH, layout_check_on


def _groups(sizes: list[int]) -> int:
    """MJBench pairs of groups of these sizes: each original against a degraded
    counterpart, and every pair of originals."""
    return sum(k + comb(k, 2) for k in sizes)


class NotDownloaded(LookupError):
    """A data file is absent and its block declares no size to count from."""


def _declared(block: Mapping[str, Any], keys: tuple[str, ...], where: str, path: str
              ) -> list[int]:
    """The sizes a block declares for `judgebias plan` before its file is downloaded."""
    missing = [key for key in keys if key not in block]
    if missing:
        raise NotDownloaded(f"{path} is not downloaded yet and {where} declares no size "
                            f"({', '.join(f'{where}.{key}' for key in missing)})")
    return [block[key] for key in keys]


def _hpdv2_counts(hpd: Mapping[str, Any]) -> tuple[int, int]:
    """HPDv2's test pairs (every pair of each test prompt's images) and training prompts
    (one validation candidate each), from its files or, not downloaded, its declared
    sizes."""
    if Path(hpd["test"]).is_file() and Path(hpd["train"]).is_file():
        test = json.loads(Path(hpd["test"]).read_text(encoding="utf-8"))
        train = json.loads(Path(hpd["train"]).read_text(encoding="utf-8"))
        return (sum(comb(len(r["image_path"]), 2) for r in test),
                len({r["prompt"] for r in train}))
    absent = hpd["test"] if not Path(hpd["test"]).is_file() else hpd["train"]
    groups, per_group, train_groups = _declared(
        hpd, ("n_test_groups", "images_per_test_group", "n_train_groups"),
        "mmb.dataset.hpdv2", absent)
    return groups * comb(per_group, 2), train_groups


def _mjbench_sizes(mjb: Mapping[str, Any]) -> list[int]:
    """Images per MJ-Bench prompt, from its file or, not downloaded, its declared sizes."""
    if Path(mjb["path"]).is_file():
        sizes: dict[str, int] = {}
        for record in json.loads(Path(mjb["path"]).read_text(encoding="utf-8")):
            sizes[record["prompt"]] = sizes.get(record["prompt"], 0) + 1
        return list(sizes.values())
    groups, per_group = _declared(mjb, ("n_groups", "images_per_group"),
                                  "mmb.dataset.mjbench", mjb["path"])
    return [per_group] * groups


def _count_pairs(dataset: Mapping[str, Any]) -> tuple[int, list[NotCounted]]:
    """The pair table's size, counted from the dataset block (module docstring), and the
    MJ-Bench pairs left out (not downloaded, no size declared); raises NotDownloaded for
    HPDv2 files that are absent with no declared size."""
    left_out = []
    if dataset["name"] == "synthetic":
        block = dataset["synthetic"]
        test = block.get("n_test_groups", 30) * comb(block.get("images_per_test_group", 5), 2)
        train = block.get("n_train_groups", 160) * (block.get("images_per_train_group", 4) > 1)
        mjb_sizes = [block.get("images_per_mjb_group", 3)] * block.get("n_mjb_groups", 20)
    else:
        test, train = _hpdv2_counts(dataset["hpdv2"])
        mjb_sizes = []
        if dataset.get("mjbench"):
            try:
                mjb_sizes = _mjbench_sizes(dataset["mjbench"])
            except NotDownloaded as absent:
                left_out.append(NotCounted(f"the judges' MJ-Bench pairs: {absent}"))
    candidates = dataset.get("val_candidates")
    n = test + (min(train, candidates) if candidates else train) + _groups(mjb_sizes)
    return n, left_out


def _writer(params: Mapping[str, Any]) -> tuple[PlannedCalls | None, int]:
    """The writer's rephrasing requests, and the pool size counted before it grows."""
    from judgebias.studies.mmb.data.instructions import base_pool
    from judgebias.studies.mmb.jobs import rephrase_sources, writer_task
    from judgebias.studies.mmb.params import BUILTIN_POOL

    spec = params["mmb"]["instructions"]
    base, grow = base_pool(BUILTIN_POOL, spec["extra"]), spec["grow"]
    if not grow:
        return None, len(base)
    sources = rephrase_sources(base, grow["n"], grow.get("seed", 0))
    requests, _ = build_requests(RunContext(params), grow["writer"], writer_task(), sources)
    return (PlannedCalls(grow["writer"], [r for r in requests if r is not None]),
            len(base) + len(sources))


def planned_calls(params: Mapping[str, Any]) -> list[PlannedCalls | NotCounted]:
    from judgebias.studies.mmb.jobs import judge_items, judge_task, layout_sample

    mmb = params["mmb"]
    layout = mmb.get("layout", "paper")
    asked, other = judge_prompt(mmb["prompt"], layout), judge_prompt(mmb["prompt"],
                                                                     other_layout(layout))
    check = mmb.get("layout_check") or {}
    writer, pool_size = _writer(params)
    planned: list[PlannedCalls | NotCounted] = [] if writer is None else [writer]
    if Path(PAIRS_PATH).exists() and Path(INSTRUCTIONS_PATH).exists():
        items = judge_items(PAIRS_PATH, INSTRUCTIONS_PATH, mmb["order"], mmb["order_seed"])
        checked = (layout_sample(items, check["n_pairs"], check.get("n_instructions", 0),
                                 check.get("seed", 0)) if layout_check_on(params) else None)
        run = RunContext(params)
        for judge in mmb["models"]:
            requests, _ = build_requests(run, judge, judge_task(asked), items,
                                         _samples(params, judge))
            if checked is not None:  # the layout check's items in the other layout
                requests += build_requests(run, judge, judge_task(other), checked,
                                           _samples(params, judge))[0]
            planned.append(PlannedCalls(judge, [r for r in requests if r is not None]))
    else:
        if Path(PAIRS_PATH).exists():
            from judgebias.io.artifacts import read_table
            from judgebias.studies.mmb.tables import PAIRS

            n_pairs = len(read_table(PAIRS_PATH, PAIRS))
        else:
            try:
                n_pairs, left_out = _count_pairs(mmb["dataset"])
            except NotDownloaded as absent:
                return [*planned, NotCounted(f"every judge call: {absent}")]
            planned += left_out
        if Path(INSTRUCTIONS_PATH).exists():
            from judgebias.studies.mmb.tables import read_pool

            pool_size = len(read_pool(INSTRUCTIONS_PATH))
        orders = 2 if mmb["order"] == "both" else 1
        # the layout check's pairs and instructions per pair, in the other layout
        checked = ((min(check["n_pairs"], n_pairs),
                    min(check.get("n_instructions", 0) or pool_size, pool_size))
                   if layout_check_on(params) else (0, 0))
        for judge in mmb["models"]:
            samples = len(_samples(params, judge))
            note = (f"pairs or instruction pool not built: {n_pairs} pairs x {pool_size} "
                    f"instructions x {orders} order(s) x {samples} sample(s)")
            if checked[0]:
                note += (f", and the layout check's {checked[0]} pairs x {checked[1]} "
                         "instructions in the other layout")
            planned.append(PlannedCalls(
                judge, estimated=(n_pairs * pool_size + checked[0] * checked[1])
                * orders * samples, note=note, task=judge_task(asked)))
    planned.append(NotCounted("CLIP image embeddings (mmb.embedding: a local model, "
                              "not a panel model; cached per image)"))
    return planned


def _samples(params: Mapping[str, Any], judge: str) -> range:
    """The samples asked per (pair, instruction, order): 1, or ``mmb.probability.samples``
    for a judge read from samples (jobs.judge_pairs)."""
    how = sampled(params, judge)
    return range(1 if how is None else how.n)


POWERED = ("mmb_vs_avg_ece", "mmb_vs_bpe_ece", "mmb_vs_avg_brier", "mmb_vs_bpe_brier")


def power_sizes(params: Mapping[str, Any]) -> dict[str, float]:
    """The design size of the card's calibration differences: test groups (the t over
    test-group differences; judgebias.stats.power)."""
    dataset = params["mmb"]["dataset"]
    if dataset["name"] == "synthetic":
        groups = dataset["synthetic"].get("n_test_groups", 30)
    elif Path(dataset["hpdv2"]["test"]).is_file():
        groups = len(json.loads(Path(dataset["hpdv2"]["test"]).read_text(encoding="utf-8")))
    else:
        groups = dataset["hpdv2"].get("n_test_groups", 0)
    return {measure: float(groups) for measure in POWERED} if groups else {}
