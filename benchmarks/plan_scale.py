"""Benchmark: building the requests `judgebias plan` counts, at the papers' scale.

    .venv/bin/python benchmarks/plan_scale.py [--images 4500] [--models 12] [--settings 2]
        [--repeat 3]

Why: philautia's plan builds one request per (evaluator, setting, generator, image) plus
one caption request per (model, image): 12 x 2 x 12 + 12 = 300 per image, 1.35M at 4,500
images. Each request used to read its image file and, for its journal key, hash it:
1.35M reads and hashes, and a new bytes object per request. judgebias.judging.tasks now
reads and hashes each file once per process (``read_image``, a bounded cache). This runs
the same loop as philautia's plan (``build_requests`` then the journal keys) with the
cache off (``IMAGE_CACHE_BYTES = 0``: every request reads and hashes, as before) and on,
side by side, on synthetic 128-px scenes; prints Markdown with medians and the ratio.
CI smoke run (tests/core/test_benchmarks.py): --images 20 --models 3 --settings 1 --repeat 1.

It then times the whole ``judgebias.plan.plan_calls`` on a philautia project of the same
shape (dataset table and every generator's captions written, an empty journal): the
study's plan hook, the core's keys, de-duplication and journal look-up, i.e. what
`judgebias plan` does. Run it with ``PYTHONPATH`` at two checkouts to compare versions.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from judgebias.data.scenes import random_scene, render, to_png_bytes
from judgebias.judging import tasks
from judgebias.judging.answers import DecimalScore
from judgebias.models.journal import request_key


def panel_params(models: int) -> dict:
    sampling = {"temperature": 0.0, "top_p": 1.0, "max_tokens": 64, "top_logprobs": 5,
                "seed": 0}
    return {"panel": {f"m{i}": {"model_id": f"sim/m{i}", "revision": "1", "family": f"m{i}",
                                "backend": "sim",
                                "sampling": sampling} for i in range(models)}}


def run_context(params: dict) -> Any:
    """What the judging core takes: the run context of `params` (the mapping itself in
    code before judgebias.models.context, for comparisons)."""
    try:
        from judgebias.models.context import RunContext
    except ImportError:
        return params
    return RunContext(params)


def plan_loop(params: dict, items: pd.DataFrame, models: int, settings: int) -> int:
    """philautia's plan shape: per evaluator, per setting, per generator, every image."""
    task = tasks.JudgeTask(prompt="gveval_ref_free", answer=DecimalScore(),
                           fields={"Caption": "caption"}, images=("image_path",))
    run = run_context(params)  # one per plan hook, as the studies' plans build it
    keys = 0
    for evaluator in params["panel"]:
        for _ in range(settings * models):
            requests, _ = tasks.build_requests(run, evaluator, task, items)
            keys += len({request_key(r, "sim") for r in requests if r is not None})
    return keys


def timed(cache_bytes: int, params: dict, items: pd.DataFrame, models: int,
          settings: int) -> float:
    tasks.IMAGE_CACHE_BYTES = cache_bytes
    if hasattr(tasks, "_images"):  # absent in code before the cache (for comparisons)
        tasks._images.clear()
        tasks._cached_bytes = 0
    start = time.perf_counter()
    plan_loop(params, items, models, settings)
    return time.perf_counter() - start


def _filler(field: pa.Field) -> object:
    """A placeholder value of a schema field's type (the benchmark's captions)."""
    kind = field.type
    return ("" if pa.types.is_string(kind) else False if pa.types.is_boolean(kind)
            else [] if pa.types.is_list(kind) else 0.0)


def whole_plan(paths: list[str], models: int, settings: int, repeat: int) -> list[float]:
    """Seconds of `plan_calls` on a philautia project of this shape, `repeat` times."""
    from judgebias.config import load_config, validate_params
    from judgebias.io.artifacts import write_table
    from judgebias.plan import plan_calls
    from judgebias.studies.philautia.tables import CAPTIONS, DATASET_TABLE, IMAGES, captions_path

    params = load_config(Path(__file__).parents[1] / "params.yaml")
    for study in ("pomms", "mmb", "frame", "birch", "leaderboard"):
        params.pop(study, None)
    template = params["panel"]["lumen-large"]
    params["panel"] = {f"m{i}": {**template, "model_id": f"sim/m{i}",
                                 "sim": {**template["sim"], "signature": f"sig{i}"}}
                       for i in range(models)}
    params["philautia"]["models"] = list(params["panel"])
    params["philautia"]["settings"] = dict(list(params["philautia"]["settings"].items())
                                           [:settings])
    params["journal_dir"] = "journal"
    params = validate_params(params)
    images = pd.DataFrame({"image_id": [f"img{i:05d}" for i in range(len(paths))],
                           "image_path": paths, "image_sha256": "", "source": "bench",
                           "scene": None, "references": [["A red circle."]] * len(paths)})
    write_table(images, DATASET_TABLE, IMAGES)
    for generator in params["panel"]:
        captions = pd.DataFrame({f.name: [_filler(f)] * len(paths) for f in CAPTIONS})
        captions = captions.assign(image_id=images["image_id"], generator=generator,
                                   status="ok", label=f"A red circle, says {generator}.")
        write_table(captions, captions_path(generator), CAPTIONS)
    seconds = []
    for _ in range(repeat):
        start = time.perf_counter()
        plan_calls(params)
        seconds.append(time.perf_counter() - start)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--images", type=int, default=4500)
    parser.add_argument("--models", type=int, default=12)
    parser.add_argument("--settings", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for i in range(args.images):
            path = Path(tmp) / f"img{i:05d}.png"
            path.write_bytes(to_png_bytes(render(random_scene(rng), 128)))
            paths.append(str(path))
        items = pd.DataFrame({"image_path": paths, "caption": "A red circle on the left."})
        params = panel_params(args.models)
        default = getattr(tasks, "IMAGE_CACHE_BYTES", 0)  # 0: code before the cache
        before, after = [], []
        for _ in range(args.repeat):  # interleaved, so both see the same machine load
            before.append(timed(0, params, items, args.models, args.settings))
            after.append(timed(default, params, items, args.models, args.settings))
        cwd = os.getcwd()
        os.chdir(tmp)
        try:
            whole = whole_plan(paths, args.models, args.settings, args.repeat)
        finally:
            os.chdir(cwd)
    requests = args.images * args.models * args.settings * args.models
    planned = args.images * args.models * (1 + args.settings * args.models)
    b, a = statistics.median(before), statistics.median(after)
    w = statistics.median(whole)
    print(f"| {requests:,} requests | median (s) | requests/s |\n|---|---|---|\n"
          f"| read + hash per request (before) | {b:.2f} | {requests / b:,.0f} |\n"
          f"| once per file (now) | {a:.2f} | {requests / a:,.0f} |\n"
          f"| ratio before / now | {b / a:.2f} | |\n"
          f"| `plan_calls`, whole philautia plan ({planned:,} requests) | {w:.2f} | "
          f"{planned / w:,.0f} |")


if __name__ == "__main__":
    main()
