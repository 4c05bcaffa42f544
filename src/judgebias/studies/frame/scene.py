"""FRAME's offline text-to-image renderer and its reader (the default run's stand-in for
DALL-E 3: seed 004 §4.1 "Image Generation", /work/shared/seeds/004_eb2847ac5d078cb2.txt;
spec frame.md, "Benchmark").

:func:`render` reads a prompt the way a text-to-image model does (its domain and concept
values: judgebias.studies.frame.concepts) and draws a picture that shows every concept slot:

* objects (Animal, People, Indoor, Illustration): as many glyphs as the number concept says,
  in the upper band, on a light card; the glyph's shape and hue name the object value, and
  each glyph gets its own box (:attr:`RenderedScene.boxes`, for the bounding-box
  manipulation of seed 004 Table 1);
* every other slot (background, action, colour, art style, angle, and Outdoor's terrain,
  time of day, climate, season): one badge each, a glyph on a card of its own in a fixed
  place; the scenery around the cards takes the hue of the domain's setting (background,
  space type or terrain).

A value with index ``j`` in its slot's list (concepts.VOCABULARY) is the glyph of
:data:`SHAPES` ``[j // 6]`` in :data:`HUES` ``[j % 6]`` (24 codes; the longest list has 15
values). A seed changes the layout (which places the objects take, their size and jitter,
the scenery), never what is shown: set B of seed 004 Fig. 3 is the same prompt drawn with
another seed. With probability ``error_rate`` per slot another value is drawn: a
text-to-image model's own mistakes, so an image's true alignment with its prompt is known
(:attr:`RenderedScene.drawn`) and not always 1.

Every picture is finished with the tone and grain contract of
judgebias.studies.frame.perceive, in the order perceive.py fixes (``normalise_tones``, then
``add_grain``: a rank remap after the grain would flatten it), which the simulated judge's
manipulation detectors rely on.

:func:`read_scene` is what a simulated judge sees. It crops a black border (padding), then
reads each card by cues that every manipulation of judgebias.studies.frame.manipulate keeps
(seed 004 Table 1 and App. B.3 grids): which channels of a glyph's pixels are high
relative to the pixel's brightest channel (the hue class: equal channels stay equal and the
order of channels stays under any per-channel monotone map, so brightness 0.9-2.3, clipping
and gamma 0.9-2.3 leave it), the glyph's outline (fill of its bounding box, a hole), and the
number of glyphs. The cards lie in two bands (17-41 % and 59-83 % of the height) that no
overlay reaches (corner overlays stay within ~9 % of an edge, a centred one within ~7 % of
the middle, at every image size), glyphs are never pure red and keep a gap to their boxes,
so a manipulated picture reads like its original: a manipulation changes what a judge is
tempted by, never what the picture shows.

Role: a helper of data.py (imagegen's offline renderer) and sim.py (what the simulated
judge reads of a picture).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image
from scipy import ndimage

from judgebias.studies.frame.concepts import VOCABULARY, domain_of, parse_instruction
from judgebias.studies.frame.perceive import black_border, brightest, darkest

Box = tuple[int, int, int, int]

BANDS = ((0.17, 0.41), (0.59, 0.83))  # card rows, as shares of the height
MARGIN_X, GAP_X = 0.05, 0.03  # side margin and gap between cards, as shares of the width
OBJECT_PLACES = 5  # places for objects on the object card (the largest number is five)
BOX_GAP = 0.012  # between a glyph and its box, as a share of the width (3 px at 256)
INSET = 0.012  # card edge left out by the reader, as a share of the width

# Glyph codes: shape x hue. A hue is an RGB direction whose channels are either high (1.0)
# or low (LOW): the reader's hue class is the set of high channels.
SHAPES = ("disc", "square", "triangle", "ring")
HUES = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0), (1.0, 1.0, 0.0), (1.0, 0.0, 1.0),
        (0.0, 1.0, 1.0))
LOW = 0.15  # low channel / high channel of a glyph: far from pure red (G, B <= 5) after any tone
CARD_TINT = (1.0, 0.97, 0.92)  # a near-neutral card: every channel above INK_RATIO
INK_RATIO = 0.6  # a pixel is ink when its lowest channel is below this share of its highest
HIGH_RATIO = 0.7  # a channel is high when it is above this share of the pixel's highest
RING_HOLE = 0.5  # inner radius of a ring, as a share of its outer radius
# Pre-normalisation brightness (V) of scenery, glyphs and cards: only their order matters,
# since normalise_tones remaps V by rank. Cards brightest, glyphs next, scenery darkest, so
# glyphs and cards keep V well above the quantisation floor of their low channels.
SCENERY_V, GLYPH_V, CARD_V = (0.1, 0.45), (0.5, 0.6), (0.75, 0.95)
# Glyph radius, as a share of the shorter side of a badge's card or of an object's place.
BADGE_RADIUS, OBJECT_RADIUS = (0.28, 0.32), (0.26, 0.3)
MIN_AREA = 0.3  # a glyph covers at least this share of the smallest glyph (less is a speck)


@dataclass(frozen=True)
class RenderedScene:
    """A rendered picture, its domain, the value each slot shows, and the boxes of its
    objects (inclusive pixel boxes, empty for Outdoor, which has no objects)."""

    image: Image.Image
    domain: str
    drawn: dict[str, str]
    boxes: tuple[Box, ...]


def layout(domain: str, width: int, height: int) -> dict[str, Box]:
    """Each card (x0, y0, x1, y1, inclusive) of a picture of this size, by slot; the card
    of the objects is keyed "object" (it also shows the number)."""
    slots = [s for s in VOCABULARY[domain] if s not in ("object", "number")]
    rows = ((["object"], slots) if "object" in VOCABULARY[domain]
            else (slots[:len(slots) // 2], slots[len(slots) // 2:]))
    cards = {}
    for (top, bottom), names in zip(BANDS, rows, strict=True):
        left, right, gap = MARGIN_X * width, (1 - MARGIN_X) * width, GAP_X * width
        cell = (right - left - gap * (len(names) - 1)) / len(names)
        for i, name in enumerate(names):
            x0 = left + i * (cell + gap)
            cards[name] = (round(x0), round(top * height), round(x0 + cell) - 1,
                           round(bottom * height) - 1)
    return cards


def _glyph_mask(shape: str, dx: np.ndarray, dy: np.ndarray, r: float) -> np.ndarray:
    """Pixels of a glyph of radius `r`, from pixel-centre offsets to its centre."""
    if shape == "disc":
        return dx**2 + dy**2 <= r**2
    if shape == "square":
        return (np.abs(dx) <= 0.85 * r) & (np.abs(dy) <= 0.85 * r)
    if shape == "triangle":  # apex up, base 2r wide: half of its bounding box
        return (dy >= -r) & (dy <= r) & (np.abs(dx) <= (dy + r) / 2)
    d2 = dx**2 + dy**2
    return (d2 <= r**2) & (d2 > (RING_HOLE * r) ** 2)


def _draw_glyph(rgb: np.ndarray, code: int, cx: float, cy: float, r: float) -> Box:
    """Paint glyph `code` centred at (cx, cy) into `rgb` (float, V-scaled later); returns
    its inclusive pixel box."""
    x0, y0 = int(np.floor(cx - r)), int(np.floor(cy - r))
    x1, y1 = int(np.ceil(cx + r)), int(np.ceil(cy + r))
    dy, dx = np.mgrid[y0:y1 + 1, x0:x1 + 1] + 0.5
    mask = _glyph_mask(SHAPES[code // len(HUES)], dx - cx, dy - cy, r)
    shade = GLYPH_V[0] + (GLYPH_V[1] - GLYPH_V[0]) * (dy - y0) / max(1, y1 - y0)
    colour = np.maximum(np.array(HUES[code % len(HUES)]), LOW)
    region = rgb[y0:y1 + 1, x0:x1 + 1]
    region[mask] = (shade[..., None] * colour)[mask]
    ys, xs = np.nonzero(mask)
    return x0 + int(xs.min()), y0 + int(ys.min()), x0 + int(xs.max()), y0 + int(ys.max())


def _draw(domain: str, drawn: dict[str, str], size: int, rng: np.random.Generator
          ) -> tuple[np.ndarray, tuple[Box, ...]]:
    """The picture (float RGB, before the tone contract) and the boxes of its objects."""
    values = VOCABULARY[domain]
    setting = next(s for s in ("background", "space_type", "terrain") if s in values)
    tint = np.maximum(np.array(HUES[values[setting].index(drawn[setting]) % len(HUES)]), 0.35)
    y, x = (np.arange(size) + 0.5) / size, (np.arange(size) + 0.5) / size
    waves = (np.sin(2 * np.pi * (rng.uniform(1, 3) * y[:, None] + rng.random()))
             * np.cos(2 * np.pi * (rng.uniform(1, 3) * x[None, :] + rng.random())))
    scenery = SCENERY_V[0] + (SCENERY_V[1] - SCENERY_V[0]) * (0.4 + 0.3 * waves + 0.2 * y[:, None])
    rgb = scenery[..., None] * tint
    boxes: list[Box] = []
    gap = max(2, round(BOX_GAP * size))
    for slot, (x0, y0, x1, y1) in layout(domain, size, size).items():
        card_v = CARD_V[0] + (CARD_V[1] - CARD_V[0]) * (y[y0:y1 + 1, None] * size - y0) / (y1 - y0)
        rgb[y0:y1 + 1, x0:x1 + 1] = card_v[..., None] * np.array(CARD_TINT)
        code = values[slot].index(drawn[slot])
        if slot != "object":
            r = min(x1 - x0, y1 - y0) * rng.uniform(*BADGE_RADIUS)
            room_x, room_y = (x1 - x0) / 2 - r - gap, (y1 - y0) / 2 - r - gap
            _draw_glyph(rgb, code, (x0 + x1 + 1) / 2 + rng.uniform(-room_x, room_x),
                        (y0 + y1 + 1) / 2 + rng.uniform(-room_y, room_y), r)
            continue
        place_w = (x1 - x0 + 1) / OBJECT_PLACES
        count = values["number"].index(drawn["number"]) + 1
        for place in np.sort(rng.permutation(OBJECT_PLACES)[:count]):
            r = min(place_w, y1 - y0) * rng.uniform(*OBJECT_RADIUS)
            room_x, room_y = place_w / 2 - r - 2 * gap, (y1 - y0) / 2 - r - 2 * gap
            gx0, gy0, gx1, gy1 = _draw_glyph(
                rgb, code, x0 + (place + 0.5) * place_w + rng.uniform(-room_x, room_x),
                (y0 + y1 + 1) / 2 + rng.uniform(-room_y, room_y), r)
            boxes.append((gx0 - gap, gy0 - gap, gx1 + gap, gy1 + gap))
    return rgb, tuple(boxes)


def render(prompt: str, *, size: int = 256, seed: int = 0, error_rate: float = 0.1
           ) -> RenderedScene:
    """Draw the picture of a prompt (module docstring). A slot the prompt does not name is
    drawn with a seeded value, as a text-to-image model fills what a prompt leaves open."""
    from judgebias.studies.frame.perceive import add_grain, normalise_tones

    domain = domain_of(prompt)
    if domain is None:
        raise ValueError(f"the offline renderer found no FRAME domain in {prompt!r}")
    wanted = parse_instruction(prompt, domain)
    rng = np.random.default_rng(seed)
    drawn: dict[str, str] = {}
    for slot, values in VOCABULARY[domain].items():
        named = wanted[slot]
        value = named if named is not None else values[rng.integers(len(values))]
        if rng.random() < error_rate:
            others = [v for v in values if v != value]
            value = others[rng.integers(len(others))]
        drawn[slot] = value
    picture, boxes = _draw(domain, drawn, size, rng)
    rgb = add_grain(normalise_tones(picture * 255.0), rng)
    return RenderedScene(Image.fromarray(rgb, "RGB"), domain, drawn, boxes)


def crop_border(rgb: np.ndarray) -> np.ndarray:
    """`rgb` without its black border: the leading and trailing rows and columns whose
    channels are all <= 2 (black padding, seed 004 Table 1; pictures never hold pure black
    under the tone contract of perceive.py)."""
    top, bottom, left, right = black_border(brightest(rgb))
    return rgb[top:rgb.shape[0] - bottom, left:rgb.shape[1] - right]


def ink(rgb: np.ndarray) -> np.ndarray:
    """The reader's glyph pixels: saturated (lowest channel below INK_RATIO of the highest)
    and not a box outline's pure red (R >= 250, G and B <= 5, manipulate.bounding_box).
    `rgb` is uint8."""
    return _ink(rgb, brightest(rgb))


def _ink(rgb: np.ndarray, high: np.ndarray) -> np.ndarray:
    """:func:`ink` from the pixels and their :func:`brightest` channel `high`."""
    box = (rgb[..., 0] >= 250) & (rgb[..., 1] <= 5) & (rgb[..., 2] <= 5)
    return (darkest(rgb) < np.take(INK_BELOW, high)) & ~box


def _hue_classes(rgb: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Each pixel's hue class as a 3-bit number, R 4 + G 2 + B 1 for each channel that is
    high (at least HIGH_RATIO of the pixel's highest channel `high`, in float32)."""
    limit = np.take(HIGH_FROM, high)
    red, green, blue = (np.greater_equal(rgb[..., c], limit).view(np.uint8) for c in range(3))
    return (red << 2) | (green << 1) | blue


