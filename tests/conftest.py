"""Shared fixtures: the default params, and a small real project copy for pipeline tests."""

from __future__ import annotations

import copy
import os
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def default_params() -> dict:
    return yaml.safe_load((REPO / "params.yaml").read_text())


@pytest.fixture
def params(default_params) -> dict:
    return copy.deepcopy(default_params)


def shared_data_dir() -> Path:
    """Real test data (../shared/data, or $JUDGEBIAS_SHARED_DATA)."""
    return Path(os.environ.get("JUDGEBIAS_SHARED_DATA", REPO.parent / "shared" / "data"))


def make_project(dest: Path, params: dict) -> Path:
    """A copy of the workflow files with `params` as params.yaml: a real, small project."""
    for name in ("Snakefile", "workflow", "src", ".gitignore", ".dvcignore", ".dvc"):
        src = REPO / name
        if src.is_dir():
            skip = shutil.ignore_patterns("__pycache__", "*.egg-info", "tmp", "cache")
            shutil.copytree(src, dest / name, ignore=skip)
        else:
            shutil.copy(src, dest / name)
    (dest / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    return dest


def long_table(tensor: np.ndarray, models: list[str]) -> pd.DataFrame:
    """(N, M, M) tensor -> long score table, as the pipeline writes it."""
    n, m, _ = tensor.shape
    k, i, j = np.meshgrid(np.arange(n), np.arange(m), np.arange(m), indexing="ij")
    return pd.DataFrame(
        {
            "image_id": [f"img{x:05d}" for x in k.ravel()],
            "generator": np.array(models)[i.ravel()],
            "evaluator": np.array(models)[j.ravel()],
            "score": tensor.ravel(),
        }
    )


@pytest.fixture(scope="session")
def chromium(tmp_path_factory) -> Path:
    """Debian's headless Chromium, installed with apt-get if missing (tests/report_browser.py)."""
    from report_browser import install_chromium

    return install_chromium(tmp_path_factory.getbasetemp().parent / "chromium-install.lock")


@pytest.fixture
def browser(chromium, tmp_path):
    """One headless Chromium page over the DevTools protocol, closed after the test."""
    from report_browser import Browser

    profile = tmp_path / "chromium-profile"
    profile.mkdir()
    opened = Browser(chromium, profile)
    try:
        yield opened
    finally:
        opened.close()
