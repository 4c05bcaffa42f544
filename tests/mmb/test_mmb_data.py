"""MMB's data: importers in the published HPDv2 / MJ-Bench shapes, the HPSv2 and MJBench
protocols, the degradations, and the synthetic default's planted quality and humans."""

from __future__ import annotations

import json
from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from judgebias.studies.mmb.data import synthetic
from judgebias.studies.mmb.data.degrade import DEGRADATIONS, degrade
from judgebias.studies.mmb.data.pairs import (
    build_dataset,
    mjbench_protocol,
    read_hpdv2_test,
    read_hpdv2_train,
    read_mjbench,
)


def _images(root, names):
    for i, name in enumerate(names):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(np.full((8, 8, 3), (20 * i) % 256, np.uint8)).save(root / name)


def test_hpdv2_test_all_pairs_ties_dropped(tmp_path):
    _images(tmp_path, [f"t/{i}.png" for i in range(4)])
    records = [{"prompt": "a cat", "image_path": [f"t/{i}.png" for i in range(4)],
                "rank": [2, 1, 3, 2], "raw_annotation": [{"rank": [2, 1, 3, 2],
                                                          "user_hash": "u"}]}]
    (tmp_path / "test.json").write_text(json.dumps(records))
    pairs, tied = read_hpdv2_test(tmp_path / "test.json", tmp_path)
    assert tied == 1 and len(pairs) == 5  # C(4, 2) = 6, images 0 and 3 tie
    row = pairs.set_index("pair_id").loc["test-00000-0-1"]
    assert row["preference"] == 0.0  # rank 2 vs rank 1: B is better (lower is better)
    assert set(pairs["split"]) == {"test"}


def test_hpdv2_test_orientation_drawn_with_a_recorded_seed(tmp_path):
    # ranks in file order: the earlier image is always better, so the file's order makes
    # every test pair "A preferred" (the positive class of AUC-PR and F1)
    _images(tmp_path, [f"t/{i}.png" for i in range(7)])
    ranks = list(range(1, 8))
    (tmp_path / "test.json").write_text(json.dumps([{
        "prompt": "a cat", "image_path": [f"t/{i}.png" for i in range(7)], "rank": ranks,
        "raw_annotation": []}]))
    listed, _ = read_hpdv2_test(tmp_path / "test.json", tmp_path)
    assert (listed["preference"] == 1).all()
    drawn, _ = read_hpdv2_test(tmp_path / "test.json", tmp_path, orientation_seed=3)
    again, _ = read_hpdv2_test(tmp_path / "test.json", tmp_path, orientation_seed=3)
    other, _ = read_hpdv2_test(tmp_path / "test.json", tmp_path, orientation_seed=4)
    pd.testing.assert_frame_equal(drawn, again)
    assert not drawn["image_a"].equals(other["image_a"])
    assert list(drawn["pair_id"]) == list(listed["pair_id"])
    assert 0 < drawn["preference"].mean() < 1  # 21 pairs: both orientations occur
    rank = {f"{tmp_path}/t/{i}.png": r for i, r in enumerate(ranks)}
    for row in drawn.itertuples():  # the label follows the drawn orientation
        assert row.preference == float(rank[row.image_a] < rank[row.image_b])
        assert {row.image_a, row.image_b} == set(listed.set_index("pair_id").loc[
            row.pair_id, ["image_a", "image_b"]])


def test_hpdv2_train_one_pair_per_group(tmp_path):
    _images(tmp_path, [f"r/{i}.png" for i in range(8)])
    records = [{"prompt": f"p{g}", "file_path": [f"r/{4 * g + j}.png" for j in range(4)],
                "human_preference": [int(j == g) for j in range(4)], "user_hash": "u"}
               for g in range(2)]
    (tmp_path / "train.json").write_text(json.dumps(records))
    pairs, pool = read_hpdv2_train(tmp_path / "train.json", tmp_path, seed=0)
    assert len(pairs) == 2 and len(pool) == 8
    for row in pairs.itertuples():
        winner = row.image_a if row.preference == 1 else row.image_b
        g = int(row.prompt[1:])
        assert winner.endswith(f"r/{4 * g + g}.png")


