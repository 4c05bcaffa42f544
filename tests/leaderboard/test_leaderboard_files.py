"""The leaderboard on the user's own files, through the pipeline (issue 43).

* A system given as a CSV of captions and human labels given as a CSV of (image, system,
  label) on a random subset: the pipeline ranks it beside simulated systems, with PPI++
  rows; editing either file reruns what reads it (the files are the steps' inputs).
* Bad input stops before any model call, with one line naming the params key, the file
  and the row: an outputs file missing an image or giving one twice (CSV and Parquet),
  labels outside the scale, on an image the task does not have, or of one system only;
  a system listed twice in params.yaml (the strict YAML loader, judgebias.io.yamlread).
  "Before any call" is checked in the project: no scores file, and no answer in the
  journal.
* Incremental as everything else (dry runs, then a run where it counts calls): a new
  system plans its outputs, the judges' jobs (the journal answers every older request:
  the new calls are the new system's outputs x the judges), the labels, the leaderboard,
  its figure and the report, and no captioning job; new resamples plan the leaderboard
  and what follows; a Pomms refit plans Pomms and the leaderboard, no judge job and no
  new call; a price or a budget plans nothing. Through DVC, new resamples rerun the rank
  stage and what follows, and a second `dvc repro` nothing.

The projects are tiny (6 images, two or three judges, 100 resamples), built once per
module and copied for each test that changes them.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
import sqlite3
from collections import Counter
from contextlib import closing
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from helpers.data_inputs import downstream_stages, dvc_changed
from helpers.project import BIN, job, make_project, planned_jobs, run, study_params, write_params

from judgebias.models.journal import journal_path
from judgebias.studies.leaderboard import tables as board
from judgebias.studies.leaderboard.data import synthetic_captions
from judgebias.studies.philautia.data import build_synthetic_dataset
from judgebias.workflow.dvc_export import PARAMS_STAGE

TASK = "captions"
AT = f"leaderboard.tasks.{TASK}"
N_IMAGES = 6
SEED = 13  # the task's image seed: the simulated systems' captions are drawn with it
LABELLED = 3  # images the user's labels cover
BOARD = [board.metrics_path(TASK), board.figure_path(TASK)]  # a leaderboard-only project
# cannot build `all`: see test_a_leaderboard_only_project_builds_its_report
CAPTIONS, LABELS = "my_captions.csv", "my_labels.csv"
QUALITY = {"mine": 0.8, "good": 0.95, "poor": 0.3}


class CallsMade(AssertionError):
    """A model was called although the input was bad."""


# -- projects --------------------------------------------------------------------------------

def own_params(default_params: dict) -> dict:
    """The leaderboard alone: the user's system `mine` (a CSV of captions) beside two
    simulated captioners, the user's labels, a plain judge and a panel of two."""
    params = study_params(default_params, "leaderboard", small=True)
    block = params["leaderboard"]
    task = block["tasks"][TASK]
    block["tasks"] = {TASK: task}  # the default's other tasks left out
    task["images"]["synthetic"].update(n_images=N_IMAGES, seed=SEED)
    task["systems"] = {"mine": {"outputs": CAPTIONS},
                       "good": {"synthetic": {"quality": QUALITY["good"]}},
                       "poor": {"synthetic": {"quality": QUALITY["poor"]}}}
    task["human_labels"] = {"path": LABELS}
    block["methods"] = {"plain": {"kind": "single", "judge": "corvid-pro"},
                        "panel": {"kind": "panel", "judges": ["corvid-pro", "lumen-mini"]}}
    block["inference"] = {"resamples": 100}
    return params


