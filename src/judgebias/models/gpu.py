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

One path for every GPU job (issue 39): :func:`job_gpus`. The judging core enters it for a
vllm model's calls, and the ``judgebias plumbing step`` dispatch (judgebias.workflow.step_dispatch)
for every step a
study declares GPU-capable (``Study.gpus``: MMB's embeddings, FRAME's GFPGAN renders and
its diffusers images), before the step imports torch; the rule asks Snakemake (or Slurm)
for the same number (:class:`GpuNeed`, which the rule files read too). A GPU-capable step
whose rule asked for no GPU sees none (``CUDA_VISIBLE_DEVICES=""``), so torch's ``auto``
device is then the CPU: no job ever computes on a device it does not hold.

Sharing a device is the user's choice: ``JUDGEBIAS_GPU_SLOTS=N`` (default 1) lets up to N
jobs hold each device at once (small models that fit together on one GPU); jobs still
spread over the free devices before any is shared, and ``--resources gpu=`` then counts
slots (devices x N).
"""

from __future__ import annotations

import fcntl
import logging
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

log = logging.getLogger(__name__)

ENV = "CUDA_VISIBLE_DEVICES"
SLOTS_ENV = "JUDGEBIAS_GPU_SLOTS"  # jobs that may hold one device at once (default 1)
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


def lock_path(lock_dir: Path, device: str, slot: int = 0) -> Path:
    """``<lock_dir>/gpu-<id>.lock`` (characters other than ``[A-Za-z0-9._-]`` become ``_``,
    so UUID-style ids such as ``MIG-...``/``GPU-...`` work too); a device's further slots,
    where jobs may share it (:data:`SLOTS_ENV`), are ``gpu-<id>.slot<k>.lock``."""
    name = re.sub(r'[^A-Za-z0-9._-]', '_', device)
    return Path(lock_dir) / (f"gpu-{name}.lock" if slot == 0 else f"gpu-{name}.slot{slot}.lock")


def gpu_slots() -> int:
    """How many jobs may hold one device at once: ``$JUDGEBIAS_GPU_SLOTS``, default 1 (no
    sharing). Anything but a whole number >= 1 is an error naming the variable."""
    value = os.environ.get(SLOTS_ENV, "").strip()
    if not value:
        return 1
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"${SLOTS_ENV}={value!r}: expected a whole number >= 1 (how many "
                         "jobs may share one GPU; 1, the default, shares none)")
    return int(value)


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
                timeout_s: float = DEFAULT_TIMEOUT_S, poll_s: float = DEFAULT_POLL_S,
                slots: int = 1) -> Iterator[list[str]]:
    """Hold ``n`` distinct GPUs for the ``with`` block and expose only them to CUDA.

    ``devices`` defaults to :func:`visible_devices`. Yields the chosen ids (in the order of
    ``devices``) with ``CUDA_VISIBLE_DEVICES`` set to them; the previous value (or its
    absence) is restored and the locks released on exit. ``n == 0`` does nothing and
    yields ``[]``. Raises :class:`GpuAssignmentError` when fewer than ``n`` devices exist,
    or when ``n`` were not free at once within ``timeout_s``. With ``slots > 1`` each
    device may be held by that many jobs at once; a job takes a device's first free slot,
    every device's first slot before any second one (spread before sharing).
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
            for slot in range(slots):
                for device in pool:
                    if device in chosen:
                        continue
                    handle = _try_lock(lock_path(lock_dir, device, slot))
                    if handle is not None:
                        held.append(handle)
                        chosen.append(device)
                        if len(chosen) == n:
                            break
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
        chosen.sort(key=pool.index)
        with _visible(chosen):
            yield list(chosen)
    finally:
        _release(held)


@contextmanager
def _visible(devices: list[str]) -> Iterator[None]:
    """``CUDA_VISIBLE_DEVICES`` set to `devices` (none: ``""``) for the block; the previous
    value, or its absence, restored after."""
    previous = os.environ.get(ENV)
    os.environ[ENV] = ",".join(devices)
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(ENV, None)
        else:
            os.environ[ENV] = previous


@dataclass(frozen=True)
class GpuNeed:
    """What a GPU-capable job asks for: ``gpus`` devices (the rule's ``gpu`` resource,
    which Snakemake caps and Slurm allocates) and the ``device`` setting it computes with.

    ``device`` decides what happens where the machine has fewer devices than asked for:
    ``auto`` computes on the CPU (as torch's ``auto`` does without CUDA), ``cuda`` (and a
    vllm engine) fails, naming the need.
    """

    gpus: int
    device: str = "cuda"

    @classmethod
    def of(cls, device: str, gpus: int) -> GpuNeed:
        """A torch step's need from its ``device`` setting and its ``gpus`` request: a
        ``cpu`` step holds no device, whatever it asks for."""
        return cls(0 if device == "cpu" else int(gpus), device)


def device_errors(where: str, device: str, gpus: int) -> list[str]:
    """A params error (`where`: the block's dotted key) for a torch step set to compute on
    ``cuda`` while its rule asks for no GPU: it would hold none, so it could only use a
    device some other job holds (or, as the job sees none, fail)."""
    if device == "cuda" and not gpus:
        return [f"{where}.gpus: 0, but device is 'cuda': ask for the GPUs it computes on "
                "(e.g. gpus: 1; the job is then given a device of its own), or set device "
                "to auto or cpu"]
    return []


@contextmanager
def job_gpus(need: GpuNeed, journal_dir: str | Path) -> Iterator[list[str]]:
    """The one way a job takes its GPUs (see the module docstring): ``need.gpus`` devices
    of its own for the block, through :func:`assign_gpus` on :func:`job_lock_dir` (the
    devices Slurm gave the allocation, or locally nvidia-smi's), shared with other jobs
    only as far as ``$JUDGEBIAS_GPU_SLOTS`` allows; a job that needs none sees none.

    Yields the devices, with ``CUDA_VISIBLE_DEVICES`` naming exactly them. The job's log
    says what it was given and when it gave the devices back.
    """
    pool = visible_devices() if need.gpus else []
    if need.gpus and not pool and need.device == "auto":
        log.warning("asked for %d GPU(s), but none is visible here (%s=%s): computing on "
                    "the CPU", need.gpus, ENV, os.environ.get(ENV, "(unset; no nvidia-smi)"))
        need = GpuNeed(0, need.device)
    if not need.gpus:
        with _visible([]):
            log.info("no GPU for this job (%s='')", ENV)
            yield []
        return
    slots = gpu_slots()
    with assign_gpus(need.gpus, job_lock_dir(Path(journal_dir)), devices=pool,
                     slots=slots) as chosen:
        start = time.monotonic()
        log.info("GPUs given to this job: %s=%s%s", ENV, os.environ[ENV],
                 f" (shared: up to {slots} jobs per device)" if slots > 1 else "")
        try:
            yield chosen
        finally:
            log.info("GPUs given back: %s=%s (held %.1f s)", ENV, ",".join(chosen),
                     time.monotonic() - start)
