"""Recorded judgements: judge scores and verdicts that other tools already logged.

A researcher who ran lmms-eval, VLMEvalKit or inspect_ai with an LLM judge has paid for
those judgements once; auditing that judge should not mean paying again (docs/design.md
principle 5). This package turns such logs into two tables with one schema each
(:mod:`judgebias.recorded.schema`: SCORES, a judge's score of one output; PAIRWISE, a
judge's verdict on two outputs in the order it saw them), every row carrying the tool,
file and row it came from, so a number in a later audit can be traced back to the line of
the log that gave it.

- :mod:`~judgebias.recorded.schema`: the two kinds, and their validation
  (:class:`~judgebias.recorded.schema.RecordedTableError` names the file, row and column);
- :mod:`~judgebias.recorded.tables`: reading and writing a recorded table (CSV, Parquet,
  JSON lines), validated both ways;
- :mod:`~judgebias.recorded.adapters`: one module per tool, each ``read(path, **options)``;
- :mod:`~judgebias.recorded.convert`: a tool's log to a table file, written atomically.

It imports only pandas, numpy, pyarrow, the standard library and judgebias' bottom layer
(``judgebias.io``, ``judgebias.data``); an adapter imports its tool's own package (only
inspect_ai's) inside the function that needs it.
"""
