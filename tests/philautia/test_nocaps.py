"""Tests for the nocaps validation importer on a small real COCO-style file built here."""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

import pytest
from PIL import Image

from judgebias.studies.philautia.data import COLUMNS, MissingImagesError, load_nocaps

DOMAINS = ["in-domain", "near-domain", "out-domain", "near-domain"]


def _caption(image_id: int, k: int) -> str:
    return f"image {image_id} caption {k}"


def _annotations(n_images: int = 4) -> dict:
    """A nocaps-shaped file: 10 captions per image, annotation list deliberately shuffled
    so that the loader has to order captions by annotation id itself."""
    images = [
        {
            "id": i,
            "file_name": f"{i:04x}abcd.jpg" if i % 2 else f"{i:04x}abcd.png",
            "open_images_id": f"{i:04x}abcd",
            "height": 24,
            "width": 32,
            "coco_url": f"nocaps/val/{i:04x}abcd.jpg",
            "domain": DOMAINS[i % len(DOMAINS)],
        }
        for i in range(n_images)
    ]
    annotations = [
        {"image_id": i, "id": i * 10 + k, "caption": _caption(i, k)}
        for i in range(n_images)
        for k in range(10)
    ]
    annotations.reverse()
    return {"info": {"year": 2019}, "licenses": [], "images": images, "annotations": annotations}


def _write(tmp_path: Path, data: dict, *, skip_files: tuple[str, ...] = ()) -> tuple[Path, Path]:
    """Write the JSON and one real image per entry (PNG or JPEG by extension)."""
    ann = tmp_path / "nocaps_val_4500_captions.json"
    ann.write_text(json.dumps(data), encoding="utf-8")
    image_dir = tmp_path / "images"
    image_dir.mkdir(exist_ok=True)
    for image in data["images"]:
        if image["file_name"] in skip_files:
            continue
        color = (image["id"] * 40 % 256, 100, 200)
        Image.new("RGB", (32, 24), color).save(image_dir / image["file_name"])
    return ann, image_dir


def test_loads_all_images(tmp_path: Path) -> None:
    data = _annotations()
    ann, image_dir = _write(tmp_path, data)
    frame = load_nocaps(ann, image_dir)
    assert tuple(frame.columns) == COLUMNS
    assert list(frame["image_id"]) == ["nocaps-0", "nocaps-1", "nocaps-2", "nocaps-3"]
    assert list(frame["image_path"]) == [
        str(image_dir / image["file_name"]) for image in data["images"]
    ]
    assert set(frame["source"]) == {"nocaps"}
    assert frame["scene"].isna().all() and list(frame["scene"]) == [None] * 4


def test_references_are_first_n_in_annotation_id_order(tmp_path: Path) -> None:
    ann, image_dir = _write(tmp_path, _annotations())
    frame = load_nocaps(ann, image_dir, n_references=3)
    for image_number, refs in enumerate(frame["references"]):
        assert refs == [_caption(image_number, k) for k in range(3)]
    frame10 = load_nocaps(ann, image_dir, n_references=10)
    assert all(len(refs) == 10 for refs in frame10["references"])


def test_sha256_matches_file_bytes(tmp_path: Path) -> None:
    ann, image_dir = _write(tmp_path, _annotations())
    frame = load_nocaps(ann, image_dir)
    for path, digest in zip(frame["image_path"], frame["image_sha256"], strict=True):
        assert digest == hashlib.sha256(Path(path).read_bytes()).hexdigest()
    assert frame["image_sha256"].nunique() == 4


def test_missing_images_are_reported_exactly(tmp_path: Path) -> None:
    data = _annotations()
    gone = (data["images"][1]["file_name"], data["images"][3]["file_name"])
    ann, image_dir = _write(tmp_path, data, skip_files=gone)
    with pytest.raises(MissingImagesError) as info:
        load_nocaps(ann, image_dir)
    error = info.value
    assert isinstance(error, ValueError)
    assert error.missing == list(gone)
    message = str(error)
    assert str(ann) in message and str(image_dir) in message
    assert "2 image file(s)" in message
    assert all(name in message for name in gone)
    assert data["images"][0]["file_name"] not in message


def test_missing_images_message_is_truncated(tmp_path: Path) -> None:
    data = _annotations(n_images=25)
    every = tuple(image["file_name"] for image in data["images"])
    ann, image_dir = _write(tmp_path, data, skip_files=every)
    with pytest.raises(MissingImagesError) as info:
        load_nocaps(ann, image_dir)
    assert len(info.value.missing) == 25
    assert "and 5 more" in str(info.value)
    assert data["images"][24]["file_name"] not in str(info.value)


