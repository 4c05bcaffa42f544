"""The two front doors agree in both directions across param edits (issue 19, part 11).

Snakemake keeps its provenance in `.snakemake/metadata`, DVC in `dvc.lock`. After either
front door runs, the other must have nothing to do: `judgebias dvc-record` records what
Snakemake built in dvc.lock, `judgebias dvc-repro` (`dvc repro` + `judgebias
snakemake-record`) records what DVC built in Snakemake's metadata. The test alternates the
doors over an analysis param, a model's sampling and a Snakemake-side edit, on a small
philautia + pomms project in a git repository (as a user's clone is). `dvc repro` on what
Snakemake built (before anything is recorded) runs the same commands to the same outputs
and pays for nothing, and `dvc repro --dry` then plans exactly what a prompt template
edit changes, and what a param edit changes once the `params` stage has written its
stamps, and `dvc repro` after a code edit or a model's param edit exactly the jobs
importing or reading it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from helpers.project import (
    BIN,
    PANEL,
    journaled_calls,
    make_project,
    planned_jobs,
    run,
    study_params,
    write_params,
)

from judgebias.workflow.dvc_export import CODE_STAGE, PARAMS_STAGE
from judgebias.workflow.paramstamp import PARAMS_DIR

NOTHING = "Nothing to be done"
SETTING = "ref_free"  # the one philautia setting; Pomms scores its judgement items with it


def tiny_params(default_params: dict) -> dict:
    """Philautia and Pomms, small, on 6 images, in one setting (reference-free).

    One setting, not the default two: DVC runs stages one at a time (each ~2.5 s of a
    step's start-up plus ~2 s rewriting dvc.lock), and the second setting's 11 stages
    would double the score jobs of every `dvc repro` here without testing anything new.
    That Pomms' judgement items follow a judgement setting of their own is Snakemake's
    DAG (test_pipeline.py checks it), and dvc.yaml is exported from that DAG.
    """
    params = study_params(default_params, "philautia", "pomms", small=True)
    params["philautia"]["dataset"]["synthetic"]["n_images"] = 6
    params["philautia"].update(n_bootstrap=20, n_permutations=100)
    params["philautia"]["settings"] = {SETTING: params["philautia"]["settings"][SETTING]}
    params["pomms"].update(setting=SETTING, judgement_setting=None)
    return params


def dvc_clean(project: Path) -> bool:
    return "up to date" in run([str(BIN / "dvc"), "status"], project).stdout


def dvc_planned(project: Path) -> set[str]:
    """The stages `dvc repro --dry` would run."""
    out = run([str(BIN / "dvc"), "repro", "--dry"], project).stdout
    return set(re.findall(r"Running stage '([^']+)'", out))


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
        assert "git-ignored" not in result.stdout + result.stderr, command  # dvc.lock

    # Snakemake builds; `dvc repro` before anything is recorded runs every stage again, to
    # the same outputs, and pays for nothing (the journal answers every request).
    run([str(BIN / "snakemake"), "--cores", "2", "--quiet"], project)
    by_snakemake = (project / "results/philautia/ref_free/metrics.json").read_text()
    paid = journaled_calls(project)
    run([str(BIN / "dvc"), "repro", "-q"], project)
    assert (project / "results/philautia/ref_free/metrics.json").read_text() == by_snakemake
    assert journaled_calls(project) == paid
    log = (project / "logs/caption/corvid-pro.log").read_text().splitlines()
    assert " 0 new calls" in [line for line in log if "new calls" in line][-1]
    assert dvc_clean(project) and dvc_planned(project) == set()

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
    planned = planned_jobs(project)
    assert {"caption", "score"} <= {rule for rule, _ in planned}
    paid_before = journaled_calls(project)
    said = run([str(BIN / "judgebias"), "dvc-repro"], project).stdout
    ran = set(re.findall(r"Running stage '([^']+)'", said))
    # DVC reran the params stage, every job reading the model's params (through their
    # stamps, dvc_export), and no job Snakemake would not have run
    stages = yaml.safe_load((project / "dvc.yaml").read_text())["stages"]
    stamps = {path for path in (project / PARAMS_DIR).glob("*.json")
              if any(key.startswith("panel.corvid-pro")
                     for key in json.loads(path.read_text()))}
    reading = {name for name, stage in stages.items()
               if {project / d for d in stage.get("deps", [])} & stamps}
    assert reading and reading | {PARAMS_STAGE} <= ran
    assert {(name.split("__")[0], tuple(sorted(name.split("__")[1:])))
            for name in ran - {PARAMS_STAGE}} <= {
        (rule, tuple(sorted(value for _, value in wildcards))) for rule, wildcards in planned}
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
    assert dvc_planned(project) == set()

    # A code edit: DVC's dry run names the code stage (it does not look past a stage that
    # would run); `dvc repro` then reruns it and exactly the jobs of the one rule whose step
    # imports the module, from the journal (dvc_export's code stamps).
    module = project / "src/judgebias/studies/pomms/jobs.py"
    module.write_text(module.read_text() + "# edited\n")
    assert dvc_planned(project) == {CODE_STAGE}
    paid = journaled_calls(project)
    said = run([str(BIN / "judgebias"), "dvc-repro"], project).stdout
    assert set(re.findall(r"Running stage '([^']+)'", said)) == {CODE_STAGE} | {
        f"judge_items__{SETTING}__synthetic__{e}" for e in PANEL}
    assert journaled_calls(project) == paid

    # `dvc repro --dry` lists the stages whose own deps or params changed (it cannot know
    # that an upstream output will change without running it). A params edit changes the
    # `params` stage's (the job stages depend on its stamps, dvc_export); once it has
    # written them, the dry run lists exactly the jobs reading the key.
    params["philautia"]["ddof"] = 1 - params["philautia"]["ddof"]
    write_params(project, params)
    assert dvc_planned(project) == {PARAMS_STAGE}
    run([str(BIN / "dvc"), "repro", "-q", "--single-item", PARAMS_STAGE], project)
    assert dvc_planned(project) == {f"philautia__{SETTING}", "pomms", "card", "report"}
    params["philautia"]["ddof"] = 1 - params["philautia"]["ddof"]
    write_params(project, params)
    run([str(BIN / "dvc"), "repro", "-q", "--single-item", PARAMS_STAGE], project)
    assert dvc_planned(project) == set()
    template = project / "src/judgebias/prompts/templates/gveval_ref_free.txt"
    template.write_text(template.read_text() + " ")
    planned = dvc_planned(project)
    assert {s for s in planned if s.startswith("caption")} == set()
    assert {s for s in planned if s.startswith("score")} == {
        f"score__{SETTING}__{e}__{g}" for e in PANEL for g in PANEL}
    assert {s for s in planned if s.startswith("judge_items")} == {
        f"judge_items__{SETTING}__synthetic__{e}" for e in PANEL}
    template.write_text(template.read_text()[:-1])
    reference = project / "src/judgebias/prompts/templates/gveval_ref.txt"  # sent by no job
    reference.write_text(reference.read_text() + " ")
    assert dvc_planned(project) == set()
    reference.write_text(reference.read_text()[:-1])

    # Recording is refused where the outputs are not current, and touches nothing.
    params["philautia"]["ddof"] = 0
    write_params(project, params)
    refused = run([str(BIN / "judgebias"), "snakemake-record"], project, check=False)
    assert refused.returncode == 2 and "run `dvc repro` first" in refused.stderr
    assert {rule for rule, _ in planned_jobs(project)} >= {"philautia", "report"}
