"""A model job in batch mode as a process of its own, for tests that kill it (kill -9).

``python tests/helpers/batch_job.py PARAMS JOURNAL`` answers :func:`batch_requests`
with the panel model ``corvid-pro`` of PARAMS (an API model with ``batch: true``, its
key in the environment) through :func:`judgebias.models.runner.run_requests`, as a
pipeline job does, and prints the run's stats as JSON.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path

from helpers.batch import batch_requests
from judgebias.config import load_config
from judgebias.models.context import RunContext
from judgebias.models.journal import Journal
from judgebias.models.registry import build_backend
from judgebias.models.runner import run_requests


def main(params: Path, journal: Path) -> None:
    backend, version = build_backend(RunContext(load_config(params)), "corvid-pro", "evaluator")
    with Journal(journal) as opened:
        answers, stats = run_requests(backend, batch_requests(), opened,
                                      backend_version=version)
    print(json.dumps({"ok": sum(a.ok for a in answers), **asdict(stats)}))


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
