"""The core knows no study (issue 21): no module of judgebias outside judgebias/studies/
imports a study package, at the top level, inside a function or through
importlib.import_module. The walker is judgebias.devtools.structure (benchmarks/structure.py
reports the same)."""

from __future__ import annotations

from pathlib import Path

from judgebias.devtools.structure import core_study_imports, imports, role_problems


def test_the_core_imports_no_study() -> None:
    found = core_study_imports()
    assert not found, "core modules import a study package:\n" + "\n".join(map(str, found))


def test_every_study_has_the_same_module_roles() -> None:
    """docs/adding-a-study.md, "Module roles": the same name means the same thing in every
    study, and no study keeps a module under a retired, ambiguous name."""
    assert not role_problems()


def test_the_walker_sees_every_kind_of_import(tmp_path: Path) -> None:
    package = tmp_path / "judgebias"
    for folder in ("studies/toy", "data"):
        (package / folder).mkdir(parents=True)
        (package / folder / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "studies" / "__init__.py").write_text('STUDIES = {"toy": "judgebias.studies.toy"}')
    (package / "studies" / "toy" / "data.py").write_text("from judgebias.data import x\n")
    (package / "study.py").write_text(
        "import importlib\n"
        "from judgebias.studies import STUDIES\n"  # the registry's names: allowed
        "def load(name):\n"
        "    return importlib.import_module(name)\n")  # not a literal: unknowable
    (package / "data" / "mixed.py").write_text(
        '"""Doc."""\n'
        "import judgebias.studies.toy\n"
        "def late():\n"
        "    from ..studies.toy import data\n"
        "    from importlib import import_module\n"
        "    return import_module('judgebias.studies.toy.data'), data\n")
    found = core_study_imports(tmp_path)
    assert [(i.path, i.line, i.target, i.study) for i in found] == [
        ("judgebias/data/mixed.py", 2, "judgebias.studies.toy", "toy"),
        ("judgebias/data/mixed.py", 4, "judgebias.studies.toy.data", "toy"),
        ("judgebias/data/mixed.py", 6, "judgebias.studies.toy.data", "toy"),
    ]
    assert str(found[0]) == ("judgebias/data/mixed.py:2: imports judgebias.studies.toy "
                             "(study 'toy')")


def test_relative_imports_resolve_against_the_module_or_package() -> None:
    source = "from . import a\nfrom ..b import c\nfrom .d import *\n"
    assert imports(source, "judgebias.x.mod") == [
        (1, "judgebias.x.a"), (2, "judgebias.b.c"), (3, "judgebias.x.d")]
    assert imports(source, "judgebias.x", is_package=True) == [
        (1, "judgebias.x.a"), (2, "judgebias.b.c"), (3, "judgebias.x.d")]
