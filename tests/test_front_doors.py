"""The two front doors, on one small philautia + Pomms project in a git repository (as a
user's clone is): `dvc repro` runs the same commands to the same outputs and pays
nothing twice, plans exactly what an edit touches, and the doors agree in both directions
across param edits (issue 19, part 11; one project for both, to keep CI short).

Snakemake keeps its provenance in `.snakemake/metadata`, DVC in `dvc.lock`. After either
front door runs, the other must have nothing to do: `judgebias dvc-record` records what
Snakemake built in dvc.lock, `judgebias dvc-repro` (`dvc repro` + `judgebias
snakemake-record`) records what DVC built in Snakemake's metadata. The test alternates the
doors over an analysis param, a model's sampling and a Snakemake-side edit, on a small
philautia project in a git repository (as a user's clone is).
"""

from __future__ import annotations

import copy
import json
import re
import sqlite3
from pathlib import Path

import pytest
from conftest import make_project
from test_pipeline import (
    BIN,
    JUDGEMENT_SETTING,
    PANEL,
    SETTINGS,
    planned_jobs,
    run,
    small_params,
    write_params,
)

NOTHING = "Nothing to be done"


def tiny_params(default_params: dict) -> dict:
    params = small_params(default_params)
    params["philautia"]["dataset"]["synthetic"]["n_images"] = 6
    params["philautia"].update(n_bootstrap=20, n_permutations=100)
    params["pomms"]["datasets"]["synthetic"]["n_items"] = 20
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


def dvc_planned(project: Path) -> set[str]:
    out = run([str(BIN / "dvc"), "repro", "--dry"], project).stdout
    return set(re.findall(r"Running stage '([^']+)'", out))


def check_dvc_plans_what_an_edit_touches(project: Path, params: dict) -> None:
    """`dvc repro --dry` lists the stages whose own deps or params changed (it cannot know
    that an upstream output will change without running it): the analysis and report for
    an analysis param, the score jobs of the edited prompt and nothing else."""
    edited = copy.deepcopy(params)
    edited["philautia"]["ddof"] = 1
    write_params(project, edited)
    assert dvc_planned(project) == {f"philautia__{s}" for s in SETTINGS} | {"pomms", "report"}
    write_params(project, params)
    template = project / "src/judgebias/prompts/templates/gveval_ref_free.txt"
    template.write_text(template.read_text() + " ")
    planned = dvc_planned(project)
    assert {s for s in planned if s.startswith("caption")} == set()
    assert {s for s in planned if s.startswith("score")} == {
        f"score__ref_free__{e}__{g}" for e in PANEL for g in PANEL}
    # the judgement items are scored with pomms.judgement_setting (ref_based): not rerun
    assert {s for s in planned if s.startswith("judge_items")} == set()
    template.write_text(template.read_text()[:-1])
    reference = project / "src/judgebias/prompts/templates/gveval_ref.txt"
    reference.write_text(reference.read_text() + " ")
    planned = dvc_planned(project)
    assert {s for s in planned if s.startswith("judge_items")} == {
        f"judge_items__{JUDGEMENT_SETTING}__synthetic__{e}" for e in PANEL}
    reference.write_text(reference.read_text()[:-1])
    assert dvc_planned(project) == set()


@pytest.mark.slow
def test_front_doors_agree_in_both_directions(tmp_path, default_params):
    params = tiny_params(default_params)
    project = make_project(tmp_path, params)
    run([str(BIN / "judgebias"), "export-dvc"], project)
    run(["git", "init", "-q"], project)
    run(["git", "add", "-A"], project)
    run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "clone"],
        project)
    for command in (["status"], ["repro", "--dry"], ["metrics", "show"]):
        result = run([str(BIN / "dvc"), *command], project, check=False)
        assert "git-ignored" not in result.stdout + result.stderr, command

    # Snakemake builds; `dvc repro` (dvc.yaml is derived from the Snakemake DAG of this
    # project's params) runs the same commands to the same outputs and pays nothing.
    run([str(BIN / "snakemake"), "--cores", "2", "--quiet"], project)
    by_snakemake = (project / "results/philautia/ref_free/metrics.json").read_text()
    paid = journaled_calls(project)
    run([str(BIN / "dvc"), "repro", "-q"], project)
    assert (project / "results/philautia/ref_free/metrics.json").read_text() == by_snakemake
    assert journaled_calls(project) == paid
    journal = [line for line in (project / "logs/caption/corvid-pro.log").read_text().splitlines()
               if "new calls" in line]
    assert journal and " 0 new calls" in journal[-1]  # the second door paid nothing
    assert dvc_clean(project)
    check_dvc_plans_what_an_edit_touches(project, params)

    # An analysis param through DVC: Snakemake must not plan it again afterwards.
    params["philautia"]["ddof"] = 1
    write_params(project, params)
    assert {rule for rule, _ in planned_jobs(project)} >= {"philautia", "pomms", "report"}
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
