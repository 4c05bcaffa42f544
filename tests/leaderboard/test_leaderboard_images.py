"""An images task of the leaderboard on hand-made inputs: the synthetic world's prompts
and images (planted quality the MMB simulated judge reads back), the importers' errors
(each naming file and row), the planted win rates by hand, the pairwise methods' win
rates, and params validation of images tasks and mmb methods."""

from __future__ import annotations

import copy
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from judgebias.config import ConfigError, validate_params
from judgebias.studies.leaderboard.jobs import system_pairs
from judgebias.studies.leaderboard.methods import pair_matrix, single_pairwise, verdict
from judgebias.studies.leaderboard.pictures import (
    imported_pictures,
    imported_prompts,
    planted_win_rates,
    synthetic_pictures,
    synthetic_prompts,
)
from judgebias.studies.mmb.data.synthetic import perceive


def test_synthetic_images_carry_their_planted_quality_and_stay_when_a_system_is_added(
        tmp_path):
    prompts = synthetic_prompts(8)
    assert prompts["style"].nunique() == 4  # the styles take turns
    good = synthetic_pictures(prompts, "good", 0.9, 0.05, size=64, seed=3, folder=tmp_path)
    again = synthetic_pictures(prompts, "good", 0.9, 0.05, size=64, seed=3,
                               folder=tmp_path / "again")
    assert np.allclose(good["quality"], again["quality"])
    for path, q in zip(good["image_path"], good["quality"], strict=True):
        seen = perceive(Path(path).read_bytes())
        assert seen.quality == pytest.approx(q, abs=0.02)  # to the nearest defect block
    poor = synthetic_pictures(prompts, "poor", 0.3, 0.05, size=64, seed=3, folder=tmp_path)
    assert poor["quality"].mean() < good["quality"].mean() - 0.4


def test_planted_win_rates_by_hand():
    pictures = pd.DataFrame({"item_id": ["p1", "p1", "p2", "p2"],
                             "system": ["a", "b", "a", "b"],
                             "quality": [0.8, 0.5, 0.5, 0.5]})
    rates = planted_win_rates(pictures, ["a", "b"], gamma=6.0)
    sigmoid = 1 / (1 + math.exp(-1.8))
    assert rates["a"] == pytest.approx((sigmoid + 0.5) / 2)
    assert rates["a"] + rates["b"] == pytest.approx(1.0)
    unknown = pictures.assign(quality=[0.8, np.nan, 0.5, 0.5])
    assert planted_win_rates(unknown, ["a", "b"], 6.0).isna().all()


def write_image(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (8, 8)).save(path)


@pytest.fixture
def imported(tmp_path):
    (tmp_path / "prompts.csv").write_text("prompt_id,prompt\np1,a cat\np2,a ship\n")
    for name in ("p1.png", "p2.png"):
        write_image(tmp_path / "imgs" / name)
    return tmp_path, imported_prompts(tmp_path / "prompts.csv")


def test_imported_images_resolve_inside_the_files_folder(imported):
    folder, prompts = imported
    (folder / "mine.csv").write_text("prompt_id,image_path\np2,imgs/p2.png\np1,imgs/p1.png\n")
    table = imported_pictures(prompts, "mine", folder / "mine.csv")
    assert list(table["item_id"]) == ["p1", "p2"]  # the task's order
    assert table["image_path"].iloc[0] == str(folder / "imgs" / "p1.png")


@pytest.mark.parametrize(("rows", "message"), [
    ("p1,imgs/p1.png\n", "no image for 1 prompt(s)"),
    ("p1,imgs/p1.png\np1,imgs/p1.png\np2,imgs/p2.png\n", "row 2: prompt_id 'p1' is given twice"),
    ("p1,imgs/p1.png\np9,imgs/p2.png\n", "row 2: prompt_id 'p9' is not a prompt"),
    ("p1,../p1.png\np2,imgs/p2.png\n", "row 1: image_path"),
    ("p1,imgs/missing.png\np2,imgs/p2.png\n", "row 1: image_path 'imgs/missing.png': no such"),
])
def test_imported_images_errors_name_the_file_and_row(imported, rows, message):
    folder, prompts = imported
    (folder / "bad.csv").write_text("prompt_id,image_path\n" + rows)
    with pytest.raises(ValueError, match=r"bad\.csv") as error:
        imported_pictures(prompts, "bad", folder / "bad.csv")
    assert message in str(error.value)


