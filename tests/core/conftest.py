"""Fixtures of the core's tests against serve-sim: the default params (validated, with
schema defaults), a fresh serve-sim per test, and the batch tests' requests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from helpers.api import sim_server
from helpers.batch import batch_requests
from helpers.project import REPO

from judgebias.config import load_config
from judgebias.devtools.serve_sim.server import SimServer
from judgebias.models.base import ChatRequest


@pytest.fixture(scope="module")
def config() -> dict[str, Any]:
    return load_config(REPO / "params.yaml")


@pytest.fixture
def server(config: dict[str, Any]) -> Iterator[SimServer]:
    """serve-sim on loopback with the test key (helpers.api.sim_server)."""
    with sim_server(config) as srv:
        yield srv


@pytest.fixture(scope="module")
def requests() -> list[ChatRequest]:
    return batch_requests()
