"""Content digests of model files (weights), remembered so a large file is read once.

Why: a cache keyed by a weights file's path serves stale entries when other weights are
put at that path, and misses when the same file moves; keyed by the file's content it
does neither (issue 39: every cache keyed by the content of what changes its result).
Hashing a multi-gigabyte checkpoint in every job would cost more than the job, so a
digest is remembered in a memo folder (one small file per entry, written atomically; any
number of jobs may share the folder) under the file's identity: its real path, size,
mtime and ctime (nanoseconds), inode and device. A file rewritten in place gets a new
ctime (which no program can set back) and so a new identity; a file changed within
:data:`RACY_S` of being hashed is never remembered, as a second write inside the file
system's timestamp granularity could keep every stamp (git's "racily clean" case).

Role: the core's helper for the caches that key model weights (FRAME's render cache and
generated-image cache, MMB's embedding cache); deleting a memo folder changes no key.
Without a memo, :func:`file_sha256` is the one plain digest of a file's bytes: every
study's data table stores one per image it names (:func:`files_sha256`, the column named
by :func:`sha256_column`), so that a replaced image changes the table, and `dvc repro`,
which reruns a stage only when a dep's content changed, reruns the judges and analyses
after it (a table of paths alone came out byte for byte the same; issue 39).
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Iterable
from pathlib import Path

from judgebias.io.atomicfile import atomic_path

RACY_S = 2.0  # a file modified this recently is hashed again next time, never remembered
_CHUNK = 1 << 20


def _identity(path: Path) -> str:
    stat = path.stat()
    fields = (str(path.resolve()), stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns,
              stat.st_ino, stat.st_dev)
    return hashlib.sha256("\0".join(map(str, fields)).encode()).hexdigest()


def _hash(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def file_sha256(path: str | Path, memo: str | Path | None = None) -> str:
    """sha256 (hex) of the bytes of `path` (symlinks followed), remembered in `memo`
    (a folder; None: not remembered) under the file's identity."""
    path = Path(path)
    if memo is None:
        return _hash(path)
    entry = Path(memo) / f"{_identity(path)}.sha256"
    try:
        known = entry.read_text(encoding="ascii").strip()
        if len(known) == 64:
            return known
    except (OSError, UnicodeDecodeError):
        pass  # absent or unreadable: hashed below
    before = path.stat()
    digest = _hash(path)
    after = path.stat()
    settled = time.time() - max(after.st_mtime_ns, after.st_ctime_ns) / 1e9 > RACY_S
    unchanged = (before.st_mtime_ns, before.st_ctime_ns, before.st_size) == (
        after.st_mtime_ns, after.st_ctime_ns, after.st_size)
    if settled and unchanged:
        entry.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(entry, durable=False) as tmp:  # a lost entry is hashed again
            tmp.write_text(digest, encoding="ascii")
    return digest


def sha256_column(column: str) -> str:
    """The name of the column holding the sha256 of the image files named in `column`:
    ``image`` -> ``image_sha256``, ``image_b`` -> ``image_b_sha256``, and a ``_path``
    suffix dropped (``image_path`` -> ``image_sha256``, as philautia's images table and
    MMB's embeddings name it)."""
    return f"{column.removesuffix('_path')}_sha256"


def files_sha256(paths: Iterable[object]) -> list[str | None]:
    """:func:`file_sha256` (not remembered) of each of `paths`, in order, each distinct
    file read once (a pair table names an image in many rows); None where the entry is no
    path (None or NaN: a row without that image).

    A data step's importer or synthetic builder calls it on each image column of its
    table, so the table records what the images held when it was built."""
    known: dict[str, str] = {}
    digests: list[str | None] = []
    for path in paths:
        if not isinstance(path, (str, os.PathLike)) or not str(path):
            digests.append(None)
            continue
        key = str(path)
        if key not in known:
            known[key] = file_sha256(key)
        digests.append(known[key])
    return digests


def tree_sha256(folder: str | Path, memo: str | Path | None = None) -> str:
    """sha256 over every file under `folder` (its path relative to `folder` and its
    content's :func:`file_sha256`), in sorted order; hidden entries (``.git``,
    ``.cache``, ...) are left out, as they are no part of a model."""
    folder = Path(folder)
    digest = hashlib.sha256()
    for root, dirs, files in os.walk(folder, followlinks=True):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(f for f in files if not f.startswith(".")):
            path = Path(root) / name
            relative = path.relative_to(folder).as_posix()
            digest.update(f"{relative}\0{file_sha256(path, memo)}\0".encode())
    return digest.hexdigest()
