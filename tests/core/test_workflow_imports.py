"""Reading the workflow stays light: Snakemake reads it at every start, and on a cluster
twice per job (the submitted job's Snakemake, then the job step's). The rules import
judgebias modules for paths and inputs (each study's `tables`, the card's inputs); the
measures behind them import scipy, statsmodels and scikit-learn, about 1.5 s of CPU,
which a rule file must not pay for (issue 25: 106 Slurm jobs, 212 reads of the workflow).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from helpers.project import BIN, make_project, small_all_studies

HEAVY = ("scipy", "statsmodels", "sklearn", "torch", "open_clip")


@pytest.mark.slow  # one Snakemake start (~4 s)
def test_reading_the_workflow_imports_no_statistics_library(tmp_path, default_params):
    project = make_project(tmp_path, small_all_studies(default_params))
    probe = (
        "import sys\n"
        "from snakemake.cli import main\n"
        "try:\n"
        "    main(['--dry-run', '--quiet', '--cores', '1', '--nolock', 'results/card'])\n"
        "except SystemExit as done:\n"
        "    assert not done.code, done.code\n"
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))\n")
    done = subprocess.run([sys.executable, "-c", probe], cwd=project, capture_output=True,
                          text=True, timeout=300,
                          env={**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout[-3000:]
