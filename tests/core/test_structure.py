"""The structure of the study plug-ins (issue 21). That the core imports no study is a
contract of import-linter's (tests/core/test_layers.py); the walker here,
judgebias.devtools.structure, also sees a literal importlib.import_module, and
benchmarks/structure.py reports with it. And every study fills the same roles alike
(judgebias.study.ROLES): its declaration states its departures from the role table, and
they are true of its package."""

from __future__ import annotations

import importlib
import re
from importlib.util import find_spec
from pathlib import Path

import pytest

from judgebias.devtools.structure import core_study_imports, imports, role_problems
from judgebias.study import ROLES, Study, registered


def test_every_study_has_the_same_module_roles() -> None:
    """docs/adding-a-study.md, "Module roles": the same name means the same thing in every
    study, and no study keeps a module under a retired, ambiguous name."""
    assert not role_problems()


def _defines(package: str, target: str) -> bool:
    module, _, name = target.partition(":")
    return (find_spec(f"{package}.{module}") is not None
            and hasattr(importlib.import_module(f"{package}.{module}"), name))


def test_each_declaration_is_true_of_its_package() -> None:
    """Every hook a study (or the template) fills loads, and no hook sits at a role's
    conventional place unless the study declares the role: an undeclared `params.warnings`
    would otherwise never be called."""
    template = importlib.import_module("judgebias.studies._template").STUDY
    problems = []
    for study in [*registered().values(), template]:
        for role, target in ROLES.items():
            if getattr(study, role) is not None:
                try:
                    study.load(role)
                except (ImportError, AttributeError) as error:
                    problems.append(f"{study.name}.{role}: {error}")
            elif _defines(study.package, target):
                problems.append(f"{study.name}: {target} is there but not its role {role!r}")
    assert not problems, "\n".join(problems)


def test_a_declaration_states_its_departures_from_the_role_table() -> None:
    base = {"name": "toy", "title": "Toy", "package": "pkg.toy", "rules": "toy.smk",
            "view": "ToyParams"}
    toy = Study(**base, lacks=("sim",), has=("cli",), targets={"report_inputs": "report:files"})
    assert (toy.validate, toy.card_inputs) == ("pkg.toy.params:validate", "pkg.toy.card:inputs")
    assert (toy.cli, toy.report_inputs) == ("pkg.toy.cli:register", "pkg.toy.report:files")
    assert toy.sim is None and toy.gpus is None and toy.load("sim") is None
    assert toy.results == "results/toy"
    for departures, message in [
            ({"lacks": ("sims",)}, "'sims' is not a role"),
            ({"has": ("card",)}, "'card' is a standard role"),
            ({"lacks": ("gpus",)}, "'gpus' is an optional role"),
            ({"lacks": ("card",), "targets": {"card": "a:b"}}, "'card' both lacked"),
            ({"lacks": ("report",)}, "'report' and 'report_inputs' go together")]:
        with pytest.raises(ValueError, match=re.escape(f"study 'toy': {message}")):
            Study(**base, **departures)


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