def test_imported_prompts_refuse_a_repeated_prompt(tmp_path):
    (tmp_path / "p.csv").write_text("prompt_id,prompt\np1,a\np1,b\n")
    with pytest.raises(ValueError, match="row 2: prompt_id 'p1' is given twice"):
        imported_prompts(tmp_path / "p.csv")


def test_pairs_are_every_pair_of_systems_on_every_prompt_and_adding_one_keeps_the_ids():
    prompts = pd.DataFrame({"item_id": ["p1", "p2"], "prompt": ["x", "y"]})
    pictures = pd.DataFrame({"item_id": ["p1", "p1", "p1", "p2", "p2", "p2"],
                             "system": ["a", "b", "c"] * 2,
                             "image_path": [f"{p}{s}" for p in "12" for s in "abc"]})
    two = system_pairs(prompts, pictures, ["a", "b"])
    three = system_pairs(prompts, pictures, ["a", "b", "c"])
    assert len(three) == 6 and set(two["pair_id"]) <= set(three["pair_id"])
    assert three.set_index("pair_id").loc["p2|a|c", "image_b"] == "2c"


def test_single_pairwise_win_rates_with_ties_half_and_both_orders_averaged():
    rows = [  # prompt, a, b, instruction, order, p(a preferred)
        ("p1", "A", "B", "i1", "ab", 0.9), ("p1", "A", "B", "i1", "ba", 0.4),
        ("p1", "A", "C", "i1", "ab", 0.5), ("p1", "B", "C", "i1", "ab", 0.2),
        ("p1", "A", "B", "i2", "ab", 0.1),  # another instruction: not this method's
    ]
    verdicts = pd.DataFrame(rows, columns=["item_id", "system_a", "system_b",
                                           "instruction", "order", "p_a"]).assign(judge="j")
    scored = single_pairwise(verdicts, ["p1"], ["A", "B", "C"], "j", "i1")
    # A vs B: (1 + 0) / 2 = 0.5; A vs C: tie 0.5; B vs C: 0 -> A 0.5, B 0.25, C 0.75
    assert scored.matrix.loc["p1"].tolist() == pytest.approx([0.5, 0.25, 0.75])
    assert verdict(pd.Series([0.7, 0.5, np.nan])).tolist()[:2] == [1.0, 0.5]


def test_pair_matrix_leaves_a_system_without_any_judged_pair_missing():
    pairs = pd.DataFrame({"item_id": ["p1"], "system_a": ["A"], "system_b": ["B"],
                          "p": [0.75]})
    matrix = pair_matrix(pairs, "p", ["p1", "p2"], ["A", "B"])
    assert matrix.loc["p1"].tolist() == [0.75, 0.25]
    assert matrix.loc["p2"].isna().all()


def images_task(default_params: dict, **changes) -> dict:
    params = copy.deepcopy(default_params)
    params["leaderboard"]["tasks"]["pictures"].update(changes)
    return params


@pytest.mark.parametrize(("change", "message"), [
    (lambda p: p.pop("mmb"), "leaderboard.tasks.pictures.kind: an images task asks MMB"),
    (lambda p: p["leaderboard"]["tasks"]["pictures"].update(
        human_labels={"synthetic": {"n_items": 4}}), "pictures.human_labels: human labels"),
    (lambda p: p["leaderboard"]["tasks"]["pictures"]["systems"].update(
        lumen={"model": "lumen-base"}), "systems.lumen.model: a panel model draws no images"),
    (lambda p: p["leaderboard"]["tasks"]["pictures"]["systems"]["painter-a"]["synthetic"]
     .update(style_of="lumen"), "style_of: captions only"),
    (lambda p: p["leaderboard"]["tasks"]["pictures"].pop("prompts"),
     "pictures.prompts: an images task needs exactly one"),
    (lambda p: p["leaderboard"]["methods"]["mmb"].update(judge="lumen-mini"),
     "methods.mmb.judge: 'lumen-mini' is not fitted by the MMB study"),
    (lambda p: p["leaderboard"]["methods"]["panel"].update(instruction="def-01"),
     "methods.panel.instruction: only a method of kind single has it"),
    (lambda p: p["leaderboard"]["methods"]["plain"].update(instruction="nope"),
     "methods.plain.instruction: 'nope' is not an id of MMB's instruction pool"),
])
def test_images_task_validation(default_params, change, message):
    params = copy.deepcopy(default_params)
    if message.startswith("leaderboard.tasks.pictures.kind"):
        params["leaderboard"]["methods"].pop("mmb")
    change(params)
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        validate_params(params)
