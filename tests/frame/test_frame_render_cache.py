"""FRAME's render cache is keyed by the content of what changes a render (issue 39): the
original image's bytes, the recipe, the manipulation code's version, the PNG options, and
for a GFPGAN render the weights' and face models' content (not their paths), the upscale
and the torch device type the filter draws its noise on (CPU and CUDA draw different
noise from one seed). What changes no pixel (how many GPUs the rule asks for, where the
weights lie) is not part of the key.

Each change below must miss (draw a new cache entry) and the unchanged key must hit. The
restorer is a stand-in that reports the device it would draw on, so the test needs no
GFPGAN (tests/frame/test_frame_gfpgan.py runs the real one through the same render step).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from PIL import Image

from judgebias.config import validate_params
from judgebias.studies.frame import render
from judgebias.studies.frame.params import FrameParams

RECIPE = "beauty_filter=gfpgan"
FACE_FILES = ("detection_Resnet50_Final.pth", "parsing_parsenet.pth")


class StandInRestorer:
    """A beauty filter that returns the picture as it is, drawing on `device_type`."""

    name = "gfpgan"

    def __init__(self, device_type: str) -> None:
        self.device_type = device_type

    def restore(self, image: Image.Image) -> Image.Image:
        return image.copy()


@pytest.fixture
def setup(tmp_path, params, monkeypatch) -> dict[str, Any]:
    weights = tmp_path / "weights" / "GFPGANv1.4.pth"
    weights.parent.mkdir()
    weights.write_bytes(b"GFPGAN weights, version 1")
    faces = tmp_path / "facexlib"
    faces.mkdir()
    for name in FACE_FILES:
        (faces / name).write_bytes(f"{name}, version 1".encode())
    picture = tmp_path / "p.png"
    Image.new("RGB", (16, 16), (200, 150, 120)).save(picture)
    params["frame"]["render_cache"] = str(tmp_path / "cache")
    params["frame"]["beauty"].update(weights=str(weights), face_models=str(faces))
    device = {"type": "cpu"}
    monkeypatch.setattr(render, "_restorer",
                        lambda beauty, name: StandInRestorer(device["type"]))
    return {"frame": FrameParams.from_params(validate_params(params)), "weights": weights,
            "faces": faces, "picture": picture, "device": device,
            "cache": tmp_path / "cache", "out": tmp_path / "out"}


def _drawn(setup: dict[str, Any], frame: FrameParams | None = None,
           recipe: str = RECIPE) -> bool:
    """Render the one item once: whether it was drawn (a new cache entry), not copied."""
    items = pd.DataFrame([{"item_id": "people-000", "domain": "people",
                           "instruction": "Generate an image of one person.",
                           "concepts": json.dumps({"Number": "one"}),
                           "image": str(setup["picture"]), "boxes": "[]"}])
    jobs = pd.DataFrame({"item_id": ["people-000"], "recipe": [recipe]})
    before = set(Path(setup["cache"]).rglob("*.png"))
    out = render.render(frame or setup["frame"], items, jobs, Path(setup["out"]))
    assert (out["status"] == "ok").all(), out
    return set(Path(setup["cache"]).rglob("*.png")) != before


def _beauty(frame: FrameParams, **changes: Any) -> FrameParams:
    return dataclasses.replace(frame, beauty=dataclasses.replace(frame.beauty, **changes))


def _rewrite(path: Path, data: bytes) -> None:
    """New content at the same path, same size and (to the nanosecond) the same mtime:
    a key that trusted the file's path or its stat would not see the change."""
    stat = path.stat()
    assert len(data) == stat.st_size
    path.write_bytes(data)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def test_an_unchanged_render_key_hits(setup):
    assert _drawn(setup)
    assert not _drawn(setup)


def test_gfpgan_weights_are_keyed_by_content_not_path(setup, tmp_path):
    frame = setup["frame"]
    assert _drawn(setup)
    _rewrite(setup["weights"], b"GFPGAN weights, version 2")  # the same path: a miss
    assert _drawn(setup)
    assert not _drawn(setup)
    moved = tmp_path / "elsewhere.pth"  # the same bytes elsewhere: a hit
    shutil.copyfile(setup["weights"], moved)
    assert not _drawn(setup, _beauty(frame, weights=str(moved)))


def test_face_models_upscale_and_device_change_the_key_gpus_do_not(setup):
    frame = setup["frame"]
    assert _drawn(setup)
    assert not _drawn(setup, _beauty(frame, gpus=2))  # how many GPUs: no pixel changes
    assert not _drawn(setup, _beauty(frame, device="cpu"))  # the setting resolves the same
    setup["device"]["type"] = "cuda"  # CUDA draws GFPGAN's noise differently
    assert _drawn(setup)
    setup["device"]["type"] = "cpu"
    assert not _drawn(setup)
    detector = setup["faces"] / FACE_FILES[0]
    _rewrite(detector, f"{FACE_FILES[0]}, version 2".encode())
    assert _drawn(setup)
    assert _drawn(setup, _beauty(frame, upscale=2))


def test_image_recipe_code_and_png_options_change_the_key(setup, monkeypatch):
    assert _drawn(setup, recipe="padding=10")
    assert not _drawn(setup, recipe="padding=10")
    assert _drawn(setup, recipe="padding=20")
    Image.new("RGB", (16, 16), (10, 150, 120)).save(setup["picture"])
    assert _drawn(setup, recipe="padding=10")
    monkeypatch.setattr(render, "code_version", lambda module: "other code")
    assert _drawn(setup, recipe="padding=10")
    monkeypatch.setattr(render, "PNG_OPTIONS", {**render.PNG_OPTIONS, "compress_level": 6})
    assert _drawn(setup, recipe="padding=10")
