"""The two front doors agree in both directions across param edits (issue 19, part 11).

Snakemake keeps its provenance in `.snakemake/metadata`, DVC in `dvc.lock`. After either
front door runs, the other must have nothing to do: `judgebias dvc-record` records what
Snakemake built in dvc.lock, `judgebias dvc-repro` (`dvc repro` + `judgebias
snakemake-record`) records what DVC built in Snakemake's metadata. The test alternates the
doors over an analysis param, a model's sampling and a Snakemake-side edit, on a small
philautia project in a git repository (as a user's clone is).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from helpers.project import BIN, make_project, planned_jobs, run, study_params, write_params

NOTHING = "Nothing to be done"


def tiny_params(default_params: dict) -> dict:
    """Philautia alone, small, on 6 images."""
    params = study_params(default_params, "philautia", small=True)
    params["philautia"]["dataset"]["synthetic"]["n_images"] = 6
    params["philautia"].update(n_bootstrap=20, n_permutations=100)
    return params


def journaled_calls(project: Path) -> int:
    """Answers in every model's journal: what the run has paid for so far."""
    total = 0
    for path in (project / ".judgebias").rglob("*.sqlite"):
        with sqlite3.connect(path) as db:
            total += db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
    return total


def dvc_clean(project: Path) -> bool:
    return "up to date" in run([str(BIN / "dvc"), "status"], project).stdout


@pytest.mark.slow
def test_front_doors_agree_in_both_directions(tmp_path, default_params):
    params = tiny_params(default_params)
    project = make_project(tmp_path, params)
    run([str(BIN / "judgebias"), "export-dvc"], project)
    run(["git", "init", "-q"], project)
    run(["git", "add", "-A"], project)
    run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "clone"],
        project)

    # Snakemake builds; dvc-record leaves DVC nothing to do.
    run([str(BIN / "snakemake"), "--cores", "2", "--quiet"], project)
    run([str(BIN / "judgebias"), "dvc-record"], project)
    assert dvc_clean(project)

    # An analysis param through DVC: Snakemake must not plan it again afterwards.
    params["philautia"]["ddof"] = 1
    write_params(project, params)
    assert {rule for rule, _ in planned_jobs(project)} >= {"philautia", "report"}
    said = run([str(BIN / "judgebias"), "dvc-repro", "--", "-q"], project).stdout
    assert "philautia" in said and "nothing to do" in said
    assert NOTHING in run([str(BIN / "snakemake"), "-n", "--cores", "1"], project).stdout
    assert json.loads((project / "results/philautia/ref_free/metrics.json").read_text())
    assert dvc_clean(project)

    # A model's sampling through DVC (the test runs the installed package, so a params
    # edit, not a template edit, is what changes the requests): DVC pays for the new
    # requests once; Snakemake then plans no model job (before, it planned them again).
    params["panel"]["corvid-pro"]["sampling"]["seed"] += 1
    write_params(project, params)
    assert {"caption", "score"} <= {rule for rule, _ in planned_jobs(project)}
    paid_before = journaled_calls(project)
    run([str(BIN / "judgebias"), "dvc-repro", "--", "-q"], project)
    paid_by_dvc = journaled_calls(project) - paid_before
    assert paid_by_dvc > 0
    assert NOTHING in run([str(BIN / "snakemake"), "-n", "--cores", "1"], project).stdout
    run([str(BIN / "snakemake"), "--cores", "2", "--quiet"], project)
    assert journaled_calls(project) - paid_before == paid_by_dvc  # nothing paid twice

    # The other way round again: a param edit through Snakemake, recorded for DVC.
    params["philautia"]["n_bootstrap"] = 30
    write_params(project, params)
    run([str(BIN / "snakemake"), "--cores", "2", "--quiet"], project)
    run([str(BIN / "judgebias"), "dvc-record"], project)
    dry = run([str(BIN / "dvc"), "repro", "--dry"], project).stdout
    assert "Running stage" not in dry

    # Recording is refused where the outputs are not current, and touches nothing.
    params["philautia"]["ddof"] = 0
    write_params(project, params)
    refused = run([str(BIN / "judgebias"), "snakemake-record"], project, check=False)
    assert refused.returncode == 2 and "run `dvc repro` first" in refused.stderr
    assert {rule for rule, _ in planned_jobs(project)} >= {"philautia", "report"}
