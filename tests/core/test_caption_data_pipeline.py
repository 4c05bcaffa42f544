"""Philautia on nocaps and Pomms on every caption-judgement format, through Snakemake.

Issue 19 (1): the real-format importers were tested as functions but never ran as a
pipeline. This module writes one SMALL project in the published formats, with real image
files (JPEG and PNG written with Pillow): a nocaps validation annotations file
(`nocaps_val_4500_captions.json`'s COCO shape) for philautia, and three judgement
datasets for Pomms -- Flickr8k-Expert (FLEUR's `annotations/flickr8k.json` shape),
Nebula (EXPERT's `annotations/nebula_test.json` shape) and a generic CSV `table` with
train / val / test splits that Pomms trains on. Then it runs the whole DAG with simulated
judges to `results/report.html` and checks numbers that follow from the data written.

The images are rendered scenes (`judgebias.data.scenes`), so the simulated judges see
real content and the human ratings written here (the true accuracy of each candidate
caption) are something a good judge can agree with.
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from helpers.data_inputs import (
    assert_edits_rerun,
    data_deps,
    edit_csv,
    edit_json,
    recorded_project,
    repaint,
)
from helpers.project import BIN, job, make_project, planned_jobs, run, study_params

from judgebias.data import scenes

MODELS = ["lumen-large", "lumen-mini", "corvid-pro", "corvid-lite"]  # two families
SETTING = "ref_based"
NOCAPS_IMAGES, NOCAPS_SELECTED, NOCAPS_CAPTIONS = 6, 4, 10
FLICKR_IMAGES, FLICKR_CANDIDATES, FLICKR_RATERS = 3, 3, 3
NEBULA_IMAGES = 5  # the first image gets two candidates: nebula-<imgid>-0 / -1
TABLE_IMAGES, TABLE_CANDIDATES, TABLE_RATERS = 8, 4, 2
TABLE_SPLITS = ["train"] * 5 + ["val"] * 2 + ["test"]  # per image


# --------------------------------------------------------------------- the data written


def _scene_file(folder: Path, name: str, rng: np.random.Generator) -> scenes.Scene:
    """A random scene drawn into `folder/name`, as JPEG or PNG by the name's suffix."""
    scene = scenes.random_scene(rng)
    folder.mkdir(parents=True, exist_ok=True)
    image = scenes.render(scene, 128)
    if name.endswith(".png"):
        image.save(folder / name)
    else:
        image.save(folder / name, quality=95)
    return scene


def _candidates(scene: scenes.Scene, rng: np.random.Generator, n: int) -> list[tuple[str, float]]:
    """`n` candidate captions of `scene`, from right to wrong, with their true accuracy:
    a correct caption, then captions of other random scenes (partly or fully wrong)."""
    texts = [scenes.reference_captions(scene, rng, n=1)[0]]
    texts += [scenes.reference_captions(scenes.random_scene(rng), rng, n=1)[0]
              for _ in range(n - 1)]
    truth = scenes.scene_claims(scene)
    return [(text, scenes.match_claims(scenes.read_caption(text), truth).accuracy)
            for text in texts]


def write_nocaps(root: Path, rng: np.random.Generator) -> tuple[Path, Path]:
    """nocaps validation annotations (COCO shape, annotation list shuffled) + JPEGs."""
    image_dir = root / "nocaps" / "validation"
    images, annotations = [], []
    for i in range(NOCAPS_IMAGES):
        name = f"{i:04x}{'ab' * 6}.jpg"
        scene = _scene_file(image_dir, name, rng)
        images.append({"id": i, "file_name": name, "open_images_id": name[:-4], "height": 128,
                       "width": 128, "coco_url": f"https://example.org/{name}",
                       "domain": ("in-domain", "near-domain", "out-domain")[i % 3]})
        for k, caption in enumerate(scenes.reference_captions(scene, rng, n=NOCAPS_CAPTIONS)):
            annotations.append({"image_id": i, "id": i * NOCAPS_CAPTIONS + k,
                                "caption": caption})
    rng.shuffle(annotations)
    path = root / "nocaps" / "nocaps_val_4500_captions.json"
    path.write_text(json.dumps({"info": {"year": 2019}, "licenses": [], "images": images,
                                "annotations": annotations}))
    return path, image_dir


