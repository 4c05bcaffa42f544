"""Seconds per test module from a pytest ``--durations=0`` report, as JSON.

    .venv/bin/python -m pytest -n 2 -q --durations=0 > ci.log
    .venv/bin/python -m judgebias.devtools.test_durations ci.log > tests/durations.json

``make test`` runs the suite with ``--dist loadscope`` (a module's tests on one worker, so
an expensive module-scoped fixture is built once) and tests/conftest.py starts the modules
with the most seconds in that file first, so that the two workers finish together instead
of one waiting for a 10-minute module started last. The file only orders the run: a stale
or missing entry changes when a module starts, never what runs.
"""

from __future__ import annotations

import json
import re
import sys
from collections import defaultdict
from pathlib import Path

# "676.60s setup    tests/test_frame_pipeline.py::test_planted[...]"
DURATION = re.compile(r"^\s*([0-9.]+)s\s+(?:setup|call|teardown)\s+(tests/[^:\s]+\.py)::")


def module_seconds(report: str) -> dict[str, float]:
    """Setup + call + teardown seconds summed per test file, largest first."""
    total: dict[str, float] = defaultdict(float)
    for line in report.splitlines():
        if match := DURATION.match(line):
            total[Path(match.group(2)).name] += float(match.group(1))
    return {name: round(seconds, 1)
            for name, seconds in sorted(total.items(), key=lambda item: -item[1])}


def main() -> None:
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    json.dump(module_seconds(Path(sys.argv[1]).read_text()), sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
