"""The recorded study through Snakemake (issue 44 item 2): a scores table and a pairwise
table, written as a researcher would (CSV, no provenance columns), with their human
judgements and informativeness labels, run in a project of their own. The card and the
report carry the measures and say they were recorded; a changed row of one table reruns
that table's job (and the card and report that read it), not the other's; a score
outside the stated scale stops the job with the file and the row."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from helpers.project import BIN, make_project, planned_jobs, run, study_params, write_params
from helpers.recorded_worlds import FAMILIES, pairwise_world, scores_world

pytestmark = pytest.mark.slow  # a project's Snakemake runs (~1 min)


def _recorded_block() -> dict:
    return {"tables": {
        "captions": {"kind": "scores", "path": "inputs/scores.csv", "scale": [0, 100],
                     "families": FAMILIES, "human": "inputs/ratings.csv"},
        "verdicts": {"kind": "pairwise", "path": "inputs/verdicts.csv",
                     "human": "inputs/preferences.csv",
                     "informative": "inputs/informative.csv"}},
        "resamples": 200}


@pytest.fixture(scope="module")
def project(default_params, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("recorded")
    params = study_params(default_params)
    params["recorded"] = _recorded_block()
    make_project(root, params)
    inputs = root / "inputs"
    inputs.mkdir()
    scores, ratings = scores_world(n_items=30, self_points={"alpha": 8.0})
    scores.drop(columns=["output"]).to_csv(inputs / "scores.csv", index=False)
    ratings.to_csv(inputs / "ratings.csv", index=False)
    verdicts, preferences, informative = pairwise_world(
        n_pairs=80, first_slot={"primacy": 0.3}, informative_pull={"swayed": 0.4})
    verdicts.drop(columns=["probability"]).to_csv(inputs / "verdicts.csv", index=False)
    preferences.to_csv(inputs / "preferences.csv", index=False)
    informative.to_csv(inputs / "informative.csv", index=False)
    run([str(BIN / "snakemake"), "--cores", "2", "--quiet"], root)
    return root


def test_the_card_and_report_carry_the_recorded_measures(project):
    metrics = json.loads((project / "results/recorded/captions/metrics.json").read_text())
    assert metrics["source"] == "recorded" and metrics["square_panel"] == list(FAMILIES)
    card = run([str(BIN / "judgebias"), "card", "alpha"], project).stdout
    assert card.splitlines()[0] == "alpha (recorded judgements: judged outside judgebias)"
    assert "recorded:" in card and "gives its own outputs" in card
    primacy = run([str(BIN / "judgebias"), "card", "primacy"], project).stdout
    assert "Preference fairness" in primacy and "recorded judgements" in primacy
    assert "Recorded judgements" in (project / "results/report.html").read_text()


def test_the_tables_are_dvc_dependencies_of_their_stage_alone(project):
    run([str(BIN / "judgebias"), "export-dvc"], project)
    stages = yaml.safe_load((project / "dvc.yaml").read_text())["stages"]
    reading = {name for name, stage in stages.items()
               if "inputs/verdicts.csv" in stage.get("deps", [])}
    assert reading == {"recorded_measure__verdicts"}, reading


def test_a_changed_row_reruns_only_its_table(project):
    path = project / "inputs/verdicts.csv"
    lines = path.read_text().splitlines()
    lines[1] = lines[1].replace(",first", ",second") if ",first" in lines[1] else \
        lines[1].replace(",second", ",first")
    path.write_text("\n".join(lines) + "\n")
    jobs = planned_jobs(project)
    assert jobs[("recorded_measure", (("table", "verdicts"),))] == 1
    assert ("recorded_measure", (("table", "captions"),)) not in jobs, jobs


def test_a_score_outside_the_scale_names_the_file_and_row(project, tmp_path):
    params = yaml.safe_load((project / "params.yaml").read_text())
    bad = tmp_path / "bad"
    bad.mkdir()
    make_project(bad, params)
    (bad / "inputs").mkdir()
    for name in ("ratings.csv", "verdicts.csv", "preferences.csv", "informative.csv"):
        (bad / "inputs" / name).write_bytes((project / "inputs" / name).read_bytes())
    scores = (project / "inputs/scores.csv").read_text().splitlines()
    scores[5] = ",".join([*scores[5].split(",")[:-1], "150.0"])
    (bad / "inputs/scores.csv").write_text("\n".join(scores) + "\n")
    write_params(bad, params)
    result = run([str(BIN / "snakemake"), "--cores", "1", "results/recorded/captions/"
                  "metrics.json"], bad, check=False)
    assert result.returncode != 0
    log = (bad / "logs/recorded/captions.log").read_text()
    assert "inputs/scores.csv: row 5" in log and "outside the scale [0, 100]" in log