def write_flickr8k_expert(root: Path, rng: np.random.Generator) -> tuple[Path, Path]:
    """FLEUR's flickr8k.json: image id -> human_judgement (each candidate once per expert
    rating, 1-4), ground_truth (5 references); the images under Flickr8k_Dataset/."""
    image_dir = root / "flickr8k" / "Flickr8k_Dataset"
    data = {}
    for i in range(FLICKR_IMAGES):
        image_id = f"{1000 + i}_{'c0ffee' * 2}"
        scene = _scene_file(image_dir, f"{image_id}.jpg", rng)
        judgements = []
        for caption, accuracy in _candidates(scene, rng, FLICKR_CANDIDATES):
            for _ in range(FLICKR_RATERS):
                rating = float(np.clip(round(1 + 3 * accuracy + rng.normal(0, 0.4)), 1, 4))
                judgements.append({"image_id": image_id,
                                   "image_path": f"Flickr8k_Dataset/{image_id}.jpg",
                                   "caption": caption, "rating": rating})
        data[image_id] = {"human_judgement": judgements, "image_id": image_id,
                          "image_path": f"Flickr8k_Dataset/{image_id}.jpg",
                          "ground_truth": scenes.reference_captions(scene, rng, n=5)}
    path = root / "flickr8k" / "flickr8k.json"
    path.write_text(json.dumps(data, indent=1))
    return path, image_dir


def write_nebula(root: Path, rng: np.random.Generator) -> tuple[Path, Path]:
    """EXPERT's nebula_test.json: a list of {imgid, mt, refs, score in [0, 1]}; images are
    named by imgid (here JPEG and PNG, both found by extension)."""
    image_dir = root / "nebula" / "images"
    entries = []
    for i in range(NEBULA_IMAGES):
        imgid = f"{i:02d}{'5eed' * 7}"
        scene = _scene_file(image_dir, f"{imgid}{'.png' if i % 2 else '.jpg'}", rng)
        refs = scenes.reference_captions(scene, rng, n=5 + i)
        right, wrong = _candidates(scene, rng, 2)
        for caption, accuracy in [right, wrong] if i == 0 else [(right, wrong)[i % 2]]:
            entries.append({"imgid": imgid, "mt": caption, "refs": refs,
                            "score": round(float(accuracy), 3)})
    path = root / "nebula" / "nebula_test.json"
    path.write_text(json.dumps(entries))
    return path, image_dir


def write_table(root: Path, rng: np.random.Generator) -> tuple[Path, Path]:
    """A CSV in the generic `table` format: one row per rating, references as a JSON list,
    image_file given for half the images (the others are found by image_id + extension)."""
    image_dir = root / "mybench" / "images"
    rows = []
    for i in range(TABLE_IMAGES):
        image_id = f"mb{i:03d}"
        name = f"photo-{i}.jpg" if i % 2 else f"{image_id}.png"
        scene = _scene_file(image_dir, name, rng)
        refs = json.dumps(scenes.reference_captions(scene, rng, n=3))
        for caption, accuracy in _candidates(scene, rng, TABLE_CANDIDATES):
            for _ in range(TABLE_RATERS):
                score = float(np.clip(accuracy + rng.normal(0, 0.05), 0, 1))
                rows.append({"image_id": image_id, "image_file": name if i % 2 else "",
                             "candidate": caption, "references": refs,
                             "human_score": f"{score:.3f}", "split": TABLE_SPLITS[i]})
    path = root / "mybench" / "judgements.csv"
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path, image_dir


def caption_data_params(default_params: dict, data: Path) -> dict:
    """Philautia on nocaps and Pomms on the three judgement formats, small and fast."""
    rng = np.random.default_rng(19)
    annotations, nocaps_images = write_nocaps(data, rng)
    flickr, flickr_images = write_flickr8k_expert(data, rng)
    nebula, nebula_images = write_nebula(data, rng)
    table, table_images = write_table(data, rng)
    params = study_params(default_params, "philautia", "pomms")
    philautia = params["philautia"]
    philautia["dataset"] = {"name": "nocaps", "nocaps": {
        "annotations": str(annotations), "image_dir": str(nocaps_images),
        "n_images": NOCAPS_SELECTED, "n_references": 5, "seed": 3, "missing": "error"}}
    philautia.update(models=list(MODELS), n_bootstrap=20, n_permutations=100,
                     settings={SETTING: philautia["settings"][SETTING]})
    params["pomms"].update(setting=SETTING, judgement_setting=None, train_dataset="mybench",
                           datasets={
        "flickr8k_expert": {"format": "flickr8k_expert", "path": str(flickr),
                            "image_dir": str(flickr_images)},
        "nebula": {"format": "nebula", "path": str(nebula), "image_dir": str(nebula_images),
                   "split": "test"},
        "mybench": {"format": "table", "path": str(table), "image_dir": str(table_images)},
    })
    return params


