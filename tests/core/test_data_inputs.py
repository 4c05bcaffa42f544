"""What a data step declares, and how dvc.yaml lists it (issue 39 item 1).

Each study's data step declares every file its importer reads: the annotation files and
every file under the image folders (judgebias.data.paths.input_files, called by each
study's ``data`` module), and judgebias.workflow.dvc_export writes a folder whose every
file is a dep as one dep. The study tests run the pipeline on each published format and
edit a row and an image (tests/helpers/data_inputs.py); here, the pieces: the walk, the
collapse, and that every image an importer puts in its table is among the files its data
step declares, for the formats those tests do not run (Flickr8k-Expert, Nebula,
MLLM-as-a-Judge) and the ones they do.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from helpers.birch import jsonl, mllm_row, real_dataset, vl_row
from PIL import Image
from test_caption_data_pipeline import (
    write_flickr8k_expert,
    write_nebula,
    write_nocaps,
    write_table,
)

from judgebias.data.paths import files_under, input_files
from judgebias.studies.birch.data.pairs import dataset_files as birch_files
from judgebias.studies.birch.data.pairs import load_pairs
from judgebias.studies.frame.data import dataset_files as frame_files
from judgebias.studies.mmb.data.pairs import dataset_files as mmb_files
from judgebias.studies.philautia.data import build_dataset, dataset_files
from judgebias.studies.pomms.data import build_judgements, judgement_files
from judgebias.workflow.dvc_export import SourceFolders


def touch(path: Path, text: str = "x") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def png(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (8, 8), (200, 30, 30)).save(path)
    return path


# -- the walk ------------------------------------------------------------------------------------

def test_files_under_lists_every_file_at_any_depth_sorted_without_hidden_names(tmp_path):
    for name in ("b.jpg", "a/z.png", "a/b/c.jpg", ".DS_Store", ".git/HEAD", "a/._x.jpg"):
        touch(tmp_path / "set" / name)
    (tmp_path / "set" / "empty").mkdir()
    root = str(tmp_path / "set")
    assert files_under(root) == [f"{root}/a/b/c.jpg", f"{root}/a/z.png", f"{root}/b.jpg"]


def test_files_under_keeps_a_relative_folder_relative(tmp_path, monkeypatch):
    touch(tmp_path / "data/set/x.jpg")
    monkeypatch.chdir(tmp_path)
    assert files_under("data/set/") == files_under("./data/set") == ["data/set/x.jpg"]


def test_files_under_follows_links_once_and_lists_nothing_for_a_missing_folder(tmp_path):
    store = tmp_path / "store"
    touch(store / "shared.jpg")
    touch(tmp_path / "set/own.jpg")
    (tmp_path / "set/linked").symlink_to(store)
    (tmp_path / "set/loop").symlink_to(tmp_path / "set")  # a link back up the tree ends
    (tmp_path / "set/broken.jpg").symlink_to(tmp_path / "gone.jpg")  # nothing to read
    root = tmp_path / "set"
    assert files_under(root) == [f"{root}/linked/shared.jpg", f"{root}/own.jpg"]
    assert files_under(tmp_path / "absent") == []
    assert files_under(touch(tmp_path / "file")) == []


def test_input_files_lists_files_then_folders_each_once(tmp_path):
    folder = tmp_path / "set"
    annotations = touch(folder / "data.jsonl")
    image = touch(folder / "images/x.jpg")
    assert input_files([annotations, None, str(annotations)], [folder, None]) == [
        str(annotations), str(image)]
    assert input_files([None]) == []


# -- every image an importer reads is declared ---------------------------------------------------

def _declared_and_read_nocaps(root: Path) -> tuple[list[str], list[str]]:
    annotations, image_dir = write_nocaps(root, np.random.default_rng(1))
    spec = {"name": "nocaps", "nocaps": {
        "annotations": str(annotations), "image_dir": str(image_dir), "n_images": 4,
        "n_references": 5, "seed": 3, "missing": "error", "domains": None}}
    table = build_dataset(spec, root / "out" / "images")
    return dataset_files(spec), [str(annotations), *table["image_path"]]


def _declared_and_read_pomms(root: Path, kind: str) -> tuple[list[str], list[str]]:
    writer = {"flickr8k_expert": write_flickr8k_expert, "nebula": write_nebula,
              "table": write_table}[kind]
    path, image_dir = writer(root, np.random.default_rng(1))
    spec = {"format": kind, "path": str(path), "image_dir": str(image_dir),
            "missing": "error", "split": "test"}
    table = build_judgements(kind, spec, root / "out" / "images")
    return judgement_files(spec), [str(path), *table["image_path"]]


def _declared_and_read_birch(root: Path, kind: str) -> tuple[list[str], list[str]]:
    if kind == "vl_rewardbench":
        rows = [vl_row(i, ranking=(0, 1) if i % 2 else (1, 0)) for i in range(3)]
    else:
        rows = [mllm_row(i, label="AB"[i % 2]) for i in range(3)]
    for row in rows:
        png(root / "bench" / row["image_path"])
    first = rows[0]["id"] if kind == "vl_rewardbench" else f"{rows[0]['id']}:0"  # pair id
    overrides = touch(root / "labels.yaml", f"'{first}': B\n")
    path = jsonl(root / "bench" / "data.jsonl", rows)
    dataset = real_dataset(kind, path, root / "bench", overrides=str(overrides))
    pairs = load_pairs("bench", dataset, root / "out" / "images", 0)
    return birch_files(dataset), [str(path), str(overrides), *pairs["image"]]


@pytest.mark.parametrize("source", ["nocaps", "flickr8k_expert", "nebula", "table",
                                    "vl_rewardbench", "mllm_judge"])
def test_every_file_an_importer_reads_is_declared(tmp_path, source):
    if source == "nocaps":
        declared, read = _declared_and_read_nocaps(tmp_path)
    elif source in ("vl_rewardbench", "mllm_judge"):
        declared, read = _declared_and_read_birch(tmp_path, source)
    else:
        declared, read = _declared_and_read_pomms(tmp_path, source)
    assert read and {os.path.normpath(p) for p in read} <= set(declared)
    assert declared == list(dict.fromkeys(declared))
    assert not any(Path(p).is_relative_to(tmp_path / "out") for p in declared)


def test_a_synthetic_dataset_declares_nothing(default_params):
    assert dataset_files(default_params["philautia"]["dataset"]) == []
    assert judgement_files(default_params["pomms"]["datasets"]["synthetic"]) == []
    assert birch_files(default_params["birch"]["datasets"]["synthetic"]) == []
    assert mmb_files(default_params["mmb"]["dataset"]) == []
    assert frame_files(default_params["frame"]["dataset"]) == []
    scored = {**default_params["frame"]["dataset"]}  # imported human scores are read
    scored["synthetic"] = {**scored["synthetic"], "annotators": {"scores": "scores.csv"}}
    assert frame_files(scored) == ["scores.csv"]


# -- dvc.yaml: a folder listed whole is one dep ---------------------------------------------------

def test_a_folder_whose_every_file_is_a_dep_becomes_one_dep(tmp_path):
    project, bench = tmp_path / "project", tmp_path / "data" / "bench"
    touch(project / "Snakefile")
    files = [touch(bench / name) for name in ("data.jsonl", "images/a/1.jpg",
                                              "images/a/2.jpg", "images/b/3.jpg")]
    touch(bench / ".DS_Store")  # hidden: not the dataset's, not declared
    folders = SourceFolders(project, ["out/pairs.parquet", "out/images"])
    deps = [*map(str, files), "out/pairs.parquet", "src/x.txt"]
    # `data` holds nothing more than `bench`: the folder written is `bench`
    assert folders.collapse(deps) == sorted([str(bench), "out/pairs.parquet", "src/x.txt"])
    # without the benchmark file, `bench` is not every file a dep: its images folder is
    assert SourceFolders(project, []).collapse([str(f) for f in files[1:]]) == [
        str(bench / "images")]


def test_a_folder_inside_the_project_is_written_relative(tmp_path):
    project = tmp_path / "project"
    touch(project / "Snakefile")
    files = [touch(project / "datasets/bench" / name) for name in ("a.jpg", "b.jpg")]
    deps = [str(f.relative_to(project)) for f in files]
    assert SourceFolders(project, []).collapse(deps) == ["datasets/bench"]


@pytest.mark.parametrize("case", ["extra file", "one file", "output inside", "inside output",
                                  "link"])
def test_a_folder_is_kept_as_its_files_unless_it_is_exactly_them(tmp_path, case):
    project, bench = tmp_path / "project", tmp_path / "bench"
    touch(project / "Snakefile")
    files = [touch(bench / name) for name in ("1.jpg", "2.jpg")]
    outputs: list[str] = []
    if case == "extra file":
        touch(bench / "notes.txt")  # a file the step does not read
    elif case == "one file":
        files = files[:1]
        (bench / "2.jpg").unlink()
    elif case == "output inside":
        outputs = [str(bench / "derived.parquet")]  # a job writes here: never a dep whole
    elif case == "inside output":
        outputs = [str(tmp_path)]
    else:
        (bench / "3.jpg").symlink_to(files[0])
        files.append(bench / "3.jpg")
    deps = [str(f) for f in files]
    assert SourceFolders(project, outputs).collapse(deps) == sorted(deps)
