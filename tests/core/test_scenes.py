"""The synthetic scene world: exact perception, correct references, deterministic builds."""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from judgebias.data.scenes import (
    VOCABULARY,
    CaptionClaims,
    ClaimedObject,
    Scene,
    SceneObject,
    match_claims,
    perceive,
    random_scene,
    read_caption,
    reference_captions,
    render,
    scene_claims,
    scene_from_json,
    scene_to_json,
    to_png_bytes,
)
from judgebias.studies.philautia.data import COLUMNS, build_synthetic_dataset


def _encode(image: Image.Image, fmt: str = "PNG") -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format=fmt)
    return buffer.getvalue()


def test_perceive_recovers_500_random_scenes() -> None:
    rng = np.random.default_rng(123)
    for _ in range(500):
        scene = random_scene(rng)
        assert perceive(to_png_bytes(render(scene))) == scene


@pytest.mark.parametrize("size", [64, 256])
def test_perceive_is_exact_at_other_sizes(size: int) -> None:
    rng = np.random.default_rng(size)
    for _ in range(60):
        scene = random_scene(rng)
        assert perceive(to_png_bytes(render(scene, size))) == scene


def test_random_scenes_cover_the_world() -> None:
    rng = np.random.default_rng(0)
    scenes = [random_scene(rng) for _ in range(400)]
    counts = {len(s.objects) for s in scenes}
    shapes = {o.shape for s in scenes for o in s.objects}
    assert counts == {1, 2, 3}
    assert len(shapes) == 4
    assert len({s.background for s in scenes}) == 4


@pytest.mark.parametrize(
    "image",
    [
        Image.fromarray(np.random.default_rng(1).integers(0, 256, (90, 140, 3), dtype=np.uint8)),
        Image.new("RGB", (1, 1), (3, 200, 7)),
        Image.fromarray(np.random.default_rng(2).integers(0, 256, (40, 60), dtype=np.uint8)),
        Image.new("RGBA", (64, 64), (255, 0, 0, 128)),
        Image.fromarray(
            np.tile(np.linspace(0, 255, 1500, dtype=np.uint8)[None, :, None], (1200, 1, 3))
        ),
    ],
    ids=["noise", "one-pixel", "grayscale", "rgba", "large-gradient"],
)
def test_perceive_gives_best_effort_scene_on_odd_images(image: Image.Image) -> None:
    scene = perceive(_encode(image))
    assert isinstance(scene, Scene)
    assert len(scene.objects) <= 3


def test_perceive_survives_jpeg_artifacts() -> None:
    scene = random_scene(np.random.default_rng(5))
    assert isinstance(perceive(_encode(render(scene), "JPEG")), Scene)


def test_perceive_rejects_bytes_that_are_not_an_image() -> None:
    with pytest.raises(ValueError, match="not a decodable image"):
        perceive(b"definitely not a png")


def test_scene_json_and_png_bytes_round_trip() -> None:
    rng = np.random.default_rng(9)
    for _ in range(20):
        scene = random_scene(rng)
        assert scene_from_json(scene_to_json(scene)) == scene
        assert to_png_bytes(render(scene)) == to_png_bytes(render(scene))


def test_scene_rejects_out_of_world_values() -> None:
    with pytest.raises(ValueError, match="color"):
        SceneObject("circle", "white", "small", "left")  # background colours are not objects
    with pytest.raises(ValueError, match="distinct positions"):
        Scene("white", (SceneObject("circle", "red", "small", "left"),) * 2)


def test_reference_captions_are_correct_and_varied() -> None:
    rng = np.random.default_rng(42)
    for _ in range(200):
        scene = random_scene(rng)
        references = reference_captions(scene, rng, n=5)
        assert len(references) == 5
        assert len(set(references)) == 5
        for text in references:
            claims = read_caption(text)
            assert claims.background == scene.background, text
            assert sorted(claims.objects, key=repr) == sorted(
                scene_claims(scene).objects, key=repr
            ), text
            assert match_claims(claims, scene_claims(scene)).accuracy == 1.0


def test_read_caption_handles_styles_and_synonyms() -> None:
    claims = read_caption(
        "On the left, a big violet disc sits next to a tiny red rhombus in the centre, "
        "against a grey backdrop."
    )
    assert claims == CaptionClaims(
        objects=(
            ClaimedObject("circle", "purple", "large", "left"),
            ClaimedObject("diamond", "red", "small", "center"),
        ),
        background="gray",
    )
    minimal = read_caption("This image shows a green triangle.")
    assert minimal == CaptionClaims((ClaimedObject("triangle", "green"),), None)


