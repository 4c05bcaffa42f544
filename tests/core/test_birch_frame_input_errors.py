"""Bad inputs of BIRCH and FRAME stop before any model call, in one line that names the
params key, the file and the row (rows counted from 1) (issue 19, parts 2-5): a data path
that climbs out of its image folder, malformed JSON, CSV and YAML files, label files read
only by the analysis, data the measures cannot use, and params that cross-reference
nothing (all-zero k weights, combinations larger than the manipulations run; BIRCH's
labeller and lengthener outside the panel: tests/birch/test_birch_study.py)."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pandas as pd
import pytest
from helpers.birch import jsonl, mllm_row, real_dataset, vl_row
from helpers.frame import GOOD, write_frame_csv, write_png

from judgebias.cli import main
from judgebias.config import ConfigError, validate_params
from judgebias.studies.birch.data.importers import (
    apply_overrides,
    read_mllm_judge,
    read_vl_rewardbench,
)
from judgebias.studies.birch.data.pairs import load_pairs
from judgebias.studies.frame import steps
from judgebias.studies.frame.data import read_frame_table
from judgebias.studies.frame.params import FrameParams

ESCAPES = [("../outside.jpg", "leaves its folder"),
           ("images/../../outside.jpg", "leaves its folder"),
           ("/etc/outside.jpg", "not an absolute path")]


# -- BIRCH ---------------------------------------------------------------------------------------

@pytest.mark.parametrize(("image", "message"), ESCAPES)
@pytest.mark.parametrize(("name", "row", "read"), [
    ("vl_rewardbench", vl_row, read_vl_rewardbench),
    ("mllm_judge", mllm_row, read_mllm_judge)])
def test_birch_image_paths_stay_inside_their_folder(tmp_path, image, message, name, row,
                                                    read):
    source = jsonl(tmp_path / "data.jsonl", [row(1), row(2, image_path=image)])
    with pytest.raises(ValueError, match=re.escape(f"{source}: row 2: image_path: "
                                                   f"{image!r}") + ".*" + message):
        read(source, str(tmp_path / "bench"), 0)
    # the data step names the params key too, before any image is opened or model called
    dataset = real_dataset(name, source, tmp_path / "bench")
    with pytest.raises(ConfigError, match=f"^birch.datasets.bench: {re.escape(str(source))}: "
                                          "row 2: image_path: "):
        load_pairs("bench", dataset, tmp_path / "unused", seed=0)


def test_a_dotdot_that_stays_inside_the_folder_is_kept(tmp_path):
    source = jsonl(tmp_path / "data.jsonl", [vl_row(1, image_path="images/x/../povid/a.jpg")])
    pairs = read_vl_rewardbench(source, str(tmp_path), 0)
    assert pairs.loc[0, "image"] == str(tmp_path / "images/povid/a.jpg")


def test_a_json_array_syntax_error_names_the_file(tmp_path):
    source = tmp_path / "pair.json"
    source.write_text(json.dumps([mllm_row(1)])[:-2])
    with pytest.raises(ValueError, match=f"^{re.escape(str(source))}: not a JSON array"):
        read_mllm_judge(source, str(tmp_path), None)


def test_override_files_with_bad_syntax_name_the_file_and_where(tmp_path):
    pairs = read_vl_rewardbench(jsonl(tmp_path / "vl.jsonl", [vl_row(1), vl_row(2)]),
                                str(tmp_path), 0)
    yaml_file = tmp_path / "overrides.yaml"
    yaml_file.write_text("item-1: A\nitem-2: [B\n")
    with pytest.raises(ValueError, match=f"^{re.escape(str(yaml_file))}: line 3: not valid "
                                         "YAML"):
        apply_overrides(pairs, yaml_file)
    csv_file = tmp_path / "overrides.csv"
    csv_file.write_text("pair_id,preference\nitem-1,A\nitem-2,B,extra\n")
    with pytest.raises(ValueError, match=f"^{re.escape(str(csv_file))}: row 2: not valid CSV"):
        apply_overrides(pairs, csv_file)


@pytest.mark.parametrize(("text", "suffix", "message"), [
    ("pair_id,label\np1,A\np2,C\n", "csv", "row 2: label 'C' is not A or B"),
    ("pair_id,label\np1,A\np1,B\n", "csv", "row 2: pair_id 'p1' is given twice"),
    ("pair_id,choice\np1,A\n", "csv", "needs the columns pair_id and label"),
    ("p1: A\np2: [B\n", "yaml", "line 3: not valid YAML"),
    ("p1: A\np2: tie\n", "yaml", "pair_id 'p2': label 'tie' is not A or B"),
])
def test_reference_labels_are_checked_by_validate(tmp_path, default_params, text, suffix,
                                                  message):
    """The Table 7 labels are read by the analysis, after every judge call: validate reads
    them first."""
    labels = tmp_path / f"labels.{suffix}"
    labels.write_text(text)
    params = copy.deepcopy(default_params)
    params["birch"]["datasets"]["synthetic"]["reference_labels"] = str(labels)
    with pytest.raises(ConfigError, match=re.escape("birch.datasets.synthetic.reference_labels"
                                                    f": {labels}: {message}")):
        validate_params(params)


def test_only_human_ties_stop_the_data_step(tmp_path):
    source = jsonl(tmp_path / "pair.jsonl", [mllm_row(i, label="C") for i in range(3)])
    for i in range(3):
        write_png(tmp_path / f"img/{i}.jpg")
    dataset = real_dataset("mllm_judge", source, tmp_path)
    with pytest.raises(ConfigError, match=r"^birch\.datasets\.mllm: all 3 pairs are human "
                                          "ties"):
        load_pairs("mllm", dataset, tmp_path / "unused", seed=0)


# -- FRAME ---------------------------------------------------------------------------------------

def frame_table_params(default_params: dict, table: Path, image_root: Path) -> dict:
    params = validate_params(copy.deepcopy(default_params))
    params["frame"]["dataset"] = {"name": "table", "table": {"path": str(table),
                                                             "image_root": str(image_root)}}
    return params


@pytest.mark.parametrize(("image", "message"), ESCAPES)
@pytest.mark.parametrize("key", ["image", "image_b"])
def test_frame_image_paths_stay_inside_image_root(tmp_path, default_params, image, message,
                                                  key):
    write_png(tmp_path / "outside.jpg")  # exists: the path is refused for where it points
    table = write_frame_csv(tmp_path, [GOOD, GOOD | {"item_id": "p-2", key: image}])
    with pytest.raises(ValueError, match=re.escape(f"frame.csv: row 2: {key}: {image!r}")
                       + ".*" + message):
        read_frame_table(table, tmp_path / "img")
    config = frame_table_params(default_params, table, tmp_path / "img")
    with pytest.raises(ConfigError, match=f"^frame.dataset.table: {re.escape(str(table))}: "
                                          f"row 2: {key}: "):
        steps.items(FrameParams.from_params(config), benchmark=tmp_path / "items.parquet",
                    summary=tmp_path / "summary.json")
    assert not (tmp_path / "items.parquet").exists()


def test_frame_table_syntax_errors_name_the_file_and_row(tmp_path):
    write_png(tmp_path / "img" / "a.png")
    table = tmp_path / "frame.csv"
    pd.DataFrame([GOOD]).to_csv(table, index=False)
    table.write_text(table.read_text() + "p-2,people,x\n" + 'p-3,"people\n')
    with pytest.raises(ValueError, match=f"^{re.escape(str(table))}: row 3: not valid CSV"):
        read_frame_table(table, tmp_path / "img")
    lines = tmp_path / "frame.json"
    lines.write_text(json.dumps([GOOD])[:-1])
    with pytest.raises(ValueError, match=f"^{re.escape(str(lines))}: not a JSON array"):
        read_frame_table(lines, tmp_path / "img")
    lines = tmp_path / "frame.jsonl"
    lines.write_text(json.dumps(GOOD) + "\n" + json.dumps(GOOD)[:-1] + "\n")
    with pytest.raises(ValueError, match=f"^{re.escape(str(lines))}: row 2: \\(row\\): not "
                                         "JSON"):
        read_frame_table(lines, tmp_path / "img")


def test_a_domain_needs_two_items_for_cross_fitting(tmp_path):
    table = write_frame_csv(tmp_path, [GOOD, GOOD | {"item_id": "p-2"},
                            GOOD | {"item_id": "o-1", "domain": "outdoor", "boxes": "",
                                    "concepts": ""}])
    with pytest.raises(ValueError, match=re.escape(f"{table}: row 3: domain: 'outdoor' has "
                                                   "only this item")):
        read_frame_table(table, tmp_path / "img")


def test_all_zero_k_weights_are_one_line_of_judgebias_validate(tmp_path, default_params,
                                                              capsys):
    params = copy.deepcopy(default_params)
    params["frame"]["dataset"]["synthetic"]["k_weights"] = [0, 0, 0]
    params_file = tmp_path / "params.yaml"
    params_file.write_text(json.dumps(params))
    assert main(["--params", str(params_file), "validate"]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert [line.strip() for line in lines if line.strip().startswith("frame.")] == [
        "frame.dataset.synthetic.k_weights: all zero; P(k concepts perturbed) is each "
        "weight over their sum, so at least one must be positive"]


def test_frame_cross_references_name_their_key(default_params):
    params = copy.deepcopy(default_params)
    params["frame"]["analysis_judge"] = "lumen-base"
    params["frame"]["dataset"]["synthetic"]["writer"] = "gpt-4o"
    params["frame"]["manipulations"] = {"brightness": [1.5], "padding": [40]}
    params["frame"]["pairwise"] = {"manipulation": "brightness"}
    with pytest.raises(ConfigError) as info:
        validate_params(params)
    errors = str(info.value)
    assert "frame.analysis_judge: 'lumen-base' is not one of frame.models" in errors
    assert "frame.dataset.synthetic.writer: model 'gpt-4o' is not defined under panel" in errors
    assert ("frame.combinations: 3 combines 3 manipulations, but frame.manipulations runs 2"
            in errors)
    assert "frame.combinations: 2" not in errors
