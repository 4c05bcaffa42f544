"""FRAME's offline text-to-image renderer and its reader (the default run's stand-in for
DALL-E 3, seed 004 §4.1; spec frame.md).

:func:`render` reads a prompt the way a text-to-image model does (its domain and concept
values: judgebias.studies.frame.concepts) and draws a picture that shows every concept
slot: slot ``i`` of the domain is a panel in a fixed place, and the value with index ``j``
in Table 8's list is drawn as ``j + 1`` dark discs ("objects") on that panel, at seeded
places. A seed changes the layout (set B of Fig. 3 is the same prompt drawn with another
seed), the background's shading and the grain, never what is shown. With probability
``error_rate`` per slot it draws another value: a text-to-image model's own mistakes, so
an image's true alignment with its prompt is known but not always 1.

Every picture is finished with the tone contract of judgebias.studies.frame.perceive
(``normalise_tones`` then ``add_grain``), which the simulated judge's manipulation
detectors rely on. The panels lie in two bands (19-41 % and 59-81 % of the height) that no
overlay of judgebias.studies.frame.manipulate reaches (corners: a margin band at the top
and bottom; centre: about +-8 % around the middle), and boxes are drawn around the object
panel with a gap, so :func:`read_scene` reads every manipulated version as the original:
a manipulation changes what a judge is tempted by, never what the picture shows.

:func:`read_scene` is what the simulated judge sees: it crops a black border, then counts
the dark discs of each panel against the panel's own median brightness, a relative cue
that survives every brightness and gamma value of the grid.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image
from scipy import ndimage

from judgebias.studies.frame.concepts import VOCABULARY, domain_of, parse_instruction

BANDS = ((0.19, 0.41), (0.59, 0.81))  # panel rows, as shares of the height
MARGIN_X = 0.06  # panel columns start and end this far from the sides
GAP = 0.04  # between panels, as a share of the width
DISC_GRID = (6, 3)  # disc places per panel: columns x rows (up to 18 values)
DARK = 0.6  # a disc pixel is darker than this share of its panel's median brightness
MIN_DISC = 4  # px: smaller dark specks are grain, not discs
BOX_GAP = 2  # px between a panel and the box around it
DOMAIN_HUES = {"people": 0.05, "animal": 0.3, "illustration": 0.8, "indoor": 0.1,
               "outdoor": 0.58}


@dataclass(frozen=True)
class RenderedScene:
    """A rendered picture, its domain, what it shows and the boxes of its objects."""

    image: Image.Image
    domain: str
    drawn: dict[str, str]
    boxes: tuple[tuple[int, int, int, int], ...]


def panels(domain: str, width: int, height: int) -> dict[str, tuple[int, int, int, int]]:
    """Each slot's panel (x0, y0, x1, y1, inclusive) in a picture of this size: the first
    ceil(n/2) slots in the upper band, the rest in the lower one."""
    slots = list(VOCABULARY[domain])
    upper = (len(slots) + 1) // 2
    out = {}
    for band, names in ((BANDS[0], slots[:upper]), (BANDS[1], slots[upper:])):
        if not names:
            continue
        left, right = MARGIN_X * width, (1 - MARGIN_X) * width
        gap = GAP * width
        cell = (right - left - gap * (len(names) - 1)) / len(names)
        for i, name in enumerate(names):
            x0 = left + i * (cell + gap)
            out[name] = (round(x0), round(band[0] * height), round(x0 + cell) - 1,
                         round(band[1] * height) - 1)
    return out


def _hsv_to_rgb(h: np.ndarray, s: np.ndarray, v: np.ndarray) -> np.ndarray:
    i = np.floor(h * 6).astype(int) % 6
    f = h * 6 - np.floor(h * 6)
    p, q, t = v * (1 - s), v * (1 - f * s), v * (1 - (1 - f) * s)
    choices = [(v, t, p), (q, v, p), (p, v, t), (p, q, v), (t, p, v), (v, p, q)]
    rgb = np.zeros((*h.shape, 3))
    for k, (r, g, b) in enumerate(choices):
        mask = i == k
        rgb[mask] = np.stack([r[mask], g[mask], b[mask]], axis=-1)
    return rgb


def _draw(domain: str, drawn: dict[str, str], size: int, rng: np.random.Generator
          ) -> np.ndarray:
    y, x = np.mgrid[0:size, 0:size] / size
    hue = (DOMAIN_HUES[domain] + 0.05 * np.sin(2 * np.pi * (x + rng.random()))) % 1.0
    value = 0.35 + 0.15 * np.sin(2 * np.pi * (y * rng.uniform(0.5, 1.5) + rng.random()))
    value = value + 0.05 * np.cos(2 * np.pi * x * rng.uniform(1, 3))
    saturation = np.full_like(hue, 0.5)
    radius = max(2.0, size / 60)
    for slot, (x0, y0, x1, y1) in panels(domain, size, size).items():
        inside = (x * size >= x0) & (x * size <= x1) & (y * size >= y0) & (y * size <= y1)
        value[inside] = 0.75 + 0.1 * (y[inside] * size - y0) / max(1, y1 - y0)
        saturation[inside] = 0.25
        count = VOCABULARY[domain][slot].index(drawn[slot]) + 1
        columns, rows = DISC_GRID
        places = rng.permutation(columns * rows)[:count]
        for place in places:
            cx = x0 + (place % columns + 0.5) * (x1 - x0) / columns
            cy = y0 + (place // columns + 0.5) * (y1 - y0) / rows
            disc = (x * size - cx) ** 2 + (y * size - cy) ** 2 <= radius**2
            value[disc] = 0.12
    return _hsv_to_rgb(hue, saturation, np.clip(value, 0.02, 1.0))


def render(prompt: str, *, size: int = 256, seed: int = 0, error_rate: float = 0.1
           ) -> RenderedScene:
    """Draw the picture of a prompt (module docstring)."""
    from judgebias.studies.frame.perceive import add_grain, normalise_tones

    domain = domain_of(prompt)
    if domain is None:
        raise ValueError(f"the offline renderer found no FRAME domain in {prompt!r}")
    wanted = parse_instruction(prompt, domain)
    rng = np.random.default_rng(seed)
    drawn = {}
    for slot, values in VOCABULARY[domain].items():
        value = wanted[slot] if wanted[slot] is not None else values[rng.integers(len(values))]
        if rng.random() < error_rate:
            others = [v for v in values if v != value]
            value = others[rng.integers(len(others))]
        drawn[slot] = value
    rgb = normalise_tones(np.round(_draw(domain, drawn, size, rng) * 255).astype(np.uint8))
    rgb = add_grain(rgb, rng)
    boxes = ()
    if "object" in drawn and domain != "outdoor":
        x0, y0, x1, y1 = panels(domain, size, size)["object"]
        boxes = ((x0 - BOX_GAP - 1, y0 - BOX_GAP - 1, x1 + BOX_GAP + 1, y1 + BOX_GAP + 1),)
    return RenderedScene(Image.fromarray(rgb), domain, drawn, boxes)


def _crop_border(rgb: np.ndarray) -> np.ndarray:
    dark = rgb.max(axis=2) <= 2
    rows, cols = dark.all(axis=1), dark.all(axis=0)

    def lead(flags: np.ndarray) -> int:
        return int(np.argmin(flags)) if not flags.all() else len(flags)

    top, bottom = lead(rows), lead(rows[::-1])
    left, right = lead(cols), lead(cols[::-1])
    return rgb[top:rgb.shape[0] - bottom, left:rgb.shape[1] - right]


def read_scene(image: Image.Image | np.ndarray, domain: str) -> dict[str, str | None]:
    """Which value each slot shows (None if the count of discs names no value)."""
    rgb = _crop_border(np.asarray(image.convert("RGB") if isinstance(image, Image.Image)
                                  else image))
    v = rgb.max(axis=2).astype(float)
    height, width = v.shape
    shown: dict[str, str | None] = {}
    for slot, (x0, y0, x1, y1) in panels(domain, width, height).items():
        cell = v[y0 + 1:y1, x0 + 1:x1]
        dark = cell < DARK * np.median(cell)
        labels, n = ndimage.label(dark)
        sizes = np.bincount(labels.ravel())[1:] if n else np.array([])
        count = int((sizes >= MIN_DISC).sum())
        values = VOCABULARY[domain][slot]
        shown[slot] = values[count - 1] if 1 <= count <= len(values) else None
    return shown


def alignment(instruction: dict[str, str | None], drawn: dict[str, str | None]) -> float:
    """The share of the instruction's slots whose drawn value is the instruction's."""
    slots = list(instruction)
    return sum(instruction[s] is not None and instruction[s] == drawn.get(s)
               for s in slots) / len(slots)
