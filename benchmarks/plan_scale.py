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
CI smoke run (tests/test_benchmarks.py): --images 20 --models 3 --settings 1 --repeat 1.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from judgebias.data.scenes import random_scene, render, to_png_bytes
from judgebias.judging import tasks
from judgebias.judging.answers import DecimalScore
from judgebias.models.journal import request_key


def config(models: int) -> dict:
    sampling = {"temperature": 0.0, "top_p": 1.0, "max_tokens": 64, "top_logprobs": 5,
                "seed": 0}
    return {"panel": {f"m{i}": {"model_id": f"sim/m{i}", "revision": "1", "backend": "sim",
                                "sampling": sampling} for i in range(models)}}


def plan_loop(cfg: dict, items: pd.DataFrame, models: int, settings: int) -> int:
    """philautia's plan shape: per evaluator, per setting, per generator, every image."""
    task = tasks.JudgeTask(prompt="gveval_ref_free", answer=DecimalScore(),
                           fields={"Caption": "caption"}, images=("image_path",))
    keys = 0
    for evaluator in cfg["panel"]:
        for _ in range(settings * models):
            requests, _ = tasks.build_requests(cfg, evaluator, task, items)
            keys += len({request_key(r, "sim") for r in requests if r is not None})
    return keys


def timed(cache_bytes: int, cfg: dict, items: pd.DataFrame, models: int,
          settings: int) -> float:
    tasks.IMAGE_CACHE_BYTES = cache_bytes
    if hasattr(tasks, "_images"):  # absent in code before the cache (for comparisons)
        tasks._images.clear()
        tasks._cached_bytes = 0
    start = time.perf_counter()
    plan_loop(cfg, items, models, settings)
    return time.perf_counter() - start


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
        cfg = config(args.models)
        default = getattr(tasks, "IMAGE_CACHE_BYTES", 0)  # 0: code before the cache
        before, after = [], []
        for _ in range(args.repeat):  # interleaved, so both see the same machine load
            before.append(timed(0, cfg, items, args.models, args.settings))
            after.append(timed(default, cfg, items, args.models, args.settings))
    requests = args.images * args.models * args.settings * args.models
    b, a = statistics.median(before), statistics.median(after)
    print(f"| {requests:,} requests | median (s) | requests/s |\n|---|---|---|\n"
          f"| read + hash per request (before) | {b:.2f} | {requests / b:,.0f} |\n"
          f"| once per file (now) | {a:.2f} | {requests / a:,.0f} |\n"
          f"| ratio before / now | {b / a:.2f} | |")


if __name__ == "__main__":
    main()
