"""Reading numeric answers out of a table of judge answers (the analysis side of the core:
light, so analysis steps do not depend on backends)."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from judgebias.judging.answers import STATUS_OK
from judgebias.models.base import STATUS_FAILED


def numeric_values(frame: pd.DataFrame, score: str, scale: float) -> pd.Series:
    """A numeric answer on [0, 1] per row, NaN where the answer failed or was unparseable.

    `score` = "expected" uses the log-prob expected value where the answer had one and the
    parsed value otherwise; "parsed" always the parsed value. `scale` is the top of the
    answer kind's range (100 for G-VEval scores).
    """
    value = frame["value"].astype("float64")
    if score == "expected":
        expected = frame["expected"].astype("float64")
        value = expected.where(expected.notna(), value)
    return (value / scale).where(frame["status"] == STATUS_OK)


def failed_calls(frame: pd.DataFrame, by: str) -> dict[str, dict[str, int]]:
    """Per model (the values of column `by`) with failed calls: how many of its rows are
    calls that failed (status "failed", kept because the params' `max_failures` accepted
    them) and how many rows it has. Empty when no call failed, as with the default."""
    if frame.empty or "status" not in frame.columns:
        return {}
    failed = (frame["status"] == STATUS_FAILED).groupby(frame[by]).agg(["sum", "size"])
    return {str(model): {"failed": int(row["sum"]), "rows": int(row["size"])}
            for model, row in failed.iterrows() if row["sum"]}


def failed_note(counts: Mapping[str, Mapping[str, int]]) -> list[str]:
    """The report's line on accepted failed calls (none when there were none): these rows
    are left out of every statistic, so a reader must see them."""
    if not counts:
        return []
    parts = ", ".join(f"{model} {c['failed']} of {c['rows']}" for model, c in counts.items())
    return [f"Failed calls accepted by max_failures (no answer; left out of every "
            f"statistic): {parts} rows."]


# Issue 41 item 7: a study read from each answer's parsed verdict needs no log-probs, so a
# judge without them (Claude, a reasoning model) is read as any other; the report says so.
PARSED_VERDICTS = ("Every verdict is the answer's parsed choice (no token log-probs are "
                   "read), so judges with and without log-probs are measured alike.")
