"""Reading and writing recorded judgement tables: CSV, Parquet or JSON lines.

Researchers keep judgements in whatever their tools write, and a recorded table is often
made by hand (a spreadsheet exported to CSV) as often as by an adapter; so all three
formats read into the same typed table and are validated the same way
(:mod:`judgebias.recorded.schema`). Writes go through a temporary file renamed into place
(:func:`judgebias.io.atomicfile.atomic_path`): an interrupted conversion never leaves a
half table that looks complete (docs/design.md principle 4).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from judgebias.data.rows import csv_records, json_records, read_text
from judgebias.io.atomicfile import atomic_path
from judgebias.recorded.schema import (
    COUNT,
    NUMBER,
    TEXT,
    RecordedKind,
    RecordedTableError,
    kind_named,
    validate,
)

FORMATS = (".csv", ".parquet", ".jsonl")
_ARROW = {TEXT: pa.string(), NUMBER: pa.float64(), COUNT: pa.int64()}


def table_format(path: str | Path) -> str:
    """The format of a recorded table file, by its suffix; an error for any other."""
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise RecordedTableError(f"{path}: a recorded table is {', '.join(FORMATS)} "
                                 f"(not {suffix or 'a file without a suffix'})")
    return suffix


def arrow_schema(kind: str | RecordedKind) -> pa.Schema:
    """The Parquet schema of `kind`, derived from its one declaration."""
    kind = kind_named(kind)
    return pa.schema([pa.field(name, _ARROW[dtype], nullable=dtype == NUMBER)
                      for name, dtype in kind.columns.items()],
                     metadata={"judgebias_kind": f"recorded {kind.name}"})


def read_recorded(path: str | Path, kind: str | RecordedKind,
                  scale: tuple[float, float] | None = None) -> pd.DataFrame:
    """The recorded table in `path` (CSV, Parquet or JSON lines), typed and validated.

    `kind` is "scores" or "pairwise"; `scale`, for scores, the judge's range (see
    :func:`~judgebias.recorded.schema.validate_scores`). Errors name `path` and the row.
    """
    kind = kind_named(kind)
    suffix = table_format(path)
    if not Path(path).is_file():
        raise RecordedTableError(f"{path}: no such file")
    if suffix == ".parquet":
        try:
            frame = pq.read_table(path).to_pandas()
        except (pa.ArrowException, OSError) as exc:
            raise RecordedTableError(f"{path}: not a Parquet table ({exc})") from exc
    elif suffix == ".csv":
        frame = _csv_frame(path)
    else:
        records = json_records(path, read_text(path), array=False)
        frame = pd.DataFrame.from_records([record for _, record in records])
        if not records:
            frame = pd.DataFrame(columns=list(kind.columns))
    return validate(frame, kind, path, scale)


def write_recorded(table: pd.DataFrame, path: str | Path,
                   kind: str | RecordedKind) -> int:
    """Validate `table` as `kind` and write it to `path` atomically, in the format its
    suffix names; the number of rows written."""
    kind = kind_named(kind)
    suffix = table_format(path)
    typed = validate(table, kind, path)
    with atomic_path(path) as tmp:
        if suffix == ".parquet":
            pq.write_table(pa.Table.from_pandas(typed, schema=arrow_schema(kind),
                                                preserve_index=False), tmp)
        elif suffix == ".csv":
            typed.to_csv(tmp, index=False, encoding="utf-8")
        else:
            with open(tmp, "w", encoding="utf-8") as handle:
                for record in typed.to_dict("records"):
                    handle.write(json.dumps(_json_cells(record), ensure_ascii=False) + "\n")
    return len(typed)


def _csv_frame(path: str | Path) -> pd.DataFrame:
    """A CSV file's cells as text ("" when empty); its header alone when it has no rows."""
    try:
        records = csv_records(path)
    except ValueError as exc:
        raise RecordedTableError(str(exc)) from exc
    if records:
        return pd.DataFrame.from_records([record for _, record in records])
    return pd.read_csv(path, dtype=str, nrows=0)


def _json_cells(record: dict[str, Any]) -> dict[str, Any]:
    """A row for JSON: NaN as null (JSON has no NaN), numpy scalars as Python's."""
    cells: dict[str, Any] = {}
    for name, value in record.items():
        if isinstance(value, float) and math.isnan(value):
            value = None
        elif hasattr(value, "item"):
            value = value.item()
        cells[str(name)] = value
    return cells
