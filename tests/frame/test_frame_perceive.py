"""The simulated judge's detectors, on manipulate.py's own outputs (spec frame.md, "What the
simulated judge must plant"; seed 004 Table 1 and App. B.3 grids)."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image, ImageDraw
from scipy import ndimage

from judgebias.studies.frame import manipulate as m
from judgebias.studies.frame import perceive as p
from judgebias.studies.frame.recipes import POSITIONS, step

TONE_GRID = [0.9, 0.95, 1.03, 1.05, 1.1, 1.11, 1.15, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7, 2.0, 2.1,
             2.3]
PADDING_GRID = [10, 15, 20, 25, 30, 40, 50]
INSTRUCTION = "Generate an image of three flamingos drinking from a watering hole in a meadow."
LONG_INSTRUCTION = (INSTRUCTION + " Two herons stand in the tall reeds behind them while the "
                    "sun sets over distant hills.")
KEYWORDS = ["Flamingo", "Dog", "Police Officer"]
BOXES = ((30, 40, 120, 150), (140, 20, 230, 100))


def synthetic(seed: int, size: int = 256) -> Image.Image:
    """An original as the renderer makes it: smooth colour field and shapes, normalised
    tones, grain."""
    rng = np.random.default_rng(seed)
    field = ndimage.zoom(rng.random((8, 8, 3)), (size / 8, size / 8, 1), order=3)
    image = Image.fromarray(np.clip(field[:size, :size] * 255, 0, 255).astype(np.uint8))
    draw = ImageDraw.Draw(image)
    for _ in range(4):
        x0, y0 = (int(v) for v in rng.integers(0, size - 40, 2))
        w, h = (int(v) for v in rng.integers(20, 100, 2))
        colour = tuple(int(c) for c in rng.integers(0, 256, 3))
        shape = draw.ellipse if rng.random() < 0.5 else draw.rectangle
        shape((x0, y0, x0 + w, y0 + h), fill=colour)
    shading = ndimage.gaussian_filter(rng.normal(0, 6, (size, size)), 1.5)[..., None]
    rendered = np.clip(np.asarray(image) + shading, 0, 255)  # float: no ties in V
    return Image.fromarray(p.add_grain(p.normalise_tones(rendered), rng))


@pytest.fixture(scope="module")
def originals() -> list[Image.Image]:
    return [synthetic(seed) for seed in range(2)]


def test_normalise_tones_keeps_the_contract(originals):
    rng = np.random.default_rng(5)
    raw = rng.random((64, 64, 3)) * 255
    out = p.normalise_tones(raw)
    v = out.max(axis=2) / 255
    assert out.dtype == np.uint8
    assert v.min() >= p.V_MIN - 0.005 and v.max() <= p.V_MAX + 0.005
    assert np.quantile(v, 0.10) == pytest.approx(p.Q10, abs=0.005)
    assert np.quantile(v, 0.50) == pytest.approx(p.Q50, abs=0.005)
    assert (out.min(axis=2) >= np.floor(p.SATURATION_FLOOR * out.max(axis=2))).all()
    order = np.argsort(raw.max(axis=2).ravel())
    assert (np.diff(v.ravel()[order]) >= 0).all()  # monotone in V
    hue = raw / raw.max(axis=2, keepdims=True)
    kept = hue.min(axis=2) > p.SATURATION_FLOOR + 0.05
    assert np.abs(out / out.max(axis=2, keepdims=True) - hue)[kept].max() < 0.05
    for image in originals:  # grain on top keeps V inside what the detectors need
        a = np.asarray(image)
        assert a.max(axis=2).min() > p.STROKE_BLACK and a.min(axis=2).max() < p.TEXT_WHITE


def test_originals_show_nothing(originals):
    for image in originals:
        f = p.features(image, instruction=INSTRUCTION, keyword="Dog")
        assert (f.tone, f.brightness_factor, f.gamma_value) == ("none", 1.0, 1.0)
        assert f.text_box is None and f.text_kind is None and f.text_lines == 0
        assert not f.has_boxes and f.border == (0, 0, 0, 0) and f.padding_1024 == 0
        assert not f.beauty and f.smoothness > 1.5 * p.BEAUTY_THRESHOLD


def test_features_reads_png_bytes_pil_and_arrays(originals):
    image = m.keyword_overlay(originals[0], "Dog", "top-left")
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    as_bytes = p.features(buffer.getvalue(), keyword="Dog")
    assert as_bytes == p.features(image, keyword="Dog") == p.features(np.asarray(image),
                                                                      keyword="Dog")
    with pytest.raises(ValueError, match="black"):
        p.features(np.zeros((16, 16, 3), np.uint8))


@pytest.mark.parametrize("value", TONE_GRID)
def test_every_grid_tone_is_classified_and_estimated(originals, value):
    for image in originals:
        bright = p.features(m.brightness(image, value))
        assert bright.tone == "brightness" and bright.gamma_value == 1.0
        assert bright.brightness_factor == pytest.approx(value, rel=0.03)
        gam = p.features(m.gamma(image, value))
        assert gam.tone == "gamma" and gam.brightness_factor == 1.0
        assert gam.gamma_value == pytest.approx(value, rel=0.03)
        assert not bright.beauty and not gam.beauty and gam.text_box is None


def test_padding_widths_are_recovered(originals):
    width = originals[0].width
    for setting in PADDING_GRID:
        f = p.features(m.padding(originals[0], setting))
        side = m.scale_length(setting, width)
        assert f.border == (side, side, side, side)
        assert abs(f.padding_1024 - setting) <= 1024 / width / 2 + 1e-9
        assert f.tone == "none" and not f.beauty and f.text_box is None


@pytest.mark.parametrize("position", POSITIONS)
def test_each_overlay_kind_and_position_is_recognised(originals, position):
    image = originals[0]
    for keyword in KEYWORDS:
        cases = {"authenticity": m.authenticity_overlay(image, position),
                 "keyword": m.keyword_overlay(image, keyword, position),
                 "instruction": m.instruction_overlay(image, INSTRUCTION, position)}
        for kind, out in cases.items():
            f = p.features(out, instruction=INSTRUCTION, keyword=keyword)
            assert (f.text_kind, f.text_position) == (kind, position)
            assert f.tone == "none" and not f.has_boxes and not f.beauty
            extent = m.overlay_extent(image.size, {"authenticity": "Reference Image",
                                                   "keyword": keyword,
                                                   "instruction": INSTRUCTION}[kind],
                                      position, 20 if kind == "instruction" else 30,
                                      wrap=kind == "instruction")
            # the extent bounds the anti-aliased glyphs; the thresholded ones lie within 1 px
            (x0, y0, x1, y1), (e0, f0, e1, f1) = f.text_box, extent
            assert e0 <= x0 <= e0 + 1 and f0 <= y0 <= f0 + 1
            assert e1 - 1 <= x1 <= e1 and f1 - 1 <= y1 <= f1
    f = p.features(m.authenticity_overlay(image, position))  # no keyword, no instruction given
    assert (f.text_kind, f.text_position, f.text_lines) == ("authenticity", position, 1)


def test_wrapped_instruction_reads_as_several_lines(originals):
    for position in POSITIONS:
        out = m.instruction_overlay(originals[1], LONG_INSTRUCTION, position)
        f = p.features(out, instruction=LONG_INSTRUCTION, keyword="Flamingo")
        assert f.text_kind == "instruction" and f.text_position == position
        assert f.text_lines >= 2


def test_boxes_are_found_where_drawn(originals):
    for image in originals:
        f = p.features(m.bounding_box(image, BOXES))
        assert f.has_boxes and sorted(f.boxes) == sorted(BOXES)
        assert f.tone == "none" and f.text_box is None and not f.beauty
    # text over an outline cuts it; the box is still read whole
    crossed = m.instruction_overlay(m.bounding_box(originals[0], ((60, 100, 200, 160),)),
                                    INSTRUCTION, "center")
    assert p.features(crossed, instruction=INSTRUCTION).boxes == ((60, 100, 200, 160),)


def test_the_smoothing_beauty_filter_is_detected(originals):
    for image in originals:
        f = p.features(m.beauty_filter(image, m.SmoothingRestorer()))
        assert f.beauty and f.smoothness < p.BEAUTY_THRESHOLD and f.tone == "none"


@pytest.mark.parametrize(("steps", "expect"), [
    ([step("instruction_overlay", "top-right"), step("padding", 40)],
     {"text_kind": "instruction", "text_position": "top-right", "padding_1024": 40.0}),
    ([step("gamma", 1.3), step("bounding_box", "annotated")],
     {"tone": "gamma", "gamma_value": 1.3, "boxes": BOXES}),
    ([step("brightness", 2.3), step("bounding_box", "annotated"),
      step("instruction_overlay", "top-left")],
     {"tone": "brightness", "brightness_factor": 2.3, "boxes": BOXES,
      "text_kind": "instruction", "text_position": "top-left"}),
    ([step("gamma", 0.9), step("beauty_filter", "smoothing"),
      step("keyword_overlay", "bottom-right"), step("padding", 25)],
     {"tone": "gamma", "gamma_value": 0.9, "beauty": True, "text_kind": "keyword",
      "text_position": "bottom-right", "padding_1024": 24.0}),
    ([step("authenticity_overlay", "center"), step("brightness", 1.05), step("padding", 10)],
     {"tone": "brightness", "brightness_factor": 1.05, "text_kind": "authenticity",
      "text_position": "center", "padding_1024": 12.0}),
])
def test_combinations_are_detected_together(originals, steps, expect):
    context = m.ItemContext(INSTRUCTION, "Flamingo", BOXES, m.SmoothingRestorer())
    for image in originals:
        f = p.features(m.apply(image, steps, context), instruction=INSTRUCTION,
                       keyword="Flamingo")
        for name, value in expect.items():
            got = getattr(f, name)
            if isinstance(value, float):
                assert got == pytest.approx(value, rel=0.03), name
            elif name == "boxes":
                assert sorted(got) == sorted(value)
            else:
                assert got == value, name
        if "tone" not in expect:
            assert f.tone == "none"
        if "beauty" not in expect:
            assert not f.beauty
