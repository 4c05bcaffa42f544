"""Atomic file writes: a temporary file beside the target, renamed into place.

The rename is atomic within a filesystem: readers see the old file or the complete new
one, never a partial write, and a killed writer leaves only a hidden temporary file. A
module of its own, without pandas, because the import graph (read by every Snakemake
start) and the sim's perception store write this way too; artifacts.py re-exports it.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def _file_mode() -> int:
    """The mode a plainly created file gets (0666 minus the umask); mkstemp uses 0600."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


FILE_MODE = _file_mode()


@contextmanager
def atomic_path(path: str | Path, *, durable: bool = True) -> Iterator[Path]:
    """Yield a temporary path beside `path`; on success rename it into place, with the
    mode a plainly created file gets.

    `durable` fsyncs the file before the rename, so a power cut cannot leave a renamed
    but empty file: what artifacts and caches of paid or drawn results need. A cache whose
    torn entry is only computed again (the perception store, the import-graph memo)
    skips that cost.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        if durable:
            with open(tmp, "rb") as handle:
                os.fsync(handle.fileno())
        os.chmod(tmp, FILE_MODE)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
