"""Benchmark: batch mode at scale (issue 23): N requests answered through serve-sim's
OpenAI Batch API by judgebias.models.batch, the client side measured.

    .venv/bin/python benchmarks/batch_scale.py [--requests 100000] [--per-batch 50000]

Why: at the papers' scale a job hands the provider hundreds of thousands of requests.
What must not grow out of hand on our side is the time to build, upload, ingest and
journal them (the provider's own wait is not ours), the client's memory, and the
journal's size. serve-sim runs in its own process with ``--no-compute`` (a fixed answer:
no simulated perception), so the figures are the client's: wall time from the first
request to the last journaled answer, the client process's peak RSS, and the journal
file's size. The requests are text-only judge prompts of ~600 characters (an image in
every line would measure base64, not us). Prints Markdown; ``--requests 200`` is the CI
smoke run (a few seconds).

Measured (2-core shared machine, serve-sim beside the client): 100,000 requests in 2
batches, 63.7 s wall (0.64 s per 1,000), client peak RSS 489 MB, journal 154 MB. Where
the time goes (cProfile, 20,000 requests): journaling each answer in its own commit 26%,
encoding the lines 15%, the provider's side (serve-sim answering, in the wall) ~20%,
parsing the rows 7%. Next: one transaction per ingested file, rows streamed.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import openai

from judgebias.models.base import ChatRequest, ChatResponse, Sampling
from judgebias.models.batch import BatchRunner, BatchSettings
from judgebias.models.journal import Journal, request_key
from judgebias.models.openai_batch import OpenAIBatches
from judgebias.models.openai_wire import PROTOCOL_VERSION

MODEL = "sim/corvid-pro"
KEY_ENV = "JUDGEBIAS_BENCH_KEY"


def start_server(key: str) -> tuple[subprocess.Popen[str], str]:
    """`judgebias serve-sim --no-compute` on a free loopback port; (process, url)."""
    command = [str(Path(sys.executable).with_name("judgebias")), "serve-sim", "--port", "0",
               "--no-compute", "--api-key-env", KEY_ENV]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True,
                              env={**os.environ, KEY_ENV: key})
    assert server.stdout is not None
    line = server.stdout.readline()
    if "listening on" not in line:
        server.kill()
        raise RuntimeError(f"serve-sim did not start: {line!r}")
    return server, line.rsplit(" ", 1)[1].strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--per-batch", type=int, default=50_000)
    args = parser.parse_args()
    key = "bench"
    server, url = start_server(key)
    try:
        with tempfile.TemporaryDirectory() as folder:
            journal_file = Path(folder) / "journal.sqlite"
            text = "Score this caption for the image from 0 to 100. " * 12
            requests = [ChatRequest(MODEL, f"{text} Caption {i}: a red circle.", (),
                                    Sampling(1.0, 1.0, 16, 0, i)) for i in range(args.requests)]
            start = time.perf_counter()
            pending = {request_key(r, "openai", PROTOCOL_VERSION): r for r in requests}
            client = openai.OpenAI(base_url=url + "/v1", api_key=key, max_retries=2,
                                   timeout=600)
            answered = 0
            with Journal(journal_file) as journal:

                def record(k: str, response: ChatResponse) -> None:
                    nonlocal answered
                    journal.record(k, pending[k], response)
                    answered += response.ok

                runner = BatchRunner(
                    OpenAIBatches(client), journal, MODEL,
                    BatchSettings(max_requests=args.per_batch, poll_s=0.05, poll_max_s=1.0))
                counts = runner.run(pending, record)
            wall = time.perf_counter() - start
            size = journal_file.stat().st_size + sum(
                p.stat().st_size for p in Path(folder).glob("journal.sqlite-*"))
    finally:
        server.terminate()
        server.wait(timeout=30)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    assert answered == args.requests, (answered, counts)
    print(f"| requests | batches | wall (s) | per 1,000 requests (s) | client peak RSS (MB) "
          f"| journal (MB) |\n|---|---|---|---|---|---|\n| {args.requests:,} | "
          f"{counts.submitted} | {wall:.1f} | {1000 * wall / args.requests:.2f} | "
          f"{peak_mb:.0f} | {size / 2**20:.1f} |")


if __name__ == "__main__":
    main()
