"""The template study's part of the HTML report. It reads only the files
`tables.report_inputs` lists, which the report rule declares."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from judgebias.report.html import Section, Table


def report_section(params: Mapping[str, Any], results: Path,
                   data: Mapping[str, Path]) -> Section:
    """The section, from the results folder and the named files `tables.report_inputs`
    lists outside it in its ``data`` (none here; a data summary, for example)."""
    table = pd.read_parquet(results / "slopes.parquet").set_index("judge")
    biased = table[table["ci_low"] > 0].index.tolist()
    return Section(
        title="Template study: a verbosity preference",
        headline=(f"Judges that add points for length at equal quality: "
                  f"{', '.join(biased) or 'none'}."),
        intro="Points a judge adds per ten words of length, at equal facts (OLS, HC3).",
        tables=[Table(table, "Length slope per judge (points per ten words)")],
    )