def audit_params(default_params: dict) -> dict:
    """Philautia (one setting, 6 images) and Pomms as tests/core/test_reruns' project, and
    the leaderboard asking Pomms' prompt: corvid-pro's own captions beside two simulated
    captioners, simulated labels, a plain judge, a panel and Pomms."""
    params = study_params(default_params, "philautia", "pomms", "leaderboard", small=True)
    philautia = params["philautia"]
    philautia["dataset"]["synthetic"]["n_images"] = 6
    philautia.update(n_bootstrap=20, n_permutations=100,
                     settings={"ref_free": philautia["settings"]["ref_free"]})
    params["pomms"].update(setting="ref_free", judgement_setting=None)
    block = params["leaderboard"]
    task = block["tasks"][TASK]
    block["tasks"] = {TASK: task}
    task.update(prompt="gveval_ref_free", references=False)
    task["images"]["synthetic"].update(n_images=N_IMAGES, seed=SEED)
    task["systems"] = {"corvid-pro": {"model": "corvid-pro"},
                       "good": {"synthetic": {"quality": QUALITY["good"]}},
                       "poor": {"synthetic": {"quality": QUALITY["poor"]}}}
    task["human_labels"]["synthetic"]["n_items"] = LABELLED
    block["methods"] = {"plain": {"kind": "single", "judge": "corvid-pro"},
                        "panel": {"kind": "panel", "judges": ["corvid-pro", "lumen-mini"]},
                        "pomms": {"kind": "pomms"}}
    block["inference"] = {"resamples": 100}
    return params