def test_hpdv2_train_released_shape_several_rows_per_prompt(tmp_path):
    """The released train.json: one annotated comparison of two images per row
    (``image_path``), several rows per prompt, images shared between rows. The candidate
    is one row's comparison, never an image against itself; the pool lists each image once."""
    _images(tmp_path, [f"{i}.jpg" for i in range(6)])
    rows = [(["0.jpg", "1.jpg"], [1, 0]), (["1.jpg", "2.jpg"], [1, 0]),
            (["0.jpg", "2.jpg"], [0, 1]), (["3.jpg", "4.jpg"], [0, 1]),
            (["5.jpg", "3.jpg"], [1, 1])]
    records = [{"human_preference": pref, "prompt": "p0" if i < 3 else "p1",
                "image_path": paths, "user_hash": f"u{i}"} for i, (paths, pref) in enumerate(rows)]
    (tmp_path / "train.json").write_text(json.dumps(records))
    for seed in range(8):
        pairs, pool = read_hpdv2_train(tmp_path / "train.json", tmp_path, seed=seed)
        assert len(pairs) == 2 and len(pool) == 6 and pool["image_path"].is_unique
        for row in pairs.itertuples():
            shown = {Path(row.image_a).name, Path(row.image_b).name}
            winner = Path(row.image_a if row.preference == 1 else row.image_b).name
            assert (shown, winner) in [({"0.jpg", "1.jpg"}, "0.jpg"),
                                       ({"1.jpg", "2.jpg"}, "1.jpg"),
                                       ({"0.jpg", "2.jpg"}, "2.jpg"),
                                       ({"3.jpg", "4.jpg"}, "4.jpg")]


def test_importer_errors_name_file_row_and_key(tmp_path):
    (tmp_path / "test.json").write_text(json.dumps([{"prompt": "x", "image_path": []}]))
    with pytest.raises(ValueError, match=r"test.json: row 1 has no key 'rank'"):
        read_hpdv2_test(tmp_path / "test.json", tmp_path)
    (tmp_path / "bias.json").write_text(json.dumps([{"prompt": "x", "images_dir": "no.png"}]))
    with pytest.raises(ValueError, match=r"bias.json: row 1: image .*no.png does not"):
        read_mjbench(tmp_path / "bias.json", tmp_path)
    (tmp_path / "broken.json").write_text('[{"prompt": "x",')
    with pytest.raises(ValueError, match=r"broken.json: not valid JSON"):
        read_mjbench(tmp_path / "broken.json", tmp_path)
    (tmp_path / "train.json").write_text(json.dumps(
        [{"prompt": "x", "human_preference": [1, 0], "user_hash": "u"}]))
    with pytest.raises(ValueError, match=r"train.json: row 1 needs a list under "
                                         r"'image_path' or 'file_path'"):
        read_hpdv2_train(tmp_path / "train.json", tmp_path, seed=0)


@pytest.mark.parametrize("escape", ["../outside.png", "sub/../../outside.png", "/etc/hosts"])
def test_image_paths_that_leave_their_folder_are_rejected(tmp_path, escape):
    """A path in a data file may not leave its image folder, even to a file that exists."""
    root = tmp_path / "HPD" / "test"
    _images(tmp_path, ["outside.png", "HPD/test/ok.png"])
    (tmp_path / "test.json").write_text(json.dumps([
        {"prompt": "a", "image_path": ["ok.png", "ok.png"], "rank": [1, 2]},
        {"prompt": "b", "image_path": ["ok.png", escape], "rank": [1, 2]}]))
    with pytest.raises(ValueError, match=r"test.json: row 2 key 'image_path': .*(leaves its "
                                         r"folder|not an absolute path)"):
        read_hpdv2_test(tmp_path / "test.json", root)


@pytest.mark.parametrize("counterpart", ["other", "same"])
def test_mjbench_protocol(tmp_path, counterpart):
    names = [f"m/{g}_{j}.png" for g in range(6) for j in range(3)]
    _images(tmp_path, names)
    records = [{"prompt": f"prompt {n[2]}", "images_dir": n, "demographic": "d",
                "occupation": "o"} for n in names]
    (tmp_path / "bias.json").write_text(json.dumps(records))
    images = read_mjbench(tmp_path / "bias.json", tmp_path)
    pairs, support = mjbench_protocol(images, tmp_path / "out",
                                      degradations={"gaussian_noise": {"sd": 0.1}},
                                      n_folds=3, counterpart=counterpart, seed=1)
    assert (pairs.groupby("group")["fold"].nunique() == 1).all()
    train, test = pairs[pairs["split"] == "mjb_train"], pairs[pairs["split"] == "mjb_test"]
    assert len(train) == 18 and len(test) == 6 * 3 and set(test["preference"]) == {0.5}
    for row in train.itertuples():  # the original is preferred, whichever side it is on
        original = row.image_a if row.preference == 1 else row.image_b
        degraded = row.image_b if row.preference == 1 else row.image_a
        assert original in set(images["image_path"]) and "degraded" in degraded
        index, source = degraded.rsplit("/", 1)[1].split("_")[1:3]
        assert index == original.rsplit("_", 1)[1].removesuffix(".png")
        assert (source == f"from{index}") == (counterpart == "same")
    assert sorted(support["fold"].unique()) == [0, 1, 2]


