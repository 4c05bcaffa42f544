"""The judge card's tables: what a study's ``card.rows`` returns, and the card itself.

One row per (model, study, measure, setting). Every number comes from the study's own
code: mostly an estimate with the interval and test the study's analysis already wrote;
where a card measure has no table of its own (position bias from the judgements, FRAME's
mitigation difference-in-differences), the study's ``card`` module computes it from the
study's outputs with the inference of specs/judge-card.md §3. The core card (build.py)
only gathers, checks and FDR-adjusts. Each row says where it comes from (`source`), so a
reader can find it in the study's section.
"""

from __future__ import annotations

import math
from typing import Any

import pyarrow as pa

from judgebias.io.artifacts import table_schema

ROW_FIELDS = [
    pa.field("model", pa.string(), nullable=False),  # the panel key
    pa.field("study", pa.string(), nullable=False),
    pa.field("measure", pa.string(), nullable=False),  # stable id, e.g. "self_preference"
    pa.field("setting", pa.string(), nullable=False),  # "" or e.g. "ref_free", a dataset
    pa.field("label", pa.string(), nullable=False),  # what it is, for people
    pa.field("unit", pa.string(), nullable=False),  # "score points", "proportion", ...
    pa.field("estimate", pa.float64(), nullable=True),  # NaN only with a `note` saying why
    pa.field("ci_low", pa.float64(), nullable=True),
    pa.field("ci_high", pa.float64(), nullable=True),
    pa.field("interval", pa.string(), nullable=False),  # how the interval was made, "" none
    pa.field("p_value", pa.float64(), nullable=True),
    pa.field("test", pa.string(), nullable=False),  # the test behind p_value, "" none
    pa.field("n", pa.int64(), nullable=False),  # the units behind the estimate
    pa.field("null_value", pa.float64(), nullable=True),  # the value of an unbiased judge
    pa.field("chance", pa.float64(), nullable=True),  # a chance level to read it beside
    pa.field("headline", pa.bool_(), nullable=False),  # a column of the compact card
    pa.field("reading", pa.string(), nullable=False),  # a phrase for the judge's line
    pa.field("recommendation", pa.string(), nullable=False),  # a fix that helped, "" none
    pa.field("source", pa.string(), nullable=False),  # the study artifact it comes from
    pa.field("note", pa.string(), nullable=False),
]
"""The columns of a study's card rows. `reading` is shown in the judge's one-line summary
when the row is significant after FDR (e.g. "adds 4.3 [1.6, 7.0] points to its own
captions"); `recommendation` likewise, and the study fills it only where the estimate is
in the fix's helpful direction."""

CARD_ROWS = table_schema("card_rows", ROW_FIELDS)

CARD = table_schema("judge_card", [
    *ROW_FIELDS,
    pa.field("p_adjusted", pa.float64(), nullable=True),  # BY-adjusted over the whole card
    pa.field("significant", pa.bool_(), nullable=False),  # p_adjusted < ALPHA
])
"""``results/judges.parquet``: the rows of every study, with the card's FDR adjustment."""

KEY = ["model", "study", "measure", "setting"]
ALPHA = 0.05


_EMPTY = {pa.float64(): math.nan, pa.string(): "", pa.int64(): 0, pa.bool_(): False}
ROW_DEFAULTS: dict[str, Any] = {field.name: _EMPTY[field.type] for field in ROW_FIELDS
                                if field.name not in ("model", "study", "measure")}
"""What a row says where a study leaves a field out, by the field's type in ROW_FIELDS: no
number (NaN), no text (no interval, test or phrase), n 0, not a headline."""


def card_row(model: str, study: str, measure: str, **values: Any) -> dict[str, Any]:
    """One card row (ROW_FIELDS), the fields a study does not give at ROW_DEFAULTS.

    A misspelt field is an error here rather than a column the card silently drops.
    """
    unknown = sorted(set(values) - set(ROW_DEFAULTS))
    if unknown:
        raise KeyError(f"card row {study}/{measure}: unknown fields {unknown} "
                       f"(judgebias.card.schema.ROW_FIELDS)")
    return {"model": model, "study": study, "measure": measure, **ROW_DEFAULTS, **values}