# --------------------------------------------------------------------------- the test


@pytest.fixture
def caption_project(tmp_path, default_params) -> Path:
    params = caption_data_params(default_params, tmp_path / "published")
    project = tmp_path / "project"
    project.mkdir()
    return make_project(project, params)


def _references_by_image(annotations: Path) -> dict[str, list[str]]:
    """Every nocaps image's captions in annotation-id order, read back from the file."""
    data = json.loads(annotations.read_text())
    ordered = sorted(data["annotations"], key=lambda a: a["id"])
    by_image: dict[str, list[str]] = {}
    for ann in ordered:
        by_image.setdefault(f"nocaps-{ann['image_id']}", []).append(ann["caption"])
    return by_image


@pytest.mark.slow
def test_philautia_on_nocaps_and_pomms_on_every_judgement_format(caption_project):
    """The whole DAG on the published formats: the counts that follow from the files
    written above reach every table, tau is reported per dataset and split, and a second
    run has nothing to do."""
    run([str(BIN / "snakemake"), "--cores", "2", "--quiet"], caption_project)
    params = yaml.safe_load((caption_project / "params.yaml").read_text())
    nocaps = params["philautia"]["dataset"]["nocaps"]

    images = pd.read_parquet(caption_project / "data/dataset/images.parquet")
    assert len(images) == NOCAPS_SELECTED and set(images["source"]) == {"nocaps"}
    references = _references_by_image(Path(nocaps["annotations"]))
    for row in images.itertuples():
        assert Path(row.image_path).parent == Path(nocaps["image_dir"])
        assert list(row.references) == references[row.image_id][:5]

    results = caption_project / "results"
    counts = json.loads((results / f"philautia/{SETTING}/metrics.json").read_text())["counts"]
    assert counts["n_scores_expected"] == counts["n_valid"] == NOCAPS_SELECTED * len(MODELS) ** 2

    n_flickr = FLICKR_IMAGES * FLICKR_CANDIDATES
    n_table = TABLE_IMAGES * TABLE_CANDIDATES
    items = {"flickr8k_expert": n_flickr, "nebula": NEBULA_IMAGES + 1, "mybench": n_table}
    for dataset, n_items in items.items():
        table = pd.read_parquet(caption_project / f"data/judgements/{dataset}.parquet")
        assert table["item_id"].nunique() == n_items, dataset
        assert table["image_path"].map(lambda p: Path(p).is_file()).all(), dataset
        for model in MODELS:
            scored = pd.read_parquet(
                caption_project / f"data/item_scores/{SETTING}/{dataset}/{model}.parquet")
            assert len(scored) == n_items and set(scored["status"]) == {"ok"}, (dataset, model)

    # tau over ratings (one row per human rating), per dataset and split
    per_image = TABLE_CANDIDATES * TABLE_RATERS
    rows = {("flickr8k_expert", "test"): n_flickr * FLICKR_RATERS,
            ("nebula", "test"): NEBULA_IMAGES + 1,
            **{("mybench", split): TABLE_SPLITS.count(split) * per_image
               for split in ("train", "val", "test")}}
    agreement = pd.read_parquet(results / "pomms/agreement.parquet")
    assert set(agreement["metric"]) == {*MODELS, "Pomms"}
    for (dataset, split), n in rows.items():
        cell = agreement[(agreement["dataset"] == dataset) & (agreement["split"] == split)]
        assert len(cell) == len(MODELS) + 1 and set(cell["n"]) == {n}, (dataset, split)
        assert (cell["n_missing"] == 0).all() and cell["tau_b"].notna().all()
    # the ratings follow the captions' true accuracy: judges that see the image agree
    assert (agreement.loc[agreement["metric"] == "Pomms", "tau_b"] > 0.3).all()

    metrics = json.loads((results / "pomms/metrics.json").read_text())
    assert metrics["n_train"] == rows["mybench", "train"]
    assert metrics["n_validation"] == rows["mybench", "val"]
    assert metrics["n_dropped"] == 0 and len(metrics["members"]) >= 2

    report = (results / "report.html").read_text()
    for heading in ("Philautia: self- and family-preference", f"Setting: {SETTING}",
                    "Pomms: an ensemble of evaluators", "fitted on the train split of `mybench`"):
        assert heading in report
    assert (f"Images: nocaps validation (nocaps_val_4500_captions.json), a sample of "
            f"{NOCAPS_SELECTED} (seed 3); 5 human reference captions each.") in report
    assert ("Judgement datasets: `flickr8k_expert`: Flickr8k-Expert, flickr8k.json; `nebula`: "
            "Nebula (test split), nebula_test.json; `mybench`: a judgement table, "
            "judgements.csv.") in report
    for dataset, split in rows:
        if split != "train":
            assert f"τ_b {dataset} {split}" in report

    assert planned_jobs(caption_project) == Counter()
    # an edited dataset file reruns its import and what follows from it, nothing else
    nebula = Path(params["pomms"]["datasets"]["nebula"]["path"])
    nebula.write_text(nebula.read_text() + "\n")
    expected = Counter([job("judgements", dataset="nebula"), job("pomms"),
                        job("pomms_heatmap"), job("card"), job("report")])
    expected.update(job("judge_items", setting=SETTING, dataset="nebula", evaluator=model)
                    for model in MODELS)
    assert planned_jobs(caption_project) == expected


