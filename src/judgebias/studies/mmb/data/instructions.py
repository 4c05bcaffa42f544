"""The instruction pool's input files (seed 002 §5): the built-in pool and the `extra`
file, both YAML lists of {id, kind, text}. Part of MMB's data role."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import yaml

from judgebias.config import input_errors


def base_pool(builtin: str | Path, extra: str | Path | None) -> pd.DataFrame:
    """The pool before the writer grows it: the built-in instructions and the `extra`
    file's (``mmb.instructions.extra``)."""
    pool = read_instructions(builtin)
    if extra:
        with input_errors("mmb.instructions.extra"):
            pool = pd.concat([pool, read_instructions(extra)], ignore_index=True)
    return pool


def read_instructions(path: str | Path) -> pd.DataFrame:
    """A YAML list of {id, kind, text}; a bad entry is an error naming its index."""
    with open(path, encoding="utf-8") as handle:
        entries = yaml.safe_load(handle)
    if not isinstance(entries, list):
        raise ValueError(f"{path}: expected a list of {{id, kind, text}}")
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or not all(
                isinstance(entry.get(k), str) and entry[k] for k in ("id", "kind", "text")):
            raise ValueError(f"{path}: entry {i} needs non-empty strings id, kind and text")
    return pd.DataFrame(entries, columns=["id", "kind", "text"])
