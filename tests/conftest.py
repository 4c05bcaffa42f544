"""Shared fixtures: the default params, and a headless browser for report tests.

Tests live in one folder per study (philautia, pomms, mmb, frame, birch) and core/ (the
core and what spans studies); what they share is in helpers/ (a project running only
some studies: `helpers.project.study_params` and `make_project`).

`make test` runs them under pytest-xdist's ``--dist loadgroup --no-loadscope-reorder``,
one test (or group) at a time per worker, in the order `pytest_collection_modifyitems`
below sets: the long tests first, so that the short ones fill in at the end.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from helpers.project import REPO

# Markers of the long tests (pyproject.toml): end-to-end runs and the services.
LONG = ("slow", "slurm", "remote", "browser", "vllm_cpu", "gpu")


def _shares_module_fixture(item: pytest.Item) -> bool:
    """Whether the test uses a fixture set up once per module (a pipeline run, usually)."""
    info = getattr(item, "_fixtureinfo", None)
    return info is not None and any(
        defs[-1].scope in ("module", "package") for defs in info.name2fixturedefs.values())


@pytest.hookimpl(tryfirst=True)  # before xdist reads the xdist_group marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Keep a module's tests on one worker when they share a module fixture (else each
    worker that runs one of them builds it again: a whole pipeline), and start the long
    tests first (longest-first scheduling: two workers finish close together)."""
    for item in items:
        if _shares_module_fixture(item):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))

    def order(item: pytest.Item) -> tuple[bool, bool]:
        long = any(item.get_closest_marker(name) for name in LONG)
        return not long, not _shares_module_fixture(item)

    items.sort(key=order)


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
