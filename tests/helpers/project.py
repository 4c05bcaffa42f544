"""A small real project for pipeline tests: its params, its files, its commands.

`study_params` is the one way to say "a project running only these studies" (the default
params without the other studies' blocks, small where `small=True`); `make_project`
copies the workflow beside it; `run` and `planned_jobs` drive the project's Snakemake.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path

import yaml

from judgebias.studies import STUDIES
from judgebias.workflow.dvcsync import changes_workspace

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
PANEL = ["lumen-large", "lumen-mini", "corvid-pro"]
SMALL_JUDGES = ["corvid-pro", "lumen-mini"]  # small_all_studies' judges
WARM = [str(BIN / "judgebias-warm"), "--"]  # prefix: COMMAND's jobs forked warm (make run)
# judgebias.workflow.paramscheck.check, run by the project's own Python (a new study's
# package included): one [rule, key read or null, message] per finding, as JSON.
_CHECK = """\
import json, sys
from pathlib import Path
from judgebias.config import load_config, params_path
from judgebias.workflow.paramscheck import check
found = check(Path("Snakefile"), Path(sys.argv[1]), load_config(params_path(), data=False),
              every_step=sys.argv[2] == "every")
print(json.dumps([[p.rule, p.read and p.read[1], str(p)] for p in found]))
"""


def shared_data_dir() -> Path:
    """Real test data (../shared/data, or $JUDGEBIAS_SHARED_DATA)."""
    return Path(os.environ.get("JUDGEBIAS_SHARED_DATA", REPO.parent / "shared" / "data"))


def _small(params: dict) -> None:
    """Each study's pipeline-test size: Philautia on 12 images of 3 models, Pomms on 40
    judgement items, BIRCH on 200 pairs, the leaderboard on 10 images (MMB and FRAME run
    their defaults)."""
    if philautia := params.get("philautia"):
        philautia["dataset"]["synthetic"]["n_images"] = 12
        philautia.update(models=list(PANEL), n_bootstrap=50, n_permutations=200)
    if pomms := params.get("pomms"):
        pomms["datasets"]["synthetic"]["n_items"] = 40
    if birch := params.get("birch"):
        birch["datasets"]["synthetic"]["n_pairs"] = 200
    if "leaderboard" in params:
        small_leaderboard(params)


def small_leaderboard(params: dict) -> None:
    """The `leaderboard:` block at a pipeline-test size (in place): 10 images, 4 of
    them labelled, 6 prompts, 500 resamples."""
    for task in params["leaderboard"]["tasks"].values():
        if task.get("kind") in ("images", "scored_images"):
            task["prompts"]["synthetic"]["n_prompts"] = 6
            continue
        if task.get("kind") == "vqa":
            task["questions"]["synthetic"]["n_items"] = 8
            continue
        task["images"]["synthetic"]["n_images"] = 10
        if (labels := task.get("human_labels")) and "synthetic" in labels:
            labels["synthetic"]["n_items"] = 4
    params["leaderboard"]["inference"] = {"resamples": 500}


def captions_leaderboard(params: dict) -> None:
    """The `leaderboard:` block without its images tasks and mmb methods (in place), for
    a project that runs the leaderboard without the MMB study they build on."""
    board = params["leaderboard"]
    board["tasks"] = {k: t for k, t in board["tasks"].items() if t.get("kind") != "images"}
    board["methods"] = {k: m for k, m in board["methods"].items() if m["kind"] != "mmb"}


def study_params(params: dict, *studies: str, small: bool = False) -> dict:
    """A copy of `params` (usually the defaults) running only `studies`: every other
    study's block removed; with `small`, each kept study at its pipeline-test size."""
    unknown = set(studies) - set(STUDIES)
    assert not unknown, f"not a study: {sorted(unknown)}"
    params = copy.deepcopy(params)
    for study in STUDIES:
        if study not in studies:
            params.pop(study, None)
    if small:
        _small(params)
    return params


def small_all_studies(default_params: dict, image_tasks: bool = False) -> dict:
    """Every study on small data and two or three simulated judges. The leaderboard keeps
    its captions task only unless `image_tasks`: its images kind has pipeline tests of its
    own (tests/leaderboard/test_leaderboard_images_pipeline.py), and the tests that run
    every study (Slurm, today's judges, the front doors) exercise the backends and
    executors, which the captions task covers."""
    params = copy.deepcopy(default_params)
    philautia = params["philautia"]
    philautia["dataset"]["synthetic"]["n_images"] = 6
    philautia.update(models=["lumen-large", *SMALL_JUDGES], n_bootstrap=20, n_permutations=100)
    params["pomms"]["datasets"]["synthetic"]["n_items"] = 40
    small_mmb(params)
    params["mmb"]["instructions"]["grow"] = {"writer": "lumen-large", "n": 3}
    frame = params["frame"]
    frame["models"] = SMALL_JUDGES
    frame["dataset"]["synthetic"].update(n_per_domain=2, writer="lumen-large")
    frame["manipulations"] = {m: grid[:2] for m, grid in frame["manipulations"].items()}
    frame["analysis"]["n_permutations"] = 100
    birch = params["birch"]
    birch.update(models=SMALL_JUDGES, swap_order=True)
    birch["datasets"]["synthetic"]["n_pairs"] = 24
    birch["downsampling"]["draws"] = 2
    small_leaderboard(params)
    if not image_tasks:
        captions_leaderboard(params)
    return params


