"""One adapter per tool whose logs hold judge scores: ``read(path, **options)`` returns
a recorded table (:mod:`judgebias.recorded.schema`).

- :mod:`~judgebias.recorded.adapters.lmmseval`: lmms-eval's ``--log_samples`` JSON lines;
- :mod:`~judgebias.recorded.adapters.vlmevalkit`: VLMEvalKit's judge files (xlsx/tsv/csv);
- :mod:`~judgebias.recorded.adapters.inspectlog`: inspect_ai's eval logs, through
  inspect_ai's own log API.

Each module's docstring says which kind it returns and how every source field maps. The
modules are named after the tools but not spelled as their packages, so that
``import inspect_ai`` inside one never reads as importing itself.
"""