def test_degradation_identities_and_errors():
    img = synthetic.render("neon sci-fi", 0.7, 32, seed=0)
    identity = {"extreme_contrast": {"factor": 1.0}, "motion_blur": {"length": 1},
                "brightness_shift": {"delta": 0.0}, "random_occlusion": {"fraction": 0.0},
                "gaussian_noise": {"sd": 0.0}}
    assert set(identity) == set(DEGRADATIONS)
    for name, params in identity.items():
        np.testing.assert_array_equal(degrade(img, name, params), img)
    occluded = degrade(np.full((40, 40, 3), 200, np.uint8), "random_occlusion",
                       {"fraction": 0.25}, seed=3)
    assert abs((occluded == 0).all(axis=2).mean() - 0.25) < 0.03
    with pytest.raises(ValueError, match="unknown degradation"):
        degrade(img, "sepia")
    with pytest.raises(ValueError, match="has no parameter"):
        degrade(img, "motion_blur", {"sd": 1})


@pytest.mark.parametrize("style", list(synthetic.STYLES))
def test_perceive_recovers_style_and_quality(style):
    for q in (0.05, 0.3, 0.6, 1.0):
        img = synthetic.render(style, q, 64, seed=int(q * 100))
        seen = synthetic.perceive(synthetic.png_bytes(img))
        assert seen.style == style and abs(seen.quality - q) < 0.03
        for name in DEGRADATIONS:
            degraded = synthetic.perceive(synthetic.png_bytes(degrade(img, name, None, 1)))
            assert degraded.quality <= seen.quality - 0.15 or seen.quality < 0.15, name


def test_simulated_humans_follow_the_logistic_law():
    rng = np.random.default_rng(0)
    gamma, qa, qb = 6.0, 0.7, 0.5
    u = synthetic._utilities(np.tile([qa, qb], (40_000, 1)), gamma, rng)
    share = (u[:, 0] > u[:, 1]).mean()
    assert abs(share - 1 / (1 + np.exp(-gamma * (qa - qb)))) < 0.01


def test_synthetic_default_through_the_importers_is_deterministic(tmp_path):
    block = {"name": "synthetic", "synthetic": {
        "n_test_groups": 4, "images_per_test_group": 3, "n_train_groups": 6,
        "images_per_train_group": 3, "n_mjb_groups": 3, "images_per_mjb_group": 2,
        "gamma": 6.0, "image_size": 32, "seed": 1},
        "mjbench_protocol": {"n_folds": 3, "degradations": {"brightness_shift": {}}}}
    pairs, support, summary = build_dataset(block, tmp_path / "a", seed=2)
    again, _, _ = build_dataset(block, tmp_path / "b", seed=2)
    assert summary["pairs"] == {"test": 12, "train": 6, "mjb_train": 6, "mjb_test": 3}
    assert pairs["style_a"].notna().all() or pairs.loc[pairs["split"] != "mjb_train",
                                                       "style_a"].notna().all()
    for a, b in zip(pairs["image_a"], again["image_a"], strict=True):
        assert Path(a).read_bytes() == Path(b).read_bytes()
    test = pairs[pairs["split"] == "test"]
    assert len(test) == 4 * len(list(combinations(range(3), 2)))
    assert support["fold"].isna().sum() == 18  # the training images, D_sup's pool
    assert summary["files"]["train"].endswith("hpdv2/train.json")
    assert summary["test_orientation"]["mode"] == "random"
    assert summary["test_orientation"]["seed"] == 2
    assert all(Path(p).is_relative_to(tmp_path / "a") for p in pairs["image_a"])
