"""A change reruns exactly what depends on it, on both front doors, in the user's clone
and in a colleague's (issue 39, items 2-5 and 8).

- Where the params file lies is no part of a job: the same content under another path
  plans nothing (before: every job, "code has changed").
- Run settings (budgets, prices, client limits, where a file lies: `x-run-setting` in the
  schema) are declared by no job: changing one plans nothing through Snakemake, and DVC
  reruns only its `params` bookkeeping stage, no job.
- `dvc status`, `dvc dag` and a dry run work on a fresh clone, after a Snakemake run and
  after `judgebias dvc-record` (before: "No such file or directory:
  .judgebias/code/<rule>.json").
- `judgebias dvc exp run -S` and `judgebias dvc exp apply` leave Snakemake nothing to do.
- A clone that pulled the results through a DVC remote plans, for a model's param, a code
  edit and a data edit, exactly the jobs the project that made them plans (before: model
  jobs and data steps kept no record, so a param edit skipped them there).
"""

from __future__ import annotations

import copy
import json
import re
import shutil
from pathlib import Path

import pytest
import yaml
from helpers.project import BIN, make_project, planned_jobs, run, study_params, write_params
from PIL import Image

from judgebias.config import (
    RUN_SETTING,
    answer_keys,
    is_run_setting,
    params_schema,
    validate_params,
)
from judgebias.workflow.dvc_export import PARAMS_STAGE

NOTHING = "Nothing to be done"
UP_TO_DATE = "Data and pipelines are up to date."


def small_params(default_params: dict) -> dict:
    """Philautia (one setting, 6 images) and Pomms, as test_front_doors' project."""
    params = study_params(default_params, "philautia", "pomms", small=True)
    params["philautia"]["dataset"]["synthetic"]["n_images"] = 6
    params["philautia"].update(n_bootstrap=20, n_permutations=100)
    params["philautia"]["settings"] = {"ref_free": params["philautia"]["settings"]["ref_free"]}
    params["pomms"].update(setting="ref_free", judgement_setting=None)
    return params


def git(project: Path, *args: str) -> str:
    return run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], project).stdout


def committed_project(dest: Path, params: dict) -> Path:
    """A project with its dvc.yaml, committed to git as a user's clone is."""
    dest.mkdir(parents=True, exist_ok=True)
    project = make_project(dest, params)
    run([str(BIN / "judgebias"), "export-dvc"], project)
    git(project, "init", "-q")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "project")
    return project


@pytest.fixture(scope="module")
def built(tmp_path_factory, default_params) -> tuple[Path, dict]:
    """`small_params` as a committed project (`committed_project`) built by Snakemake and
    not recorded for DVC yet; each test works on a copy of it (`copied`)."""
    params = small_params(default_params)
    project = committed_project(tmp_path_factory.mktemp("built") / "project", params)
    run([str(BIN / "snakemake"), "--cores", "2", "--quiet"], project)
    return project, params


def copied(project: Path, dest: Path) -> Path:
    """A copy of a built project: file times, git, DVC's and Snakemake's records kept."""
    shutil.copytree(project, dest, symlinks=True)
    return dest


def dvc(project: Path, *args: str, check: bool = True) -> str:
    result = run([str(BIN / "dvc"), *args], project, check=check)
    return result.stdout + result.stderr


def judgebias_dvc(project: Path, *args: str) -> str:
    return run([str(BIN / "judgebias"), "dvc", "--", *args], project).stdout


def dry_run_stages(text: str) -> set[str]:
    return set(re.findall(r"Running stage '([^']+)'", text))


def snakemake_plans_nothing(project: Path, *args: str) -> bool:
    out = run([str(BIN / "snakemake"), "-n", "--cores", "1", *args], project).stdout
    return NOTHING in out


# --- run settings ---------------------------------------------------------------------

