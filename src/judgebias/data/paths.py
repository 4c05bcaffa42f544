"""Paths given in params or data files that must stay inside a folder.

A dataset names its image files relative to its own folder (``image_path`` in a BIRCH
benchmark, ``file_name`` in nocaps, ...), and params name folders relative to the project.
An absolute path or enough ``..`` parts would let such a name point anywhere on the
machine: a typo then reads another dataset's images, and a crafted file reads files the
user never meant to send to a paid model. Every importer resolves these names with
:func:`resolve_inside`, so the rule and its message are the same everywhere.

The same folders are what a data step declares (:func:`input_files`): every file under
them, so that replacing an image reruns the study that read it.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterable
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


def files_under(folder: str | Path) -> list[str]:
    """Every file under `folder`, at any depth, sorted; hidden names (a leading ".")
    skipped, files and folders alike.

    A dataset names its images relative to a folder (:func:`resolve_inside`), so the
    files an importer may read are exactly those under it; listing them all, rather than
    parsing the annotation file for the names, keeps the workflow's read of the files
    cheap (one directory walk, no JSON) and the list right whatever the format. Hidden
    files are no dataset's images (``.DS_Store``, a ``.git`` folder). Links are followed
    as the importers follow them (a folder of links to a shared store), each real folder
    once, so a link back up the tree ends. Paths keep the form of `folder` (relative stays
    relative). A missing folder lists nothing: the importer names it when it runs.
    """
    found: list[str] = []
    top = os.path.normpath(folder)
    try:
        _walk(top, {os.path.realpath(top)}, found)
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(found)


def _walk(folder: str, seen: set[str], found: list[str]) -> None:
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.name.startswith("."):
                continue
            if entry.is_dir():  # follows a link
                real = os.path.realpath(entry.path)
                if real not in seen:
                    seen.add(real)
                    _walk(entry.path, seen, found)
            elif entry.is_file():  # a broken link is neither: nothing to read
                found.append(entry.path)


def input_files(files: Iterable[str | Path | None],
                folders: Iterable[str | Path | None] = ()) -> list[str]:
    """What a data step declares as inputs: `files` (an annotation file, a label-override
    file) and every file under each of `folders` (:func:`files_under`), each once, in that
    order; None entries (an optional file not given) are left out.

    The step's rule lists them (Snakemake only stat()s its inputs), so that editing a row
    or replacing an image reruns the step and everything after it, and dvc.yaml lists a
    folder whose every file is declared as the folder (judgebias.workflow.dvc_export),
    which DVC hashes once and then checks by its state database.
    """
    listed = [os.path.normpath(f) for f in files if f is not None]
    for folder in folders:
        if folder is not None:
            listed += files_under(folder)
    return list(dict.fromkeys(listed))
