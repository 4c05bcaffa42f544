"""FRAME's real beauty filter (issue 19, part 10): GFPGAN as GFPGANer runs it, from local
files only, on random-weight checkpoints this test saves in the published layouts.

The checkpoints: GFPGANv1Clean built with random weights and saved as the GFPGAN releases
are (``{"params_ema": state_dict}``); facexlib's RetinaFace ResNet-50 and ParseNet saved
as plain state dicts under facexlib's file names. The detector's backbone is random, but
its three output heads are set (zero weights, chosen biases) so that it reports exactly
one face with five plausible landmarks in a 32-px picture: then detection, alignment,
the GFPGAN network, the parsing mask and the paste-back all run, and nothing may touch
the network.
"""

from __future__ import annotations

import json
import socket

import numpy as np
import pandas as pd
import pytest
from PIL import Image, ImageDraw

from judgebias.studies.frame import manipulate as m

torch = pytest.importorskip("torch")
pytest.importorskip("spandrel", reason="the GFPGAN path needs `pip install judgebias[gfpgan]`")
pytest.importorskip("facexlib", reason="the GFPGAN path needs `pip install judgebias[gfpgan]`")

pytestmark = pytest.mark.slow

SIZE = 32  # px: RetinaFace's coarsest level (stride 32) has one place here, so one face
# Five landmarks (eyes, nose, mouth corners) in px from the face's centre.
LANDMARKS = np.array([[-7, -5], [7, -5], [0, 2], [-5, 8], [5, 8]], dtype=np.float32)


def plant_one_face(detector) -> None:
    """RetinaFace's heads: no face at the two finer levels; at the coarsest, the first
    anchor (256 px) is a face, its box the anchor itself and its landmarks LANDMARKS.

    Landmarks decode as ``centre + bias * variance * anchor size`` (facexlib's
    decode_landm, variance 0.1)."""
    variance, anchor = 0.1, 256
    with torch.no_grad():
        for level in range(3):
            for head in (detector.ClassHead[level], detector.BboxHead[level],
                         detector.LandmarkHead[level]):
                head.conv1x1.weight.zero_()
                head.conv1x1.bias.zero_()
            face = [-10.0, 10.0] if level == 2 else [10.0, -10.0]  # (background, face) logits
            detector.ClassHead[level].conv1x1.bias.copy_(torch.tensor([*face, 10.0, -10.0]))
        offsets = (LANDMARKS / (variance * anchor)).reshape(-1)
        detector.LandmarkHead[2].conv1x1.bias[:10].copy_(torch.from_numpy(offsets))


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory) -> tuple[str, str]:
    """(GFPGAN weights file, facexlib folder), all random weights, saved locally."""
    from facexlib.detection.retinaface import RetinaFace
    from facexlib.parsing.parsenet import ParseNet
    from spandrel.architectures.GFPGAN import GFPGAN

    folder = tmp_path_factory.mktemp("gfpgan")
    torch.manual_seed(0)
    weights = folder / "GFPGANv1.4-random.pth"
    torch.save({"params_ema": GFPGAN(**m.GFPGAN_CONFIG).state_dict()}, weights)
    faces = folder / "facexlib"
    faces.mkdir()
    detector = RetinaFace(network_name="resnet50", half=False, device="cpu")
    plant_one_face(detector)
    torch.save(detector.state_dict(), faces / "detection_Resnet50_Final.pth")
    parser = ParseNet(in_size=512, out_size=512, parsing_ch=19)
    torch.save(parser.state_dict(), faces / "parsing_parsenet.pth")
    assert sorted(p.name for p in faces.iterdir()) == sorted(m.FACE_MODEL_FILES)
    return str(weights), str(faces)


@pytest.fixture
def offline(monkeypatch):
    """Any connection attempt fails the test: weights must come from local files."""
    def refuse(*args, **kwargs):
        raise AssertionError(f"a network connection was attempted: {args}")
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def face_picture() -> Image.Image:
    image = Image.new("RGB", (SIZE, SIZE), (90, 120, 160))
    draw = ImageDraw.Draw(image)
    draw.ellipse((6, 4, 26, 28), fill=(224, 180, 150))
    for x in (9, 23):
        draw.point((x, 11), fill=(40, 30, 30))
    return image


def test_missing_face_models_are_reported_before_anything_loads(checkpoints, tmp_path):
    weights, _ = checkpoints
    with pytest.raises(m.BeautyFilterUnavailable, match=r"frame\.beauty\.face_models") as err:
        m.restorer("gfpgan", weights=weights, face_models=str(tmp_path))
    assert "detection_Resnet50_Final.pth" in str(err.value)
    with pytest.raises(m.BeautyFilterUnavailable, match=r"frame\.beauty\.face_models"):
        m.restorer("gfpgan", weights=weights, face_models=None)


def test_the_render_step_restores_the_face_from_local_weights(checkpoints, offline,
                                                              tmp_path, params):
    """FRAME's render step with `frame.beauty.weights` and `face_models` set renders the
    beauty filter (status ok) next to another manipulation; the restorer made directly
    finds the planted face, replaces it, and draws the same picture again (GFPGAN's
    noise is seeded)."""
    from judgebias.config import validate_params
    from judgebias.studies.frame.params import FrameParams
    from judgebias.studies.frame.render import render as render_set

    weights, faces = checkpoints
    image = face_picture()
    image.save(tmp_path / "p.png")
    items = pd.DataFrame([{"item_id": "people-000", "domain": "people",
                           "instruction": "Generate an image of one person.",
                           "concepts": json.dumps({"Number": "one"}),
                           "image": str(tmp_path / "p.png"), "boxes": "[]"}])
    params["frame"]["render_cache"] = str(tmp_path / "cache")
    params["frame"]["beauty"].update(weights=weights, face_models=faces, device="cpu")
    frame = FrameParams.from_params(validate_params(params))
    jobs = pd.DataFrame({"item_id": ["people-000"] * 2,
                         "recipe": ["beauty_filter=gfpgan", "padding=10"]})
    out = render_set(frame, items, jobs, tmp_path / "r").set_index("recipe")
    assert out.loc["beauty_filter=gfpgan", "status"] == "ok", out.loc["beauty_filter=gfpgan"]
    assert out.loc["padding=10", "status"] == "ok"
    rendered = np.asarray(Image.open(out.loc["beauty_filter=gfpgan", "image"]).convert("RGB"))

    restorer = m.restorer("gfpgan", weights=weights, face_models=faces, device="cpu")
    restored = m.beauty_filter(image, restorer)
    assert restored.size == image.size and restored.mode == "RGB"
    assert [tuple(lm) for lm in restorer._helper.all_landmarks_5[0]] == [
        (SIZE / 2 + x, SIZE / 2 + y) for x, y in LANDMARKS]
    changed = np.abs(np.asarray(restored, dtype=int) - np.asarray(image, dtype=int)).sum(2) > 0
    assert changed[12:20, 12:20].all()  # the face's centre is the restored (random) face
    assert (np.asarray(restored) == rendered).all()