def run_setting_paths(schema: dict) -> set[str]:
    """Every key the schema marks as a run setting, `*` standing for a panel model."""
    found: set[str] = set()

    def walk(node: dict, path: str) -> None:
        if "$ref" in node:
            node = schema["$defs"][node["$ref"].rsplit("/", 1)[-1]]
        if node.get(RUN_SETTING):
            found.add(path)
            return
        for name, child in node.get("properties", {}).items():
            walk(child, f"{path}.{name}" if path else name)
        if isinstance(node.get("additionalProperties"), dict):
            walk(node["additionalProperties"], f"{path}.*")

    walk(schema, "")
    return found


# Each run setting, and an edit of it a simulated panel accepts (None: a setting only an
# API model has, which test_api_model_run_settings_are_declared_by_no_job checks, or one of
# a study this project does not run).
SIM_EDITS = {
    "journal_dir": lambda p: p.update(journal_dir=".judgebias/moved-journal"),
    "max_failures": lambda p: p.update(max_failures={"corvid-pro": 0.5}),
    "backends": lambda p: p.update(backends={"openai": {"concurrency": 3}}),
    "panel.*.pricing": lambda p: p["panel"]["corvid-pro"].update(
        pricing={"input_per_mtok": 2.5, "output_per_mtok": 10.0}),
    "panel.*.max_requests": lambda p: p["panel"]["corvid-pro"].update(max_requests=10**6),
    "panel.*.resources.mem_mb": lambda p: p["panel"]["corvid-pro"].setdefault(
        "resources", {}).update(mem_mb=12000),
    "panel.*.abilities": lambda p: p["panel"]["corvid-pro"].update(
        abilities={"n_samples": True}),
    "panel.*.base_url": None,
    "panel.*.api_key_env": None,
    "panel.*.batch": None,
    # Where a study's cache lies (this project runs neither FRAME nor MMB): their own
    # pipeline tests move them and plan no job (tests/frame/test_frame_presets.py,
    # tests/mmb/test_mmb_pipeline.py).
    "frame.render_cache": None,
    "frame.dataset.synthetic.images.cache_dir": None,
    "mmb.embedding.cache_dir": None,
}


def test_every_run_setting_is_tested():
    assert run_setting_paths(params_schema()) == set(SIM_EDITS)


def test_api_model_run_settings_are_declared_by_no_job(default_params):
    """A model's block is declared as its keys but its run settings; a key the rule names
    itself stays (BIRCH's cost table names the prices)."""
    params = copy.deepcopy(default_params)
    params["panel"]["api-judge"] = {
        "backend": "openai", "model_id": "gpt-4o", "revision": "", "family": "corvid",
        "sampling": {"temperature": 0.0}, "base_url": "http://127.0.0.1:8000/v1",
        "api_key_env": "OPENAI_API_KEY", "batch": True, "max_requests": 100,
        "pricing": {"input_per_mtok": 2.5, "output_per_mtok": 10.0},
        "resources": {"mem_mb": 8000}}
    keys = answer_keys(params, ["panel.api-judge", "seed"])
    assert keys == ["panel.api-judge.backend", "panel.api-judge.model_id",
                    "panel.api-judge.revision", "panel.api-judge.family",
                    "panel.api-judge.sampling", "seed"]
    assert answer_keys(params, ["panel.api-judge.pricing"]) == ["panel.api-judge.pricing"]
    assert "journal_dir" not in answer_keys(params, ["journal_dir", "seed"])[1:]
    every = answer_keys(params, ["panel"])
    assert not [k for k in every if k.split(".")[-1] in
                {"base_url", "api_key_env", "batch", "max_requests", "pricing", "mem_mb"}]


def test_the_default_dags_jobs_declare_no_run_setting(default_params):
    """Every stage of the committed dvc.yaml (the default params' DAG, every study) reads
    its params through stamps of key sets: none holds a run setting, nor a block holding
    one, but the prices BIRCH's cost table names."""
    root = Path(__file__).resolve().parents[2]
    stages = yaml.safe_load((root / "dvc.yaml").read_text())["stages"]
    command = stages[PARAMS_STAGE]["cmd"].split()
    declared = {k for keys in command[command.index("--out") + 2:] for k in keys.split(",")}
    assert declared
    named = {k for k in declared if is_run_setting(k)}
    assert {k.split(".")[-1] for k in named} <= {"pricing"}
    params = validate_params(copy.deepcopy(default_params))  # defaults filled, as the DAG's
    assert {k for k in declared - named if answer_keys(params, [k]) != [k]} == set()


