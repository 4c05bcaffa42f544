"""Reading user data files row by row, with errors that name the file, row and key: shared
by the importers of every study (FRAME tables, BIRCH's VL-RewardBench and
MLLM-as-a-Judge files)."""

from __future__ import annotations

import json
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