def _levels_passing(condition: np.ndarray) -> np.ndarray:
    """Per highest channel h (column), how many channel levels 0..255 (rows) pass."""
    return condition.sum(axis=0).astype(np.uint16)


_LEVEL = np.arange(256, dtype=np.uint8)
# The two per-pixel tests as tables indexed by the highest channel (uint8), so a picture is
# read by one lookup instead of float arithmetic on every pixel. Both tests are monotone in
# the channel level, so each is one threshold per h, counted from the very expressions:
# ink: lowest channel < INK_RATIO * h (in float64) and h >= 8  <=>  lowest < INK_BELOW[h];
INK_BELOW = _levels_passing((_LEVEL[:, None] < INK_RATIO * _LEVEL[None, :])
                            & (_LEVEL[None, :] >= 8))
# high channel: c >= HIGH_RATIO * h (in float32)  <=>  c >= HIGH_FROM[h].
HIGH_FROM = _levels_passing(_LEVEL[:, None] < HIGH_RATIO * _LEVEL[None, :].astype(np.float32))


def _holes(own: np.ndarray) -> int:
    """How many pixels ``ndimage.binary_fill_holes(own)`` adds to `own`: the background
    pieces (4-connected, the cross binary_fill_holes floods through) that touch no edge of
    the array, counted with one labelling instead of a flood fill."""
    background, count = ndimage.label(~own, structure=FOUR_CONNECTED)
    if not count:
        return 0
    sizes = np.bincount(background.ravel(), minlength=count + 1)
    sizes[0] = 0  # `own` itself
    sizes[background[[0, -1], :]] = 0
    sizes[background[:, [0, -1]]] = 0
    return int(sizes.sum())


