"""Reading numeric answers out of a table of judge answers (the analysis side of the core:
light, so analysis steps do not depend on backends)."""

from __future__ import annotations

import pandas as pd

from judgebias.judging.answers import STATUS_OK


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