def user_files(scratch: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The user's captions of the task's images (image_id, caption: every image once) and
    their labels (image_id, system, label) of every system's caption of a random subset
    of the images: each caption's true accuracy plus rater noise, in [0, 1]."""
    images = build_synthetic_dataset(scratch, n_images=N_IMAGES, seed=SEED)
    mine = synthetic_captions(images, "mine", QUALITY["mine"], opener=None, seed=5)
    outputs = pd.concat([mine, *(synthetic_captions(images, s, QUALITY[s], None, SEED)
                                 for s in ("good", "poor"))], ignore_index=True)
    rng = np.random.default_rng(1)
    drawn = rng.choice(images["image_id"].to_numpy(), size=LABELLED, replace=False)
    labelled = outputs[outputs["image_id"].isin(drawn)]
    labels = labelled[["image_id", "system"]].assign(label=np.clip(
        labelled["accuracy"].to_numpy() + rng.normal(0, 0.05, len(labelled)), 0, 1))
    return mine[["image_id", "caption"]], labels.reset_index(drop=True)


def write_file(frame: pd.DataFrame, path: Path, index: bool = False) -> None:
    if path.suffix == ".parquet":
        frame.to_parquet(path, index=index)
    else:
        frame.to_csv(path, index=False)


def own_project(dest: Path, params: dict, captions: pd.DataFrame, labels: pd.DataFrame
                ) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    project = make_project(dest, params)
    write_file(captions, project / CAPTIONS)
    write_file(labels, project / LABELS)
    return project


def copied(project: Path, dest: Path) -> Path:
    """A copy of a built project (file times, Snakemake's records and the journal kept)."""
    shutil.copytree(project, dest, symlinks=True)
    return dest


def snakemake(project: Path, *targets: str, check: bool = True):
    """Build `targets` (none: `all`) on two cores, as `make run` does."""
    return run([str(BIN / "snakemake"), *targets, "--cores", "2", "--quiet"], project,
               check=check)


def journaled(project: Path) -> Counter:
    """Answers in the project's journal, by journal file (one per model)."""
    counts: Counter = Counter()
    for db in sorted((project / ".judgebias" / "journal").rglob("*.sqlite")):
        with closing(sqlite3.connect(db)) as con:
            counts[db.name] += con.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
    return +counts


def journal_file(params: dict, model: str) -> str:
    spec = params["panel"][model]
    return journal_path(params["journal_dir"], spec["backend"], spec["model_id"]).name


def scores_dir(project: Path) -> Path:
    return (project / board.scores_path(TASK, "any")).parent


def assert_no_call(project: Path) -> None:
    folder = scores_dir(project)
    scores = sorted(p.name for p in folder.iterdir()) if folder.exists() else []
    calls = journaled(project)
    if scores or calls:
        raise CallsMade(f"models were called before the bad input stopped the run: scores "
                        f"{scores}, journal {dict(calls)}")


# -- the user's own captions and labels ------------------------------------------------------

@pytest.fixture(scope="module")
def files(tmp_path_factory) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The user's captions and labels (`user_files`)."""
    return user_files(tmp_path_factory.mktemp("scratch"))


@pytest.fixture(scope="module")
def own(tmp_path_factory, default_params, files
        ) -> tuple[Path, dict, pd.DataFrame, pd.DataFrame]:
    """The leaderboard-only project on the user's files, its leaderboard built."""
    params = own_params(default_params)
    project = own_project(tmp_path_factory.mktemp("own"), params, *files)
    snakemake(project, *BOARD)
    return project, params, *files


@pytest.mark.slow
def test_the_users_captions_and_labels_are_ranked_with_ppi_rows(own):
    project, _, captions, labels = own
    outputs = pd.read_parquet(project / board.outputs_path(TASK))
    mine = outputs[outputs["system"] == "mine"].set_index("image_id")
    assert mine["caption"].to_dict() == captions.set_index("image_id")["caption"].to_dict()
    assert set(mine["source"]) == {"table"}

    systems = pd.read_parquet(project / board.result_path(TASK, "systems"))
    for method in ("plain", "panel"):
        ranked = systems[systems["method"] == method].set_index("system")
        assert set(ranked.index) == {"mine", "good", "poor"}, method
        assert np.isfinite(ranked.loc["mine", ["mean", "rank"]].astype(float)).all(), ranked
    ppi = pd.read_parquet(project / board.result_path(TASK, "ppi"))
    rows = ppi[(ppi["system"] == "mine") & (ppi["estimator"] == "ppi++")]
    assert set(rows["method"]) == {"plain", "panel"}, ppi
    assert (rows["n_labelled"] == LABELLED).all() and (rows["n_unlabelled"]
                                                       == N_IMAGES - LABELLED).all(), rows
    assert ((rows["ci_low"] <= rows["estimate"]) & (rows["estimate"] <= rows["ci_high"])).all()
    human = rows[rows["other"] == ""]  # the mean in human units, beside the judge's
    assert len(human) == 2 and human["estimate"].between(0, 1).all(), human
    metrics = json.loads((project / board.metrics_path(TASK)).read_text())
    assert metrics["labelled_images"] == labels["image_id"].nunique() == LABELLED
    assert (project / board.figure_path(TASK)).stat().st_size > 0


@pytest.mark.slow
@pytest.mark.parametrize("edited", ["captions", "labels"])
def test_editing_the_users_file_reruns_what_reads_it(own, tmp_path, edited):
    project = copied(own[0], tmp_path / "project")
    captions, labels = own[2].copy(), own[3].copy()
    rank_on = [job("leaderboard_rank", task=TASK), job("leaderboard_figure", task=TASK)]
    if edited == "captions":
        captions.loc[0, "caption"] = "A small red square."
        write_file(captions, project / CAPTIONS)
        judges = ["corvid-pro", "lumen-mini"]
        expected = [job("leaderboard_outputs", task=TASK), job("leaderboard_labels", task=TASK),
                    *(job("leaderboard_judge", task=TASK, board_judge=j) for j in judges),
                    *rank_on]
    else:
        labels.loc[0, "label"] = 1 - labels.loc[0, "label"]
        write_file(labels, project / LABELS)
        expected = [job("leaderboard_labels", task=TASK), *rank_on]
    assert planned_jobs(project, *BOARD) == Counter(expected)


@pytest.mark.slow
def test_a_leaderboard_only_project_builds_its_report(own, tmp_path):
    project = copied(own[0], tmp_path / "project")
    snakemake(project)
    assert (project / "results" / "report.html").is_file()


# -- bad input -------------------------------------------------------------------------------

def _missing_image(captions, labels):
    return captions.iloc[:-1], labels


def _image_twice(captions, labels):
    again = captions.iloc[[2]].assign(caption="Another caption of the same image.")
    return pd.concat([captions, again], ignore_index=True), labels


def _image_twice_parquet(captions, labels):
    again = captions.iloc[[0]].assign(caption="Another caption of the same image.")
    frame = pd.concat([captions.iloc[:2], again, captions.iloc[2:]], ignore_index=True)
    # an index of its own, which to_parquet keeps: rows are still counted by position
    return frame.set_axis([f"r{k}" for k in range(len(frame))]), labels


def _label_outside(captions, labels):
    labels = labels.copy()
    labels.loc[1, "label"] = 1.5
    return captions, labels


def _label_elsewhere(captions, labels):
    extra = pd.DataFrame([("syn-00099", "mine", 0.5)], columns=list(labels.columns))
    return captions, pd.concat([labels, extra], ignore_index=True)


def _labels_of_one_system(captions, labels):
    return captions, labels[labels["system"] == "mine"]


OUTPUTS_KEY, LABELS_KEY = f"{AT}.systems.mine.outputs", f"{AT}.human_labels.path"
OUTPUTS_LOG = f"logs/leaderboard/{TASK}/outputs.log"  # the outputs job's (leaderboard.smk)
BAD_INPUTS = [
    pytest.param(_missing_image, CAPTIONS, OUTPUTS_KEY, OUTPUTS_LOG,
                 f"{CAPTIONS}: no caption for 1 image(s) of the task, e.g. ['syn-00005']",
                 id="outputs-missing-an-image"),
    pytest.param(_image_twice, CAPTIONS, OUTPUTS_KEY, OUTPUTS_LOG,
                 f"{CAPTIONS}: row 7: image_id 'syn-00002' is given twice",
                 id="outputs-image-twice"),
    pytest.param(_image_twice_parquet, "my_captions.parquet", OUTPUTS_KEY, OUTPUTS_LOG,
                 "my_captions.parquet: row 3: image_id 'syn-00000' is given twice",
                 id="outputs-image-twice-parquet"),
    pytest.param(_label_outside, LABELS, LABELS_KEY, None,
                 f"{LABELS}: row 2: label 1.5 is outside the scale [0.0, 1.0]",
                 id="label-outside-the-scale"),
    pytest.param(_label_elsewhere, LABELS, LABELS_KEY, None,
                 f"{LABELS}: row {3 * LABELLED + 1}: image_id 'syn-00099' is not an image of "
                 "the task", id="label-on-an-image-not-in-the-task"),
    pytest.param(_labels_of_one_system, LABELS, LABELS_KEY, None,
                 f"{LABELS}: labels cover 1 system(s); they must cover at least two",
                 id="labels-of-one-system"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("spoil", "file", "key", "log", "message"), BAD_INPUTS)
def test_a_bad_file_stops_before_any_call_naming_key_file_and_row(
        files, tmp_path, default_params, spoil, file, key, log, message):
    captions, labels = spoil(*files)
    params = own_params(default_params)
    project = own_project(tmp_path, params, *files)
    if file.endswith(".parquet"):
        params["leaderboard"]["tasks"][TASK]["systems"]["mine"]["outputs"] = file
        write_params(project, params)
        write_file(captions, project / file, index=True)
    else:
        write_file(captions if file == CAPTIONS else labels, project / file)
    done = snakemake(project, *BOARD, check=False)
    said = done.stdout + done.stderr
    assert done.returncode != 0, said[-3000:]
    assert f"{key}: {message}" in said, said[-3000:]
    if log is not None and (project / log).exists():  # (else stopped by the params check)
        assert f"{key}: {message}" in (project / log).read_text()  # the reading job failed
    assert_no_call(project)


@pytest.mark.slow
def test_a_bad_file_stops_before_a_model_systems_captions(files, tmp_path, default_params):
    params = own_params(default_params)
    params["leaderboard"]["tasks"][TASK]["systems"]["lumen"] = {"model": "lumen-mini"}
    captions, labels = _missing_image(*files)
    project = own_project(tmp_path, params, captions, labels)
    done = snakemake(project, *BOARD, check=False)
    said = done.stdout + done.stderr
    assert done.returncode != 0 and f"{OUTPUTS_KEY}: {CAPTIONS}: no caption" in said, said[-3000:]
    assert_no_call(project)


def systems_yaml(params: dict, systems: str) -> str:
    """params.yaml with the task's systems written as `systems` (YAML flow text)."""
    params = copy.deepcopy(params)
    params["leaderboard"]["tasks"][TASK]["systems"] = "SYSTEMS"
    text = yaml.safe_dump(params, sort_keys=False)
    assert text.count("systems: SYSTEMS") == 1
    return text.replace("systems: SYSTEMS", f"systems: {systems}")


@pytest.mark.slow
def test_a_system_listed_twice_is_an_error_naming_it(files, tmp_path, default_params):
    params = own_params(default_params)
    project = own_project(tmp_path, params, *files)
    (project / "params.yaml").write_text(systems_yaml(params, (
        f"{{mine: {{outputs: {CAPTIONS}}}, good: {{synthetic: {{quality: 0.95}}}}, "
        "poor: {synthetic: {quality: 0.3}}, good: {synthetic: {quality: 0.5}}}")))
    done = run([str(BIN / "snakemake"), "--dry-run", "--cores", "1", *BOARD], project,
               check=False)
    said = done.stdout + done.stderr
    assert done.returncode != 0
    assert re.search(rf"params\.yaml: {re.escape(AT)}\.systems\.good: stated twice \(lines "
                     r"\d+ and \d+\)", said), said[-3000:]
    assert_no_call(project)


@pytest.mark.slow
def test_one_outputs_file_under_two_names_is_an_error(files, tmp_path, default_params):
    params = own_params(default_params)
    params["leaderboard"]["tasks"][TASK]["systems"]["mine_again"] = {"outputs": CAPTIONS}
    project = own_project(tmp_path, params, *files)
    done = run([str(BIN / "snakemake"), "--dry-run", "--cores", "1", *BOARD], project,
               check=False)
    said = done.stdout + done.stderr
    assert done.returncode != 0, "two systems of one file were accepted"
    assert f"{AT}.systems.mine_again.outputs" in said, said[-3000:]


# -- what reruns -----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def audited(tmp_path_factory, default_params) -> tuple[Path, dict]:
    """Philautia, Pomms and the leaderboard, built whole (`all`: the report too)."""
    params = audit_params(default_params)
    project = make_project(tmp_path_factory.mktemp("audited"), params)
    snakemake(project)
    assert not planned_jobs(project)
    return project, params


def board_jobs(*rules: str) -> list[tuple]:
    return [job(rule, task=TASK) for rule in rules]


def judge_jobs(project: Path) -> list[tuple]:
    return [job("leaderboard_judge", task=TASK, board_judge=path.stem)
            for path in sorted(scores_dir(project).glob("*.parquet"))]


@pytest.mark.slow
def test_a_new_system_runs_its_judge_calls_and_the_leaderboard_only(audited, tmp_path):
    project, params = copied(audited[0], tmp_path / "project"), audited[1]
    judges = judge_jobs(project)
    assert len(judges) == 3  # plain's, the panel's and Pomms' members: 3 panel models
    grown = copy.deepcopy(params)
    grown["leaderboard"]["tasks"][TASK]["systems"]["newcomer"] = {
        "synthetic": {"quality": 0.6}}
    write_params(project, grown)
    planned = planned_jobs(project)
    assert planned == Counter([*board_jobs("leaderboard_outputs", "leaderboard_labels",
                                           "leaderboard_rank", "leaderboard_figure"),
                               *judges, job("report")]), sorted(planned)

    before = journaled(project)
    snakemake(project)
    new = journaled(project) - before
    # the old systems' requests are the journal's: only the newcomer's outputs are asked
    assert new == Counter({journal_file(params, dict(j[1])["board_judge"]): N_IMAGES
                           for j in judges}), new
    systems = pd.read_parquet(project / board.result_path(TASK, "systems"))
    assert "newcomer" in set(systems["system"])
    assert not planned_jobs(project)


@pytest.mark.slow
def test_new_resamples_plan_the_leaderboard_and_what_follows(audited):
    project, params = audited
    edited = copy.deepcopy(params)
    edited["leaderboard"]["inference"]["resamples"] = 200
    write_params(project, edited)
    try:
        planned = planned_jobs(project)
    finally:
        write_params(project, params)
    assert planned == Counter([*board_jobs("leaderboard_rank", "leaderboard_figure"),
                               job("report")]), sorted(planned)


@pytest.mark.slow
def test_a_pomms_refit_reruns_the_application_never_a_judge_call(audited, tmp_path):
    project, params = copied(audited[0], tmp_path / "project"), audited[1]
    downstream = planned_jobs(project, "--forcerun", "pomms")  # Pomms and all after it
    refit = copy.deepcopy(params)
    refit["pomms"]["select"] = "best_validation"
    write_params(project, refit)
    planned = planned_jobs(project)
    assert planned == downstream, (sorted(planned), sorted(downstream))
    rules = {rule for rule, _ in planned}
    assert {"pomms", "leaderboard_rank"} <= rules
    assert not rules & {"leaderboard_judge", "leaderboard_caption", "leaderboard_outputs",
                        "score", "judge_items", "caption"}, rules
    before = journaled(project)
    snakemake(project)
    assert journaled(project) == before  # the refit applied to the journaled answers
    assert not planned_jobs(project)


@pytest.mark.slow
@pytest.mark.parametrize("setting", ["pricing", "max_requests"])
def test_a_price_or_a_budget_plans_nothing(audited, setting):
    project, params = audited
    edited = copy.deepcopy(params)
    for judge in ("corvid-pro", "lumen-mini"):
        edited["panel"][judge].update(
            {"pricing": {"input_per_mtok": 2.5, "output_per_mtok": 10.0, "image_tokens": 765}}
            if setting == "pricing" else {"max_requests": 10**6})
    write_params(project, edited)
    try:
        planned = planned_jobs(project)
    finally:
        write_params(project, params)
    assert planned == Counter(), sorted(planned)


# -- through DVC -----------------------------------------------------------------------------

def git(project: Path, *args: str) -> None:
    run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], project)