def test_match_claims_penalises_hallucinated_and_missing_objects() -> None:
    scene = Scene(
        "white",
        (
            SceneObject("circle", "red", "large", "left"),
            SceneObject("square", "blue", "small", "right"),
        ),
    )
    truth = scene_claims(scene)
    perfect = match_claims(
        read_caption(
            "A large red circle on the left and a small blue "
            "square on the right on a white background."
        ),
        truth,
    )
    missing = match_claims(read_caption("A large red circle on the left on white."), truth)
    wrong = match_claims(
        read_caption(
            "A large green circle on the left and a small blue "
            "square on the right on a black background."
        ),
        truth,
    )
    extra = match_claims(
        read_caption(
            "A large red circle on the left, a small blue square "
            "on the right and a pink triangle in the middle, on "
            "white."
        ),
        truth,
    )
    assert perfect.accuracy == 1.0
    assert len(missing.missing) == 1 and missing.accuracy < 1.0
    assert len(wrong.wrong) == 1 and wrong.accuracy < 1.0
    assert len(extra.hallucinated) == 1 and extra.accuracy < 1.0


def test_synthetic_build_is_deterministic(tmp_path) -> None:
    first = build_synthetic_dataset(tmp_path / "a", n_images=25, seed=3)
    second = build_synthetic_dataset(tmp_path / "b", n_images=25, seed=3)
    assert tuple(first.columns) == COLUMNS
    assert first.drop(columns="image_path").equals(second.drop(columns="image_path"))
    for path_a, path_b in zip(first.image_path, second.image_path, strict=True):
        assert Path(path_a).read_bytes() == Path(path_b).read_bytes()
    other = build_synthetic_dataset(tmp_path / "c", n_images=25, seed=4)
    assert not first.image_sha256.equals(other.image_sha256)


def test_synthetic_table_matches_its_images(tmp_path) -> None:
    table = build_synthetic_dataset(tmp_path / "data", n_images=30, seed=11, n_references=4)
    assert list(table.image_id[:2]) == ["syn-00000", "syn-00001"]
    assert set(table.source) == {"synthetic"}
    for row in table.itertuples():
        assert row.image_path == str(tmp_path / "data" / "images" / f"{row.image_id}.png")
        png = Path(row.image_path).read_bytes()
        assert hashlib.sha256(png).hexdigest() == row.image_sha256
        scene = scene_from_json(row.scene)
        assert perceive(png) == scene
        assert len(row.references) == 4
        for text in row.references:
            assert match_claims(read_caption(text), scene_claims(scene)).accuracy == 1.0
    # the dataset step writes it as the philautia study's images artifact
    from judgebias.io.artifacts import read_table, write_table
    from judgebias.studies.philautia.tables import IMAGES

    write_table(table, tmp_path / "images.parquet", IMAGES)
    pd.testing.assert_frame_equal(read_table(tmp_path / "images.parquet", IMAGES), table)


def test_sim_styles_must_avoid_scene_words() -> None:
    """Config validation (judgebias.config._sim_style_errors) rejects sim signatures and
    openers that use VOCABULARY: these are exactly the words read_caption reads."""
    assert {"red", "circle", "circles", "left", "big"} <= VOCABULARY
    for harmless in ("vivid", "neatly", "clearly", "In this picture,", "This image shows"):
        assert not set(harmless.lower().replace(",", "").split()) & VOCABULARY, harmless
    plain = read_caption("A big red circle on the left.")
    assert plain.objects
    # the default styles do not change what a caption claims ...
    assert read_caption("In this picture, a big red circle on the left, vivid.") == plain
    assert read_caption("This image shows a big red circle clearly on the left.") == plain
    # ... a style with scene words would
    assert read_caption("A blue square shows a big red circle on the left.") != plain


def test_smaller_rebuild_is_a_prefix_and_removes_stale_images(tmp_path) -> None:
    big = build_synthetic_dataset(tmp_path, n_images=12, seed=5)
    small = build_synthetic_dataset(tmp_path, n_images=5, seed=5)
    assert small.drop(columns="image_path").equals(
        big.head(5).drop(columns="image_path").reset_index(drop=True)
    )
    assert sorted(p.name for p in (tmp_path / "images").iterdir()) == [
        f"syn-{i:05d}.png" for i in range(5)
    ]