def test_skip_mode_drops_and_warns(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    data = _annotations()
    ann, image_dir = _write(tmp_path, data, skip_files=(data["images"][2]["file_name"],))
    with caplog.at_level(logging.WARNING, logger="judgebias.studies.philautia.data"):
        frame = load_nocaps(ann, image_dir, missing="skip")
    assert list(frame["image_id"]) == ["nocaps-0", "nocaps-1", "nocaps-3"]
    assert "skipping 1 of 4" in caplog.text


def test_sampling_is_deterministic_and_sorted(tmp_path: Path) -> None:
    ann, image_dir = _write(tmp_path, _annotations(n_images=12))
    first = load_nocaps(ann, image_dir, n_images=5, seed=7)
    second = load_nocaps(ann, image_dir, n_images=5, seed=7)
    assert first.equals(second)
    ids = [int(x.split("-")[1]) for x in first["image_id"]]
    assert ids == sorted(ids) and len(set(ids)) == 5
    samples = {tuple(load_nocaps(ann, image_dir, n_images=5, seed=s)["image_id"]) for s in range(6)}
    assert len(samples) > 1  # the seed matters


def test_sample_is_independent_of_missing_files(tmp_path: Path) -> None:
    data = _annotations(n_images=12)
    ann, image_dir = _write(tmp_path, data)
    full = load_nocaps(ann, image_dir, n_images=6, seed=3)
    dropped = Path(full["image_path"].iloc[0])
    dropped.unlink()
    partial = load_nocaps(ann, image_dir, n_images=6, seed=3, missing="skip")
    assert list(partial["image_id"]) == list(full["image_id"].iloc[1:])


def test_domain_filter(tmp_path: Path) -> None:
    ann, image_dir = _write(tmp_path, _annotations())
    frame = load_nocaps(ann, image_dir, domains=["near-domain"])
    assert list(frame["image_id"]) == ["nocaps-1", "nocaps-3"]
    with pytest.raises(ValueError, match="far-domain"):
        load_nocaps(ann, image_dir, domains=["far-domain"])


@pytest.mark.parametrize(
    ("mutate", "pattern"),
    [
        (lambda d: d.pop("annotations"), r"lacks key 'annotations'"),
        (lambda d: d["images"][2].pop("file_name"),
         r"images row 3 \(image id 2\) lacks key 'file_name'"),
        (lambda d: d["images"][1].pop("id"), r"images row 2 lacks key 'id'"),
        (lambda d: d["annotations"][0].pop("caption"),
         r"annotations row 1 \(image id 3\) lacks key 'caption'"),
        (lambda d: d["annotations"][5].update(image_id=99),
         r"annotations row 6: image_id 99 is not an id of 'images'"),
        (lambda d: d["images"].append(dict(d["images"][0], file_name="other.jpg")),
         r"images row 5: id 0 is also images row 1"),
        # one picture under two ids would be captioned, scored and averaged twice
        (lambda d: d["images"].append(dict(d["images"][0], id=7)),
         r"images row 5: file_name '0000abcd.png' is also images row 1"),
        # a file concatenated twice: every caption id repeats, and would take a reference slot
        (lambda d: d["annotations"].extend(d["annotations"][:2]),
         r"annotations row 41: id 39 is also annotations row 1"),
        (lambda d: d["images"][3].pop("domain"), r"images row 4 \(image id 3\) lacks key 'domain'"),
    ],
)
def test_bad_structure_names_file_and_key(tmp_path: Path, mutate, pattern: str) -> None:
    data = _annotations()
    ann, image_dir = _write(tmp_path, data)
    mutate(data)
    ann.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ValueError, match=pattern) as info:
        load_nocaps(ann, image_dir, domains=list(DOMAINS[:3]))
    assert str(info.value).startswith(f"{ann}: ")


def test_too_few_captions_names_image(tmp_path: Path) -> None:
    data = _annotations()
    data["annotations"] = [
        a for a in data["annotations"] if not (a["image_id"] == 2 and a["id"] % 10 >= 4)
    ]
    ann, image_dir = _write(tmp_path, data)
    with pytest.raises(ValueError, match=r"images row 3 \(image id 2\) has 4 caption\(s\)") \
            as info:
        load_nocaps(ann, image_dir, n_references=5)
    assert str(ann) in str(info.value)
    assert len(load_nocaps(ann, image_dir, n_references=4)) == 4


def test_invalid_json_and_arguments(tmp_path: Path) -> None:
    ann, image_dir = _write(tmp_path, _annotations())
    with pytest.raises(ValueError, match="n_images"):
        load_nocaps(ann, image_dir, n_images=10)
    with pytest.raises(ValueError, match="missing="):
        load_nocaps(ann, image_dir, missing="ignore")
    ann.write_text('{"images": [],\n "annotations": [}', encoding="utf-8")
    with pytest.raises(ValueError) as info:
        load_nocaps(ann, image_dir)
    assert str(info.value) == (f"{ann}: line 2 column 18: not valid JSON "
                               "(Expecting value)")
    ann.write_bytes(b'{"images": "\xff"}')
    with pytest.raises(ValueError, match=f"{ann}: not UTF-8 text"):
        load_nocaps(ann, image_dir)