@pytest.mark.slow
def test_params_path_and_run_settings_rerun_nothing(tmp_path, built):
    project, params = copied(built[0], tmp_path / "project"), copy.deepcopy(built[1])
    run([str(BIN / "judgebias"), "dvc-record"], project)

    # The same content under another path (before: 37 of 37 jobs, "code has changed").
    shutil.copy(project / "params.yaml", project / "copy.yaml")
    assert planned_jobs(project, "--config", "params=copy.yaml") == {}

    # Each run setting alone plans nothing through Snakemake ...
    for key, edit in SIM_EDITS.items():
        if edit is None:
            continue
        changed = copy.deepcopy(params)
        edit(changed)
        write_params(project, changed)
        assert planned_jobs(project) == {}, key
    # ... and all together make DVC rerun its params stage (the section changed), no job.
    for edit in SIM_EDITS.values():
        if edit is not None:
            edit(params)
    write_params(project, params)
    said = judgebias_dvc(project, "repro")
    assert dry_run_stages(said) <= {PARAMS_STAGE}
    assert UP_TO_DATE in dvc(project, "status")
    assert snakemake_plans_nothing(project)


# --- DVC on a fresh clone, after Snakemake, after recording; experiments --------------

@pytest.mark.slow
def test_dvc_answers_on_a_fresh_clone_and_experiments_keep_snakemake_current(
        tmp_path, built):
    origin = copied(built[0], tmp_path / "origin")
    clone = tmp_path / "clone"  # of the commit alone: no output, no stamp, no dvc.lock
    run(["git", "clone", "-q", str(origin), str(clone)], tmp_path)
    assert "params" in dvc(clone, "dag")
    assert "deleted" in dvc(clone, "status")
    # The dry run of a fresh clone lists every stage (plain `dvc repro --dry` stops at the
    # first stage whose upstream output is missing: DVC's run cache, #9818).
    planned = dry_run_stages(judgebias_dvc(clone, "repro", "--dry"))
    assert {"code", "params", "dataset", "report"} <= planned
    assert not list(clone.glob("results/**/*.parquet"))  # a dry run runs nothing

    # After a Snakemake run (the fixture's): every dependency is there, stamps included.
    assert (origin / ".judgebias/code/dataset.json").is_file()
    dry = dvc(origin, "repro", "--dry")
    assert "dataset" in dry_run_stages(dry) and "No such file" not in dry
    assert "report" in dvc(origin, "status")
    # After recording: nothing to do.
    run([str(BIN / "judgebias"), "dvc-record"], origin)
    assert dry_run_stages(dvc(origin, "repro", "--dry")) == set()
    assert "report" in dvc(origin, "dag")

    # An experiment through the front door: Snakemake has nothing to do afterwards, and
    # its results are the ones Snakemake would compute.
    metrics = origin / "results/philautia/ref_free/metrics.json"
    said = judgebias_dvc(origin, "exp", "run", "-n", "ddof1", "-S", "philautia.ddof=1")
    assert "snakemake has nothing to do" in said
    assert snakemake_plans_nothing(origin)
    assert json.loads(metrics.read_text())["ddof"] == 1
    judgebias_dvc(origin, "exp", "run", "-n", "ddof0", "-S", "philautia.ddof=0")
    assert json.loads(metrics.read_text())["ddof"] == 0
    said = judgebias_dvc(origin, "exp", "apply", "ddof1")
    assert "snakemake has nothing to do" in said
    assert json.loads(metrics.read_text())["ddof"] == 1
    assert snakemake_plans_nothing(origin)
    # Plain `dvc exp run` leaves Snakemake's records behind; the one command mends them.
    run([str(BIN / "dvc"), "exp", "run", "-q", "-S", "philautia.ddof=0"], origin)
    assert not snakemake_plans_nothing(origin)
    run([str(BIN / "judgebias"), "snakemake-record"], origin)
    assert snakemake_plans_nothing(origin)


