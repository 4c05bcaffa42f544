"""FRAME's manipulations at pixel level (seed 004 Table 1, App. B.3; spec frame.md)."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from judgebias.studies.frame import manipulate as m
from judgebias.studies.frame.recipes import POSITIONS, step

INSTRUCTION = ("Generate an image of three flamingos drinking from a watering hole in a meadow, "
               "with two herons standing in the reeds behind them at sunset.")


def picture(width: int = 256, height: int = 256, seed: int = 0) -> Image.Image:
    """Mid-grey noise: no pixel is pure black, white or red, so overlays show as changes."""
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(30, 220, (height, width, 3), dtype=np.uint8), "RGB")


def pixels(image: Image.Image) -> np.ndarray:
    return np.asarray(image).astype(int)


def png(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def test_scale_length_rounds_half_up_with_a_one_pixel_floor():
    assert m.scale_length(40, 1024) == 40
    assert m.scale_length(10, 256) == 3  # 2.5 px
    assert m.scale_length(2, 256) == 1  # 0.5 px
    assert m.scale_length(1, 256) == 1  # 0.25 px: never vanishes
    assert m.scale_length(0, 256) == 0


@pytest.mark.parametrize(("width", "setting"), [(1024, 40), (1024, 10), (256, 10), (256, 30),
                                                (256, 50)])
def test_padding_adds_a_black_border_of_the_scaled_width(width, setting):
    image = picture(width, 48)
    out = m.padding(image, setting)
    border = int(np.floor(setting * width / 1024 + 0.5))
    if width == 1024:
        assert border == setting
    assert out.size == (width + 2 * border, 48 + 2 * border)
    a = pixels(out)
    inside = np.zeros(a.shape[:2], bool)
    inside[border:-border, border:-border] = True
    assert (a[~inside] == 0).all()
    assert (a[inside].reshape(48, width, 3) == pixels(image)).all()


def test_padding_resize_back_keeps_the_size_and_zero_is_the_identity():
    image = picture()
    assert m.padding(image, 40, resize_back=True).size == image.size
    assert (pixels(m.padding(image, 0)) == pixels(image)).all()


def test_tone_identities():
    image = picture()
    assert (pixels(m.brightness(image, 1.0)) == pixels(image)).all()
    assert (pixels(m.gamma(image, 1.0)) == pixels(image)).all()


def test_brightness_multiplies_like_pil_blend():
    image = picture()
    # PIL's Image.blend with a black image: trunc(in * factor), clipped to 255
    expected = np.minimum(255, np.floor(pixels(image) * np.float32(1.5)))
    assert (pixels(m.brightness(image, 1.5)) == expected).all()
    assert pixels(m.brightness(image, 2.3)).max() == 255


@pytest.mark.parametrize("g", [0.9, 1.3, 2.3])
def test_gamma_matches_the_formula(g):
    image = picture()
    expected = np.floor(255 * (pixels(image) / 255) ** (1 / g) + 0.5)
    assert (pixels(m.gamma(image, g)) == expected).all()
    with pytest.raises(ValueError):
        m.gamma(image, 0)


def overlay_checks(image: Image.Image, out: Image.Image, extent, position: str) -> None:
    """The changed pixels: white or black, both present, inside extent, extent in place."""
    width, height = image.size
    changed = (pixels(out) != pixels(image)).any(axis=2)
    ys, xs = np.nonzero(changed)
    x0, y0, x1, y1 = extent
    assert xs.min() >= x0 and xs.max() < x1 and ys.min() >= y0 and ys.max() < y1
    values = pixels(out)[changed]
    white, black = (values == 255).all(axis=1), (values == 0).all(axis=1)
    assert (white | black).all() and white.any() and black.any()
    margin = m.scale_length(m.TEXT_MARGIN, width)
    if position == "center":
        assert abs((x0 + x1) - width) <= 1 and abs((y0 + y1) - height) <= 1
        return
    vertical, horizontal = position.split("-")
    assert (y0 == margin and y1 <= height / 2) if vertical == "top" else \
        (y1 == height - margin and y0 >= height / 2)
    if horizontal == "left":
        assert x0 == margin
    else:
        assert x1 == width - margin


@pytest.mark.parametrize("position", POSITIONS)
def test_overlays_land_where_named(position):
    image = picture()
    cases = [(m.authenticity_overlay(image, position),
              m.overlay_extent(image.size, "Reference Image", position, 30)),
             (m.keyword_overlay(image, "Flamingo", position),
              m.overlay_extent(image.size, "Flamingo", position, 30)),
             (m.instruction_overlay(image, INSTRUCTION, position),
              m.overlay_extent(image.size, INSTRUCTION, position, 20, wrap=True))]
    for out, extent in cases:
        overlay_checks(image, out, extent, position)
    x0, _, x1, _ = cases[1][1]
    assert x1 - x0 < image.width / 2  # a keyword fits in its quadrant


def test_instruction_wraps_to_several_lines_within_the_image():
    for width in (256, 1024):
        size = (width, width)
        one_line = m.overlay_extent(size, "Flamingo", "top-left", 20)
        x0, y0, x1, y1 = m.overlay_extent(size, INSTRUCTION, "top-left", 20, wrap=True)
        margin = m.scale_length(m.TEXT_MARGIN, width)
        assert y1 - y0 >= 2 * (one_line[3] - one_line[1])
        assert x0 >= margin and x1 <= width - margin
        image = picture(width, width)
        overlay_checks(image, m.instruction_overlay(image, INSTRUCTION, "bottom-right"),
                       m.overlay_extent(size, INSTRUCTION, "bottom-right", 20, wrap=True),
                       "bottom-right")


def test_overlay_rejects_bad_position_and_empty_text():
    with pytest.raises(ValueError, match="position"):
        m.keyword_overlay(picture(), "Dog", "middle")
    with pytest.raises(ValueError, match="text"):
        m.keyword_overlay(picture(), "  ", "center")


@pytest.mark.parametrize("width", [256, 1024])
def test_box_outline_is_exactly_on_the_annotation(width):
    image = picture(width, 200)
    box = (20, 30, 140, 170)
    line = m.scale_length(m.BOX_LINE_WIDTH, width)
    assert line == (3 if width == 1024 else 1)
    out = pixels(m.bounding_box(image, [box]))
    red = (out == [255, 0, 0]).all(axis=2)
    x0, y0, x1, y1 = box
    expected = np.zeros_like(red)
    expected[y0:y1 + 1, x0:x1 + 1] = True
    expected[y0 + line:y1 + 1 - line, x0 + line:x1 + 1 - line] = False
    assert (red == expected).all()
    assert (out[~expected] == pixels(image)[~expected]).all()
    with pytest.raises(ValueError, match="x0 <= x1"):
        m.bounding_box(image, [(50, 0, 10, 10)])


def context(**changes) -> m.ItemContext:
    fields = {"instruction": INSTRUCTION, "keyword": "Flamingo",
              "boxes": ((10, 10, 100, 120),), "restorer": m.SmoothingRestorer()}
    return m.ItemContext(**{**fields, **changes})


def test_apply_is_deterministic():
    steps = [step("gamma", 1.3), step("bounding_box", "annotated"),
             step("beauty_filter", "smoothing"), step("instruction_overlay", "top-left"),
             step("padding", 25)]
    first = png(m.apply(picture(), steps, context()))
    assert first == png(m.apply(picture(), steps, context()))


def test_apply_composes_in_canonical_order():
    image = picture()
    steps = [step("padding", 40), step("keyword_overlay", "top-right"), step("brightness", 1.3)]
    manual = m.padding(m.keyword_overlay(m.brightness(image, 1.3), "Flamingo", "top-right"), 40)
    for order in (steps, steps[::-1], [steps[1], steps[0], steps[2]]):
        assert (pixels(m.apply(image, order, context())) == pixels(manual)).all()
    overlay_last = m.keyword_overlay(m.padding(m.brightness(image, 1.3), 40), "Flamingo",
                                     "top-right")
    assert (pixels(overlay_last) != pixels(manual)).any()
    assert (pixels(m.apply(image, [], context())) == pixels(image)).all()


def test_apply_names_what_an_outdoor_item_lacks():
    image = picture()
    with pytest.raises(ValueError, match="keyword"):
        m.apply(image, [step("keyword_overlay", "center")], context(keyword=None))
    with pytest.raises(ValueError, match="boxes"):
        m.apply(image, [step("bounding_box", "annotated")], context(boxes=()))
    with pytest.raises(ValueError, match="restorer"):
        m.apply(image, [step("beauty_filter", "gfpgan")], context(restorer=None))
    with pytest.raises(ValueError, match="once"):
        m.apply(image, [step("padding", 10), step("padding", 20)], context())


def test_gfpgan_unavailable_says_what_to_install(tmp_path):
    with pytest.raises(m.BeautyFilterUnavailable) as err:
        m.restorer("gfpgan", weights=str(tmp_path / "GFPGANv1.4.pth"))
    assert "judgebias[gfpgan]" in str(err.value)
    assert "frame.beauty.weights" in str(err.value)
    with pytest.raises(ValueError, match="unknown beauty filter"):
        m.restorer("airbrush")


def test_smoothing_restorer_takes_out_high_frequencies():
    image = picture()
    restorer = m.restorer("smoothing")
    assert restorer.name == "smoothing"
    out = m.beauty_filter(image, restorer)
    assert out.size == image.size

    def energy(im: Image.Image) -> float:
        v = pixels(im).max(axis=2).astype(float)
        lap = 4 * v[1:-1, 1:-1] - v[:-2, 1:-1] - v[2:, 1:-1] - v[1:-1, :-2] - v[1:-1, 2:]
        return float(np.abs(lap).mean())

    assert energy(out) < 0.5 * energy(image)
    assert abs(pixels(out).mean() - pixels(image).mean()) < 2  # tones kept


def test_non_rgb_images_are_refused():
    with pytest.raises(ValueError, match="RGB"):
        m.brightness(picture().convert("L"), 1.2)