# ------------------------------------------- an edited dataset reruns its study (issue 39)


@pytest.mark.slow
def test_an_edited_caption_or_image_reruns_philautia_through_both_doors(tmp_path,
                                                                        default_params):
    """Philautia's dataset step declares the nocaps annotations and every image under
    image_dir: a corrected reference caption or a replaced image reruns the dataset job
    and everything after it (Snakemake) and names the `dataset` stage (`dvc status`), and
    nothing else; untouched, the files plan nothing."""
    annotations, image_dir = write_nocaps(tmp_path / "published", np.random.default_rng(19))
    params = study_params(default_params, "philautia", small=True)
    philautia = params["philautia"]
    philautia["dataset"] = {"name": "nocaps", "nocaps": {
        "annotations": str(annotations), "image_dir": str(image_dir),
        "n_images": NOCAPS_SELECTED, "n_references": 5, "seed": 3, "missing": "error"}}
    philautia.update(n_bootstrap=20, n_permutations=100,
                     settings={SETTING: philautia["settings"][SETTING]})
    project = recorded_project(tmp_path / "project", params)
    assert data_deps(project, "dataset") == {str(annotations.parent)}  # one folder
    selected = pd.read_parquet(project / "data/dataset/images.parquet")
    first = int(selected["image_id"][0].removeprefix("nocaps-"))

    def recaption(data: dict) -> None:  # a reference the table holds: its image's first
        used = min((a for a in data["annotations"] if a["image_id"] == first),
                   key=lambda annotation: annotation["id"])
        used["caption"] += " (corrected)"

    assert_edits_rerun(project, [(annotations, edit_json(recaption)),
                                 (Path(selected["image_path"][0]), repaint)],
                       "dataset", "dataset")


@pytest.mark.slow
def test_an_edited_rating_or_image_reruns_pomms_through_both_doors(tmp_path, default_params):
    """Pomms' judgements step declares the judgement file and every image under its
    image_dir: a corrected human score or a replaced image (one named by image_file, one
    found by its image_id) reruns that dataset's jobs and what follows (Snakemake) and
    names its judgements stage (`dvc status`), never philautia's; untouched, the files
    plan nothing."""
    table, image_dir = write_table(tmp_path / "published", np.random.default_rng(19))
    params = study_params(default_params, "philautia", "pomms", small=True)
    philautia = params["philautia"]
    philautia["dataset"]["synthetic"]["n_images"] = 6
    philautia.update(n_bootstrap=20, n_permutations=100,
                     settings={SETTING: philautia["settings"][SETTING]})
    params["pomms"].update(setting=SETTING, judgement_setting=None, train_dataset="mybench",
                           datasets={"mybench": {"format": "table", "path": str(table),
                                                 "image_dir": str(image_dir)}})
    project = recorded_project(tmp_path / "project", params)
    assert data_deps(project, "judgements__mybench") == {str(table.parent)}  # one folder
    assert_edits_rerun(project, [(table, edit_csv(0, "human_score", "0.999")),
                                 (image_dir / "photo-1.jpg", repaint),
                                 (image_dir / "mb000.png", repaint)],
                       "judgements", "judgements__mybench")
