"""The project's import graph, read from source: which project modules a module can run.

Why a module of its own: two consumers need it. The workflow derives each rule's code
inputs from it (judgebias.workflow.codedeps, docs/design.md "Reruns follow the code"),
and the perception store keys what the simulated judges saw by the code that saw it
(judgebias.models.perception_store). A module's code dependencies are the static closure
of its imports, so the store importing the whole of codedeps (which reaches the CLI, the
card, the report and the DVC export) would make every model job depend on all of them;
this module reaches only the study registry.

Every import a module makes anywhere counts (a lazy import inside a function too), and
the ``__init__`` of every package on the way. Modules are found by reading source
(``ast``), never by importing them.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from functools import cache
from pathlib import Path

import judgebias

PACKAGE_ROOT = Path(judgebias.__file__).resolve().parent
REGISTRY = "judgebias.studies"


@cache
def module_file(name: str) -> Path | None:
    """The source file of a project module or package, or None if there is none."""
    if name != "judgebias" and not name.startswith("judgebias."):
        return None
    parts = name.split(".")[1:]
    base = PACKAGE_ROOT.joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def imported(tree: ast.AST, current: str, *, top_level_only: bool = False) -> set[str]:
    """Project modules an AST imports (`from pkg import name` counts pkg.name when that
    is a module, else pkg)."""
    nodes = tree.body if top_level_only and isinstance(tree, ast.Module) else _statements(tree)
    found: set[str] = set()
    source = module_file(current)
    is_package = source is not None and source.name == "__init__.py"
    package = current if is_package else current.rpartition(".")[0]
    for node in nodes:
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in node.names
                      if module_file(f"{base}.{alias.name}") is not None}
    return {name for name in found if module_file(name) is not None}


def _statements(tree: ast.AST) -> Iterator[ast.AST]:
    """`tree` and every statement in it, at any depth: where an import can be (it is a
    statement, and no expression holds one), without visiting the expressions, which
    are most of a module's nodes."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        todo += [child for child in ast.iter_child_nodes(node)
                 if isinstance(child, ast.stmt | ast.excepthandler | ast.match_case)]


@cache
def tree(name: str) -> ast.Module:
    """The parsed source of project module `name`."""
    path = module_file(name)
    assert path is not None
    return ast.parse(path.read_text(), str(path))


@cache
def _module_imports(name: str) -> frozenset[str]:
    return frozenset(imported(tree(name), name))


def _parents(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def closure(start: Iterable[str]) -> set[str]:
    """Every project module reachable from `start`, with the packages on the way."""
    seen: set[str] = set()
    todo = list(start)
    while todo:
        name = todo.pop()
        if name in seen or module_file(name) is None:
            continue
        seen.add(name)
        todo += list(_module_imports(name)) + _parents(name) + _plugins(name)
    seen.discard(REGISTRY)
    return seen


def _plugins(name: str) -> list[str]:
    """Modules a core module loads from the study declarations by name: the sim backend
    answers each study's own kinds of prompt (Study.sim), so they are part of its code."""
    if name != "judgebias.models.sim":
        return []
    from judgebias.study import registered

    return [s.sim.partition(":")[0] for s in registered().values() if s.sim]
