"""MMB on its real datasets, through Snakemake, with a simulated judge (issue 19).

A small HPDv2 and a small MJ-Bench bias file are written in their published shapes, with
real JPEG files: HPD/{test,train}/ beside test.json (rows of {prompt, image_path[], rank[],
raw_annotation}) and train.json (as released: one annotated comparison of two images per
row, {human_preference, prompt, image_path, user_hash}, several rows per prompt), and an
MJ-Bench bias file (rows of {demographic, occupation, images_dir, prompt, attribute flags,
metric scores}, images under eval_images/<bias>/<occupation>_<n>/). The whole study then
runs to the report, and bad data or params stop the run at the data job, before any judge
call. The importers' shapes are checked against HPSv2's README and data loaders and
MJ-Bench's bias files (tests/mmb/test_mmb_data.py has the row-level cases).
"""

from __future__ import annotations

import copy
import json
import re
from itertools import product
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from helpers.data_inputs import (
    assert_edits_rerun,
    data_deps,
    edit_json,
    recorded_project,
    repaint,
)
from helpers.project import BIN, make_project, planned_jobs, run, study_params
from PIL import Image

from judgebias.studies.mmb.data.synthetic import STYLES, render
from judgebias.studies.mmb.params import builtin_pool
from judgebias.studies.mmb.sim import JudgeTraits, landscape_key, position_bias

JUDGE = "corvid-pro"
PLAIN = "plain-judge"  # a simulated judge with no bias at all (sim.py)
TEST_RANKS = [[1, 2, 3, 4], [2, 1, 2]]  # 6 + 2 pairs (one tie dropped)
N_TRAIN_PROMPTS, TRAIN_IMAGES = 6, 3  # two annotated comparisons per prompt
MJB_OCCUPATIONS = ["Carpet Merchant", "Baker", "Pilot", "Librarian"]
MJB_DEMOGRAPHICS = ["old_female_muslim", "young_male_buddhist"]
VAL_CANDIDATES = 5  # of the 6 training prompts' candidates, a seeded sample is judged
EXPECTED_PAIRS = {"test": 8, "train": VAL_CANDIDATES, "mjb_train": 8, "mjb_test": 4}
INSTRUCTIONS = 44  # the built-in pool


def _jpeg(path: Path, index: int) -> None:
    """A real 32 px JPEG in one of the simulated judge's styles, of varying quality."""
    path.parent.mkdir(parents=True, exist_ok=True)
    style = list(STYLES)[index % len(STYLES)]
    Image.fromarray(render(style, 0.2 + 0.7 * ((index * 37) % 10) / 10, 32, index)).save(
        path, format="JPEG", quality=95)


def write_hpdv2(root: Path) -> dict[str, str]:
    """HPD/ as HPSv2's README lays it out; image paths relative to test/ and train/."""
    hpd, count = root / "HPD", 0
    test = []
    for g, ranks in enumerate(TEST_RANKS):
        names = [f"{g * 10 + i:05d}.jpg" for i in range(len(ranks))]
        for name in names:
            _jpeg(hpd / "test" / name, count := count + 1)
        test.append({"prompt": f"test prompt {g}", "image_path": names, "rank": ranks,
                     "raw_annotation": [{"rank": ranks, "user_hash": f"annotator-{g}"}]})
    train = []
    for g in range(N_TRAIN_PROMPTS):
        names = [f"{g * 10 + i:08d}.jpg" for i in range(TRAIN_IMAGES)]
        for name in names:
            _jpeg(hpd / "train" / name, count := count + 1)
        for i in range(TRAIN_IMAGES - 1):  # image i vs image i + 1, one of them preferred
            preferred = (g + i) % 2
            train.append({"human_preference": [int(preferred == 0), int(preferred == 1)],
                          "prompt": f"train prompt {g}", "image_path": names[i:i + 2],
                          "user_hash": f"annotator-{g}-{i}"})
    (hpd / "test.json").write_text(json.dumps(test, indent=1))
    (hpd / "train.json").write_text(json.dumps(train, indent=1))
    return {"test": str(hpd / "test.json"), "train": str(hpd / "train.json"),
            "image_root": str(hpd)}


