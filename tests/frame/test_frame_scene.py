"""FRAME's offline renderer and reader (scene.py) and the simulated annotators
(annotators.py): every value is drawn and read back, on originals and after every
manipulation of manipulate.py at its grid's extremes (seed 004 App. B.3), boxes enclose the
objects, renders are deterministic and fast; annotators agree as in Table 7."""

from __future__ import annotations

import io

import numpy as np
import pytest

from judgebias.studies.frame import manipulate
from judgebias.studies.frame.annotators import simulate_annotators
from judgebias.studies.frame.concepts import (
    VOCABULARY,
    compose_instruction,
    keyword,
    parse_instruction,
    sample_concepts,
)
from judgebias.studies.frame.recipes import DOMAINS, POSITIONS, applies, step
from judgebias.studies.frame.scene import alignment, crop_border, ink, layout, read_scene, render

EXTREMES = ([step(m, v) for m in ("brightness", "gamma") for v in (0.9, 2.3)]
            + [step("padding", v) for v in (10, 50)]
            + [step(m, p) for m in ("authenticity_overlay", "keyword_overlay",
                                    "instruction_overlay") for p in POSITIONS]
            + [step("bounding_box", "annotated"), step("beauty_filter", "smoothing")])


def _png(image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.mark.parametrize("domain", DOMAINS)
def test_every_value_is_drawn_and_read(domain):
    rng = np.random.default_rng(0)
    for slot, values in VOCABULARY[domain].items():
        for i, value in enumerate(values):
            concepts = {**sample_concepts(domain, rng), slot: value}
            scene = render(compose_instruction(domain, concepts), seed=i, error_rate=0.0)
            assert scene.domain == domain and scene.drawn == concepts
            assert read_scene(scene.image, domain) == concepts


@pytest.mark.parametrize("domain", DOMAINS)
def test_originals_read_exactly_over_seeds(domain):
    rng = np.random.default_rng(1)
    for seed in range(25):
        prompt = compose_instruction(domain, sample_concepts(domain, rng))
        scene = render(prompt, seed=seed, error_rate=0.5)
        assert read_scene(scene.image, domain) == scene.drawn
        assert read_scene(np.asarray(scene.image), domain) == scene.drawn
    big = render(prompt, size=512, seed=3)
    assert big.image.size == (512, 512) and read_scene(big.image, domain) == big.drawn


@pytest.mark.parametrize("domain", DOMAINS)
def test_manipulations_do_not_change_what_is_read(domain):
    rng = np.random.default_rng(2)
    for seed in range(6):
        concepts = sample_concepts(domain, rng)
        prompt = compose_instruction(domain, concepts)
        scene = render(prompt, seed=seed, error_rate=0.2)
        context = manipulate.ItemContext(prompt, keyword(domain, concepts), scene.boxes,
                                         manipulate.SmoothingRestorer())
        for item in EXTREMES:
            if applies(item.manipulation, domain):
                changed = manipulate.apply(scene.image, [item], context)
                assert read_scene(changed, domain) == scene.drawn, (item.id, seed)
        worst = [step("gamma", 2.3), step("instruction_overlay", "center"), step("padding", 50)]
        if domain != "outdoor":
            worst.append(step("bounding_box", "annotated"))
        assert read_scene(manipulate.apply(scene.image, worst, context), domain) == scene.drawn


@pytest.mark.parametrize("domain", DOMAINS)
def test_boxes_enclose_the_objects_with_a_gap(domain):
    rng = np.random.default_rng(3)
    for seed in range(10):
        scene = render(compose_instruction(domain, sample_concepts(domain, rng)), seed=seed)
        if domain == "outdoor":
            assert scene.boxes == ()
            continue
        assert len(scene.boxes) == VOCABULARY[domain]["number"].index(scene.drawn["number"]) + 1
        x0, y0, x1, y1 = layout(domain, 256, 256)["object"]
        glyphs = np.zeros((256, 256), bool)
        glyphs[y0:y1 + 1, x0:x1 + 1] = ink(np.asarray(scene.image))[y0:y1 + 1, x0:x1 + 1]
        inside = np.zeros_like(glyphs)
        line = manipulate.scale_length(manipulate.BOX_LINE_WIDTH, 256)
        for bx0, by0, bx1, by1 in scene.boxes:
            assert x0 <= bx0 < bx1 <= x1 and y0 <= by0 < by1 <= y1
            gap = line + 1  # the outline grows inward; a free pixel between it and the glyph
            inside[by0 + gap:by1 + 1 - gap, bx0 + gap:bx1 + 1 - gap] = True
        assert glyphs.any() and not (glyphs & ~inside).any()
        boxed = np.asarray(manipulate.bounding_box(scene.image, scene.boxes))
        red = (boxed[..., 0] == 255) & (boxed[..., 1] == 0) & (boxed[..., 2] == 0)
        assert not (red & glyphs).any()


def test_render_is_deterministic_and_seeds_change_the_layout_only():
    prompt = "Generate an image of three flamingos drinking from a watering hole in a meadow."
    a, b = render(prompt, seed=5), render(prompt, seed=5)
    assert _png(a.image) == _png(b.image) and a.drawn == b.drawn and a.boxes == b.boxes
    c, d = render(prompt, seed=6, error_rate=0.0), render(prompt, seed=7, error_rate=0.0)
    assert c.drawn == d.drawn == parse_instruction(prompt, "animal")
    assert _png(c.image) != _png(d.image) and c.boxes != d.boxes
    with pytest.raises(ValueError):
        render("Generate an image of a sunny day.")


def test_error_rate_lowers_alignment():
    rng = np.random.default_rng(4)
    shares = []
    for seed in range(100):
        domain = DOMAINS[seed % len(DOMAINS)]
        concepts = sample_concepts(domain, rng)
        scene = render(compose_instruction(domain, concepts), seed=seed, error_rate=0.3)
        shares.append(alignment(concepts, scene.drawn))
    assert 0.6 < np.mean(shares) < 0.8
    assert alignment({"a": "x", "b": "y"}, {"a": "x", "b": "z"}) == 0.5
    assert alignment({"a": None}, {"a": None}) == 0.0


def test_crop_border_removes_black_padding_only():
    rgb = np.full((10, 12, 3), 40, np.uint8)
    padded = np.pad(rgb, ((3, 2), (1, 4), (0, 0)))
    assert crop_border(padded).shape == rgb.shape
    assert crop_border(rgb).shape == rgb.shape


def test_annotators_agree_as_in_table_7():
    rng = np.random.default_rng(6)
    true = rng.uniform(0.0, 1.0, 5000)
    first, second = simulate_annotators(true, rng)
    assert 0.59 <= np.corrcoef(first, second)[0, 1] <= 0.82
    for scores in (first, second):
        assert set(np.unique(scores)) <= {1.0, 2.0, 3.0, 4.0, 5.0}
    human = (first + second) / 2
    assert np.any(human % 1 == 0.5)
    assert second.mean() > first.mean()  # the second annotator's +0.2 leniency
    once, twice = (simulate_annotators(true, np.random.default_rng(7)) for _ in range(2))
    assert all(np.array_equal(a, b) for a, b in zip(once, twice, strict=True))
    with pytest.raises(ValueError):
        simulate_annotators(np.array([1.2]), rng)