FOUR_CONNECTED = ndimage.generate_binary_structure(2, 1)  # ndimage.label's default, made once
HUE_OF_CLASS = np.full(8, -1)  # hue class (3 bits, hue_classes) -> index into HUES; -1: none
HUE_OF_CLASS[[4, 2, 1, 6, 5, 3]] = np.arange(len(HUES))


def _glyphs(inked: np.ndarray, hues: np.ndarray, windows: dict[str, tuple[slice, slice]],
            radii: dict[str, float]) -> dict[str, list[int]]:
    """The codes of the glyphs on each card (in reading order), from the :func:`ink` mask
    and hue classes of the rows the cards span and each card's window there: each glyph
    by its hue class (the majority of its pixels) and its outline; inked areas smaller
    than MIN_AREA of the smallest glyph of the card's radius (a triangle, 2 r^2) are
    specks, not glyphs.

    All cards are labelled at once: only their windows' ink is kept, and two windows
    never touch (a gap and two insets between cards, the bands far apart), so each
    connected piece lies in one window and is the piece that labelling that window alone
    finds, in the same order (labels follow the raster order of their first pixel).
    """
    mask = np.zeros_like(inked)
    owner = np.full(inked.shape, -1, np.int8)  # which window (index into `slots`) a pixel is in
    slots = list(windows)
    for index, window in enumerate(windows.values()):
        mask[window] = inked[window]
        owner[window] = index
    codes: dict[str, list[int]] = {slot: [] for slot in slots}
    labels, n = ndimage.label(mask, structure=FOUR_CONNECTED)
    if not n:
        return codes
    areas = np.bincount(labels.ravel(), minlength=n + 1)
    votes = np.bincount((labels * 8 + hues).ravel(), minlength=(n + 1) * 8)
    majority = HUE_OF_CLASS[votes.reshape(n + 1, 8).argmax(axis=1)]
    for label, found in enumerate(ndimage.find_objects(labels), start=1):
        slot = slots[owner[found[0].start, found[1].start]]
        area = int(areas[label])
        if area < MIN_AREA * 2 * radii[slot] ** 2 or majority[label] < 0:
            continue
        codes[slot].append(_shape(labels[found] == label, area) * len(HUES)
                           + int(majority[label]))
    return codes


