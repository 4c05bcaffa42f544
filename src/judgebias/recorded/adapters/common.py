"""What the adapters share: errors naming a source row, strict numbers, and the table
they build row by row.

A judgement the tool itself marks as failed (an unparsed review, a grader that gave no
grade) is left out of the table and listed in ``table.attrs["skipped"]``: a failed call
never becomes a number (docs/design.md principle 5), and the list says how many were
lost, and where, instead of hiding them.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd

from judgebias.data.rows import row_error
from judgebias.recorded.schema import RecordedTableError, empty_table, validate_scores


def source_error(path: str | Path, row: int, field: str, message: str) -> RecordedTableError:
    """``<file>: row <n>: <field>: <message>``, the importers' shape (data.rows)."""
    return RecordedTableError(str(row_error(path, row, field, message)))


def source_label(tool: str, path: str | Path) -> str:
    """The ``source`` of a recorded row: the tool and the log's file name."""
    return f"{tool}:{Path(path).name}"


def number(value: Any, path: str | Path, row: int, field: str) -> float:
    """`value` as a float: a number, or text that is one ("7", "0.5"); anything else
    (a review's prose, a list, a boolean) is an error naming the row and field."""
    if isinstance(value, bool):
        raise source_error(path, row, field, f"{value!r} is not a number")
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str) and value.strip():
        try:
            return float(value)
        except ValueError:
            pass
    raise source_error(path, row, field, f"{_short(value)} is not a number")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


class ScoreRows:
    """A SCORES table built one judgement at a time from one source file."""

    def __init__(self, tool: str, path: str | Path) -> None:
        self.path = path
        self.source = source_label(tool, path)
        self.rows: list[dict[str, Any]] = []
        self.skipped: list[str] = []

    def add(self, *, row: int, item: str, output_id: str, generator: str, output: str,
            judge: str, score: float, logprobs: str = "") -> None:
        if math.isnan(score):
            raise source_error(self.path, row, "score", "missing")
        self.rows.append(dict(item=item, output_id=output_id, generator=generator,
                              output=output, judge=judge, score=score, logprobs=logprobs,
                              source=self.source, row=row))

    def skip(self, row: int, reason: str) -> None:
        self.skipped.append(f"row {row}: {reason}")

    def table(self, scale: tuple[float, float] | None = None) -> pd.DataFrame:
        """The validated table, with the skipped judgements in ``attrs["skipped"]``."""
        frame = pd.DataFrame(self.rows) if self.rows else empty_table("scores")
        typed = validate_scores(frame, self.path, scale)
        typed.attrs["skipped"] = list(self.skipped)
        return typed
