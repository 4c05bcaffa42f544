"""Tests for judgebias.studies.birch.data.importers (seed 003 App. B; spec birch.md,
"VL-RewardBench labels"): label conventions, seeded order, errors, overrides, images."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from helpers.birch import jsonl, mllm_row, vl_row
from helpers.project import shared_data_dir

from judgebias.io.artifacts import read_table, write_table
from judgebias.studies.birch.data.importers import (
    apply_overrides,
    check_images,
    read_mllm_judge,
    read_vl_rewardbench,
)
from judgebias.studies.birch.tables import PAIRS

PAPER_ERRORS = ("RLAIF-V-40322", "wildvision-battle-2852", "RLAIF-V-2190", "RLHF-V-3339")
FLIP = {"A": "B", "B": "A", "tie": "tie"}


def err(path: Path, text: str) -> str:
    """A pytest.raises pattern: the message starts with the file, then `text`."""
    return "^" + re.escape(f"{path}: {text}")


def file_preference(pairs: pd.DataFrame) -> pd.Series:
    """The human preference in the benchmark file's order ("A" = the file's first)."""
    return pd.Series([FLIP[p] if o == "ba" else p for p, o in
                      zip(pairs["preference"], pairs["file_order"], strict=True)],
                     index=pairs.index)


def file_answers(pairs: pd.DataFrame) -> list[tuple[str, str]]:
    return [(a, b) if o == "ab" else (b, a) for a, b, o in
            zip(pairs["answer_a"], pairs["answer_b"], pairs["file_order"], strict=True)]


# -- VL-RewardBench ------------------------------------------------------------------------------

def test_vl_rewardbench_reads_ranks_and_conforms(tmp_path: Path) -> None:
    rows = [vl_row(0, (0, 1)), vl_row(1, (1, 0)), vl_row(2, (0, 0)),
            vl_row(3, (0, 1), image_path="images/vlfeedback/x.jpg", query_source=...)]
    pairs = read_vl_rewardbench(jsonl(tmp_path / "vl.jsonl", rows), "root", seed=0)
    assert pairs.columns.tolist() == PAIRS.names
    assert file_preference(pairs).tolist() == ["A", "B", "tie", "A"]
    assert pairs["domain"].tolist() == ["povid", "povid", "povid", "vlfeedback"]
    assert pairs["image"].iloc[3] == str(Path("root") / "images/vlfeedback/x.jpg")
    assert set(pairs["source"]) == {"vl_rewardbench"}
    assert not pairs["overridden"].any()
    assert pairs["correct_a"].isna().all() and pairs["padding_b"].isna().all()
    assert file_answers(pairs)[1] == ("first 1", "second 1")
    write_table(pairs, tmp_path / "pairs.parquet", PAIRS)
    assert read_table(tmp_path / "pairs.parquet", PAIRS)["pair_id"].tolist() == \
        pairs["pair_id"].tolist()


def test_vl_rewardbench_seeded_order_is_stable(tmp_path: Path) -> None:
    rows = [vl_row(i) for i in range(60)]
    path = jsonl(tmp_path / "vl.jsonl", rows)
    pairs = read_vl_rewardbench(path, "root", seed=7)
    again = read_vl_rewardbench(path, "root", seed=7)
    pd.testing.assert_frame_equal(pairs, again)
    assert set(pairs["file_order"]) == {"ab", "ba"}  # 60 draws: both orders occur
    # a row's draw depends on (seed, id) only: drop and shuffle rows, the draws stay
    subset = jsonl(tmp_path / "subset.jsonl", rows[::-1][::3])
    fewer = read_vl_rewardbench(subset, "root", seed=7).set_index("pair_id")
    assert fewer["file_order"].to_dict() == \
        pairs.set_index("pair_id").loc[fewer.index, "file_order"].to_dict()
    other = read_vl_rewardbench(path, "root", seed=8)
    assert other["file_order"].tolist() != pairs["file_order"].tolist()


def test_vl_rewardbench_swap_maps_answers_models_and_preference(tmp_path: Path) -> None:
    rows = [vl_row(i, (0, 1) if i % 2 else (1, 0)) for i in range(40)]
    pairs = read_vl_rewardbench(jsonl(tmp_path / "vl.jsonl", rows), "root", seed=3)
    for row, pair in zip(rows, pairs.to_dict("records"), strict=True):
        first_preferred = row["human_ranking"] == [0, 1]
        if pair["file_order"] == "ab":
            assert (pair["answer_a"], pair["model_a"]) == (row["response"][0],
                                                          row["models"][0])
            assert pair["preference"] == ("A" if first_preferred else "B")
        else:
            assert (pair["answer_a"], pair["model_a"]) == (row["response"][1],
                                                          row["models"][1])
            assert (pair["answer_b"], pair["model_b"]) == (row["response"][0],
                                                          row["models"][0])
            assert pair["preference"] == ("B" if first_preferred else "A")


@pytest.mark.parametrize(("row", "where"), [
    ('{"id": "x", ', "row 2: (row): not JSON"),
    ("[1, 2]", None),  # a JSON array of non-objects: the whole file is an array
    (vl_row(1, id=...), "row 2: id: missing"),
    (vl_row(1, response=["only one"]), "row 2: response: must be a list of two strings"),
    (vl_row(1, response=["a", 3]), "row 2: response: must be a list of two strings"),
    (vl_row(1, response="ab"), "row 2: response:"),
    (vl_row(1, ranking=(0, 2)), "row 2: human_ranking: must be two ranks"),
    (vl_row(1, ranking=(0,)), "row 2: human_ranking:"),
    (vl_row(1, human_ranking=[True, False]), "row 2: human_ranking:"),
    (vl_row(1, human_ranking=["0", "1"]), "row 2: human_ranking:"),
    (vl_row(1, human_ranking=...), "row 2: human_ranking: missing"),
    (vl_row(1, models=...), "row 2: models: missing"),
    (vl_row(1, query=...), "row 2: query: missing"),
    (vl_row(1, image_path="x.jpg"), "row 2: image_path: 'x.jpg' has no folder"),
    (vl_row(1, image_path="/abs/images/a/x.jpg"), "row 2: image_path:"),
])
def test_vl_rewardbench_errors_name_file_row_key(tmp_path: Path, row: Any,
                                                 where: str | None) -> None:
    path = jsonl(tmp_path / "bad.jsonl", [vl_row(0), row])
    if where is None:
        path.write_text("[1, 2]")
        where = "row 1: (row): not a JSON object"
    with pytest.raises(ValueError, match=err(path, where)):
        read_vl_rewardbench(path, "root", seed=0)


def test_vl_rewardbench_repeated_ids(tmp_path: Path) -> None:
    # the released file repeats ids with other answers: distinct pairs, "<id>#<k>"
    other = vl_row(0, response=["third", "fourth"])
    pairs = read_vl_rewardbench(jsonl(tmp_path / "vl.jsonl", [vl_row(0), vl_row(1), other]),
                                "root", seed=0)
    assert pairs["pair_id"].tolist() == ["item-0#1", "item-1", "item-0#2"]
    path = jsonl(tmp_path / "dup.jsonl", [vl_row(0), vl_row(1), vl_row(0)])
    with pytest.raises(ValueError, match=err(path, "row 3: id: 'item-0' repeats row 1")):
        read_vl_rewardbench(path, "root", seed=0)


def test_vl_rewardbench_bad_seed_and_empty_file(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "vl.jsonl", [vl_row(0)])
    with pytest.raises(ValueError, match="seed"):
        read_vl_rewardbench(path, "root", seed=-1)
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(ValueError, match="no rows"):
        read_vl_rewardbench(tmp_path / "empty.jsonl", "root", seed=0)


# -- MLLM-as-a-Judge -----------------------------------------------------------------------------

def test_mllm_judge_both_label_keys_and_tie(tmp_path: Path) -> None:
    rows = [mllm_row(0, "A"), mllm_row(1, "B", key="human"), mllm_row(2, "C"),
            mllm_row(3, "C", key="human"), mllm_row(4, "B", human="B")]
    pairs = read_mllm_judge(jsonl(tmp_path / "pairs.jsonl", rows), "imgs", seed=None)
    assert pairs.columns.tolist() == PAIRS.names
    assert pairs["preference"].tolist() == ["A", "B", "tie", "tie", "B"]
    assert set(pairs["file_order"]) == {"ab"}
    assert pairs["pair_id"].tolist() == [f"{i}:0" for i in range(5)]
    assert set(pairs["domain"]) == {"COCO"} and set(pairs["source"]) == {"mllm_judge"}
    assert pairs["image"].iloc[0] == str(Path("imgs") / "img/0.jpg")
    assert (pairs["model_a"].iloc[0], pairs["model_b"].iloc[0]) == ("gpt4v", "gemini")
    assert pairs["query"].iloc[1] == "describe 1"
    write_table(pairs, tmp_path / "pairs.parquet", PAIRS)


def test_mllm_judge_json_array_and_no_pair_id(tmp_path: Path) -> None:
    rows = [mllm_row(0, pair_id=...), mllm_row(1, "B", key="human", pair_id=...)]
    path = tmp_path / "pairs.json"
    path.write_text(json.dumps(rows, indent=1))
    pairs = read_mllm_judge(path, "imgs", seed=None)
    assert pairs["pair_id"].tolist() == ["0", "1"]
    assert pairs["preference"].tolist() == ["A", "B"]


def test_mllm_judge_seeded_swap(tmp_path: Path) -> None:
    rows = [mllm_row(i, "AB"[i % 2]) for i in range(40)]
    path = jsonl(tmp_path / "pairs.jsonl", rows)
    pairs = read_mllm_judge(path, "imgs", seed=5)
    assert set(pairs["file_order"]) == {"ab", "ba"}
    assert file_preference(pairs).tolist() == ["AB"[i % 2] for i in range(40)]
    swapped = pairs[pairs["file_order"] == "ba"].iloc[0]
    i = int(swapped["pair_id"].split(":")[0])
    assert (swapped["answer_a"], swapped["model_a"]) == (f"second {i}", "gemini")
    pd.testing.assert_frame_equal(pairs, read_mllm_judge(path, "imgs", seed=5))


@pytest.mark.parametrize(("row", "where"), [
    (mllm_row(1, human_answer=...), "row 2: human_answer: missing"),
    (mllm_row(1, "D"), "row 2: human_answer: 'D' is not one of A, B, C"),
    (mllm_row(1, "A", human="B"), "row 2: human: 'B' disagrees"),
    (mllm_row(1, ["A"]), "row 2: human_answer: ['A'] is not one of A, B, C"),
    (mllm_row(1, answer1={"name": "x"}), "row 2: answer1.answer: missing"),
    (mllm_row(1, answer2="text"), "row 2: answer2: must be an object"),
    (mllm_row(1, original_dataset=...), "row 2: original_dataset: missing"),
    (mllm_row(1, image_path=...), "row 2: image_path: missing"),
    (mllm_row(0), "row 2: pair_id: pair '0:0' is also row 1"),
    (mllm_row(1, id=None), "row 2: id: missing"),
])
def test_mllm_judge_errors_name_file_row_key(tmp_path: Path, row: dict[str, Any],
                                             where: str) -> None:
    path = jsonl(tmp_path / "bad.jsonl", [mllm_row(0), row])
    with pytest.raises(ValueError, match=err(path, where)):
        read_mllm_judge(path, "imgs", seed=None)


def test_mllm_judge_duplicate_id_without_pair_id(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "bad.jsonl", [mllm_row(3, pair_id=...),
                                          mllm_row(3, pair_id=...)])
    with pytest.raises(ValueError, match=err(path, "row 2: id: pair '3' is also row 1")):
        read_mllm_judge(path, "imgs", seed=None)


# -- overrides -----------------------------------------------------------------------------------

def test_overrides_map_through_the_shown_order(tmp_path: Path) -> None:
    rows = [vl_row(i) for i in range(20)]
    pairs = read_vl_rewardbench(jsonl(tmp_path / "vl.jsonl", rows), "root", seed=1)
    kept = pairs[pairs["file_order"] == "ab"]["pair_id"].iloc[0]
    swapped = pairs[pairs["file_order"] == "ba"]["pair_id"].iloc[0]
    unchanged = pairs["pair_id"].iloc[-1]
    overrides = tmp_path / "overrides.yaml"
    overrides.write_text(f"{kept}: B\n{swapped}: B\n{unchanged}: A\n")
    out = apply_overrides(pairs, overrides)
    by_id = out.set_index("pair_id")
    assert by_id.loc[kept, "preference"] == "B"  # shown as in the file
    assert by_id.loc[swapped, "preference"] == "A"  # the file's second is shown first
    assert file_preference(out).set_axis(out["pair_id"])[[kept, swapped]].tolist() == \
        ["B", "B"]
    assert sorted(out.loc[out["overridden"], "pair_id"]) == sorted([kept, swapped])
    assert not pairs["overridden"].any()  # the input is not modified
    write_table(out, tmp_path / "pairs.parquet", PAIRS)


def test_overrides_csv_and_colon_ids(tmp_path: Path) -> None:
    pairs = read_mllm_judge(jsonl(tmp_path / "p.jsonl", [mllm_row(i) for i in range(3)]),
                            "imgs", seed=None)
    csv = tmp_path / "overrides.csv"
    csv.write_text("pair_id,preference\n1:0,tie\n")
    assert apply_overrides(pairs, csv)["preference"].tolist() == ["A", "tie", "A"]
    yml = tmp_path / "overrides.yml"
    yml.write_text("1:0: B\n")  # YAML 1.1 would read 1:0 as a sexagesimal number
    assert apply_overrides(pairs, yml)["preference"].tolist() == ["A", "B", "A"]


@pytest.mark.parametrize(("text", "message"), [
    ("nope: A\n", "pair_id 'nope': not in the pair table"),
    ("1:0: D\n", "pair_id '1:0': label 'D' is not one of A, B, tie"),
    ("- 1:0\n", "an override YAML file is a mapping"),
])
def test_override_errors_name_file_and_id(tmp_path: Path, text: str, message: str) -> None:
    pairs = read_mllm_judge(jsonl(tmp_path / "p.jsonl", [mllm_row(i) for i in range(3)]),
                            "imgs", seed=None)
    path = tmp_path / "overrides.yaml"
    path.write_text(text)
    with pytest.raises(ValueError, match=err(path, message)):
        apply_overrides(pairs, path)
    csv = tmp_path / "overrides.csv"
    csv.write_text("pair_id,preference\n0:0,A\nnope,A\n")
    with pytest.raises(ValueError, match=err(csv, "row 2: pair_id 'nope': not in the pair")):
        apply_overrides(pairs, csv)


# -- images --------------------------------------------------------------------------------------

def test_check_images(tmp_path: Path) -> None:
    rows = [vl_row(i) for i in range(9)]
    pairs = read_vl_rewardbench(jsonl(tmp_path / "vl.jsonl", rows), str(tmp_path), seed=0)
    for i in (0, 1):
        image = tmp_path / f"images/povid/item-{i}.jpg"
        image.parent.mkdir(parents=True, exist_ok=True)
        image.write_bytes(b"jpg")
    lines = check_images(pairs, "vl.jsonl")
    assert len(lines) == 6
    assert lines[0] == f"vl.jsonl: pair item-2: image {tmp_path}/images/povid/item-2.jpg " \
        "does not exist"
    assert lines[-1] == "vl.jsonl: 7 of 9 pairs have no image file (2 more not named)"
    assert check_images(pairs.iloc[:2], "vl.jsonl") == []


# -- the real VL-RewardBench file ----------------------------------------------------------------

@pytest.fixture(scope="module")
def real_vl() -> Path:
    path = shared_data_dir() / "pairwise-judgments" / "vl_rewardbench.jsonl"
    if not path.exists():
        pytest.skip(f"real data absent: {path} (see ../shared/data/README.md)")
    return path


def test_real_vl_rewardbench_labels(real_vl: Path, tmp_path: Path) -> None:
    pairs = read_vl_rewardbench(real_vl, "images_root", seed=0)
    assert len(pairs) == 1250 and pairs["pair_id"].is_unique
    write_table(pairs, tmp_path / "pairs.parquet", PAIRS)
    in_file = file_preference(pairs)
    assert in_file.value_counts().to_dict() == {"A": 1245, "B": 5}
    assert 0.45 < (pairs["preference"] == "A").mean() < 0.55  # randomised: about half
    assert set(pairs["domain"]) == {"povid", "reasoning_tasks", "rlaif-v",
                                    "wildvision-battle", "rlhf-v", "vlfeedback"}
    # the paper's four "human labelling errors": ranks [0, 1], the file's first preferred
    raw = {r["id"]: r for r in map(json.loads, real_vl.read_text().splitlines())}
    by_id = pairs.set_index("pair_id")
    for item in PAPER_ERRORS:
        assert raw[item]["human_ranking"] == [0, 1]
        assert in_file.set_axis(pairs["pair_id"])[item] == "A"
        row = by_id.loc[item]
        preferred = row["answer_a"] if row["preference"] == "A" else row["answer_b"]
        assert preferred == raw[item]["response"][0]


def test_real_vl_rewardbench_order_other_seed(real_vl: Path) -> None:
    pairs = read_vl_rewardbench(real_vl, "images_root", seed=1)
    assert 0.45 < (pairs["preference"] == "A").mean() < 0.55
    assert file_preference(pairs).value_counts().to_dict() == {"A": 1245, "B": 5}