def test_a_key_twice_in_one_object_is_an_error(tmp_path: Path) -> None:
    """Python's json keeps the second of two equal keys without a word; the importers'
    reader names the key and, when it occurs twice in the file, both lines."""
    ann, image_dir = _write(tmp_path, _annotations())
    ann.write_text('{"info": {},\n "images": [],\n "images": [],\n "annotations": []}')
    with pytest.raises(ValueError) as info:
        load_nocaps(ann, image_dir)
    assert str(info.value) == (f"{ann}: key 'images' appears twice in one JSON object "
                               "(lines 2 and 3); the second would silently replace the first")


@pytest.mark.parametrize("file_name, reason", [
    ("../outside.jpg", "leaves its folder"), ("sub/../../outside.jpg", "leaves its folder"),
    ("/etc/passwd", "not an absolute path")])
def test_a_file_name_outside_image_dir_names_the_row(tmp_path: Path, file_name: str,
                                                       reason: str) -> None:
    data = _annotations()
    ann, image_dir = _write(tmp_path, data)
    data["images"][2]["file_name"] = file_name
    ann.write_text(json.dumps(data))
    with pytest.raises(ValueError) as info:
        load_nocaps(ann, image_dir)
    message = str(info.value)
    assert message.startswith(f"{ann}: images row 3: file_name: {file_name!r}")
    assert reason in message and str(image_dir) in message


def test_a_file_name_that_stays_inside_is_normalised(tmp_path: Path) -> None:
    data = _annotations()
    ann, image_dir = _write(tmp_path, data)
    data["images"][1]["file_name"] = "sub/../" + data["images"][1]["file_name"]
    ann.write_text(json.dumps(data))
    frame = load_nocaps(ann, image_dir)
    assert frame["image_path"][1] == str(image_dir / _annotations()["images"][1]["file_name"])


def _nocaps_params(params: dict, ann: Path, image_dir: Path, tmp_path: Path) -> Path:
    import yaml

    params["philautia"]["dataset"]["name"] = "nocaps"
    params["philautia"]["dataset"]["nocaps"].update(annotations=str(ann), image_dir=str(image_dir),
                                       n_images=3, n_references=5)
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(params))
    return path


def test_dataset_step_imports_nocaps_as_the_images_artifact(tmp_path: Path, params) -> None:
    """The `philautia.dataset` step with dataset.name nocaps writes a valid images table; the images
    stay where they are."""
    from judgebias.cli import main
    from judgebias.io.artifacts import read_table
    from judgebias.studies.philautia.tables import IMAGES

    ann, image_dir = _write(tmp_path, _annotations(6))
    path = _nocaps_params(params, ann, image_dir, tmp_path)
    out = tmp_path / "data" / "images.parquet"
    assert main(["--params", str(path), "plumbing", "step", "philautia.dataset", "--out",
                 "table", str(out), "--out", "images", str(tmp_path / "data" / "images")]) == 0
    table = read_table(out, IMAGES)
    assert len(table) == 3 and set(table["source"]) == {"nocaps"}
    assert all(Path(p).parent == image_dir for p in table["image_path"])
    assert (table["references"].map(len) == 5).all()


def test_dataset_step_names_missing_or_bad_nocaps_files(tmp_path: Path, params, capsys) -> None:
    """A missing annotations file stops validation (before any job) naming its key; a file
    that is there but malformed stops the dataset step naming the key and the problem."""
    from judgebias.cli import main

    ann, image_dir = _write(tmp_path, _annotations(4))
    path = _nocaps_params(params, tmp_path / "absent.json", image_dir, tmp_path)
    argv = ["--params", str(path), "plumbing", "step", "philautia.dataset", "--out", "table",
            str(tmp_path / "t.parquet"), "--out", "images", str(tmp_path / "imgs")]
    assert main(argv) == 2
    assert f"philautia.dataset.nocaps.annotations: file {tmp_path / 'absent.json'} does not exist" \
        in capsys.readouterr().err
    ann.write_text("{not json", encoding="utf-8")
    path = _nocaps_params(params, ann, image_dir, tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"philautia.dataset.nocaps: {ann}: line 1 column 2: not valid JSON" in err
    assert not (tmp_path / "t.parquet").exists()
    data = _annotations(4)
    data["images"][1]["file_name"] = "../../elsewhere.jpg"
    ann.write_text(json.dumps(data), encoding="utf-8")
    assert main(argv) == 2
    assert (f"philautia.dataset.nocaps: {ann}: images row 2: file_name: "
            "'../../elsewhere.jpg' leaves its folder") in capsys.readouterr().err
    assert not (tmp_path / "t.parquet").exists()