def dvc_ran(project: Path) -> set[str]:
    said = run([str(BIN / "dvc"), "repro"], project)
    return set(re.findall(r"Running stage '([^']+)'", said.stdout + said.stderr))


@pytest.mark.slow
def test_dvc_repro_after_new_resamples_reruns_the_rank_stage_and_what_follows(
        audited, tmp_path):
    project, params = copied(audited[0], tmp_path / "project"), audited[1]
    run([str(BIN / "judgebias"), "export-dvc"], project)
    git(project, "init", "-q")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "project")
    run([str(BIN / "judgebias"), "dvc-record"], project)
    assert dvc_changed(project) == {}

    rank = f"leaderboard_rank__{TASK}"
    after_rank = downstream_stages(project, rank)
    assert {rank, f"leaderboard_figure__{TASK}", "report"} <= after_rank
    assert not any(s.startswith(("leaderboard_judge", "leaderboard_outputs", "pomms"))
                   for s in after_rank), after_rank
    edited = copy.deepcopy(params)
    edited["leaderboard"]["inference"]["resamples"] = 200
    write_params(project, edited)
    assert set(dvc_changed(project)) == {PARAMS_STAGE}  # the stamps' stage, not the jobs
    assert dvc_ran(project) == {PARAMS_STAGE} | after_rank
    assert dvc_ran(project) == set()
    assert dvc_changed(project) == {}
    run([str(BIN / "judgebias"), "snakemake-record"], project)
    assert not planned_jobs(project)  # the other front door agrees
