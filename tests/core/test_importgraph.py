"""The import graph's memo of parsed import statements (judgebias.importgraph)."""

from __future__ import annotations

import hashlib
import json

import pytest

from judgebias import importgraph
from judgebias.importgraph import PACKAGE_ROOT, closure, module_file

MODULES = sorted(
    ".".join(("judgebias", *p.relative_to(PACKAGE_ROOT).with_suffix("").parts))
    .removesuffix(".__init__") for p in PACKAGE_ROOT.rglob("*.py"))


@pytest.fixture
def memo_file(tmp_path, monkeypatch):
    """A memo of the test's own, read afresh (no process-wide cache)."""
    path = tmp_path / "__pycache__" / "importgraph.json"
    monkeypatch.setattr(importgraph, "MEMO_FILE", path)
    for cached in (importgraph._memo, importgraph._module_imports):
        cached.cache_clear()
    yield path
    for cached in (importgraph._memo, importgraph._module_imports):
        cached.cache_clear()


SOURCES = {hashlib.sha256(path.read_bytes()).hexdigest()  # empty __init__s: one key
           for path in PACKAGE_ROOT.rglob("*.py")}


def _closures() -> dict[str, frozenset[str]]:
    """Each module's imports, and the closure of the sim backend, parsed or remembered."""
    importgraph._module_imports.cache_clear()
    importgraph._memo.cache_clear()
    graph: dict[str, frozenset[str]] = {m: importgraph._module_imports(m) for m in MODULES}
    return {**graph, "closure": frozenset(closure(["judgebias.models.sim"]))}


def test_the_memo_gives_the_closures_parsing_gives(memo_file):
    parsed = _closures()  # no memo yet: every module parsed, then remembered
    assert memo_file.is_file()
    remembered = json.loads(memo_file.read_text())
    assert remembered.keys() == SOURCES
    assert _closures() == parsed  # from the memo alone
    assert json.loads(memo_file.read_text()) == remembered  # nothing new: not rewritten


def test_an_entry_is_found_by_the_content_of_its_source(memo_file):
    """The key is the source's sha256: an entry says what that text imports, whatever the
    file is called, and a file whose text changes is looked up under another key."""
    _closures()
    target = "judgebias.studies.frame.perceive"
    path = module_file(target)
    assert path is not None
    key = hashlib.sha256(path.read_bytes()).hexdigest()
    memo = json.loads(memo_file.read_text())
    memo[key] = [["judgebias.report", 0, ["section"]]]  # what another text would import
    memo_file.write_text(json.dumps(memo))
    assert "judgebias.report" in _closures()[target]
    assert "judgebias.report" not in importgraph.imported(importgraph.tree(target), target)


def test_a_damaged_memo_is_parsed_again_and_replaced(memo_file):
    parsed = _closures()
    for damage in ("{not json", "[1, 2]", '{"k": [[1]]}'):
        memo_file.write_text(damage)
        assert _closures() == parsed
        assert json.loads(memo_file.read_text()).keys() == SOURCES


def test_a_folder_that_cannot_be_written_keeps_no_memo(tmp_path, monkeypatch):
    blocked = tmp_path / "file"
    blocked.write_text("")
    monkeypatch.setattr(importgraph, "MEMO_FILE", blocked / "importgraph.json")
    expected = closure(["judgebias.models.sim"])
    importgraph._memo.cache_clear()
    importgraph._module_imports.cache_clear()
    assert closure(["judgebias.models.sim"]) == expected
    importgraph._memo.cache_clear()
    importgraph._module_imports.cache_clear()


def test_the_code_version_covers_every_module_reached(tmp_path, monkeypatch):
    """FRAME's render cache and the perception store key by code_version: an edit to a
    module the keyed module only imports (recipes, for the manipulations) changes it,
    as an edit to the module itself does; an edit elsewhere does not."""
    from judgebias.studies.frame.render import MANIPULATION_CODE

    def version_with(edited: str) -> str:
        real = module_file(edited)
        assert real is not None
        copy = tmp_path / edited / real.name
        copy.parent.mkdir()
        copy.write_bytes(real.read_bytes() + b"\n# edited\n")
        with monkeypatch.context() as patch:
            patch.setattr(importgraph, "module_file",
                          lambda name: copy if name == edited else module_file(name))
            importgraph.code_version.cache_clear()
            return importgraph.code_version(MANIPULATION_CODE)

    importgraph.code_version.cache_clear()
    base = importgraph.code_version(MANIPULATION_CODE)
    assert "judgebias.studies.frame.recipes" in closure([MANIPULATION_CODE])
    assert version_with("judgebias.studies.frame.recipes") != base
    assert version_with(MANIPULATION_CODE) != base
    assert version_with("judgebias.report") == base
    importgraph.code_version.cache_clear()