def small_mmb(params: dict) -> None:
    """The `mmb:` block of `params` at its smallest useful size (in place): 12 test
    pairs, 24 validation candidates, K of 1 and 2, one cell of the design."""
    mmb = params["mmb"]
    mmb["dataset"]["synthetic"].update(n_test_groups=4, images_per_test_group=3,
                                       n_train_groups=24, n_mjb_groups=4,
                                       images_per_mjb_group=2)
    mmb["dataset"]["mjbench_protocol"]["n_folds"] = 2
    mmb["clustering"].update(ks=[1, 2], seeds=1, support_per_cluster=8)
    mmb["design"].update(n_prompts=[5], n_val=[4], train_seeds=1, sampling_seeds=2)
    mmb["report"] = {"n_prompts": 5, "n_val": 4, "k": 2}


def write_params(project: Path, params: dict) -> None:
    (project / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))


def make_project(dest: Path, params: dict) -> Path:
    """A copy of the workflow files with `params` as params.yaml: a real, small project."""
    for name in ("Snakefile", "workflow", "src", ".gitignore", ".dvcignore", ".dvc"):
        src = REPO / name
        if src.is_dir():
            skip = shutil.ignore_patterns("__pycache__", "*.egg-info", "tmp", "cache")
            shutil.copytree(src, dest / name, ignore=skip)
        else:
            shutil.copy(src, dest / name)
    write_params(dest, params)
    return dest


def _runs_jobs(cmd: list[str]) -> bool:
    """A command that runs pipeline jobs: snakemake (not a dry run), dvc repro, judgebias
    dvc-repro."""
    name, args = Path(cmd[0]).name, cmd[1:]
    if name == "snakemake":
        return not {"-n", "--dry-run", "--touch", "-t", "--summary", "rules"} & set(args)
    if name == "dvc":
        return args[:1] == ["repro"] and not {"--dry", "-n"} & set(args)
    if name == "judgebias" and args[:1] == ["dvc"]:
        return changes_workspace([a for a in args[1:] if a != "--"])
    return name == "judgebias" and args[:1] == ["dvc-repro"]


def run(cmd: list[str], cwd: Path, check: bool = True, warm: bool = True
        ) -> subprocess.CompletedProcess:
    """Run a command of the pipeline; the timeout only catches a hang (the default FRAME
    build takes ~13 min when CI runs two pipeline tests side by side on 2 cores).

    A command that runs jobs runs under ``judgebias-warm``, as ``make run`` does
    (judgebias/warm.py); ``warm=False`` runs it plain, each job a cold process.
    """
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    if warm and _runs_jobs(cmd):
        cmd = [*WARM, *cmd]
    result = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=1800)
    if check and result.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed:\n{result.stdout}\n{result.stderr}")
    return result


def journaled_calls(project: Path) -> int:
    """Answers in every model's journal: what the run has paid for so far."""
    total = 0
    for path in (project / ".judgebias").rglob("*.sqlite"):
        with sqlite3.connect(path) as db:
            total += db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
    return total


def undeclared_reads(project: Path, records: Path, every_step: bool = True
                     ) -> dict[tuple[str, str | None], str]:
    """What `project`'s step jobs read that their rules do not declare (issue 42 item 5),
    from the records a run with ``$JUDGEBIAS_RECORD_PARAMS`` set to `records` left: each
    (rule, key) with a line saying it (with `every_step`, for a fresh run, a step job that
    left no record too, key None). No read is allowed undeclared: a run setting (where a
    cache lies) is marked ``x-run-setting`` instead, and a key whose check can fail a job
    is declared by its rule."""
    out = run([sys.executable, "-c", _CHECK, str(records),
               "every" if every_step else "ran"], project).stdout
    return {(rule, key): line for rule, key, line in json.loads(out.splitlines()[-1])}


def planned_jobs(project: Path, *args: str) -> Counter:
    """(rule, sorted wildcard values) of every job `snakemake --dry-run` would run, with
    `args` added to its command line (e.g. ``--forcerun RULE``: that rule's jobs and
    every job downstream of them)."""
    out = run([str(BIN / "snakemake"), "--dry-run", "--cores", "1", *args], project).stdout
    jobs: Counter = Counter()
    current = None
    for line in out.splitlines():
        if match := re.match(r"^(?:local)?rule (\w+):$", line):
            if current:
                jobs[current] += 1
            current = (match.group(1), ())
        elif current and (match := re.match(r"^\s+wildcards: (.*)$", line)):
            values = dict(part.split("=", 1) for part in match.group(1).split(", "))
            current = (current[0], tuple(sorted(values.items())))
    if current:
        jobs[current] += 1
    jobs.pop(("all", ()), None)
    return jobs


def job_resources(project: Path, *args: str) -> dict[tuple, dict[str, str]]:
    """The resources of each job (rule, sorted wildcards) `snakemake --dry-run` plans,
    with `args` added to its command line (e.g. ``--profile DIR``)."""
    out = run([str(BIN / "snakemake"), "--dry-run", "--cores", "1", *args], project).stdout
    found, current = {}, None
    for line in out.splitlines():
        if match := re.match(r"^(?:local)?rule (\w+):$", line):
            current = [match.group(1), ()]
        elif current and (match := re.match(r"^\s+wildcards: (.*)$", line)):
            current[1] = tuple(sorted(tuple(p.split("=", 1)) for p in match.group(1).split(", ")))
        elif current and (match := re.match(r"^\s+resources: (.*)$", line)):
            found[tuple(current)] = dict(p.split("=", 1) for p in match.group(1).split(", "))
    return found


def job(rule: str, **wildcards: str) -> tuple:
    return (rule, tuple(sorted(wildcards.items())))