def write_mjbench(root: Path) -> dict[str, str]:
    """An MJ-Bench bias file in its published shape (bias/*.json of MJ-Bench/MJ-Bench)."""
    folder, rows = root / "MJ-Bench", []
    for (o, occupation), (d, demographic) in product(enumerate(MJB_OCCUPATIONS),
                                                     enumerate(MJB_DEMOGRAPHICS)):
        relative = f"eval_images/occupation_religion/{occupation}_{o}/{demographic}.jpg"
        _jpeg(folder / relative, 100 + 10 * o + d)
        rows.append({"demographic": demographic, "occupation": occupation,
                     "images_dir": relative, "prompt": f"A {occupation}.", "age": True,
                     "gender": True, "race": False, "nationality": False, "religion": True,
                     "clipscore_v2": 0.25, "hps_v2.1": 0.22, "ImageReward": 0.1,
                     "gpt-4o": 4, "analysis": 0})
    (folder / "bias.json").write_text(json.dumps(rows, indent=4))
    return {"path": str(folder / "bias.json"), "image_root": str(folder)}


def real_params(default_params: dict, hpdv2: dict, mjbench: dict | None) -> dict:
    """Only MMB, on the files above, with a design small enough for CI."""
    params = study_params(default_params, "mmb")
    mmb = params["mmb"]
    mmb["models"] = [JUDGE]
    mmb["dataset"] = {"name": "hpdv2", "seed": 1, "val_candidates": VAL_CANDIDATES,
                      "hpdv2": hpdv2, "mjbench": mjbench,
                      "mjbench_protocol": {**mmb["dataset"]["mjbench_protocol"],
                                           "n_folds": 2}}
    mmb["embedding"].update(image_size=32)
    mmb["clustering"].update(ks=[1, 2], seeds=1, support_per_cluster=4, tau_sweep=[1.0])
    mmb["design"] = {"n_prompts": [3], "n_val": [2, 4], "train_seeds": 1,
                     "sampling_seeds": 2, "coverages": 4}
    mmb["report"] = {"n_prompts": 3, "n_val": 4, "k": 2, "n_resamples": 200, "n_boot": 100}
    return params


@pytest.fixture(scope="module")
def datasets(tmp_path_factory) -> tuple[dict, dict]:
    root = tmp_path_factory.mktemp("real-data")
    return write_hpdv2(root), write_mjbench(root)


def snakemake(project: Path, *targets: str, params_file: str | None = None,
              check: bool = True):
    extra = ["--config", f"params={params_file}"] if params_file else []
    return run([str(BIN / "snakemake"), *targets, "--cores", "2", *extra], project,
               check=check)


def with_plain_judge(params: dict) -> dict:
    """`params` with PLAIN beside JUDGE: JUDGE's sim model with no MMB bias
    (miscalibrated, position_bias and brightness_bias 0: every instruction is the
    simulated humans' own law)."""
    plain = copy.deepcopy(params["panel"][JUDGE])
    plain["model_id"] = f"sim/{PLAIN}"
    plain["sim"]["signature"] = "evenly"  # simulated models need distinct signatures
    plain["sim"]["mmb"].update(miscalibrated=0.0, position_bias=0.0, brightness_bias=0.0)
    params["panel"][PLAIN] = plain
    params["mmb"]["models"] = [JUDGE, PLAIN]
    return params