def _shape(own: np.ndarray, area: int) -> int:
    """A glyph's shape (index into SHAPES) from its pixels in its bounding box: a ring has
    a hole (filling it adds over 15 %), a square fills its box, a disc ~79 %, a triangle
    half. Only a box with room for such a hole is searched for one."""
    if own.size > 1.15 * area and area + _holes(own) > 1.15 * area:
        return 3
    fill = area / own.size
    if fill > 0.88:
        return 1
    return 0 if fill > 0.64 else 2


def read_scene(image: Image.Image | np.ndarray, domain: str) -> dict[str, str | None]:
    """Which value each slot shows, from the pixels alone (module docstring); None where a
    card shows no readable value. The number is the count of object glyphs, the object the
    code most of them show."""
    pixels = np.asarray(image.convert("RGB") if isinstance(image, Image.Image) else image)
    value = brightest(pixels)
    top, bottom, left, right = black_border(value)
    inside = (slice(top, pixels.shape[0] - bottom), slice(left, pixels.shape[1] - right))
    rgb, value = pixels[inside], value[inside]  # crop_border's picture
    height, width = rgb.shape[:2]
    inset = max(1, round(INSET * width))
    cards = layout(domain, width, height)
    # per pixel, once for the rows the cards span (not per card, not the whole picture)
    first = min(y0 for _, y0, _, _ in cards.values()) + inset
    last = max(y1 for _, _, _, y1 in cards.values()) + 1 - inset
    band = slice(first, last)
    windows, radii = {}, {}
    for slot, (x0, y0, x1, y1) in cards.items():
        rows = (y0 + inset - first, y1 + 1 - inset - first)
        windows[slot] = (slice(rows[0], max(rows)), slice(x0 + inset, x1 + 1 - inset))
        radii[slot] = (min((x1 - x0 + 1) / OBJECT_PLACES, y1 - y0) * OBJECT_RADIUS[0]
                       if slot == "object" else min(x1 - x0, y1 - y0) * BADGE_RADIUS[0])
    glyphs = _glyphs(_ink(rgb[band], value[band]), _hue_classes(rgb[band], value[band]),
                     windows, radii)
    values = VOCABULARY[domain]
    shown: dict[str, str | None] = {}
    for slot, codes in glyphs.items():
        if slot == "object":
            numbers = values["number"]
            shown["number"] = numbers[len(codes) - 1] if 1 <= len(codes) <= len(numbers) else None
        code = max(set(codes), key=codes.count) if codes else None
        shown[slot] = values[slot][code] if code is not None and code < len(values[slot]) else None
    return {slot: shown[slot] for slot in values}


def alignment(instruction: dict[str, str | None], drawn: dict[str, str | None]) -> float:
    """The share of the instruction's slots whose drawn value is the instruction's (the
    true image-text alignment the simulated annotators and judges respond to)."""
    slots = list(instruction)
    return sum(instruction[s] is not None and instruction[s] == drawn.get(s)
               for s in slots) / len(slots)
