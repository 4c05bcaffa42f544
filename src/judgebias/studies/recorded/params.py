"""The `recorded:` params block, declared once: its typed view (judgebias.paramsblock).

Each entry of ``tables`` names one table of recorded judgements (judgebias.recorded's
schemas) and the files that go with it: the judge's score scale (a scores table), the
models' families (family preference), human ratings or preferences, informativeness
labels."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from judgebias.config import path_errors
from judgebias.paramsblock import block_values, key, view

NAME_PATTERN = "^[A-Za-z0-9_-]+$"  # a name of ``recorded.tables``


@view
class RecordedTable:
    """One table of recorded judgements and its side files."""

    kind: Literal["scores", "pairwise"] = key()
    """scores: one judge's score of one output per row; pairwise: one judge's verdict on
    two outputs shown in order (judgebias.recorded.schema)."""
    path: str = key(min_length=1)
    """The table (CSV, Parquet or JSONL), e.g. written by `judgebias recorded convert`."""
    scale: tuple[float, float] | None = key(absent=True, min_length=2, max_length=2)
    """scores: the judge's score range [low, high] as its prompt states it; a score
    outside it is an error. Required for a scores table."""
    families: dict[str, str] = key(default_factory=dict, schema={
        "default": {}, "additionalProperties": {"type": "string",
                                                "description": "The model's family."}})
    """Model -> family, for family preference (a model not listed has no siblings)."""
    human: str | None = key(absent=True)
    """Human judgements: scores: a table of (item, output_id, rating); pairwise: a table
    of (item, a, b, preferred) with preferred one of a's or b's output id, or tie."""
    informative: str | None = key(absent=True)
    """pairwise: a table of (item, a, b, more_informative), the more informative output's
    id (or empty), for BIRCH's informativeness bias."""
    randomised: bool = False
    """pairwise, one order shown per pair: whether the order was randomised with a
    recorded seed (else first-slot measures carry no test: position bias is then not
    identifiable)."""


@view
class RecordedParams:
    """The recorded study -- the audit's measures on judgements you already have."""

    PARAMS_KEY: ClassVar[str] = "recorded"

    tables: dict[str, RecordedTable] = key(names=NAME_PATTERN, min_length=1)
    """The tables, by name (the name of its results folder)."""
    ci: float = key(0.95, gt=0, lt=1)
    """Confidence level of every interval."""
    resamples: int = key(2000, ge=100)
    """Bootstrap resamples (position measures, accuracy, IB, agreement)."""
    seed: int = 0
    """Seeds the bootstraps."""

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> RecordedParams:
        """The view of validated `params` (the schema filled every default in)."""
        return cls(**block_values(params, "recorded"))


def validate(params: Mapping[str, Any]) -> list[str]:
    """Every named file exists; a scores table states its scale; pairwise keys only on
    pairwise tables."""
    errors: list[str] = []
    for name, table in params["recorded"]["tables"].items():
        where = f"recorded.tables.{name}"
        for field in ("path", "human", "informative"):
            errors += path_errors(f"{where}.{field}", table.get(field))
        if table["kind"] == "scores" and "scale" not in table:
            errors.append(f"{where}.scale: required for a scores table (the judge's "
                          "score range, e.g. [0, 100])")
        if table["kind"] == "scores" and "informative" in table:
            errors.append(f"{where}.informative: only for a pairwise table")
        if "scale" in table and not table["scale"][0] < table["scale"][1]:
            errors.append(f"{where}.scale: the low end must be below the high end")
    return errors
