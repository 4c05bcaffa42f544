"""A rule's code dependencies, derived from what its step imports (docs/design.md "Reruns follow
the code"), so editing a module reruns exactly the rules whose steps use it.

A study rule runs ``judgebias step STUDY.STEP`` (judgebias.steps), a core rule
``judgebias <command>``. The code of a step is the static import closure of its function:
the function's own imports, those of the functions of its module it calls, and its
module's top-level imports (not its sibling steps'); for a core command, its handler's
imports and its module's top-level ones. Then, for every project module reached, every
import it makes anywhere (a lazy import inside a function counts: the step may call it),
and the ``__init__`` of every package on the way (Python runs them on import). Modules
are found by reading source (``ast``), never by importing them.

Outside the closure, by design, is the dispatch layer every step shares to parse its
arguments and load params: the ``judgebias`` command itself (judgebias.cli), the study
registry (judgebias.studies, names only) and the other studies' declarations and CLI
modules, which the command imports to build its parser. They change how a step is
called, not what it computes; editing them reruns nothing. A test checks that a step's
run-time imports are its closure plus this layer, and nothing else.

A core module that loads study code by name counts it too: the sim backend's closure
includes every study's declared sim tasks (Study.sim).

Data files a step reads are added explicitly where they are known: a study's params
schema fragment with its package. Prompt templates are declared per rule (common.smk).
"""

from __future__ import annotations

import argparse
import ast
import inspect
from collections.abc import Iterable
from functools import cache
from pathlib import Path

from judgebias.importgraph import PACKAGE_ROOT, REGISTRY, closure, imported, module_file, tree


def handler_imports(func) -> set[str]:
    """Project modules a CLI handler imports: in its body, and at its module's top level."""
    module = inspect.getmodule(func)
    assert module is not None
    own = ast.parse(inspect.cleandoc("\n" + inspect.getsource(func)))
    top = ast.parse(inspect.getsource(module))
    return (imported(own, module.__name__)
            | imported(top, module.__name__, top_level_only=True))


def dispatch_modules() -> set[str]:
    """The dispatch layer (module docstring): what `judgebias` imports for every command
    before the step runs, i.e. the CLI's top-level imports, the registry, and each
    study's declaration, CLI and params-check modules."""
    from judgebias.study import registered

    path = module_file("judgebias.cli")
    assert path is not None
    cli = imported(ast.parse(path.read_text()), "judgebias.cli", top_level_only=True)
    studies = {f"{s.package}{part}" for s in registered().values()
               for part in ("", ".cli", ".params")}
    return closure(cli | studies) | {"judgebias.cli", REGISTRY, "judgebias.steps",
                                     "judgebias.devtools",
                                     "judgebias.devtools.serve_sim",
                                     "judgebias.devtools.serve_sim.args"}


@cache
def _handlers() -> dict[str, object]:
    from judgebias.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions
               if isinstance(a, argparse._SubParsersAction) and a.dest == "command")
    return {name: p.get_default("func") for name, p in sub.choices.items()}


def step_imports(target: str) -> tuple[str, set[str]]:
    """The steps module of study step `target` ("study.step", judgebias.steps), and the
    project modules the step imports: in its function's body and in the bodies of the
    module's functions it calls (transitively), and at its module's top level; not its
    sibling steps' imports. Read from source, so parsing the workflow imports no step's
    code."""
    from judgebias.steps import STEPS_MODULE, StepError
    from judgebias.study import registered

    study, _, name = target.partition(".")
    if study not in registered():
        raise StepError(f"step {target!r}: no study {study!r}")
    module = f"{registered()[study].package}.{STEPS_MODULE}"
    parsed = tree(module)
    functions = {node.name: node for node in parsed.body
                 if isinstance(node, ast.FunctionDef | ast.ClassDef)}
    if name not in functions:
        raise StepError(f"step {target!r}: {module} has no function {name!r}")
    imports, todo = imported(parsed, module, top_level_only=True), [name]
    used: set[str] = set()
    while todo:
        used.add(current := todo.pop())
        imports |= imported(functions[current], module)
        todo += [name for name in _called_names(functions[current])
                 if name in functions and name not in used]
    return module, imports


def _called_names(function: ast.FunctionDef | ast.ClassDef) -> set[str]:
    """Names a function calls directly, less its parameters (which shadow them)."""
    shadowed = ({a.arg for a in ast.walk(function.args) if isinstance(a, ast.arg)}
                if isinstance(function, ast.FunctionDef) else set())
    return {node.func.id for node in ast.walk(function) if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name) and node.func.id not in shadowed}


def step_modules(command: str, extra: Iterable[str] = ()) -> set[str]:
    """The project modules `judgebias <command>` runs (a core or study command, or a
    study step "study.step"), plus the closure of `extra` (modules a step loads by
    name, e.g. the report's study sections)."""
    if "." in command:  # the steps module's file, but only this step's imports
        module, imports = step_imports(command)
        return closure(imports | set(extra)) | {module}
    handlers = _handlers()
    if command not in handlers:
        raise KeyError(f"no judgebias command {command!r}")
    return closure(handler_imports(handlers[command]) | set(extra))


def _data_files(modules: set[str]) -> list[Path]:
    from judgebias.study import registered

    files = []
    if "judgebias.config" in modules:  # reads the core schema from this package
        files += [PACKAGE_ROOT / "workflow" / "__init__.py",
                  PACKAGE_ROOT / "workflow" / "params.schema.yaml"]
    for study in registered().values():
        package = module_file(study.package)
        if study.package in modules and package is not None:  # (a study has a package)
            files.append(package.parent / study.schema)
    return files


def step_files(command: str, extra: Iterable[str] = ()) -> list[str]:
    """`step_modules` as sorted paths in the project folder (``src/judgebias/...``).

    Paths are spelled relative to the package, so a copy of the project (a colleague's
    clone, a test's temporary project) declares its own files.
    """
    modules = step_modules(command, extra)
    paths = [module_file(m) for m in modules] + _data_files(modules)
    return sorted(f"src/judgebias/{p.relative_to(PACKAGE_ROOT).as_posix()}"
                  for p in paths if p is not None)
