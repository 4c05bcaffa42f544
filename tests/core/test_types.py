"""`mypy src` is clean (issue 21, item 3; settings in pyproject.toml's [tool.mypy]).

A test rather than a line of `make test` before pytest: on a fresh clone mypy takes about
40 s of one core, which as a test runs beside the others on the second worker instead of
holding both cores' pipeline tests back."""

from __future__ import annotations

import subprocess
import sys

import pytest
from helpers.project import REPO


@pytest.mark.slow
def test_src_is_clean_under_mypy():
    result = subprocess.run([sys.executable, "-m", "mypy", "src"], cwd=REPO,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
