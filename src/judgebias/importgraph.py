"""The project's import graph, read from source: which project modules a module can run.

Why a module of its own: two consumers need it. The workflow derives each rule's code
inputs from it (judgebias.workflow.codedeps, docs/design.md "Reruns follow the code"),
and the perception store keys what the simulated judges saw by the code that saw it
(judgebias.models.perception_store). A module's code dependencies are the static closure
of its imports, so the store importing the whole of codedeps (which reaches the CLI, the
card, the report and the DVC export) would make every model job depend on all of them;
this module reaches only the study registry. It sits at the root, below both consumers
(the models never import the workflow).

Every import a module makes anywhere counts (a lazy import inside a function too), and
the ``__init__`` of every package on the way. Modules are found by reading source
(``ast``), never by importing them.

Parsing is most of the cost (about 8 ms a module: 1.9 s for the whole package, paid by
every Snakemake start and 0.5 s by every simulated-judge job keying its perception
store), so each module's import statements, as written, are remembered in
``__pycache__/importgraph-<python>.json`` beside the package, keyed by the sha256 of the
module's source: Python's own bytecode cache is the precedent. A key is the content, so
an edited module is parsed again and an entry can never be stale; where the folder
cannot be written (a read-only install) the modules are parsed every time. Resolving the
statements into project modules (which of ``from pkg import name`` is a module, where a
relative import points) is redone on every use, because it depends on the files around
the module, not on its text.
"""

from __future__ import annotations

import ast
import hashlib
import json
import sys
from collections.abc import Iterable, Iterator
from functools import cache
from importlib import import_module
from pathlib import Path

from judgebias.io.atomicfile import atomic_path
from judgebias.skeleton import PACKAGE_ROOT

REGISTRY = "judgebias.studies"
MEMO_FILE = (PACKAGE_ROOT / "__pycache__"
             / f"importgraph-{sys.implementation.cache_tag}.json")

# The numeric libraries a computation of pixels runs on, by import name: their
# ``__version__`` is read from the module a job has loaded anyway (importlib.metadata
# would cost a tenth of a second per job to import).
LIBRARIES = ("numpy", "PIL", "scipy")

# One import statement as written: (module or None, relative level, imported names); a
# plain ``import a.b`` is (None, 0, ("a.b",)).
Statement = tuple[str | None, int, tuple[str, ...]]


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
    return _resolve(_import_statements(nodes), current)


def _import_statements(nodes: Iterable[ast.AST]) -> list[Statement]:
    statements: list[Statement] = []
    for node in nodes:
        if isinstance(node, ast.Import):
            statements.append((None, 0, tuple(alias.name for alias in node.names)))
        elif isinstance(node, ast.ImportFrom):
            statements.append((node.module, node.level,
                               tuple(alias.name for alias in node.names)))
    return statements


def _resolve(statements: Iterable[Statement], current: str) -> set[str]:
    """The project modules that import `statements`, written in module `current`, load."""
    found: set[str] = set()
    source = module_file(current)
    is_package = source is not None and source.name == "__init__.py"
    package = current if is_package else current.rpartition(".")[0]
    for module, level, names in statements:
        if module is None and not level:
            found |= set(names)
            continue
        base = module or ""
        if level:
            anchor = package.split(".")
            anchor = anchor[: len(anchor) - level + 1]
            base = ".".join([*anchor, base] if base else anchor)
        found.add(base)
        found |= {f"{base}.{name}" for name in names
                  if module_file(f"{base}.{name}") is not None}
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
    path = module_file(name)
    assert path is not None
    source = path.read_bytes()
    key = hashlib.sha256(source).hexdigest()
    memo = _memo()
    if key not in memo.entries:
        parsed = ast.parse(source, str(path))
        memo.entries[key] = _import_statements(_statements(parsed))
        memo.changed = True
    memo.used.add(key)
    return frozenset(_resolve(memo.entries[key], name))


class _Memo:
    """The import statements of the sources seen so far, by the sha256 of each source."""

    def __init__(self, entries: dict[str, list[Statement]]) -> None:
        self.entries = entries
        self.used: set[str] = set()
        self.changed = False

    def save(self) -> None:
        """Write the memo if this process parsed a source it lacked: merged with what
        other processes wrote meanwhile, atomically (a temporary file and a rename, so a
        reader sees the old memo or the new one). Edited sources leave old entries
        behind; past twice the package's module count only the entries this process used
        are kept. A folder that cannot be written keeps no memo."""
        if not self.changed:
            return
        self.changed = False
        entries = {**_read_memo(), **self.entries}
        if len(entries) > 2 * sum(1 for _ in PACKAGE_ROOT.rglob("*.py")):
            entries = {key: entries[key] for key in self.used}
        try:
            with atomic_path(MEMO_FILE, durable=False) as temporary:
                temporary.write_text(json.dumps(entries, sort_keys=True))
        except OSError:
            return


def _read_memo() -> dict[str, list[Statement]]:
    try:
        raw = json.loads(MEMO_FILE.read_text())
        return {key: [(module, level, tuple(names)) for module, level, names in value]
                for key, value in raw.items()}
    except (OSError, ValueError, TypeError, AttributeError):  # none yet, or damaged
        return {}


@cache
def _memo() -> _Memo:
    return _Memo(_read_memo())


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
    _memo().save()
    return seen


def _plugins(name: str) -> list[str]:
    """Modules a core module loads from the study declarations by name: the sim backend
    answers each study's own kinds of prompt (Study.sim), so they are part of its code."""
    if name != "judgebias.models.sim":
        return []
    from judgebias.study import registered

    return [s.sim.partition(":")[0] for s in registered().values() if s.sim]


@cache
def code_version(module: str) -> str:
    """sha256 (hex, 16 characters) of everything `module`'s results can depend on: the
    source of every project module it reaches (:func:`closure`) and the numeric
    libraries' versions. The caches of computed pixels and perceptions (FRAME's render
    cache, the sim's perception store) key by it, so changed code never reads a stale
    entry."""
    digest = hashlib.sha256()
    for name in sorted(closure([module])):
        path = module_file(name)
        assert path is not None  # closure() keeps only modules with a source file
        digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    for library in LIBRARIES:
        digest.update(f"{library}=={import_module(library).__version__}\0".encode())
    return digest.hexdigest()[:16]
