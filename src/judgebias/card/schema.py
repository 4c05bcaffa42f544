"""The judge card's tables: what a study's ``card.rows`` returns, and the card itself.

One row per (model, study, measure, setting). Every number is one of the study's own
estimates with the interval and test the study computed (the card computes nothing a
study did not; specs/judge-card.md §3 for the inference each study uses), and the row
says where it comes from (`source`), so a reader can find it in the study's section.
"""

from __future__ import annotations

import pyarrow as pa

from judgebias.artifacts import table_schema

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
