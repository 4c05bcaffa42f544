"""Tests for the caption-judgement datasets (judgebias.studies.pomms.data).

The real files (Flickr8k-Expert, Nebula test) live outside the repository, in
``../shared/data/caption-judgments`` or ``$JUDGEBIAS_SHARED_DATA/caption-judgments``; tests
that need them skip with the path they looked at. Everything else builds its input here.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers.project import shared_data_dir
from PIL import Image
from scipy.stats import kendalltau

from judgebias.data import scenes
from judgebias.studies.philautia.data import MissingImagesError
from judgebias.studies.philautia.sim import has_opener, has_signature
from judgebias.studies.pomms.data import (
    COLUMNS,
    IMAGE_EXTENSIONS,
    ITEM_COLUMNS,
    build_synthetic_judgements,
    items,
    load_flickr8k_expert,
    load_nebula,
    load_table,
    parse_references,
)

SHARED = shared_data_dir()
FLICKR = SHARED / "caption-judgments" / "flickr8k_expert.json"
NEBULA = SHARED / "caption-judgments" / "nebula_test.json"


def _need(path: Path) -> Path:
    if not path.is_file():
        pytest.skip(f"real data file {path} is absent (set JUDGEBIAS_SHARED_DATA to the folder "
                    "holding caption-judgments/)")
    return path


@pytest.fixture(scope="module")
def flickr() -> pd.DataFrame:
    return load_flickr8k_expert(_need(FLICKR))


@pytest.fixture(scope="module")
def nebula() -> pd.DataFrame:
    return load_nebula(_need(NEBULA))


def _png(path: Path, color: tuple[int, int, int] = (10, 200, 30)) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fmt = "PNG" if path.suffix == ".png" else "JPEG"
    Image.new("RGB", (4, 4), color).save(path, format=fmt)


# ------------------------------------------------------------------ Kendall helpers


def _contingency(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Counts of each (x level, y level) pair, levels ascending."""
    _, xi = np.unique(x, return_inverse=True)
    _, yi = np.unique(y, return_inverse=True)
    table = np.zeros((xi.max() + 1, yi.max() + 1), dtype=np.int64)
    np.add.at(table, (xi, yi), 1)
    return table


def _concordance(table: np.ndarray) -> tuple[int, int]:
    """(concordant, discordant) pair counts from a contingency table, exactly (integers)."""
    concordant = discordant = 0
    rows, cols = table.shape
    for i in range(rows):
        for j in range(cols):
            if table[i, j]:
                concordant += int(table[i, j]) * int(table[i + 1:, j + 1:].sum())
                discordant += int(table[i, j]) * int(table[i + 1:, :j].sum())
    return concordant, discordant


def _tau_c_by_counts(x: np.ndarray, y: np.ndarray) -> float:
    """Stuart's tau-c = 2 (C - D) / (n^2 (m - 1) / m), m = min(#levels of x, of y)."""
    table = _contingency(x, y)
    concordant, discordant = _concordance(table)
    n, m = int(table.sum()), min(table.shape)
    return 2.0 * (concordant - discordant) / (n * n * (m - 1) / m)


