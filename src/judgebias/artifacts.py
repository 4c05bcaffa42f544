"""Artifact schemas, paths and atomic writes (DESIGN.md principle 4).

Each artifact type has exactly one schema, defined here and checked on write and on read.
Writes go to a temporary file in the target directory and are renamed into place, so an
interrupted job never leaves a half-written artifact that looks complete.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

# Provenance of a model call, shared by every table that holds model answers.
_CALL_FIELDS = [
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
]

# What a judge's answer yields, shared by every table of judge answers.
_SCORE_FIELDS = [
    pa.field("evaluator", pa.string(), nullable=False),
    pa.field("setting", pa.string(), nullable=False),
    pa.field("score_raw", pa.int64(), nullable=True),  # parsed $NN$ (0..100)
    pa.field("score_expected", pa.float64(), nullable=True),  # log-prob weighted (0..100)
    pa.field("score_mass", pa.float64(), nullable=True),
    pa.field("logprobs_available", pa.bool_(), nullable=False),
]

SCHEMAS: dict[str, pa.Schema] = {
    # One row per image of the dataset (synthetic or imported).
    "images": pa.schema([
        pa.field("image_id", pa.string(), nullable=False),
        pa.field("image_path", pa.string(), nullable=False),
        pa.field("image_sha256", pa.string(), nullable=False),
        pa.field("references", pa.list_(pa.string()), nullable=False),
        pa.field("source", pa.string(), nullable=False),
        pa.field("scene", pa.string(), nullable=True),  # synthetic ground truth (JSON)
    ]),
    # One row per (image, generator): the caption, or why there is none.
    "captions": pa.schema([
        pa.field("image_id", pa.string(), nullable=False),
        pa.field("generator", pa.string(), nullable=False),
        pa.field("caption", pa.string(), nullable=True),
        *_CALL_FIELDS,
    ]),
    # One row per (image, generator, evaluator, setting): the judge's answer and scores.
    "scores": pa.schema([
        pa.field("image_id", pa.string(), nullable=False),
        pa.field("generator", pa.string(), nullable=False),
        *_SCORE_FIELDS,
        *_CALL_FIELDS,
    ]),
    # One row per human rating of a caption-judgement dataset (seed 000 §6.3).
    "judgements": pa.schema([
        pa.field("item_id", pa.string(), nullable=False),
        pa.field("dataset", pa.string(), nullable=False),
        pa.field("image_id", pa.string(), nullable=False),
        pa.field("image_path", pa.string(), nullable=True),  # None: no pixels imported
        pa.field("candidate", pa.string(), nullable=False),
        pa.field("references", pa.list_(pa.string()), nullable=False),
        pa.field("human_score", pa.float64(), nullable=False),
        pa.field("rater", pa.int64(), nullable=False),
        pa.field("split", pa.string(), nullable=False),
    ]),
    # One row per (judgement item, evaluator, setting): the judge's answer and scores.
    "item_scores": pa.schema([
        pa.field("item_id", pa.string(), nullable=False),
        pa.field("dataset", pa.string(), nullable=False),
        *_SCORE_FIELDS,
        *_CALL_FIELDS,
    ]),
}


class ArtifactError(ValueError):
    """An artifact does not match its schema; the message names the file and column."""


def _conform(frame: pd.DataFrame, kind: str, source: str) -> pa.Table:
    schema = SCHEMAS[kind]
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


def _file_mode() -> int:
    """The mode a plainly created file gets (0666 minus the umask); mkstemp uses 0600."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


_FILE_MODE = _file_mode()


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside `path`; on success fsync it and rename it into place.

    The rename is atomic within a filesystem: readers see the old file or the complete
    new one, never a partial write, and a killed writer leaves only a hidden temp file.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        with open(tmp, "rb") as handle:
            os.fsync(handle.fileno())
        os.chmod(tmp, _FILE_MODE)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_bytes(data: bytes, path: str | Path) -> Path:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)
    return Path(path)


def write_table(frame: pd.DataFrame, path: str | Path, kind: str) -> None:
    """Check `frame` against the `kind` schema and write it as Parquet, atomically."""
    table = _conform(frame, kind, str(path))
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp)


def read_table(path: str | Path, kind: str) -> pd.DataFrame:
    """Read a Parquet artifact and check it against the `kind` schema."""
    try:
        table = pq.read_table(path)
    except FileNotFoundError as exc:
        raise ArtifactError(f"{path}: artifact not found") from exc
    frame = table.to_pandas()
    _conform(frame, kind, str(path))
    return frame


def read_columns(path: str | Path, kind: str, columns: list[str]) -> pd.DataFrame:
    """Read only `columns` of a `kind` artifact, after checking the file's schema.

    Score tables keep raw answers and log-probs; the analysis needs a few small columns,
    and reading only those keeps a million-row setting in memory and in seconds.
    """
    try:
        schema = pq.read_schema(path)
    except FileNotFoundError as exc:
        raise ArtifactError(f"{path}: artifact not found") from exc
    expected = SCHEMAS[kind]
    if schema.names != expected.names or any(
            schema.field(n).type != expected.field(n).type for n in expected.names):
        raise ArtifactError(f"{path}: does not match the {kind} schema")
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


def _json_default(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


class Paths:
    """Where each artifact lives. One place, used by the rules and the CLI alike."""

    dataset_table = "data/dataset/images.parquet"
    dataset_images = "data/dataset/images"

    @staticmethod
    def captions(generator: str) -> str:
        return f"data/captions/{generator}.parquet"

    @staticmethod
    def scores(setting: str, evaluator: str, generator: str) -> str:
        return f"data/scores/{setting}/{evaluator}/{generator}.parquet"

    @staticmethod
    def phi_dir(setting: str) -> str:
        return f"results/philautia/{setting}"

    @staticmethod
    def judgements(dataset: str) -> str:
        return f"data/judgements/{dataset}.parquet"

    @staticmethod
    def judgement_images(dataset: str) -> str:
        return f"data/judgements/{dataset}"

    @staticmethod
    def item_scores(setting: str, dataset: str, evaluator: str) -> str:
        return f"data/item_scores/{setting}/{dataset}/{evaluator}.parquet"

    pomms_dir = "results/pomms"

    report = "results/report.html"
