"""Benchmark: how much of a provider's requests-per-minute quota the client uses.

serve-sim enforces a quota as providers do (``--requests-per-minute``: a token bucket of
one second's worth, 429 with Retry-After beyond it; judgebias.devtools.serve_sim.quotas). The
openai backend sends ``--requests`` requests at concurrency 64 with instant answers
(``--latency`` 0.05 s, no compute), in three configurations, alternating so all see the
same machine load:

* ``configured``: ``requests_per_minute`` in params equals the quota (what the README
  asks for when you know your tier's limit);
* ``unset``: no ``requests_per_minute``; the client learns the pace from the 429s;
* ``too high``: ``requests_per_minute`` 1.5 x the quota (a wrong tier in params).

Share of the quota = answered / (burst + rate x elapsed): the most the bucket can have
admitted in that time, so it is at most 1. Targets: >= 0.95 of the quota, and no request
lost (every request answered ok; a refused one is retried, never dropped) and none
answered twice (the server's own count of answered requests equals the requests).

    .venv/bin/python benchmarks/rate_limit.py [--rpm 3000] [--requests 2000] [--repeat 3]

CI smoke run (tests/core/test_benchmarks.py): --rpm 1200 --requests 60 --repeat 1.
Before/after: run it with ``PYTHONPATH=OLD_TREE/src`` for an older client (serve-sim
always runs from this tree, see client_overhead.start_server).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from client_overhead import bench_image, start_server

from judgebias.models.base import ChatRequest, Sampling
from judgebias.models.limits import ApiLimits
from judgebias.models.openai_backend import OpenAIBackend

CONCURRENCY = 64


def run_once(url: str, client_rpm: float | None, n: int) -> tuple[float, int, int]:
    """(elapsed s, requests lost, 429s received) for n requests through our client."""
    limits = ApiLimits(concurrency=CONCURRENCY, requests_per_minute=client_rpm)
    backend = OpenAIBackend("sim/lumen-large", "bench", limits, base_url=f"{url}/v1",
                            api_key="bench-key")
    image = bench_image()
    requests = [ChatRequest(model="sim/lumen-large", prompt=f"Rate caption {i}.",
                            images=(image,), sampling=Sampling(top_logprobs=5))
                for i in range(n)]
    start = time.perf_counter()
    responses = backend.complete(requests)
    elapsed = time.perf_counter() - start
    lost = n - sum(r.ok for r in responses)
    return elapsed, lost, backend.retry_counts["429"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rpm", type=float, default=3000.0, help="the server's quota")
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rate = args.rpm / 60.0
    burst = max(1.0, rate)
    configs = {"configured": args.rpm, "unset": None, "too high": 1.5 * args.rpm}
    shares: dict[str, list[float]] = {name: [] for name in configs}
    refusals: dict[str, list[int]] = {name: [] for name in configs}
    losses: dict[str, list[int]] = {name: [] for name in configs}
    lost_total = 0
    for _ in range(args.repeat):
        for name, client_rpm in configs.items():
            # a fresh server per run: every run starts from a full bucket
            server, url = start_server(args.latency, "--requests-per-minute", str(args.rpm))
            try:
                elapsed, lost, n_429 = run_once(url, client_rpm, args.requests)
            finally:
                server.terminate()
                out, _ = server.communicate(timeout=10)
            stats = json.loads(out.split("serve-sim stats ", 1)[1])
            twice = stats["outcomes"]["ok"] - (args.requests - lost)  # paid twice
            lost_total += lost + abs(twice)
            shares[name].append((args.requests - lost) / (burst + rate * elapsed))
            refusals[name].append(n_429)
            losses[name].append(lost)
    print(f"quota {args.rpm:g} requests/min ({rate:g}/s, burst {burst:g}), "
          f"{args.requests} requests at concurrency {CONCURRENCY}, latency {args.latency} s; "
          f"medians of {args.repeat}")
    print("| client requests_per_minute | share of quota | 429s received | requests lost "
          "| runs |\n|---|---|---|---|---|")
    for name, client_rpm in configs.items():
        rpm = "none" if client_rpm is None else f"{client_rpm:g}"
        print(f"| {name} ({rpm}) | {statistics.median(shares[name]):.3f} | "
              f"{statistics.median(refusals[name]):g} | {sum(losses[name])} | "
              f"{', '.join(f'{s:.3f}' for s in shares[name])} |")
    if lost_total:
        raise SystemExit(f"{lost_total} requests were lost or answered twice")


if __name__ == "__main__":
    main()
