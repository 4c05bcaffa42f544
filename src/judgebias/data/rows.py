"""Reading user data files row by row, with errors that name the file, row and key: shared
by the importers of every study (FRAME tables, BIRCH's VL-RewardBench and
MLLM-as-a-Judge files)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any


def row_error(path: str | Path, line: int, key: str, message: str) -> ValueError:
    """The error of one row's key: ``<file>: row <n>: <key>: <message>`` (rows 1-based)."""
    return ValueError(f"{path}: row {line}: {key}: {message}")


def json_records(path: str | Path, text: str, *, array: bool) -> list[tuple[int, dict[str, Any]]]:
    """(row number, record) of JSON-lines text, or of one JSON array when `array` is true
    and the text starts with ``[``. Every record must be a JSON object."""
    if array and text.lstrip().startswith("["):
        try:
            records = list(enumerate(json.loads(text), start=1))
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}: not a JSON array ({exc.msg}, line {exc.lineno})") \
                from exc
    else:
        records = []
        for line, raw in enumerate(text.splitlines(), start=1):
            if not raw.strip():
                continue
            try:
                records.append((line, json.loads(raw)))
            except json.JSONDecodeError as exc:
                raise row_error(path, line, "(row)", f"not JSON ({exc.msg})") from exc
    for line, record in records:
        if not isinstance(record, dict):
            raise row_error(path, line, "(row)", "not a JSON object")
    return records


def read_text(path: str | Path) -> str:
    """A data file's text (UTF-8); a file that is not UTF-8 is an error naming it."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text (byte {exc.start})") from exc


def csv_records(path: str | Path, *, sep: str = ",") -> list[tuple[int, dict[str, str]]]:
    """(row number, record) of a CSV file with a header line: rows counted from 1 after
    the header, every cell kept as text ("" when empty). A malformed file is an error
    naming it and the row, as every other importer error does."""
    import pandas as pd

    try:
        table = pd.read_csv(path, dtype=str, keep_default_na=False, sep=sep,
                            encoding="utf-8")
    except pd.errors.EmptyDataError as exc:
        raise ValueError(f"{path}: empty CSV file (no header line)") from exc
    except pd.errors.ParserError as exc:
        message = str(exc).strip().removeprefix("Error tokenizing data. C error: ")
        raise ValueError(f"{path}: {_csv_row(message)}not valid CSV ({message})") from exc
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text (byte {exc.start})") from exc
    return list(enumerate(table.to_dict("records"), start=1))


def _csv_row(message: str) -> str:
    """"row <n>: " for pandas' parser message, which counts file lines from 1 ("in line
    3") or from 0 ("at row 3"), the header included; "" if it names none."""
    if match := re.search(r"in line (\d+)", message):
        return f"row {int(match.group(1)) - 1}: "
    if match := re.search(r"at row (\d+)", message):
        return f"row {int(match.group(1))}: "
    return ""


FIRST_ROW = 1  # an error's row: data rows from 1, a CSV's header not counted


def require_columns(columns: Iterable[str], needed: Sequence[str], path: str | Path) -> None:
    """A ValueError naming `path` unless a table with `columns` has every `needed` one."""
    present = set(columns)
    missing = [c for c in needed if c not in present]
    if missing:
        raise ValueError(f"{path}: missing column(s) {missing} (needs {', '.join(needed)})")


def no_repeats(ids: Iterable[Any], path: str | Path, column: str) -> None:
    """A ValueError naming `path`, the row (by position, from `FIRST_ROW`: a Parquet file
    may bring an index of its own) and the id where `column` repeats a value: a repeated
    item would count twice."""
    seen: set[Any] = set()
    for position, value in enumerate(ids):
        if value in seen:
            raise ValueError(f"{path}: row {position + FIRST_ROW}: {column} {value!r} is "
                             "given twice (it would count twice)")
        seen.add(value)


def read_any_table(path: Path) -> Any:
    """A user's table (CSV or Parquet) as a pandas DataFrame: a CSV as text, so ids keep
    their leading zeros and empty cells stay "" (not NaN); a Parquet file with its own
    types. pandas is imported here: the module's other readers need none."""
    import pandas as pd

    suffix = path.suffix.lower()
    if suffix == ".csv":
        return pd.read_csv(path, dtype=str, keep_default_na=False)
    if suffix in (".parquet", ".pq"):
        return pd.read_parquet(path)
    raise ValueError(f"{path}: unsupported table type {suffix!r}; use .csv or .parquet")
