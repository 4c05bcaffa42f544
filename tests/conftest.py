"""Shared fixtures: the default params, and a headless browser for report tests.

Tests live in one folder per study (philautia, pomms, mmb, frame, birch) and core/ (the
core and what spans studies); what they share is in helpers/ (a project running only
some studies: `helpers.project.study_params` and `make_project`).

Scheduling (`make test`: `pytest -n CORES --dist loadfile`): each test file runs whole on one
worker, so a module-scoped pipeline fixture is built once (xdist's default `load`
scheduling splits a file's tests across workers, and each worker then builds the fixture
itself). Files start longest first (`durations.json`, seconds per file from a full run),
so the long pipeline files do not end up last on one worker while the other idles. After
adding or reshaping slow tests, refresh it: `pytest -n 2 --dist loadfile
--store-durations` (the whole suite; it rewrites tests/durations.json). A file missing from
it runs after the listed ones.
"""

from __future__ import annotations

import copy
import json
from collections import defaultdict
from pathlib import Path

import pytest
import yaml
from helpers.project import REPO

DURATIONS = Path(__file__).with_name("durations.json")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--store-durations", action="store_true",
                     help=f"write each test file's seconds (setup + call + teardown) "
                          f"to {DURATIONS}")


def _test_file(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Longest files first (module docstring); within a file, the collected order."""
    seconds = json.loads(DURATIONS.read_text()) if DURATIONS.is_file() else {}
    collected = {name: i for i, name in enumerate(dict.fromkeys(_test_file(item.nodeid)
                                                              for item in items))}
    items.sort(key=lambda item: (-seconds.get(_test_file(item.nodeid), 0.0),
                                 collected[_test_file(item.nodeid)]))


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("store_durations"):
        config.pluginmanager.register(_DurationRecorder(), "judgebias-durations")


class _DurationRecorder:
    """Sums each test file's phase durations (on the xdist controller, every worker's
    reports arrive here) and writes them when the session ends."""

    def __init__(self) -> None:
        self.seconds: defaultdict[str, float] = defaultdict(float)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.seconds[_test_file(report.nodeid)] += report.duration

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if hasattr(session.config, "workerinput"):  # an xdist worker: the controller writes
            return
        ordered = dict(sorted(((name, round(s, 1)) for name, s in self.seconds.items()),
                              key=lambda item: -item[1]))
        DURATIONS.write_text(json.dumps(ordered, indent=1) + "\n")


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
