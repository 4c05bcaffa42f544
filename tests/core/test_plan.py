"""`judgebias plan` counts every call of every study (issue 19, part 3).

A small project with all five studies: the plan made before anything is built (every
call estimated from params and data sizes) is compared, study by study and model by
model, with the plan made after the Snakemake run (every call keyed, by the jobs' own
request-building code) and with the journal's counts of the calls the run made. A second
plan after the run needs no new call. Each single-study params file plans its study's
calls as the whole one does (a BIRCH-only project plans more than "0 of 0").

The run, the one of every study on the default sim panel, also records which params keys
each step job reads (``$JUDGEBIAS_RECORD_PARAMS``, judgebias.workflow.paramsread): every
read must be one its rule declares (issue 42 item 5: else a changed key reruns nothing)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from helpers.project import (
    BIN,
    STUDIES,
    make_project,
    run,
    small_all_studies,
    study_params,
    undeclared_reads,
)

from judgebias.models.journal import journal_path
from judgebias.workflow.paramsread import RECORD_ENV


def project_of(dest: Path, params: dict) -> Path:
    dest.mkdir()
    return make_project(dest, params)


def plan(project: Path) -> dict:
    out = run([str(BIN / "judgebias"), "plan", "--json"], project).stdout
    return json.loads(out)


def by_study(result: dict) -> dict[tuple[str, str], dict]:
    return {(row["study"], row["model"]): row for row in result["studies"]}


def journal_counts(project: Path, params: dict) -> dict[str, int]:
    """Successful calls journaled per panel model (the sim backend journals too)."""
    counts = {}
    for key, model in params["panel"].items():
        path = project / journal_path(params["journal_dir"], model["backend"],
                                      model["model_id"])
        if path.exists():
            with sqlite3.connect(path) as db:
                counts[key] = db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
    return counts


@pytest.mark.slow
def test_plan_matches_the_calls_the_run_makes(tmp_path, default_params, monkeypatch):
    params = small_all_studies(default_params, image_tasks=True)  # the images kind planned too
    project = project_of(tmp_path / "all", params)
    before = plan(project)
    active = [s for s in STUDIES if s in params]  # the recorded study's inputs are the user's
    assert {row["study"] for row in before["studies"]} == set(active)
    assert before["total"]["journaled"] == 0
    assert before["not_counted"]  # text-to-image generation, CLIP embeddings
    for study in active:  # a single-study project plans its study as the whole one does
        builds_on = {"pomms": ["philautia"], "leaderboard": ["philautia", "pomms", "mmb"]}
        alone = study_params(params, study, *builds_on.get(study, []))
        single = by_study(plan(project_of(tmp_path / study, alone)))
        whole = {k: v for k, v in by_study(before).items() if k[0] == study}
        assert {k: v for k, v in single.items() if k[0] == study} == whole, study
        assert sum(row["requests"] for row in whole.values()) > 0, study

    monkeypatch.setenv(RECORD_ENV, str(tmp_path / "reads"))
    run([str(BIN / "snakemake"), "--cores", "2", "--quiet"], project)
    monkeypatch.delenv(RECORD_ENV)
    assert undeclared_reads(project, tmp_path / "reads") == {}
    after = plan(project)
    made = journal_counts(project, params)
    assert after["total"]["needed"] == 0 and after["total"]["estimated"] == 0
    assert {row["model"]: row["requests"] for row in after["models"]} == made
    planned, actual = by_study(before), by_study(after)
    assert set(planned) == set(actual)
    report = {key: (planned[key]["requests"], actual[key]["requests"]) for key in planned}
    print(json.dumps({f"{s}/{m}": v for (s, m), v in report.items()}, indent=1))
    for key, (estimate, real) in report.items():
        # keyed before the run (writers): exact; estimated: an upper bound, close
        assert real <= estimate, (key, estimate, real)
        if planned[key]["estimated"] == 0:
            assert real == estimate, key
