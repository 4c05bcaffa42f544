"""A Python module's syntax tree, read from its file once per process: where the params
views' field docstrings (judgebias.paramsblock) and the params-read recorder's field
positions (judgebias.workflow.paramsread) are read from. Standard library only: the step
dispatcher imports the recorder for every job."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path


@cache
def module_tree(filename: str) -> ast.Module | None:
    """The parsed source of `filename`; None where it cannot be read or parsed."""
    try:
        return ast.parse(Path(filename).read_text(), filename)
    except (OSError, SyntaxError, ValueError):
        return None
