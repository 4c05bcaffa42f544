"""The recorded study's inputs: the recorded table (judgebias.recorded.tables) and its side
files (human ratings or preferences, informativeness labels), each read whole and checked
before anything is computed: a missing column, a repeated judgement, an id the table does
not know or a value outside its set is an error naming the file and the row."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from judgebias.data.rows import FIRST_ROW, no_repeats, read_any_table, require_columns

HUMAN_SCORES = ("item", "output_id", "rating")
HUMAN_PAIRS = ("item", "a", "b", "preferred")
INFORMATIVE = ("item", "a", "b", "more_informative")
TIE = "tie"


def read_side_table(path: str | Path, columns: Sequence[str]) -> pd.DataFrame:
    """A side file (CSV or Parquet: judgebias.data.rows.read_any_table) with `columns`,
    as text."""
    path = Path(path)
    frame = read_any_table(path)
    require_columns(frame.columns, columns, path)
    return frame[list(columns)].astype(str).reset_index(drop=True)


def pair_id(item: str, a: str, b: str) -> str:
    """One id per unordered pair of outputs of an item (both orders shown map to it)."""
    first, second = sorted((a, b))
    return f"{item}\x1f{first}\x1f{second}"


def human_ratings(path: str | Path, outputs: set[tuple[str, str]]) -> pd.DataFrame:
    """(item, output_id, rating) with a float rating, each output once, every output one
    of the table's."""
    frame = read_side_table(path, HUMAN_SCORES)
    no_repeats(zip(frame["item"], frame["output_id"], strict=True), path, "item, output_id")
    ratings = pd.to_numeric(frame["rating"], errors="coerce")
    for position, (item, output, rating) in enumerate(
            zip(frame["item"], frame["output_id"], ratings, strict=True)):
        where = f"{path}: row {position + FIRST_ROW}"
        if (item, output) not in outputs:
            raise ValueError(f"{where}: output {output!r} of item {item!r} is not in the "
                             "recorded table")
        if not math.isfinite(rating):
            raise ValueError(f"{where}: rating {frame['rating'][position]!r} is not a number")
    return frame.assign(rating=ratings.astype(float))


def pair_labels(path: str | Path, columns: Sequence[str], pairs: set[str],
                allow_empty: bool) -> pd.Series:
    """A label per pair (index: :func:`pair_id`) from a side file of (item, a, b, label):
    the label is a's or b's id (or ``tie`` for human preferences; empty where
    `allow_empty`), every pair one the table judged, each pair once."""
    frame = read_side_table(path, columns)
    label = columns[-1]
    ids = [pair_id(i, a, b) for i, a, b in zip(frame["item"], frame["a"], frame["b"],
                                               strict=True)]
    no_repeats(ids, path, "item, a, b")
    for position, (key, a, b, value) in enumerate(zip(ids, frame["a"], frame["b"],
                                                      frame[label], strict=True)):
        where = f"{path}: row {position + FIRST_ROW}"
        if key not in pairs:
            raise ValueError(f"{where}: the pair ({a!r}, {b!r}) of item "
                             f"{frame['item'][position]!r} is not judged in the table")
        allowed = {a, b} | ({TIE} if label == "preferred" else set())
        if value not in allowed and not (allow_empty and value == ""):
            raise ValueError(f"{where}: {label} {value!r} is neither {a!r} nor {b!r}"
                             + (" nor tie" if label == "preferred" else ""))
    return pd.Series(frame[label].to_numpy(), index=pd.Index(ids, name="pair"), name=label)
