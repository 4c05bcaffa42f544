"""A tool's log to a recorded table file: the one function a command calls.

Each tool is one row of :data:`TOOLS` (its adapter and the kind of table it gives), so a
command lists the tools and their options from here instead of naming them again. The
table is validated and written atomically (:func:`judgebias.recorded.tables.write_recorded`),
in the format the output's suffix names.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from judgebias.recorded.adapters import inspectlog, lmmseval, vlmevalkit
from judgebias.recorded.schema import SCORES, RecordedKind
from judgebias.recorded.tables import write_recorded


@dataclass(frozen=True)
class Tool:
    """One tool whose logs hold judgements: its adapter, the kind it returns, a line
    of help."""

    read: Callable[..., pd.DataFrame]
    kind: RecordedKind
    help: str

    def options(self) -> list[str]:
        """The adapter's keyword options, as a command would offer them."""
        parameters = inspect.signature(self.read).parameters.values()
        return [p.name for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY]


TOOLS: dict[str, Tool] = {
    "lmms-eval": Tool(lmmseval.read, SCORES,
                      "lmms-eval --log_samples JSON lines (<date>_samples_<task>.jsonl)"),
    "vlmevalkit": Tool(vlmevalkit.read, SCORES,
                       "VLMEvalKit judge file (<model>_<dataset>_<judge>.xlsx/.tsv/.csv)"),
    "inspect_ai": Tool(inspectlog.read, SCORES,
                       "inspect_ai eval log (.eval or .json), read with inspect_ai"),
}


def tool_named(name: str) -> Tool:
    if name not in TOOLS:
        raise ValueError(f"unknown tool {name!r} (one of {', '.join(TOOLS)})")
    return TOOLS[name]


def read_tool(tool: str, source: str | Path, **options: Any) -> pd.DataFrame:
    """`source` read by `tool`'s adapter: the validated table, with the judgements the
    log marks as failed listed in ``attrs["skipped"]``. An option the adapter does not
    take is an error naming the ones it does."""
    entry = tool_named(tool)
    unknown = sorted(set(options) - set(entry.options()))
    if unknown:
        raise ValueError(f"{tool}: unknown option(s) {', '.join(unknown)} (it takes "
                         f"{', '.join(entry.options())})")
    return entry.read(Path(source), **options)


def convert(tool: str, source: Path, out: Path, **options: Any) -> int:
    """Read `source` with `tool`'s adapter and write the table to `out` (``.parquet``,
    ``.csv`` or ``.jsonl``) atomically; the number of rows written."""
    table = read_tool(tool, source, **options)
    return write_recorded(table, out, tool_named(tool).kind)
