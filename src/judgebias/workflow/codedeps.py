"""A rule's code dependencies, derived from what its step imports (docs/design.md "Reruns follow
the code"), so editing a module reruns exactly the rules whose steps use it.

A study rule runs ``judgebias plumbing step STUDY.STEP`` (judgebias.workflow.step_dispatch), a core
rule another command of the command table (judgebias.commands), whose row names the function
that runs it. The code of a step is the static import closure of its function: the
function's own imports, those of the functions of its module it calls, and its module's
top-level imports (not its sibling steps'); the code of a core command is the same for
the function its row names. Then, for every project module reached, every import it makes
anywhere (a lazy import inside a function counts: the step may call it), and the
``__init__`` of every package on the way (Python runs them on import). Modules are found
by reading source (``ast``), never by importing them: the workflow imports neither the
steps nor the CLI.

Outside the closure, by design, is the dispatch layer every step shares to parse its
arguments and load params: the ``judgebias`` command's entry point (judgebias.cli's
``main`` and its module's imports), the command table and what building its parser
imports (the study registry, each study's declaration, CLI and params-check modules, the
modules adding a command's options), and the ``step`` command's own code, which turns a
rule's files into a study step's arguments (judgebias.workflow.step_dispatch and what it imports).
They change how a step is called, not what it computes; editing them reruns nothing. A test
checks that a step's run-time imports are its closure plus this layer, and nothing else.

A core module that loads study code by name counts it too: the sim backend's closure
includes every study's declared sim tasks (Study.sim).

Data files a step reads are added explicitly where they are known: the core params schema
with judgebias.config; and with a study's package, the modules declaring its params block
(its params module's closure: judgebias.paramsblock), from which the schema comes. Prompt
templates are declared per rule (common.smk).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

from judgebias.importgraph import (
    PACKAGE_ROOT,
    REGISTRY,
    closure,
    imported,
    module_file,
    tree,
)
from judgebias.skeleton import package_file


def dispatch_modules() -> set[str]:
    """The dispatch layer (module docstring): what `judgebias` imports for every command
    before the command's function runs."""
    from judgebias.commands import CLI, COMMANDS, command
    from judgebias.study import registered

    parser = function_imports("judgebias.commands", "build_parser")
    options = {row.args.partition(":")[0] for row in COMMANDS if isinstance(row.args, str)}
    studies = {f"{s.package}{part}" for s in registered().values()
               for part in ("", ".cli", ".params")}
    module, _, function = command("step").run.partition(":")
    return (closure(function_imports(CLI, "main") | parser | options | studies
                    | function_imports(module, function))
            | {CLI, "judgebias.commands", REGISTRY})


def function_imports(module: str, name: str) -> set[str]:
    """The project modules function (or class) `name` of `module` imports: in its body and
    in the bodies of the module's functions it calls (transitively), and at its module's
    top level; not its sibling functions' imports. Read from source. KeyError where the
    module has no such function."""
    parsed = tree(module)
    functions = {node.name: node for node in parsed.body
                 if isinstance(node, ast.FunctionDef | ast.ClassDef)}
    if name not in functions:
        raise KeyError(f"{module} has no function {name!r}")
    imports, todo = imported(parsed, module, top_level_only=True), [name]
    used: set[str] = set()
    while todo:
        used.add(current := todo.pop())
        imports |= imported(functions[current], module)
        todo += [name for name in _called_names(functions[current])
                 if name in functions and name not in used]
    return imports


def step_imports(target: str) -> tuple[str, set[str]]:
    """The steps module of study step `target` ("study.step", judgebias.workflow.step_dispatch),
    and the project modules the step imports (`function_imports`). Read from source, so parsing
    the workflow imports no step's code."""
    from judgebias.study import registered
    from judgebias.workflow.step_dispatch import STEPS_MODULE, StepError

    study, _, name = target.partition(".")
    if study not in registered():
        raise StepError(f"step {target!r}: no study {study!r}")
    module = f"{registered()[study].package}.{STEPS_MODULE}"
    try:
        return module, function_imports(module, name)
    except KeyError:
        raise StepError(f"step {target!r}: {module} has no function {name!r}") from None


def _called_names(function: ast.FunctionDef | ast.ClassDef) -> set[str]:
    """Names a function calls directly, less its parameters (which shadow them)."""
    shadowed = ({a.arg for a in ast.walk(function.args) if isinstance(a, ast.arg)}
                if isinstance(function, ast.FunctionDef) else set())
    return {node.func.id for node in ast.walk(function) if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name) and node.func.id not in shadowed}


def step_modules(command: str, extra: Iterable[str] = ()) -> set[str]:
    """The project modules `judgebias <command>` runs (a command of the table, or a study
    step "study.step"), plus the closure of `extra` (modules a step loads by name, e.g.
    the report's study sections)."""
    if "." in command:  # the steps module's file, but only this step's imports
        module, imports = step_imports(command)
        return closure(imports | set(extra)) | {module}
    from judgebias.commands import command as row

    module, _, function = row(command).run.partition(":")
    return closure(function_imports(module, function) | set(extra))


def _data_files(modules: set[str]) -> list[Path]:
    files = []
    if "judgebias.config" in modules:  # reads the core schema from this package
        files += [PACKAGE_ROOT / "workflow" / "__init__.py",
                  PACKAGE_ROOT / "workflow" / "params.schema.yaml"]
    return files


def _schema_modules(modules: set[str]) -> set[str]:
    """The modules declaring the params blocks of the studies among `modules` (each one's
    typed view, judgebias.paramsblock), with their imports: the schema the params are
    validated with comes from them (judgebias.config.params_schema)."""
    from judgebias.study import registered

    views = {f"{study.package}.params" for study in registered().values()
             if study.package in modules}
    return closure(views) if views else set()


def step_files(command: str, extra: Iterable[str] = ()) -> list[str]:
    """`step_modules` as sorted paths, as the project declares them
    (judgebias.skeleton.package_file): ``src/judgebias/...`` where the project holds the
    source, so a copy of it (a colleague's clone, a test's temporary project) declares
    its own files; the installed files in a project of `judgebias init`.
    """
    modules = step_modules(command, extra)
    modules |= _schema_modules(modules)
    paths = [module_file(m) for m in modules] + _data_files(modules)
    return sorted(package_file(p.relative_to(PACKAGE_ROOT).as_posix())
                  for p in paths if p is not None)
