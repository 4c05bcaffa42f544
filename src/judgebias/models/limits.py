"""The client settings of an API backend (params.yaml ``backends.<name>``), declared once:
:class:`ApiLimits` is both the typed settings the clients read and, through
judgebias.paramsblock, the schema's ``$defs/api_limits`` (judgebias.config.params_schema).

Why a module of its own, not beside the online client (judgebias.models.api), where they
began: the block holds the batch runner's settings too (how batch mode polls, waits and
retries), which judgebias.models.batch and the providers' batch modules read, while the
online client hands its answers to the batch runner (``ApiBackend.complete_batched``).
Here, below both, each is read one way: api and batch import this module, and api imports
batch.
"""

from __future__ import annotations

from typing import Literal

from judgebias.paramsblock import key, view


@view
class ApiLimits:
    """One API backend's client settings (judgebias.models.limits): how many requests a
    job keeps in flight, how fast it starts them, how it retries, and how batch mode
    polls."""

    concurrency: int = key(8, ge=1)
    """Requests one job keeps in flight at once."""
    requests_per_minute: float | None = key(None, gt=0)
    """Requests one job starts per minute at most (spaced 60 / requests_per_minute seconds
    apart): set it to your tier's quota. null: no pacing but the provider's 429 answers."""
    timeout_s: float = key(120.0, gt=0)
    """Timeout of one request, in seconds; a timeout is a transient fault, retried."""
    max_retries: int = key(8, ge=0)
    """Retries of a request after a transient fault (429 without Retry-After, 5xx,
    timeout, dropped connection, garbled body) before it is recorded as failed."""
    max_rate_limited: int = key(100, ge=0)
    """429 answers with Retry-After a request may get (they pace the job and do not spend
    max_retries)"""
    backoff_initial_s: float = key(1.0, ge=0)
    """The first retry's back-off, in seconds; retry k waits min(backoff_max_s,
    backoff_initial_s x 2^k), drawn uniformly from its upper half."""
    backoff_max_s: float = key(60.0, ge=0)
    """The longest back-off between retries, in seconds."""
    batch_poll_s: float = key(30.0, gt=0)
    """batch mode: the first wait between polls of a running batch; it doubles up to
    batch_poll_max_s"""
    batch_poll_max_s: float = key(600.0, gt=0)
    """batch mode: the longest wait between polls of a running batch."""
    batch_wait_s: float | None = key(None, gt=0)
    """batch mode: how long a job waits for its batches before it stops (failing,
    nothing lost) for a later run to collect them; null waits until they finish"""
    batch_retry: Literal["batch", "online", "none"] = "batch"
    """batch mode: where a request that failed inside a batch for a reason another
    attempt may cure (expired, lost, rate-limited, a server error) is sent again in the
    same run: a new batch (half price, another wait), the online endpoint (full price,
    now) or none (the job records the failure; its next run sends it again)"""
    batch_retry_rounds: int = key(1, ge=0)
    """batch mode: how many times a failed request is sent again in one run"""