@pytest.mark.slow
def test_hpdv2_and_mjbench_run_to_the_report(tmp_path, default_params, datasets):
    """HPDv2 test + train and MJ-Bench together, every job through Snakemake: the pairs
    are the ones the files define, every (pair, instruction) is judged in both orders
    (`mmb.order: both`) by the planted judge and one with no bias, the analysis has its
    MJBench table, and the report shows it. The judge card (issue 22) has PC and PF for
    both judges, the planted pull in PF's direction where it is significant, and no
    significant row for the judge with no bias."""
    hpdv2, mjbench = datasets
    params = with_plain_judge(real_params(default_params, hpdv2, mjbench))
    params["mmb"]["order"] = "both"
    project = make_project(tmp_path, params)
    snakemake(project)

    summary = json.loads((project / "data/mmb/summary.json").read_text())
    assert summary["pairs"] == EXPECTED_PAIRS
    assert summary["tied_pairs_dropped"] == 1
    assert summary["support_pool"] == N_TRAIN_PROMPTS * TRAIN_IMAGES
    pairs = pd.read_parquet(project / "data/mmb/pairs.parquet")
    train = pairs[pairs["split"] == "train"]
    assert (train["image_a"] != train["image_b"]).all()
    hpd, degraded = Path(hpdv2["image_root"]), project / "data/mmb/images/mjbench-degraded"
    for split, folders in [("test", [hpd / "test"]), ("train", [hpd / "train"]),
                           ("mjb_test", [Path(mjbench["image_root"])]),
                           ("mjb_train", [Path(mjbench["image_root"]), degraded])]:
        shown = pairs.loc[pairs["split"] == split, ["image_a", "image_b"]].to_numpy().ravel()
        assert all(any((project / p).is_relative_to(f) for f in folders) for p in shown), split

    for judge in (JUDGE, PLAIN):
        log = (project / f"logs/mmb/judge/{judge}.log").read_text()
        found = re.search(r"(\d+) requests, (\d+) from the journal, (\d+) new calls", log)
        assert found and int(found.group(1)) == 2 * INSTRUCTIONS * sum(EXPECTED_PAIRS.values())

    metrics = json.loads((project / "results/mmb/metrics.json").read_text())
    assert {JUDGE, PLAIN} <= set(metrics["judges"])
    table4 = pd.read_parquet(project / "results/mmb/table4.parquet")
    assert set(table4["n_val"]) == {2, 4} and "MMB" in set(table4["method"])
    html = (project / "results/report.html").read_text()
    assert "Table 4 analogue" in html and "HPDv2 + MJ-Bench" in html
    assert planned_jobs(project) == {}

    card = pd.read_parquet(project / "results/judges.parquet")
    card = card[card["study"] == "mmb"]
    assert set(card["model"]) == {JUDGE, PLAIN}
    pairs = INSTRUCTIONS * sum(EXPECTED_PAIRS.values())
    for judge in (JUDGE, PLAIN):
        mine = card[card["model"] == judge].set_index("measure")
        assert mine.loc[["pc", "pf"], "estimate"].notna().all()
        assert mine.loc["pc", "n"] == pairs and mine.loc["pf", "headline"]
    assert not card.loc[card["model"] == PLAIN, "significant"].any()
    planted = default_params["panel"][JUDGE]["sim"]["mmb"]["position_bias"]
    traits = JudgeTraits(experts={}, position_bias=planted,
                         world=landscape_key(default_params["seed"], JUDGE))
    pull = np.mean([position_bias(traits, p["text"]) for p in builtin_pool()])
    pf = card[card["model"] == JUDGE].set_index("measure").loc["pf"]
    assert np.sign(pf["estimate"]) == -np.sign(pull) or not pf["significant"]  # < 0: first


