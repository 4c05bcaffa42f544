"""Shared fixtures: the default params, and a headless browser for report tests.

Tests live in one folder per study (philautia, pomms, mmb, frame, birch) and core/ (the
core and what spans studies); what they share is in helpers/ (a project running only
some studies: `helpers.project.study_params` and `make_project`).
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from helpers.project import REPO


@pytest.fixture(scope="session")
def default_params() -> dict:
    return yaml.safe_load((REPO / "params.yaml").read_text())


@pytest.fixture
def params(default_params) -> dict:
    return copy.deepcopy(default_params)


@pytest.fixture(scope="session")
def chromium(tmp_path_factory) -> Path:
    """Debian's headless Chromium, installed with apt-get if missing
    (tests/helpers/report_browser.py)."""
    from helpers.report_browser import install_chromium

    return install_chromium(tmp_path_factory.getbasetemp().parent / "chromium-install.lock")


@pytest.fixture
def browser(chromium, tmp_path):
    """One headless Chromium page over the DevTools protocol, closed after the test."""
    from helpers.report_browser import Browser

    profile = tmp_path / "chromium-profile"
    profile.mkdir()
    opened = Browser(chromium, profile)
    try:
        yield opened
    finally:
        opened.close()
