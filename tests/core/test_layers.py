"""The package's layers, "the core never imports a study" and "no circles" are contracts
in pyproject.toml's ``[tool.importlinter]``, checked by import-linter (docs/design.md,
"Layout"). One test runs the check on the package; the others plant a breach in a copy of
it and see the check name the contract it breaks, so a contract cannot pass by matching
nothing."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers.project import BIN, REPO


def _lint_imports(pythonpath: Path | None = None) -> subprocess.CompletedProcess[str]:
    """`lint-imports` from the repo root (its config is pyproject.toml's), on the package
    that `pythonpath` holds, else the installed one. No cache: nothing is written."""
    env = dict(os.environ)
    if pythonpath is not None:  # ahead of the editable install's path entry (src/)
        env["PYTHONPATH"] = str(pythonpath)
    return subprocess.run([str(BIN / "lint-imports"), "--no-cache"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)


def test_the_package_keeps_its_import_contracts() -> None:
    done = _lint_imports()
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-2000:]
    assert " 0 broken" in done.stdout


@pytest.mark.parametrize(("module", "line", "broken"), [
    ("stats/bootstrap.py", "import judgebias.studies.mmb",
     ["The core never imports a study", "The package's layers"]),
    ("io/atomicfile.py", "import judgebias.config", ["The package's layers"]),
    ("card/schema.py", "import judgebias.card.compare", ["No import circles inside a package"]),
    ("workflow/dvcviews.py", "import judgebias.cli",
     ["The workflow never imports the CLI", "The package's layers"]),
    ("models/gemini_wire.py", "import judgebias.models.openai_wire",
     ["The wire formats are independent", "The layers of judgebias.models"]),
])
def test_a_planted_breach_breaks_its_contract(tmp_path: Path, module: str, line: str,
                                              broken: list[str]) -> None:
    """The breach exists only in the copy, so its being found shows that the copy, not the
    installed package, is what the check read."""
    package = tmp_path / "judgebias"
    shutil.copytree(REPO / "src/judgebias", package,
                    ignore=shutil.ignore_patterns("__pycache__"))
    path = package / module
    path.write_text(f"{line}\n{path.read_text()}")
    done = _lint_imports(tmp_path)
    assert done.returncode == 1, done.stdout[-5000:] + done.stderr[-2000:]
    found = set(re.findall(r"^(.+) BROKEN(?: \(.*\))?$", done.stdout, re.MULTILINE))
    assert found == set(broken), done.stdout[-5000:]
