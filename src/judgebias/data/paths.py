"""Paths given in params or data files that must stay inside a folder.

A dataset names its image files relative to its own folder (``image_path`` in a BIRCH
benchmark, ``file_name`` in nocaps, ...), and params name folders relative to the project.
An absolute path or enough ``..`` parts would let such a name point anywhere on the
machine: a typo then reads another dataset's images, and a crafted file reads files the
user never meant to send to a paid model. Every importer resolves these names with
:func:`resolve_inside`, so the rule and its message are the same everywhere.
"""

from __future__ import annotations

import posixpath
from pathlib import Path, PurePosixPath, PureWindowsPath


class PathEscapeError(ValueError):
    """A path that must stay inside a folder is absolute or climbs out of it."""


def resolve_inside(root: str | Path, relative: str | Path, *, what: str) -> Path:
    """``root / relative``, checked to stay inside ``root``.

    `what` names where the path came from (a params key, or file + row + field), and
    starts the error message. The check is lexical: ``a/../b`` is fine, ``../b``,
    ``a/../../b`` and absolute paths (POSIX ``/x``, Windows ``C:\\x`` or ``\\\\host\\x``)
    are rejected, whatever exists on disk. Symbolic links inside `root` are followed as
    the user laid them out (a dataset folder of links to a shared store stays usable).

    Raises PathEscapeError (a ValueError, so the importers' ``input_errors`` turn it into
    one line naming the params key).
    """
    text = str(relative)
    if not text.strip():
        raise PathEscapeError(f"{what}: the path is empty")
    if PurePosixPath(text).is_absolute() or PureWindowsPath(text).anchor:
        raise PathEscapeError(f"{what}: {text!r} must be relative to {str(root)!r}, "
                              "not an absolute path")
    if _climbs_out(text.replace("\\", "/")):
        raise PathEscapeError(f"{what}: {text!r} leaves its folder {str(root)!r} "
                              "(a '..' climbs above it)")
    return Path(root) / posixpath.normpath(text)


def _climbs_out(posix_text: str) -> bool:
    """Whether a relative path's ``..`` parts outnumber the folders it went down."""
    normal = posixpath.normpath(posix_text)
    return normal == ".." or normal.startswith("../")