def _tau_b_by_counts(x: np.ndarray, y: np.ndarray) -> float:
    table = _contingency(x, y)
    concordant, discordant = _concordance(table)
    n = int(table.sum())
    pairs = n * (n - 1) // 2
    ties_x = int((table.sum(1) * (table.sum(1) - 1) // 2).sum())
    ties_y = int((table.sum(0) * (table.sum(0) - 1) // 2).sum())
    return (concordant - discordant) / np.sqrt(float(pairs - ties_x) * float(pairs - ties_y))


def _tau_c_brute(x: np.ndarray, y: np.ndarray) -> float:
    """Tau-c from all n^2 ordered pairs (small n only)."""
    s = np.sign(x[:, None] - x[None, :]) * np.sign(y[:, None] - y[None, :])
    m = min(len(np.unique(x)), len(np.unique(y)))
    n = len(x)
    return float(s.sum()) / (n * n * (m - 1) / m)  # ordered pairs count each pair twice


# ------------------------------------------------------------------------ real files


def test_flickr8k_expert_counts(flickr: pd.DataFrame) -> None:
    assert tuple(flickr.columns) == COLUMNS
    assert len(flickr) == 16_992
    assert flickr["item_id"].nunique() == 5_664
    assert flickr["image_id"].nunique() == 1_000
    assert set(flickr["human_score"].unique()) <= {1.0, 2.0, 3.0, 4.0}
    assert flickr["human_score"].between(1, 4).all()
    assert (flickr["references"].map(len) == 5).all()
    assert (flickr["split"] == "test").all()
    assert flickr["image_path"].isna().all() and flickr["image_path"].map(type).eq(type(None)).all()
    assert (flickr["dataset"] == "flickr8k-expert").all()
    # Each item: 3 ratings, raters 0..2, one image, one candidate.
    per_item = flickr.groupby("item_id")
    assert (per_item.size() == 3).all()
    assert (per_item["rater"].apply(sorted).map(tuple) == (0, 1, 2)).all()
    assert (per_item[["image_id", "candidate"]].nunique() == 1).all().all()
    # Ids follow the documented order: images sorted, ids dense.
    ids = flickr["item_id"].drop_duplicates().tolist()
    assert ids == [f"flickr8k-{k:06d}" for k in range(5_664)]
    assert flickr["image_id"].drop_duplicates().is_monotonic_increasing


def test_flickr8k_items_view(flickr: pd.DataFrame) -> None:
    view = items(flickr)
    assert tuple(view.columns) == ITEM_COLUMNS
    assert len(view) == 5_664 and (view["n_ratings"] == 3).all()
    means = flickr.groupby("item_id", sort=False)["human_score"].mean()
    assert np.allclose(view.set_index("item_id")["human_score_mean"], means)


def test_nebula_counts(nebula: pd.DataFrame) -> None:
    assert tuple(nebula.columns) == COLUMNS
    assert len(nebula) == 3_298
    assert nebula["item_id"].nunique() == 3_298
    assert (nebula["rater"] == 0).all()
    assert nebula["human_score"].between(0, 1).all()
    assert nebula["references"].map(len).between(5, 10).all()
    assert (nebula["split"] == "test").all()
    assert nebula["image_path"].isna().all()
    assert (nebula["item_id"] == "nebula-" + nebula["image_id"]).all()
    assert (load_nebula(NEBULA, split="val")["split"] == "val").all()
    with pytest.raises(ValueError, match="split='dev'"):
        load_nebula(NEBULA, split="dev")


def test_nebula_tau_of_human_score_with_itself(nebula: pd.DataFrame) -> None:
    x = nebula["human_score"].to_numpy()
    assert kendalltau(x, x, variant="b").statistic == pytest.approx(1.0, abs=1e-12)
    # tau-c of x with itself has no discordant pairs and C = (n^2 - sum n_k^2) / 2, so
    # tau-c = (1 - sum p_k^2) * m / (m - 1) exactly (m = number of distinct scores).
    _, counts = np.unique(x, return_counts=True)
    p = counts / counts.sum()
    expected = (1 - (p**2).sum()) * len(counts) / (len(counts) - 1)
    assert kendalltau(x, x, variant="c").statistic == pytest.approx(expected, abs=1e-12)
    assert _tau_c_by_counts(x, x) == pytest.approx(expected, abs=1e-12)
    assert kendalltau(-x, x, variant="b").statistic == pytest.approx(-1.0, abs=1e-12)


def test_flickr8k_tau_of_item_mean(flickr: pd.DataFrame) -> None:
    """Score = per-item mean rating, over all 16,992 rating rows (literature convention)."""
    y = flickr["human_score"].to_numpy()
    x = flickr.groupby("item_id")["human_score"].transform("mean").to_numpy()
    tau_c = kendalltau(x, y, variant="c").statistic
    tau_b = kendalltau(x, y, variant="b").statistic
    assert tau_c == pytest.approx(_tau_c_by_counts(x, y), abs=1e-12)
    assert tau_b == pytest.approx(_tau_b_by_counts(x, y), abs=1e-12)
    assert tau_c == pytest.approx(0.7056104575041702, abs=1e-9)  # measured, pinned
    assert tau_b == pytest.approx(0.8022351626948839, abs=1e-9)
    assert kendalltau(-x, y, variant="c").statistic == pytest.approx(-tau_c, abs=1e-12)
    assert kendalltau(-x, y, variant="b").statistic == pytest.approx(-tau_b, abs=1e-12)
    # A third path on a subset: every pair counted directly.
    pick = np.random.default_rng(0).choice(len(y), size=600, replace=False)
    assert kendalltau(x[pick], y[pick], variant="c").statistic == pytest.approx(
        _tau_c_brute(x[pick], y[pick]), abs=1e-12
    )


# ------------------------------------------------------------------- missing images


def test_nebula_missing_images_reported_exactly(tmp_path: Path) -> None:
    ids = [r["imgid"] for r in json.loads(_need(NEBULA).read_text())]
    present = {ids[0]: ".png", ids[1]: ".jpg", ids[2]: ".jpeg", ids[5]: ".png"}
    for imgid, ext in present.items():
        _png(tmp_path / "img" / f"{imgid}{ext}")
    (tmp_path / "img" / f"{ids[3]}.gif").write_bytes(b"GIF89a")  # not an accepted extension
    with pytest.raises(MissingImagesError) as info:
        load_nebula(NEBULA, image_dir=tmp_path / "img")
    err = info.value
    expected = [f"{i}{{{','.join(IMAGE_EXTENSIONS)}}}" for i in ids if i not in present]
    assert err.missing == expected and len(err.missing) == 3_298 - 4
    text = str(err)
    assert str(NEBULA) in text and str(tmp_path / "img") in text
    assert "3294 image file(s)" in text and expected[0] in text and "more" in text


def test_nebula_skip_mode(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    ids = [r["imgid"] for r in json.loads(_need(NEBULA).read_text())]
    present = {ids[0]: ".png", ids[7]: ".jpg", ids[9]: ".jpeg"}
    for imgid, ext in present.items():
        _png(tmp_path / f"{imgid}{ext}")
    with caplog.at_level(logging.WARNING, logger="judgebias.studies.pomms.data"):
        table = load_nebula(NEBULA, image_dir=tmp_path, missing="skip")
    assert table["image_id"].tolist() == [ids[0], ids[7], ids[9]]
    assert table["image_path"].tolist() == [str(tmp_path / f"{i}{e}") for i, e in present.items()]
    assert "skipping 3295 of 3298 items" in caplog.text
    with pytest.raises(ValueError, match="missing="):
        load_nebula(NEBULA, image_dir=tmp_path, missing="ignore")


def test_flickr8k_missing_and_skip(tmp_path: Path) -> None:
    data = json.loads(_need(FLICKR).read_text())
    names = sorted({Path(j["image_path"]).name for v in data.values()
                    for j in v["human_judgement"]})
    kept = names[:3]
    for name in kept:
        _png(tmp_path / name)
    with pytest.raises(MissingImagesError) as info:
        load_flickr8k_expert(FLICKR, image_dir=tmp_path)
    assert info.value.missing == names[3:] and len(names) == 1_000
    table = load_flickr8k_expert(FLICKR, image_dir=tmp_path, missing="skip")
    assert set(table["image_path"]) == {str(tmp_path / n) for n in kept}
    assert table["image_id"].nunique() == 3 and len(table) % 3 == 0
    # Ids are those of the full load: skipping never renumbers items.
    full = load_flickr8k_expert(FLICKR)
    assert set(table["item_id"]) <= set(full["item_id"])
    merged = table.merge(full, on=["item_id", "rater"], suffixes=("", "_full"))
    assert (merged["candidate"] == merged["candidate_full"]).all()


def test_image_dir_must_exist(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not a directory"):
        load_nebula(_need(NEBULA), image_dir=tmp_path / "nope", missing="skip")


# --------------------------------------------------------------------- bad structure


def test_bad_json_structure_names_file_and_key(tmp_path: Path) -> None:
    bad = tmp_path / "nebula_bad.json"
    bad.write_text(json.dumps([{"imgid": "a", "mt": "x", "refs": ["r"], "score": 0.5},
                               {"imgid": "b", "mt": "y", "refs": ["r"]}]))
    with pytest.raises(ValueError, match=r"nebula_bad\.json: row 2 lacks key 'score'"):
        load_nebula(bad)
    bad.write_text(json.dumps({"x": 1}))
    with pytest.raises(ValueError, match="JSON list"):
        load_nebula(bad)
    flickr_bad = tmp_path / "flickr_bad.json"
    flickr_bad.write_text(json.dumps({"img1": {"human_judgement": [
        {"image_id": "img1", "image_path": "F/img1.jpg", "caption": "c", "rating": "four"}
    ], "ground_truth": ["r"]}}))
    with pytest.raises(ValueError, match=r"flickr_bad\.json: image 'img1' human_judgement row 1 "
                                         r"key 'rating'"):
        load_flickr8k_expert(flickr_bad)
    flickr_bad.write_text(json.dumps({"img1": {"human_judgement": []}}))
    with pytest.raises(ValueError, match="lacks key 'ground_truth'"):
        load_flickr8k_expert(flickr_bad)


def _nebula_rows(*rows: tuple[str, str, float]) -> list[dict]:
    return [{"imgid": imgid, "mt": mt, "refs": ["a ref"], "score": score}
            for imgid, mt, score in rows]


def _flickr_entry(image_id: str, listed: str = "") -> dict:
    listed = listed or f"Flickr8k_Dataset/{image_id}.jpg"
    return {"human_judgement": [{"image_id": image_id, "image_path": listed, "caption": "c",
                                 "rating": 3}], "ground_truth": ["r"]}


def test_json_syntax_errors_name_file_line_and_column(tmp_path: Path) -> None:
    bad = tmp_path / "nebula_test.json"
    bad.write_text('[\n  {"imgid": "a", "mt": "x",, "refs": [], "score": 1}\n]')
    with pytest.raises(ValueError) as info:
        load_nebula(bad)
    assert str(info.value) == (f"{bad}: line 2 column 28: not valid JSON "
                               "(Expecting property name enclosed in double quotes)")
    with pytest.raises(ValueError, match=f"{bad}: line 2 column 28: not valid JSON"):
        load_flickr8k_expert(bad)


def test_flickr8k_image_listed_twice_is_an_error(tmp_path: Path) -> None:
    """JSON keeps the second of two equal keys: the first image's ratings would vanish."""
    path = tmp_path / "flickr8k.json"
    first, second = json.dumps(_flickr_entry("img1")), json.dumps(_flickr_entry("img2"))
    path.write_text(f'{{\n"img1": {first},\n"img2": {second},\n"img1": {first}\n}}')
    with pytest.raises(ValueError) as info:
        load_flickr8k_expert(path)
    assert str(info.value) == (f"{path}: key 'img1' appears twice in one JSON object "
                               "(lines 2 and 4); the second would silently replace the first")


@pytest.mark.parametrize("imgid, reason", [
    ("../elsewhere", "leaves its folder"), ("/etc/passwd", "must be relative")])
def test_nebula_imgid_outside_image_dir_names_the_row(tmp_path: Path, imgid: str,
                                                      reason: str) -> None:
    path = tmp_path / "nebula_test.json"
    path.write_text(json.dumps(_nebula_rows(("ok", "x", 0.5), (imgid, "y", 0.25))))
    (tmp_path / "img").mkdir()
    for image_dir in (tmp_path / "img", None):  # checked with or without images
        with pytest.raises(ValueError) as info:
            load_nebula(path, image_dir=image_dir)
        assert str(info.value).startswith(f"{path}: row 2: imgid: {imgid!r}")
        assert reason in str(info.value)


def test_flickr8k_image_path_outside_image_dir_names_the_row(tmp_path: Path) -> None:
    path = tmp_path / "flickr8k.json"
    path.write_text(json.dumps({"img1": _flickr_entry("img1", "Flickr8k_Dataset/..")}))
    with pytest.raises(ValueError) as info:
        load_flickr8k_expert(path)
    assert str(info.value).startswith(
        f"{path}: image 'img1' human_judgement row 1: image_path: '..' leaves its folder")


def test_nebula_repeated_candidate_is_one_item_with_a_warning(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Two rows with one imgid and candidate are two ratings of one item (a judge sees one
    item); the count is logged, never silent. Differing refs name both rows."""
    path = tmp_path / "nebula_test.json"
    path.write_text(json.dumps(_nebula_rows(("a", "x", 1.0), ("b", "y", 0.0), ("a", "x", 0.5))))
    with caplog.at_level(logging.WARNING, logger="judgebias.studies.pomms.data"):
        table = load_nebula(path)
    assert table["item_id"].tolist() == ["nebula-a", "nebula-a", "nebula-b"]
    assert table["human_score"].tolist() == [1.0, 0.5, 0.0]
    assert "1 row(s) repeat an earlier row's imgid and candidate" in caplog.text
    rows = _nebula_rows(("a", "x", 1.0), ("b", "y", 0.0), ("a", "x", 0.5))
    rows[2]["refs"] = ["another ref"]
    path.write_text(json.dumps(rows))
    with pytest.raises(ValueError, match=r"nebula_test\.json: row 3: refs differ from row 1, "
                                         r"which rates the same candidate of imgid 'a'"):
        load_nebula(path)


def test_judgements_step_names_the_params_key_file_and_row(tmp_path: Path, params,
                                                           capsys) -> None:
    """Through the CLI, one line names the pomms.datasets key, the file and the row, and
    no table is written."""
    import yaml

    from judgebias.cli import main

    path = tmp_path / "nebula_test.json"
    path.write_text(json.dumps(_nebula_rows(("ok", "x", 0.5), ("../../up", "y", 0.25))))
    params["pomms"]["datasets"]["nebula"] = {"format": "nebula", "path": str(path)}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    out = tmp_path / "nebula.parquet"
    assert main(["--params", str(tmp_path / "params.yaml"), "plumbing", "step",
                 "pomms.judgements",
                 "--wildcard", "dataset", "nebula", "--out", "table", str(out),
                 "--out", "images", str(tmp_path / "images")]) == 2
    assert (f"pomms.datasets.nebula: {path}: row 2: imgid: '../../up' leaves its folder"
            in capsys.readouterr().err)
    assert not out.exists()


# --------------------------------------------------------------------- generic tables


def _sample_rows() -> pd.DataFrame:
    """Two items rated twice and one rated once, spread over the three splits."""
    return pd.DataFrame({
        "image_id": ["001", "001", "002", "002", "003"],
        "candidate": ["a dog", "a dog", "a cat | sleeping", "a cat | sleeping", "a bird"],
        "references": [["a dog runs", "dog"], ["a dog runs", "dog"], ["cat", "kitten"],
                       ["cat", "kitten"], ['a "bird"', "b"]],
        "human_score": [3.0, 4.0, 1.0, 2.0, 0.5],
        "split": ["train", "train", "val", "val", "test"],
    })


def test_table_csv_round_trip(tmp_path: Path) -> None:
    rows = _sample_rows()
    csv = rows.assign(references=rows["references"].map(json.dumps))
    csv.to_csv(tmp_path / "bench.csv", index=False)
    table = load_table(tmp_path / "bench.csv")
    assert tuple(table.columns) == COLUMNS
    assert table["image_id"].tolist() == rows["image_id"].tolist()  # leading zeros kept
    assert table["references"].tolist() == rows["references"].tolist()
    assert table["human_score"].tolist() == rows["human_score"].tolist()
    assert table["rater"].tolist() == [0, 1, 0, 1, 0]
    assert table["item_id"].tolist() == ["bench-000000"] * 2 + ["bench-000001"] * 2 + [
        "bench-000002"]
    assert (table["dataset"] == "bench").all() and table["image_path"].isna().all()
    # "|"-separated references are the other CSV form.
    piped = rows.assign(references=rows["references"].map(" | ".join))
    piped.to_csv(tmp_path / "piped.csv", index=False)
    again = load_table(tmp_path / "piped.csv", dataset="bench")
    assert again["references"].tolist() == rows["references"].tolist()
    assert again.drop(columns="item_id").equals(table.drop(columns="item_id"))


def test_table_parquet_round_trip_with_images(tmp_path: Path) -> None:
    rows = _sample_rows()
    rows["item_id"] = ["i1", "i1", "i2", "i2", "i3"]
    rows["image_file"] = ["one.jpg", "one.jpg", "", "", "sub/three.png"]
    rows.to_parquet(tmp_path / "bench.parquet")
    for name in ("one.jpg", "002.png", "sub/three.png"):
        _png(tmp_path / "img" / name)
    table = load_table(tmp_path / "bench.parquet", image_dir=tmp_path / "img", dataset="mine")
    assert table["item_id"].tolist() == rows["item_id"].tolist()
    assert table["references"].tolist() == rows["references"].tolist()
    assert table["split"].tolist() == rows["split"].tolist()
    assert table["image_path"].tolist() == [str(tmp_path / "img" / n) for n in
                                            ("one.jpg", "one.jpg", "002.png", "002.png",
                                             "sub/three.png")]
    view = items(table)
    assert view["n_ratings"].tolist() == [2, 2, 1]
    assert view["human_score_mean"].tolist() == [3.5, 1.5, 0.5]
    # Written back as Parquet and read again, the table is unchanged.
    out = table.drop(columns=["dataset", "rater", "image_path"])
    out["image_file"] = rows["image_file"]
    out.to_parquet(tmp_path / "again.parquet")
    again = load_table(tmp_path / "again.parquet", image_dir=tmp_path / "img", dataset="mine")
    pd.testing.assert_frame_equal(again, table)
    (tmp_path / "img" / "002.png").unlink()
    with pytest.raises(MissingImagesError) as info:
        load_table(tmp_path / "bench.parquet", image_dir=tmp_path / "img")
    assert info.value.missing == ["002{.jpg,.jpeg,.png}"]


def test_parse_references_forms() -> None:
    assert parse_references('["a", "b|c"]') == ["a", "b|c"]
    assert parse_references("a | b|  c ") == ["a", "b", "c"]
    assert parse_references("") == [] and parse_references("[]") == []
    assert parse_references(np.array(["x", "y"], dtype=object)) == ["x", "y"]
    with pytest.raises(ValueError, match="JSON"):
        parse_references("[not json")
    with pytest.raises(ValueError, match="strings"):
        parse_references("[1, 2]")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda f: f.drop(columns="human_score"), r"required column\(s\) \['human_score'\]"),
        (lambda f: f.rename(columns={"candidate": "caption"}), r"\['candidate'\]"),
        (lambda f: f.assign(split=["train", "train", "val", "val", "dev"]),
         r"row 5 column 'split' is 'dev'"),
        (lambda f: f.assign(human_score=["3", "x", "1", "2", "0.5"]),
         r"row 2 column 'human_score' is not a finite number"),
        (lambda f: f.assign(references=['["a"', "a", "a", "a", "a"]),
         r"row 1 column 'references'"),
        (lambda f: f.assign(split=["train", "val", "val", "val", "test"]),
         r"row 2 column 'split' differs from earlier ratings of item 'bad-000000'"),
        (lambda f: f.assign(image_id=["../x", "../x", "2", "2", "3"]),
         r"row 1 column 'image_id': '\.\./x' leaves its folder"),
        (lambda f: f.assign(image_file=["", "", "/abs/2.jpg", "/abs/2.jpg", ""]),
         r"row 3 column 'image_file': '/abs/2\.jpg' must be relative"),
        # the same image and caption under a second item_id would be judged and counted twice
        (lambda f: f.assign(item_id=["a", "a", "b", "c", "d"]),
         r"row 4 column 'item_id': 'c' rates the same image and candidate as "
         r"item 'b' \(row 3\); one item would count twice"),
    ],
)
def test_table_bad_input_names_column_and_row(tmp_path: Path, change, message: str) -> None:
    rows = _sample_rows()
    rows = rows.assign(references=rows["references"].map(json.dumps))
    change(rows).to_csv(tmp_path / "bad.csv", index=False)
    with pytest.raises(ValueError, match=message) as info:
        load_table(tmp_path / "bad.csv")
    assert "bad.csv" in str(info.value)


def test_table_rejects_unknown_format(tmp_path: Path) -> None:
    (tmp_path / "x.tsv").write_text("a\tb\n")
    with pytest.raises(ValueError, match=r"unsupported table type '\.tsv'"):
        load_table(tmp_path / "x.tsv")


# ------------------------------------------------------------------------- synthetic


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, pd.DataFrame]:
    out = tmp_path_factory.mktemp("synjudge")
    return out, build_synthetic_judgements(out, 200, seed=5)


def test_synthetic_shape_and_splits(synthetic: tuple[Path, pd.DataFrame]) -> None:
    out, table = synthetic
    assert tuple(table.columns) == COLUMNS and len(table) == 600
    assert (table["dataset"] == "synthetic").all()
    view = items(table)
    assert len(view) == 200 and (view["n_ratings"] == 3).all()
    assert view["split"].value_counts().to_dict() == {"train": 140, "val": 30, "test": 30}
    assert table["human_score"].between(0, 1).all()
    assert (view["references"].map(len) == 5).all()
    assert sorted(p.name for p in (out / "images").iterdir()) == sorted(
        Path(p).name for p in view["image_path"])


def test_synthetic_is_deterministic(tmp_path: Path, synthetic) -> None:
    _, table = synthetic
    again = build_synthetic_judgements(tmp_path, 200, seed=5)
    pd.testing.assert_frame_equal(
        again.drop(columns="image_path"), table.drop(columns="image_path")
    )
    for a, b in zip(again["image_path"].unique(), table["image_path"].unique(), strict=True):
        assert Path(a).read_bytes() == Path(b).read_bytes()
    other = build_synthetic_judgements(tmp_path, 50, seed=6)
    assert other["candidate"].tolist()[:3] != table["candidate"].tolist()[:3]
    assert len(list((tmp_path / "images").iterdir())) == 50  # stale images removed


def test_synthetic_scores_track_true_accuracy(synthetic) -> None:
    """Accuracy recomputed from the pixels, like a judge would: human scores follow it."""
    _, table = synthetic
    view = items(table)
    accuracy = {
        row.item_id: scenes.match_claims(
            scenes.read_caption(row.candidate),
            scenes.scene_claims(scenes.perceive(Path(row.image_path).read_bytes())),
        ).accuracy
        for row in view.itertuples()
    }
    per_rating = table["item_id"].map(accuracy).to_numpy()
    tau_rows = kendalltau(per_rating, table["human_score"], variant="b").statistic
    tau_items = kendalltau(view["item_id"].map(accuracy), view["human_score_mean"]).statistic
    assert tau_rows > 0.6 and tau_items > 0.6
    # The candidates span qualities: some wrong, some perfect.
    values = np.array(list(accuracy.values()))
    assert (values < 0.7).mean() > 0.1 and (values == 1.0).mean() > 0.1


def test_synthetic_candidates_carry_no_panel_style(synthetic, default_params: dict) -> None:
    _, table = synthetic
    signatures = [m["sim"]["signature"] for m in default_params["panel"].values()]
    openers = [f["sim"]["opener"] for f in default_params["families"].values()]
    for caption in table["candidate"].unique():
        assert not any(has_signature(caption, s) for s in signatures), caption
        assert not any(has_opener(caption, o) for o in openers), caption
    assert len(signatures) == 6 and len(openers) == 2


def test_judgements_step_writes_the_pomms_schema(tmp_path: Path) -> None:
    """The `judgements` step's table (data.build) is a valid JUDGEMENTS artifact, named
    after its pomms.datasets key; items() of what is read back has one row per item."""
    from judgebias.io.artifacts import read_table, write_table
    from judgebias.studies.pomms.data import build_judgements
    from judgebias.studies.pomms.tables import JUDGEMENTS

    spec = {"format": "synthetic", "n_items": 12, "seed": 3, "n_raters": 2,
            "rater_noise": 0.1}
    table = build_judgements("mysyn", spec, tmp_path / "images")
    write_table(table, tmp_path / "j.parquet", JUDGEMENTS)
    back = read_table(tmp_path / "j.parquet", JUDGEMENTS)
    assert (back["dataset"] == "mysyn").all() and len(back) == 24
    assert len(items(back)) == 12


def test_synthetic_rejects_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="splits"):
        build_synthetic_judgements(tmp_path, 5, 0, splits=(0.5, 0.5, 0.5))
    with pytest.raises(ValueError, match="n_raters"):
        build_synthetic_judgements(tmp_path, 5, 0, n_raters=0)
    with pytest.raises(ValueError, match="image_size"):
        build_synthetic_judgements(tmp_path, 5, 0, image_size=32)
