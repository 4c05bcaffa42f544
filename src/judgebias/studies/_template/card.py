"""The template study's rows of the judge card (judgebias.card): its finding per judge.

`inputs` names every file `rows` reads (the card rule declares them); `rows` copies each
number with the interval and test the study's measures computed (never a new statistic),
one row per (model, measure, setting), in the columns of judgebias.card.schema.CARD_ROWS.
Build each row with judgebias.card.schema.card_row: give the fields you have, and the rest
take ROW_DEFAULTS (no number, no interval, no test, not a headline). Replace the measure
with your paper's headline finding; keep the two functions.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from judgebias.card.schema import card_row
from judgebias.card.text import signed_phrase
from judgebias.studies._template.tables import SLOPES


def inputs(params: Mapping[str, Any]) -> dict[str, str]:
    return {"slopes": SLOPES}


def rows(params: Mapping[str, Any], files: Mapping[str, Path]) -> pd.DataFrame:
    table = pd.read_parquet(files["slopes"])
    return pd.DataFrame([card_row(
        r["judge"], "_template", "length_slope",
        label="Verbosity preference", unit="points per 10 words",
        estimate=r["slope"], ci_low=r["ci_low"], ci_high=r["ci_high"],
        interval="t 95%, HC3", p_value=r["p_value"], test="Wald t, HC3",
        n=int(r["n"]), null_value=0.0, headline=True,
        reading=signed_phrase(r["slope"], r["ci_low"], r["ci_high"],
                              "adds {} points per ten words of length",
                              "takes {} points off per ten words of length"),
        source=str(files["slopes"]),
    ) for r in table.to_dict("records")])