# --- a colleague's clone, through a DVC remote ----------------------------------------

def nocaps_inputs(project: Path, n_images: int = 4) -> None:
    """A nocaps-format annotations file and its real images, inside the project (so they
    travel with git): a dataset with a file to edit."""
    folder = project / "inputs"
    (folder / "images").mkdir(parents=True)
    images = [{"id": i, "file_name": f"{i:04x}.png", "domain": "in-domain",
               "height": 64, "width": 64} for i in range(n_images)]
    annotations = [{"image_id": i, "id": i * 10 + k, "caption": f"a picture {i}, take {k}"}
                   for i in range(n_images) for k in range(10)]
    for image in images:
        Image.new("RGB", (64, 64), (image["id"] * 50 % 256, 120, 200)).save(
            folder / "images" / image["file_name"])
    (folder / "nocaps_val.json").write_text(
        json.dumps({"images": images, "annotations": annotations}))


@pytest.mark.slow
@pytest.mark.remote
def test_a_clone_that_pulled_the_results_plans_what_the_origin_plans(tmp_path, default_params):
    params = small_params(default_params)
    params.pop("pomms")
    origin_dir = tmp_path / "origin"
    origin_dir.mkdir()
    nocaps_inputs(origin_dir)
    params["philautia"]["dataset"].update(name="nocaps")
    params["philautia"]["dataset"]["nocaps"].update(
        annotations="inputs/nocaps_val.json", image_dir="inputs/images", n_images=4,
        n_references=5)
    origin = committed_project(origin_dir, params)
    run([str(BIN / "snakemake"), "--cores", "2", "--quiet"], origin)
    run([str(BIN / "judgebias"), "dvc-record"], origin)
    store = tmp_path / "store"
    dvc(origin, "remote", "add", "-d", "store", str(store))
    dvc(origin, "push")
    git(origin, "add", "dvc.lock", ".dvc/config")
    git(origin, "commit", "-qm", "results")

    clone = tmp_path / "clone"
    run(["git", "clone", "-q", str(origin), str(clone)], tmp_path)
    said = judgebias_dvc(clone, "pull")  # the README's one command after a clone
    assert "snakemake has nothing to do" in said
    assert snakemake_plans_nothing(clone)
    assert not list((clone / ".judgebias").rglob("*.sqlite"))  # nothing was called

    def edit_both(edit) -> None:
        for project in (origin, clone):
            edit(project)

    def change_param(project: Path) -> None:
        changed = yaml.safe_load((project / "params.yaml").read_text())
        changed["panel"]["corvid-pro"]["sampling"]["seed"] += 1
        write_params(project, changed)

    def change_code(project: Path) -> None:
        module = project / "src/judgebias/studies/philautia/selfpref.py"
        module.write_text(module.read_text() + "# edited\n")

    def change_data(project: Path) -> None:
        data = json.loads((project / "inputs/nocaps_val.json").read_text())
        data["annotations"][0]["caption"] = "a corrected reference"
        (project / "inputs/nocaps_val.json").write_text(json.dumps(data))

    # A model's param (before: the clone planned no caption or score job), then back.
    edit_both(change_param)
    expected = planned_jobs(origin)
    assert {rule for rule, _ in expected} >= {"caption", "score", "phi", "report"}
    assert planned_jobs(clone) == expected
    edit_both(lambda project: write_params(project, params))
    assert planned_jobs(origin) == planned_jobs(clone) == {}
    # A code edit, then a data edit on top of it (reverting a file would leave it newer
    # than the outputs, which Snakemake rightly reads as a change).
    edit_both(change_code)
    expected = planned_jobs(origin)
    assert {rule for rule, _ in expected} >= {"selfpref"}
    assert planned_jobs(clone) == expected
    edit_both(change_data)
    expected = planned_jobs(origin)
    assert {rule for rule, _ in expected} >= {"dataset", "caption", "score", "selfpref"}
    assert planned_jobs(clone) == expected