@pytest.mark.slow
def test_hpdv2_alone_builds_its_data_with_another_params_file(tmp_path, default_params,
                                                              datasets):
    """The issue's command: `snakemake data/mmb/pairs.parquet --config params=<hpdv2>`
    once ended in MissingOutputException (data/mmb/images was never made without
    MJ-Bench)."""
    params = real_params(default_params, datasets[0], None)
    project = make_project(tmp_path, default_params)
    (project / "hpdv2.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    snakemake(project, "data/mmb/pairs.parquet", params_file="hpdv2.yaml")
    summary = json.loads((project / "data/mmb/summary.json").read_text())
    assert summary["pairs"] == {"test": 8, "train": VAL_CANDIDATES}
    assert (project / "data/mmb/images").is_dir()


def _escape_an_image(mjbench: dict, tmp_path: Path) -> dict:
    """A copy of the bias file whose third row climbs out of its image folder to a file
    that exists."""
    rows = json.loads(Path(mjbench["path"]).read_text())
    rows[2]["images_dir"] = "../HPD/test/00000.jpg"
    (tmp_path / "bias.json").write_text(json.dumps(rows))
    return {**mjbench, "path": str(tmp_path / "bias.json")}


DESIGN_ERRORS = [  # one line each, all reported by one run of the data job
    r"mmb\.design\.n_val: 7 validation pairs asked, but \S+/HPD/train\.json gives 5 "
    r"\(mmb\.dataset\.val_candidates = 5\)",
    r"mmb\.clustering\.support_per_cluster: 10 x max K 2 = 20 support images asked, but "
    r"there are 18 training images in \S+/HPD/train\.json",
    r"mmb\.dataset\.mjbench_protocol\.n_folds: 5 folds asked, but \S+/MJ-Bench/bias\.json "
    r"has 4 prompts"]
ESCAPE_ERROR = [r"mmb\.dataset\.mjbench\.path: \S+/bias\.json: row 3 key 'images_dir': "
                r"'\.\./HPD/test/00000\.jpg' leaves its folder"]


@pytest.mark.slow
@pytest.mark.parametrize("case, expected", [("design", DESIGN_ERRORS),
                                            ("escape", ESCAPE_ERROR)])
def test_bad_data_stops_the_run_at_the_data_job(tmp_path, default_params, datasets, case,
                                                expected):
    """Checks that need only the data run in the data job: Snakemake stops there with
    one line per problem naming the key, the file and the count (or row), and no judge
    job starts."""
    hpdv2, mjbench = datasets
    params = real_params(default_params, hpdv2, mjbench)
    mmb = params["mmb"]
    if case == "design":
        mmb["design"]["n_val"] = [2, 4, 7]
        mmb["clustering"]["support_per_cluster"] = 10
        mmb["dataset"]["mjbench_protocol"]["n_folds"] = 5
    else:
        mmb["dataset"]["mjbench"] = _escape_an_image(mjbench, tmp_path)
    (tmp_path / "project").mkdir()
    project = make_project(tmp_path / "project", params)
    result = snakemake(project, check=False)
    assert result.returncode != 0
    log = (project / "logs/mmb/data.log").read_text()
    for line in expected:
        assert re.search(line, log), log
    assert not (project / "data/mmb/pairs.parquet").exists()
    assert not (project / "logs/mmb/judge").exists()


@pytest.mark.slow
def test_an_edited_rank_or_image_reruns_the_data_through_both_doors(tmp_path, default_params):
    """The data step declares HPDv2's test.json and train.json, the MJ-Bench file and
    every image under their folders (issue 39 item 1): a changed rank or a replaced image
    reruns the data job and everything after it (Snakemake) and names the data stage
    (`dvc status`), and nothing else; untouched, the files plan nothing."""
    hpdv2, mjbench = write_hpdv2(tmp_path), write_mjbench(tmp_path)
    project = recorded_project(tmp_path / "project", real_params(default_params, hpdv2,
                                                                 mjbench))

    def reverse_ranks(groups: list) -> None:
        groups[0]["rank"].reverse()

    hpd = Path(hpdv2["image_root"])
    assert data_deps(project, "mmb_data") == {str(hpd), mjbench["image_root"]}  # two folders
    assert_edits_rerun(project, [(Path(hpdv2["test"]), edit_json(reverse_ranks)),
                                 (hpd / "train/00000000.jpg", repaint),
                                 (Path(mjbench["image_root"]) / "eval_images/"
                                  "occupation_religion/Baker_1/old_female_muslim.jpg",
                                  repaint)],
                       "mmb_data", "mmb_data")
