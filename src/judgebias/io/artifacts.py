"""Artifact schemas and atomic writes (docs/design.md principle 4).

Each artifact type has exactly one schema, checked on write and on read: the fields every
table of model answers shares are defined here, and each study defines the schemas of its
own tables (with :func:`table_schema`) next to the code that writes them.
Writes go to a temporary file in the target directory and are renamed into place, so an
interrupted job never leaves a half-written artifact that looks complete.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from judgebias.io.atomicfile import atomic_path

# Provenance of a model call, shared by every table that holds model answers.
CALL_FIELDS = [
    pa.field("model_id", pa.string(), nullable=False),
    pa.field("revision", pa.string(), nullable=False),
    pa.field("backend", pa.string(), nullable=False),
    pa.field("prompt_id", pa.string(), nullable=False),
    pa.field("sampling", pa.string(), nullable=False),  # JSON of the sampling settings
    pa.field("request_key", pa.string(), nullable=True),
    pa.field("status", pa.string(), nullable=False),
    pa.field("error", pa.string(), nullable=False),
    pa.field("raw_text", pa.string(), nullable=False),
    pa.field("logprobs", pa.string(), nullable=False),  # JSON token log-probs, "" if none
    pa.field("finish_reason", pa.string(), nullable=False),  # "" where nothing was asked
]

# What the answer kind read from an answer (judgebias.judging.answers), in every table of
# judge answers. `value` and `label` are set only where the kind parsed them.
ANSWER_FIELDS = [
    pa.field("value", pa.float64(), nullable=True),  # a score on the kind's own scale
    pa.field("label", pa.string(), nullable=True),  # a choice, or the text of a free answer
    pa.field("expected", pa.float64(), nullable=True),  # log-prob expected score
    pa.field("mass", pa.float64(), nullable=True),  # probability mass behind `expected`
    pa.field("probs", pa.string(), nullable=False),  # JSON label probabilities, "" if none
    pa.field("logprobs_available", pa.bool_(), nullable=False),
]


def table_schema(kind: str, fields: list[pa.Field]) -> pa.Schema:
    """An artifact schema; `kind` names it in every error message. Each study defines
    the schemas of its own tables with this, next to the code that writes them."""
    return pa.schema(fields, metadata={"judgebias_kind": kind})


def kind_of(schema: pa.Schema) -> str:
    return (schema.metadata or {}).get(b"judgebias_kind", b"table").decode()


class ArtifactError(ValueError):
    """An artifact does not match its schema; the message names the file and column."""


def _conform(frame: pd.DataFrame, schema: pa.Schema, source: str) -> pa.Table:
    kind = kind_of(schema)
    missing = [name for name in schema.names if name not in frame.columns]
    extra = [name for name in frame.columns if name not in schema.names]
    if missing or extra:
        raise ArtifactError(f"{source}: {kind} table columns differ from the schema: "
                            f"missing {missing}, unexpected {extra}")
    try:
        table = pa.Table.from_pandas(frame[schema.names], schema=schema, preserve_index=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise ArtifactError(f"{source}: {kind} table does not match its schema: {exc}") from exc
    for field in schema:
        if not field.nullable and table.column(field.name).null_count:
            raise ArtifactError(f"{source}: column {field.name!r} of a {kind} table has "
                                "missing values")
    return table


def write_bytes(data: bytes, path: str | Path) -> Path:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)
    return Path(path)


def write_table(frame: pd.DataFrame, path: str | Path, schema: pa.Schema) -> None:
    """Check `frame` against its schema and write it as Parquet, atomically."""
    table = _conform(frame, schema, str(path))
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp)


def read_table(path: str | Path, schema: pa.Schema) -> pd.DataFrame:
    """Read a Parquet artifact and check it against its schema."""
    try:
        table = pq.read_table(path)
    except FileNotFoundError as exc:
        raise ArtifactError(f"{path}: artifact not found") from exc
    frame = table.to_pandas()
    _conform(frame, schema, str(path))
    return frame


def read_columns(path: str | Path, schema: pa.Schema, columns: list[str]) -> pd.DataFrame:
    """Read only `columns` of an artifact, after checking the file's schema.

    Score tables keep raw answers and log-probs; the analysis needs a few small columns,
    and reading only those keeps a million-row setting in memory and in seconds.
    """
    try:
        found = pq.read_schema(path)
    except FileNotFoundError as exc:
        raise ArtifactError(f"{path}: artifact not found") from exc
    if found.names != schema.names or any(
            found.field(n).type != schema.field(n).type for n in schema.names):
        raise ArtifactError(f"{path}: does not match the {kind_of(schema)} schema")
    return pq.read_table(path, columns=columns).to_pandas()


def write_frame(frame: pd.DataFrame, path: str | Path) -> None:
    """Write a result table (a matrix or summary, no fixed schema) as Parquet, atomically."""
    with atomic_path(path) as tmp:
        frame.to_parquet(tmp)


def write_json(value: Any, path: str | Path) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(value, indent=2, sort_keys=True, default=_json_default) + "\n")


def write_text(text: str, path: str | Path) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text)


def write_text_if_changed(text: str, path: str | Path) -> None:
    """write_text, unless `path` already holds `text`: then it is left as it is (its
    modification time, and DVC's state entry for it, stay as they were)."""
    if not Path(path).is_file() or Path(path).read_text() != text:
        write_text(text, path)


def _json_default(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def by_stem(paths: Sequence[Path], names: Sequence[str], what: str) -> dict[str, Path]:
    """A rule's list of outputs by file stem, which must be exactly `names` (a step that
    writes one file per name reads its paths from the rule, never spells them);
    `what` ("birch tables") names the list in the error."""
    out = {path.stem: path for path in paths}
    if sorted(out) != sorted(names):
        raise ValueError(f"{what} {sorted(out)} are not {sorted(names)}")
    return out
