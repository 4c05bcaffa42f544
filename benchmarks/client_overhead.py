"""Benchmark: client overhead of the openai backend against serve-sim.

serve-sim runs in its own process with a fixed injected latency and no compute, so the
ideal throughput at concurrency c is c / latency; the ratio achieved/ideal measures what
the client (SDK, asyncio, our retry/rate layer) costs. Target: >= 0.8 at c = 16 and 64.

Side by side, in the same run and against the same server, a bare loop of the openai SDK
(one AsyncOpenAI client, ``asyncio.Semaphore(c)``, the same requests; no journal, no
retries, no response mapping) gives what the SDK itself reaches; the ratio ours / bare
isolates judgebias's own layer (target: >= 0.95 at c = 64). Runs alternate between the
two, so both see the same machine load.

    .venv/bin/python benchmarks/client_overhead.py [--latency 0.5] [--rounds 10] [--repeat 3]

CI smoke run (tests/core/test_benchmarks.py): --latency 0.05 --rounds 2 --repeat 1 --concurrency 4.

Each run sends rounds * c requests; the median over --repeat runs is reported.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from judgebias.data.scenes import random_scene, render, to_png_bytes
from judgebias.models.base import ChatRequest, Sampling
from judgebias.models.limits import ApiLimits
from judgebias.models.openai_backend import OpenAIBackend

ROOT = Path(__file__).resolve().parents[1]


def start_server(latency: float, *options: str) -> tuple[subprocess.Popen, str]:
    """serve-sim in its own process (its threads do not compete for our GIL)."""
    env = {**os.environ, "BENCH_KEY": "bench-key"}
    env.pop("PYTHONPATH", None)  # the server is this tree's, even when the client is not
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "judgebias"), "--params", str(ROOT / "params.yaml"),
         "serve-sim", "--port", "0", "--no-compute", "--latency", str(latency),
         "--api-key-env", "BENCH_KEY", *options], stdout=subprocess.PIPE, text=True, env=env)
    line = server.stdout.readline()
    match = re.search(r"(http://\S+)", line)
    if not match:
        server.kill()
        raise RuntimeError(f"serve-sim did not start: {line!r}")
    return server, match.group(1)


def bench_image() -> bytes:
    """A real PNG (serve-sim checks that what it receives is an image)."""
    return to_png_bytes(render(random_scene(np.random.default_rng(0)), 64))


def throughput(url: str, concurrency: int, n: int) -> float:
    backend = OpenAIBackend("sim/lumen-large", "bench", ApiLimits(concurrency=concurrency),
                            base_url=f"{url}/v1", api_key="bench-key")
    requests = [ChatRequest(model="sim/lumen-large", prompt=f"Rate caption {i}.",
                            images=(bench_image(),), sampling=Sampling(top_logprobs=5))
                for i in range(n)]
    start = time.perf_counter()
    responses = backend.complete(requests)
    elapsed = time.perf_counter() - start
    assert all(r.ok for r in responses), [r.error for r in responses if not r.ok][:3]
    return n / elapsed


def bare_throughput(url: str, concurrency: int, n: int) -> float:
    """The openai SDK alone: the same requests through one client, c at a time."""
    import asyncio

    import openai

    from judgebias.models.openai_wire import openai_chat_messages

    request = ChatRequest(model="sim/lumen-large", prompt="Rate caption.",
                          images=(bench_image(),), sampling=Sampling(top_logprobs=5))
    messages = openai_chat_messages(request)

    async def run() -> float:
        client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="bench-key", max_retries=0)
        gate = asyncio.Semaphore(concurrency)

        async def one(i: int) -> None:
            async with gate:
                answer = await client.chat.completions.create(
                    model=request.model, messages=messages, temperature=1.0, top_p=1.0,
                    max_tokens=512, seed=i, logprobs=True, top_logprobs=5)
                assert answer.choices[0].message.content

        start = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(n)))
        elapsed = time.perf_counter() - start
        await client.close()
        return n / elapsed

    return asyncio.run(run())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[16, 64])
    args = parser.parse_args()
    server, url = start_server(args.latency)
    try:
        throughput(url, 4, 8)  # warm up
        for concurrency in args.concurrency:
            ideal = concurrency / args.latency
            n = concurrency * args.rounds
            runs, bare = [], []
            for _ in range(args.repeat):  # alternating: both see the same load
                runs.append(throughput(url, concurrency, n))
                bare.append(bare_throughput(url, concurrency, n))
            median, bare_median = statistics.median(runs), statistics.median(bare)
            print(f"concurrency {concurrency:3d}: {median:7.1f} req/s, bare SDK "
                  f"{bare_median:7.1f}, ideal {ideal:7.1f}; ours / bare "
                  f"{median / bare_median:.3f}, ours / ideal {median / ideal:.3f} (medians "
                  f"of {args.repeat}; ours {', '.join(f'{r:.1f}' for r in runs)}; bare "
                  f"{', '.join(f'{r:.1f}' for r in bare)})")
    finally:
        server.terminate()
        server.wait(timeout=10)


if __name__ == "__main__":
    main()
