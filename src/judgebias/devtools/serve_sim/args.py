"""Command-line options of `judgebias serve-sim`, apart from the server itself so that
building the `judgebias` parser (which every pipeline job does) stays cheap."""

from __future__ import annotations

import argparse

from judgebias.devtools.serve_sim.prefix_cache import DEFAULT_CAPACITY, DEFAULT_TTL_S


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``serve-sim`` options. The API key is read from an environment variable named
    by ``--api-key-env``, never given on the command line (where ``ps`` would show it)."""
    parser.add_argument("--host", default="127.0.0.1",
                        help="loopback address to listen on (127.0.0.0/8, ::1, localhost)")
    parser.add_argument("--port", type=int, default=8787, help="port (0 = pick a free one)")
    parser.add_argument("--latency", type=float, default=0.0, metavar="S",
                        help="seconds every generation request sleeps before answering")
    parser.add_argument("--no-compute", action="store_true",
                        help="skip the sim and answer a fixed evaluator text (benchmarks)")
    parser.add_argument("--api-key-env", metavar="NAME",
                        help="require the API key held by this environment variable")
    parser.add_argument("--requests-per-minute", type=float, metavar="N",
                        help="enforce a provider quota: 429 with Retry-After beyond N "
                             "generation requests per minute (token bucket)")
    parser.add_argument("--burst", type=float, metavar="N",
                        help="the quota's bucket size (default: one second's worth, >= 1)")
    parser.add_argument("--rate-429", type=float, default=0.0, help="P(429 Too Many Requests)")
    parser.add_argument("--retry-after", type=float, default=1.0, metavar="S",
                        help="Retry-After seconds sent with each 429")
    parser.add_argument("--rate-500", type=float, default=0.0, help="P(500 error)")
    parser.add_argument("--rate-stall", type=float, default=0.0,
                        help="P(stall --stall-s seconds, then answer)")
    parser.add_argument("--stall-s", type=float, default=5.0, metavar="S",
                        help="seconds a stalled request sleeps")
    parser.add_argument("--rate-drop", type=float, default=0.0,
                        help="P(close the connection without a response)")
    parser.add_argument("--rate-garbled", type=float, default=0.0,
                        help="P(200 with a truncated JSON body)")
    parser.add_argument("--no-logprobs-models", default="", metavar="IDS",
                        help="comma-separated model ids that reject log-prob requests (400)")
    parser.add_argument("--client-params", metavar="FILE",
                        help="the params file the clients run: its panel entries' reasoning, "
                             "thinking_config and abilities say which model ids are "
                             "reasoning or thinking models and what they refuse (default: "
                             "the served params file's own)")
    parser.add_argument("--down-models", default="", metavar="IDS",
                        help="comma-separated model ids whose endpoint is down: every "
                             "generation request for them gets 503 (an outage)")
    parser.add_argument("--fresh-samples", action="store_true",
                        help="Claude (no seed) samples anew on every call: the k-th answer "
                             "to one Messages request draws with seed k")
    parser.add_argument("--fault-seed", type=int, default=0, help="seed of the fault draws")
    parser.add_argument("--batch-completion", type=float, default=0.0, metavar="S",
                        help="seconds an OpenAI or Gemini batch stays in progress before "
                             "it is answered at its next poll (0: at the first)")
    parser.add_argument("--batch-state-dir", metavar="DIR",
                        help="keep OpenAI and Gemini files and batches in DIR, so a "
                             "restarted server on the same DIR knows them")
    parser.add_argument("--batch-fail-share", type=float, default=0.0,
                        help="share of a batch's lines that fail inside it (server_error; "
                             "Gemini: an INTERNAL status row)")
    parser.add_argument("--batch-expire-share", type=float, default=0.0,
                        help="end every batch expired, this share of its lines unanswered "
                             "(a Gemini job then has no results at all)")
    parser.add_argument("--batch-missing-rows", type=int, default=0, metavar="N",
                        help="answered rows left out of each batch's output file")
    parser.add_argument("--batch-duplicate-rows", type=int, default=0, metavar="N",
                        help="answered rows written twice in each batch's output file")
    parser.add_argument("--cache-ttl", type=float, default=DEFAULT_TTL_S, metavar="S",
                        help="seconds a prompt-cache entry lives unused (serve_sim."
                             "prefix_cache: the cached tokens each API reports)")
    parser.add_argument("--cache-tokens", type=int, default=DEFAULT_CAPACITY, metavar="N",
                        help="tokens the prompt cache holds per API and model, least "
                             "recently used evicted first (0: cache nothing)")
    parser.add_argument("--batch-foreign-rows", type=int, default=0, metavar="N",
                        help="output rows for a custom_id (Gemini: key) the batch never "
                             "held")
