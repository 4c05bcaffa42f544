"""The client settings of an API backend (params.yaml ``backends.<name>``, schema
``$defs/api_limits``), in a module of their own.

Why not beside the online client (judgebias.models.api), where they began: the block
holds the batch runner's settings too (how batch mode polls, waits and retries), which
judgebias.models.batch and the providers' batch modules read, while the online client
hands its answers to the batch runner (``ApiBackend.complete_batched``). Here, below
both, each is read one way: api and batch import this module, and api imports batch.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ApiLimits:
    """Per-backend client settings from params.yaml (`backends.<name>`)."""

    concurrency: int = 8
    requests_per_minute: float | None = None
    timeout_s: float = 120.0
    max_retries: int = 8
    max_rate_limited: int = 100
    backoff_initial_s: float = 1.0
    backoff_max_s: float = 60.0
    batch_poll_s: float = 30.0  # batch mode (judgebias.models.batch.BatchSettings)
    batch_poll_max_s: float = 600.0
    batch_wait_s: float | None = None
    batch_retry: str = "batch"  # batch | online | none
    batch_retry_rounds: int = 1
