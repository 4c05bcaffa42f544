"""The repository's structure rules, measured from the source (issue 21): the core imports
no study, long modules say why, and the studies name their modules alike.

"Core" is every module of the judgebias package outside judgebias/studies/. It may reach
the registry (judgebias.studies, names only) through judgebias.study, which loads a study
by name; it may not import a study's package (``judgebias.studies.<name>``). An import is
any ``import`` or ``from ... import`` statement, at the top level or inside a function,
and any ``importlib.import_module("...")`` (or ``import_module("...")``) of a string
literal. The files are read with ``ast``, never imported.

Used by benchmarks/structure.py, which reports all three. The test that the core imports
no study is an import-linter contract (pyproject.toml; tests/core/test_layers.py), which
reads the same statements but no ``import_module`` call.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PACKAGE = "judgebias"
STUDIES = f"{PACKAGE}.studies"
LONG_LINES = 600
LONG_REASON = "Why this module is long:"
# The module names with a fixed role (docs/adding-a-study.md, "Module roles"): every study
# has the required ones; none has a module under a retired name, whose role was ambiguous.
REQUIRED_ROLES = ("params", "tables", "data", "jobs", "measures", "steps", "figures",
                  "report", "plan", "card")
# A required module a study need not have where its declaration says it lacks the role the
# module fills (the leaderboard judges systems, not judges: it has no card rows).
ROLE_OF_MODULE = {"card": "card"}
RETIRED_NAMES = ("analysis",)
SRC = Path(__file__).resolve().parents[2]  # the folder holding the judgebias package


@dataclass(frozen=True)
class StudyImport:
    """A core module's import of a study package."""

    path: str  # relative to the source folder, e.g. "judgebias/cli.py"
    line: int
    target: str  # the imported module, e.g. "judgebias.studies.pomms.tables"

    @property
    def study(self) -> str:
        return self.target.split(".")[2]

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: imports {self.target} (study {self.study!r})"


@dataclass(frozen=True)
class LongModule:
    path: str
    lines: int
    reason: str | None  # the docstring's "Why this module is long:" paragraph, if any


def modules(src: Path = SRC) -> Iterator[tuple[str, str]]:
    """(path relative to `src`, dotted module name) of every module of the package."""
    for path in sorted((src / PACKAGE).rglob("*.py")):
        relative = path.relative_to(src)
        parts = list(relative.with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        yield relative.as_posix(), ".".join(parts)


def is_core(module: str) -> bool:
    return module != STUDIES and not module.startswith(f"{STUDIES}.")


def imports(source: str, module: str, *, is_package: bool = False) -> list[tuple[int, str]]:
    """(line, imported module or name) of every import in `source`, the source of
    `module`: statements anywhere (relative ones resolved against `module`, which is a
    package's own name when `is_package`) and ``import_module`` calls on a string literal.
    ``from a import b`` gives ``a.b`` (b may be a module), and ``a`` itself when b is
    ``*``."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, module, is_package)
            found += [(node.lineno, base if alias.name == "*" else f"{base}.{alias.name}")
                      for alias in node.names]
        elif isinstance(node, ast.Call) and _is_import_module(node.func) and node.args:
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                found.append((node.lineno, first.value))
    return sorted(found)


def _absolute(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    anchor = module.split(".")
    anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
    return ".".join([*anchor, node.module] if node.module else anchor)


def _is_import_module(func: ast.expr) -> bool:
    return (isinstance(func, ast.Attribute) and func.attr == "import_module") or \
        (isinstance(func, ast.Name) and func.id == "import_module")


def core_study_imports(src: Path = SRC) -> list[StudyImport]:
    """Every import of a study package (judgebias.studies.<name>...) by a core module.
    A name of the registry module itself (``from judgebias.studies import STUDIES``) is
    not a study."""
    packages = {path.split("/")[2] for path, module in modules(src)
                if module.count(".") >= 2 and not is_core(module)}
    found = []
    for path, module in modules(src):
        if not is_core(module):
            continue
        source = (src / path).read_text(encoding="utf-8")
        found += [StudyImport(path, line, target)
                  for line, target in imports(source, module,
                                              is_package=path.endswith("__init__.py"))
                  if target.split(".")[:2] == STUDIES.split(".")
                  and target.count(".") >= 2 and target.split(".")[2] in packages]
    return found


def long_modules(src: Path = SRC, limit: int = LONG_LINES) -> list[LongModule]:
    """The modules over `limit` lines, each with the reason its docstring gives (a line
    starting "Why this module is long:", up to the paragraph's end), if any."""
    found = []
    for path, _ in modules(src):
        text = (src / path).read_text(encoding="utf-8")
        lines = len(text.splitlines())
        if lines > limit:
            found.append(LongModule(path, lines, _reason(ast.get_docstring(ast.parse(text)))))
    return found


def _reason(docstring: str | None) -> str | None:
    paragraph: list[str] = []
    for line in (docstring or "").splitlines():
        if paragraph and not line.strip():
            break
        if paragraph or line.strip().startswith(LONG_REASON):
            paragraph.append(line.strip())
    reason = " ".join(paragraph)[len(LONG_REASON):].strip()
    return reason or None


def study_modules(src: Path = SRC) -> dict[str, list[str]]:
    """Each study package's module names (modules and subpackages, ``__init__`` left out),
    by study; packages whose name starts with "_" (a template) are not studies."""
    root = src / PACKAGE / "studies"
    return {study.name: sorted(p.stem for p in study.iterdir()
                               if p.name != "__init__.py" and not p.name.startswith(".")
                               and (p.suffix == ".py" or (p / "__init__.py").is_file()))
            for study in sorted(root.iterdir())
            if (study / "__init__.py").is_file() and not study.name.startswith("_")}


def declared(init: Path, name: str, default: Any) -> Any:
    """The value a study's declaration (``STUDY = Study(...)`` in its ``__init__.py``)
    gives keyword `name` (a literal), read from the source; `default` where it gives
    none."""
    for node in ast.walk(ast.parse(init.read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Study":
            for keyword in node.keywords:
                if keyword.arg == name:
                    return ast.literal_eval(keyword.value)
    return default





def role_problems(src: Path = SRC) -> list[str]:
    """One line per study package missing a required role module or holding a module
    under a retired name (see REQUIRED_ROLES)."""
    problems = []
    for study, names in study_modules(src).items():
        init = src / PACKAGE / "studies" / study / "__init__.py"
        lacks = set(declared(init, "lacks", ()))
        # a study whose judges its input tables name calls no model: no jobs module
        exempt = {"jobs"} if declared(init, "judges_in_data", False) else set()
        problems += [f"studies/{study}: no `{role}` module" for role in REQUIRED_ROLES
                     if role not in names and ROLE_OF_MODULE.get(role) not in lacks
                     and role not in exempt]
        problems += [f"studies/{study}: `{name}` is a retired module name"
                     for name in RETIRED_NAMES if name in names]
    return problems
