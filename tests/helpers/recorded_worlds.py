"""The recorded study's worlds with planted answers, as benchmarks/recorded_validity.py
draws them (one definition: the benchmark measures the tests' worlds)."""

from __future__ import annotations

import importlib.util

from helpers.project import REPO

_spec = importlib.util.spec_from_file_location(
    "recorded_validity", REPO / "benchmarks" / "recorded_validity.py")
assert _spec is not None and _spec.loader is not None
_benchmark = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_benchmark)

FAMILIES = _benchmark.FAMILIES
MODELS = _benchmark.MODELS
pairwise_world = _benchmark.pairwise_world
scores_world = _benchmark.scores_world
