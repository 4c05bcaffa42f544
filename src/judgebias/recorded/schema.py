"""The two kinds of recorded judgement table, each declared once, and their checks.

SCORES holds one judge's score of one output: ``item`` (what was asked: an image, a
question, a prompt), ``output_id`` (the judged output, unique within its item),
``generator`` (who wrote it; "" when the log does not say), ``output`` (its text, or an
image path), ``judge``, ``score``, ``logprobs`` (the judge's token log-probs as JSON
``[[token, logprob, [[alt, logprob], ...]], ...]``, the journal's own encoding, or ""),
and the provenance ``source`` (tool and file) and ``row`` (the source's data row, from 1).

PAIRWISE holds one judge's verdict on two outputs of one item: ``first`` and ``second``
are the output ids in the order the judge was SHOWN them (position bias is one of the
things an audit measures, so the order is data, never normalised away), ``verdict`` is
``first``, ``second`` or ``tie``, ``probability`` is P(first preferred) where the log
gives one (NaN otherwise), with the same ``source`` and ``row``.

Why the checks are strict: a recorded table is evidence about a judge, and the errors
that corrupt such evidence quietly are the ones checked here. A repeated judgement
counts twice; a score outside the judge's scale is a parse error upstream; and one judge
written two ways ("GPT-4o", "gpt4o") splits into two judges whose self-preference and
agreement are each computed on half the data. Every error is a
:class:`RecordedTableError` naming the file, the row (data rows from
:data:`~judgebias.data.rows.FIRST_ROW`, and the source row the table row came from) and
the column.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from judgebias.data.rows import FIRST_ROW, no_repeats, require_columns

TEXT, NUMBER, COUNT = "str", "float64", "int64"  # the pandas dtypes of the columns


class RecordedTableError(ValueError):
    """A recorded table breaks its schema; the message names the file, row and column."""


@dataclass(frozen=True)
class RecordedKind:
    """One kind of recorded table: its columns (name -> pandas dtype, in table order),
    the id columns that must not be empty, the columns that identify one judgement
    (unique together), and the columns holding model names (one spelling each)."""

    name: str
    columns: Mapping[str, str]
    ids: tuple[str, ...]
    key: tuple[str, ...]
    names: tuple[str, ...]


SCORES = RecordedKind(
    name="scores",
    columns={"item": TEXT, "output_id": TEXT, "generator": TEXT, "output": TEXT,
             "judge": TEXT, "score": NUMBER, "logprobs": TEXT, "source": TEXT, "row": COUNT},
    ids=("item", "output_id", "judge"),
    key=("item", "output_id", "judge"),
    names=("judge", "generator"),
)

PAIRWISE = RecordedKind(
    name="pairwise",
    columns={"item": TEXT, "judge": TEXT, "first": TEXT, "second": TEXT, "verdict": TEXT,
             "probability": NUMBER, "source": TEXT, "row": COUNT},
    ids=("item", "judge", "first", "second"),
    key=("item", "first", "second", "judge"),
    names=("judge",),
)

KINDS: dict[str, RecordedKind] = {kind.name: kind for kind in (SCORES, PAIRWISE)}
VERDICTS = ("first", "second", "tie")


def kind_named(kind: str | RecordedKind) -> RecordedKind:
    """The kind called `kind` ("scores" or "pairwise"), or `kind` itself."""
    if isinstance(kind, RecordedKind):
        return kind
    if kind not in KINDS:
        raise ValueError(f"unknown recorded table kind {kind!r} (one of {', '.join(KINDS)})")
    return KINDS[kind]


def empty_table(kind: str | RecordedKind) -> pd.DataFrame:
    """A table of `kind` with no rows, in its column order and dtypes."""
    columns = kind_named(kind).columns
    return pd.DataFrame({name: pd.Series([], dtype=dtype) for name, dtype in columns.items()})


def validate_scores(table: pd.DataFrame, path: str | Path,
                    scale: tuple[float, float] | None = None) -> pd.DataFrame:
    """The SCORES `table` in its schema's column order and dtypes, after every check.

    `path` names the table in errors (the file it came from). `scale` is the judge's
    score range ``(lo, hi)``, both ends included; None skips the range check (a tool's
    log does not always say what scale its judge used).
    """
    if scale is not None and not scale[0] < scale[1]:
        raise ValueError(f"scale {scale!r}: the low end must be below the high end")
    typed = _typed(table, SCORES, path)
    rows = _Rows(typed, path)
    scores = typed["score"].to_numpy(dtype=float)
    if (bad := np.flatnonzero(~np.isfinite(scores))).size:
        raise rows.error(int(bad[0]), "score", "missing or not a finite number (a failed "
                         "judgement is left out of the table, never kept as a number)")
    if scale is not None:
        lo, hi = scale
        if (bad := np.flatnonzero((scores < lo) | (scores > hi))).size:
            raise rows.error(int(bad[0]), "score", f"{scores[bad[0]]:g} is outside the "
                             f"scale [{lo:g}, {hi:g}]")
    for position, payload in enumerate(typed["logprobs"].tolist()):
        if payload and (problem := _logprobs_problem(payload)):
            raise rows.error(position, "logprobs", problem)
    _common_checks(typed, SCORES, rows)
    return typed


def validate_pairwise(table: pd.DataFrame, path: str | Path) -> pd.DataFrame:
    """The PAIRWISE `table` in its schema's column order and dtypes, after every check.

    `path` names the table in errors. A verdict is ``first``, ``second`` or ``tie``
    (as shown to the judge); ``probability`` is P(first preferred) in [0, 1], or NaN.
    """
    typed = _typed(table, PAIRWISE, path)
    rows = _Rows(typed, path)
    verdicts = typed["verdict"]
    if (bad := np.flatnonzero(~verdicts.isin(VERDICTS).to_numpy())).size:
        raise rows.error(int(bad[0]), "verdict", f"{verdicts.iloc[bad[0]]!r} is not one "
                         f"of {', '.join(VERDICTS)}")
    probability = typed["probability"].to_numpy(dtype=float)
    outside = ~np.isnan(probability) & ~((probability >= 0) & (probability <= 1))
    if (bad := np.flatnonzero(outside)).size:
        raise rows.error(int(bad[0]), "probability", f"{probability[bad[0]]:g} is not a "
                         "probability in [0, 1]")
    same = (typed["first"] == typed["second"]).to_numpy()
    if (bad := np.flatnonzero(same)).size:
        raise rows.error(int(bad[0]), "second", "the same output as first (a pair "
                         "compares two outputs)")
    _common_checks(typed, PAIRWISE, rows)
    return typed


def validate(table: pd.DataFrame, kind: str | RecordedKind, path: str | Path,
             scale: tuple[float, float] | None = None) -> pd.DataFrame:
    """:func:`validate_scores` or :func:`validate_pairwise`, by `kind`."""
    if kind_named(kind) is SCORES:
        return validate_scores(table, path, scale)
    if scale is not None:
        raise ValueError("a scale applies to a scores table only")
    return validate_pairwise(table, path)


def folded_name(name: str) -> str:
    """A model name compared across spellings: casefolded, only letters and digits kept
    ("GPT-4o", "gpt4o" and "gpt_4o" are one name)."""
    return re.sub(r"[\W_]+", "", name.casefold())


class _Rows:
    """Errors about one table's rows: the table row (from FIRST_ROW) and, where the row
    says where it came from, the source row, so the user can open the original log."""

    def __init__(self, table: pd.DataFrame, path: str | Path) -> None:
        self.path = path
        self.sources = table["source"].tolist() if "source" in table else None
        self.source_rows = table["row"].tolist() if "row" in table else None

    def where(self, position: int) -> str:
        text = f"row {position + FIRST_ROW}"
        if self.sources is not None and self.source_rows is not None:
            source, row = self.sources[position], self.source_rows[position]
            if isinstance(source, str) and source and not _to_count(row)[1]:
                text += f" (source {source} row {row})"
        return text

    def error(self, position: int, column: str, message: str) -> RecordedTableError:
        return RecordedTableError(f"{self.path}: {self.where(position)}: {column}: {message}")


def _typed(table: pd.DataFrame, kind: RecordedKind, path: str | Path) -> pd.DataFrame:
    """`table`'s columns of `kind`, each in its dtype: text stays text (an integer id
    such as a JSON ``doc_id`` becomes its digits, a missing value ""), numbers parse from
    text, and anything else is an error naming the cell."""
    table = _with_defaults(table, kind, path)
    try:
        require_columns(table.columns, list(kind.columns), path)
    except ValueError as exc:
        raise RecordedTableError(str(exc)) from exc
    extra = [str(name) for name in table.columns if name not in kind.columns]
    if extra:
        raise RecordedTableError(f"{path}: unexpected column(s) {extra} (a recorded "
                                 f"{kind.name} table has {', '.join(kind.columns)})")
    table = table.reset_index(drop=True)
    rows = _Rows(table, path)
    return pd.DataFrame({name: _column(table[name], name, dtype, rows)
                         for name, dtype in kind.columns.items()})


OPTIONAL = ("generator", "output", "logprobs", "probability", "source", "row")
"""Columns a table may leave out (one written by hand): who wrote the output, its text,
the log-probs and the probability are then unknown ("", NaN), the source is the file
and each row is its own data row."""


def _with_defaults(table: pd.DataFrame, kind: RecordedKind, path: str | Path
                   ) -> pd.DataFrame:
    """`table` with the optional columns of `kind` it lacks (:data:`OPTIONAL`) filled."""
    defaults = {"generator": "", "output": "", "logprobs": "", "probability": math.nan,
                "source": str(path), "row": np.arange(len(table)) + FIRST_ROW}
    missing = {name: defaults[name] for name in OPTIONAL
               if name in kind.columns and name not in table.columns}
    return table.assign(**missing) if missing else table


def _column(values: pd.Series, name: str, dtype: str, rows: _Rows) -> pd.Series:
    """One column in `dtype`. A column that already has it (a Parquet file's, a table an
    adapter built) is taken whole; any other is converted cell by cell, so that the
    first bad cell is the one an error names."""
    if dtype == TEXT and isinstance(values.dtype, pd.StringDtype):
        return values.fillna("").astype(dtype)
    if dtype == NUMBER and pd.api.types.is_float_dtype(values.dtype):
        return values.astype(dtype)
    if dtype == COUNT and pd.api.types.is_integer_dtype(values.dtype) and not (
            pd.api.types.is_bool_dtype(values.dtype)) and (values >= FIRST_ROW).all():
        return values.astype(dtype)
    convert = _CONVERTERS[dtype]
    cells = []
    for position, value in enumerate(values.tolist()):
        converted, problem = convert(value)
        if problem:
            raise rows.error(position, name, problem)
        cells.append(converted)
    return pd.Series(cells, dtype=dtype)


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _to_text(value: Any) -> tuple[str, str]:
    if isinstance(value, str):
        return value, ""
    if _missing(value):
        return "", ""
    if isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_):
        return str(int(value)), ""
    return "", f"{value!r} is not text"


def _to_number(value: Any) -> tuple[float, str]:
    if _missing(value):
        return math.nan, ""
    if isinstance(value, bool | np.bool_):
        return math.nan, f"{value!r} is not a number"
    if isinstance(value, int | float | np.integer | np.floating):
        return float(value), ""
    if isinstance(value, str):
        if not value.strip():
            return math.nan, ""
        try:
            return float(value), ""
        except ValueError:
            pass
    return math.nan, f"{value!r} is not a number"


def _to_count(value: Any) -> tuple[int, str]:
    whole = ((isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_))
             or (isinstance(value, float | np.floating) and float(value).is_integer())
             or (isinstance(value, str) and value.strip().isdigit()))
    if not whole:
        return 0, f"{value!r} is not a row number"
    number = int(value)
    if number < FIRST_ROW:
        return 0, f"{number} is not a row number (data rows count from {FIRST_ROW})"
    return number, ""


_CONVERTERS: dict[str, Any] = {TEXT: _to_text, NUMBER: _to_number, COUNT: _to_count}


def _logprobs_problem(payload: str) -> str:
    """Why `payload` is not the journal's log-prob JSON, or "" when it is."""
    shape = "not a JSON list of [token, logprob, [[alt, logprob], ...]]"
    try:
        tokens = json.loads(payload)
    except json.JSONDecodeError as exc:
        return f"{shape} (bad JSON: {exc.msg})"
    if not isinstance(tokens, list):
        return shape
    for entry in tokens:
        if not (isinstance(entry, list) and len(entry) == 3 and isinstance(entry[0], str)
                and _is_number(entry[1]) and isinstance(entry[2], list)
                and all(isinstance(alt, list) and len(alt) == 2 and isinstance(alt[0], str)
                        and _is_number(alt[1]) for alt in entry[2])):
            return f"{shape} (at {json.dumps(entry)[:80]})"
    return ""


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _common_checks(typed: pd.DataFrame, kind: RecordedKind, rows: _Rows) -> None:
    """What both kinds check: ids present, one row per judgement, one spelling a name."""
    for column in kind.ids:
        empty = (typed[column].str.strip() == "").to_numpy()
        if (bad := np.flatnonzero(empty)).size:
            raise rows.error(int(bad[0]), column, "empty id")
    keys = zip(*(typed[column].tolist() for column in kind.key), strict=True)
    try:
        no_repeats(keys, rows.path, f"({', '.join(kind.key)})")
    except ValueError as exc:
        raise RecordedTableError(str(exc)) from exc
    for column in kind.names:
        _one_spelling(typed, column, rows)


def _one_spelling(typed: pd.DataFrame, column: str, rows: _Rows) -> None:
    """An error naming both spellings, and a row of each, where one name of `column` is
    written two ways."""
    firsts = typed[column].drop_duplicates()  # each spelling at its first row
    seen: dict[str, tuple[str, int]] = {}
    for position, name in zip(firsts.index.tolist(), firsts.tolist(), strict=True):
        folded = folded_name(name)
        if not folded:
            continue
        other, other_position = seen.setdefault(folded, (name, position))
        if other != name:
            raise RecordedTableError(
                f"{rows.path}: {column}: one name under two spellings, {other!r} "
                f"({rows.where(other_position)}) and {name!r} ({rows.where(position)}); "
                "write it one way so its judgements stay together")
