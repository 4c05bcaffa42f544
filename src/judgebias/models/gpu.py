"""Giving each local GPU job devices of its own.

Why: Snakemake run locally only caps the total (``--resources gpu=N``); it does not tell
a job *which* GPUs to use, so two vLLM jobs started together would both load onto device
0 and run out of memory. :func:`assign_gpus` picks ``n`` devices for the job, holding an
exclusive ``flock`` on ``<lock_dir>/gpu-<id>.lock`` for each while the job runs, and sets
``CUDA_VISIBLE_DEVICES`` to them. The OS releases a lock when its holder exits, killed or
not, so a crashed job never strands a device; a job that finds too few devices free gives
back what it took (no two jobs each holding half of what both need) and polls again.

The lock folder must be shared by the jobs that share devices and only by them
(:func:`job_lock_dir`): on a cluster the scheduler gives each job devices of its own
(Slurm sets ``CUDA_VISIBLE_DEVICES`` per allocation), and one folder for all, on a file
system shared across nodes, would make a job on one node wait for another node's job
that holds the same device id.
Set ``CUDA_VISIBLE_DEVICES`` in the job before anything initialises CUDA: it is read once,
when CUDA starts (vLLM's workers inherit it).
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

ENV = "CUDA_VISIBLE_DEVICES"
DEFAULT_TIMEOUT_S = 24 * 3600.0  # a queued job waits for a free GPU as long as Snakemake would
DEFAULT_POLL_S = 2.0


def torch_device(setting: str) -> str:
    """The torch device a ``device`` setting names: ``auto`` is ``cuda`` where torch sees a
    CUDA device (on a cluster: one the scheduler gave the job), else ``cpu``."""
    if setting != "auto":
        return setting
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def device_line(device: str) -> str:
    """What a job's log says about where it computes: the torch device and the GPUs it was
    given (``CUDA_VISIBLE_DEVICES``, which Slurm sets from the job's GPU request and the
    local runner from :func:`assign_gpus`), so a GPU job that ran on the CPU shows why."""
    return f"computing on {device} ({ENV}={os.environ.get(ENV, '(unset)')})"


class GpuAssignmentError(RuntimeError):
    """Too few GPUs on this machine, or none became free in time."""


def visible_devices() -> list[str]:
    """The GPU ids this process may use: ``$CUDA_VISIBLE_DEVICES`` if set, else nvidia-smi's.

    An empty ``CUDA_VISIBLE_DEVICES`` means no GPU; like CUDA, the list ends at the first
    negative id (``-1`` hides every device). No nvidia-smi (or one that fails) means none.
    """
    value = os.environ.get(ENV)
    if value is not None:
        devices = []
        for item in (part.strip() for part in value.split(",")):
            if not item or item.startswith("-"):
                break
            devices.append(item)
        return devices
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return []
    try:
        result = subprocess.run([smi, "--query-gpu=index", "--format=csv,noheader"],
                                capture_output=True, text=True, timeout=60, check=True)
    except (OSError, subprocess.SubprocessError):
        return []
    return [line.strip() for line in result.stdout.splitlines() if line.strip()]


def job_lock_dir(journal_dir: Path) -> Path:
    """The GPU lock folder of this job: ``<journal_dir>/gpu-locks``, and inside a Slurm
    allocation its own subfolder ``slurm-<job id>``, so that only the jobs of one
    allocation (one submitted job, or a local ``snakemake --cores`` run inside ``salloc``)
    share locks, as only they share devices."""
    folder = Path(journal_dir) / "gpu-locks"
    allocation = os.environ.get("SLURM_JOB_ID")
    return folder / f"slurm-{allocation}" if allocation else folder


def lock_path(lock_dir: Path, device: str) -> Path:
    """``<lock_dir>/gpu-<id>.lock`` (characters other than ``[A-Za-z0-9._-]`` become ``_``,
    so UUID-style ids such as ``MIG-...``/``GPU-...`` work too)."""
    return Path(lock_dir) / f"gpu-{re.sub(r'[^A-Za-z0-9._-]', '_', device)}.lock"


def _try_lock(path: Path) -> IO[str] | None:
    """The open, exclusively locked file, or None when another process holds it."""
    handle = open(path, "a+")  # noqa: SIM115 -- kept open: closing it releases the lock
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        return None
    except BaseException:
        handle.close()
        raise
    handle.seek(0)
    handle.truncate()
    handle.write(f"{os.getpid()}\n")  # who holds it, for a person looking at the folder
    handle.flush()
    return handle


def _release(handles: list[IO[str]]) -> None:
    for handle in handles:
        handle.close()  # closing the last descriptor drops the flock
    handles.clear()


@contextmanager
def assign_gpus(n: int, lock_dir: Path, devices: list[str] | None = None,
                timeout_s: float = DEFAULT_TIMEOUT_S, poll_s: float = DEFAULT_POLL_S
                ) -> Iterator[list[str]]:
    """Hold ``n`` distinct GPUs for the ``with`` block and expose only them to CUDA.

    ``devices`` defaults to :func:`visible_devices`. Yields the chosen ids (in the order of
    ``devices``) with ``CUDA_VISIBLE_DEVICES`` set to them; the previous value (or its
    absence) is restored and the locks released on exit. ``n == 0`` does nothing and
    yields ``[]``. Raises :class:`GpuAssignmentError` when fewer than ``n`` devices exist,
    or when ``n`` were not free at once within ``timeout_s``.
    """
    if n < 0:
        raise ValueError(f"the number of GPUs must be >= 0, got {n}")
    if n == 0:
        yield []
        return
    pool = list(visible_devices() if devices is None else devices)
    if len(pool) < n:
        raise GpuAssignmentError(
            f"this job needs {n} GPU(s) but {len(pool)} were found ({pool or 'none'}; "
            f"from ${ENV} if set, else nvidia-smi)")
    lock_dir = Path(lock_dir)
    lock_dir.mkdir(parents=True, exist_ok=True)
    held: list[IO[str]] = []
    chosen: list[str] = []
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            for device in pool:
                handle = _try_lock(lock_path(lock_dir, device))
                if handle is not None:
                    held.append(handle)
                    chosen.append(device)
                    if len(chosen) == n:
                        break
            if len(chosen) == n:
                break
            _release(held)  # give back a partial set so two waiting jobs cannot deadlock
            chosen.clear()
            left = deadline - time.monotonic()
            if left <= 0:
                raise GpuAssignmentError(
                    f"no {n} of the GPUs {pool} were free at once within {timeout_s:g}s "
                    f"(locks in {lock_dir})")
            time.sleep(min(poll_s, left))
        previous = os.environ.get(ENV)
        os.environ[ENV] = ",".join(chosen)
        try:
            yield list(chosen)
        finally:
            if previous is None:
                os.environ.pop(ENV, None)
            else:
                os.environ[ENV] = previous
    finally:
        _release(held)
