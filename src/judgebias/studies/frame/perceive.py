"""What FRAME's simulated judge sees: the manipulations read back from the pixels alone.

Spec frame.md, "What the simulated judge must plant", last bullet: the simulated judge must
detect a manipulation from the image (luminance, the mid-tone histogram, black border rows,
text-like high-contrast blobs and their corner, rectangle outlines), never from the recipe
id, so that a judge's response to a picture follows what is in the picture, as a real LVLM
judge's does. The manipulations are manipulate.py's renderings of seed 004 Table 1 with the
grids of Appendix B.3.

Reading the tone of one picture needs to know what it looked like before; that is what the
renderer's contract below fixes. The synthetic originals are rendered, passed through
:func:`normalise_tones` and then :func:`add_grain`:

* tones: the HSV value ``V = max(R, G, B) / 255`` has one fixed distribution in every
  original, the piecewise-linear quantile function through :data:`REFERENCE_KNOTS`
  (``V_MIN`` = 0.06 at p = 0, ``Q10`` = 0.15, ``Q50`` = 0.35, ``V_MAX`` = 0.80 at p = 1):
  no pure black (a border, a text stroke is unmistakable) and no pure white;
* saturation: every channel is at least ``SATURATION_FLOOR`` (0.1) times the pixel's V, so
  nothing is pure red (255, 0, 0), even brightened 2.3-fold, and the red of a box is too;
* grain: every pixel is multiplied by ``1 + GRAIN_SD * z`` (z standard normal, the same for
  the three channels, so the hue stays), ``GRAIN_SD`` = 0.04: a fine texture of a known
  relative level, which a beauty filter takes out.

The grain is added *after* the tone normalisation (not before): normalise_tones is a rank
remap, which would squeeze grain flat wherever many pixels share a value, so grain added
before it would have an image-dependent level; added after, its level is fixed, and it moves
the quantiles of V only at second order (~GRAIN_SD**2 / 2, < 0.1 %).

Role: a helper of sim.py (what the simulated judge notices of a manipulation).
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from PIL import Image
from scipy import ndimage

from judgebias.studies.frame import manipulate

# -- the renderer's contract ----------------------------------------------------------------
V_MIN, Q10, Q50, V_MAX = 0.06, 0.15, 0.35, 0.80
REFERENCE_KNOTS = ((0.0, V_MIN), (0.10, Q10), (0.50, Q50), (1.0, V_MAX))  # (p, V quantile)
SATURATION_FLOOR = 0.1
GRAIN_SD = 0.04

# -- what the detectors call black, white, red ----------------------------------------------
BORDER_BLACK = 2  # a padding row: every channel <= 2 (originals have V >= ~13/255)
STROKE_BLACK = 5  # a text stroke: every channel <= 5
TEXT_WHITE = 250  # a text fill: every channel >= 250
TEXT_REACH = 2  # a white pixel is text when a stroke pixel lies within 2 px
RED_MIN, RED_OTHER_MAX = 250, 5  # a box outline: R >= 250, G and B <= 5

# -- tone estimation ------------------------------------------------------------------------
# Quantiles the tone is fitted on: below 0.55 they survive a 2.3-fold brightening (the
# reference V at p = 0.55 is 0.395, and 0.395 * 2.3 < 1), above 0.05 they are not a
# handful of the darkest pixels.
TONE_P = np.linspace(0.05, 0.55, 26)
TONE_TOLERANCE = 0.015  # |estimate - 1| below this is "none": half the grid's smallest step
INPAINT_WINDOW = 9  # px: window that fills text and box pixels from their neighbours
EDGE_TRIM = 3  # px of the picture's edge left out of tone and grain when it has a border

# -- beauty ---------------------------------------------------------------------------------
# Median relative Laplacian |lap V| / V of the originals is ~0.12 (grain 0.04: the 4-neighbour
# Laplacian of white noise has sd sqrt(20) * 0.04); SmoothingRestorer brings it to ~0.04.
BEAUTY_THRESHOLD = 0.07

EIGHT_CONNECTED = np.ones((3, 3), bool)  # ndimage.label's structure for box outlines

_KNOT_P = np.array([k[0] for k in REFERENCE_KNOTS])
_KNOT_V = np.array([k[1] for k in REFERENCE_KNOTS])
_TONE_X = np.log(np.interp(TONE_P, _KNOT_P, _KNOT_V))


def reference_quantile(p: np.ndarray | float) -> np.ndarray:
    """The contract's V quantile function at `p` (V in 0..1)."""
    return np.interp(p, _KNOT_P, _KNOT_V)


def brightest(rgb: np.ndarray) -> np.ndarray:
    """Each pixel's highest channel (the HSV value V times 255 for uint8), the same numbers
    as ``rgb.max(axis=2)``: two element-wise maxima over the channel planes, which numpy
    runs ~15 times faster than a reduction over a 3-long last axis (issue 24)."""
    return np.maximum(np.maximum(rgb[..., 0], rgb[..., 1]), rgb[..., 2])


def darkest(rgb: np.ndarray) -> np.ndarray:
    """Each pixel's lowest channel, ``rgb.min(axis=2)`` computed as :func:`brightest`."""
    return np.minimum(np.minimum(rgb[..., 0], rgb[..., 1]), rgb[..., 2])


def normalise_tones(rgb: np.ndarray) -> np.ndarray:
    """The renderer's tone contract: an image whose V has the reference distribution.

    Each pixel's V is replaced by the reference quantile at the pixel's rank (pixels of equal
    V share their mid-rank, so the remap is a monotone function of V), and its R, G, B are
    scaled by new V / old V, which keeps its hue; then every channel is raised to at least
    ``SATURATION_FLOOR`` * V (a slight desaturation of the most saturated colours). `rgb` is
    an (H, W, 3) array, uint8 or float in 0..255; the result is uint8. Large areas of one
    exact value become one level, so render in float (gradients, shading) for an exact
    distribution.
    """
    x = np.asarray(rgb, dtype=np.float64)
    if x.ndim != 3 or x.shape[2] != 3:
        raise ValueError(f"normalise_tones takes an (H, W, 3) array, got shape {x.shape}")
    v = brightest(x)
    _, inverse, counts = np.unique(v.ravel(), return_inverse=True, return_counts=True)
    mid_rank = (np.cumsum(counts) - counts / 2) / v.size
    new_v = reference_quantile(mid_rank)[inverse].reshape(v.shape)
    hue = np.where(v[..., None] > 0, x / np.maximum(v, 1e-12)[..., None], 1.0)
    out = np.maximum(hue, SATURATION_FLOOR) * new_v[..., None]
    return np.clip(np.floor(out * 255.0 + 0.5), 0, 255).astype(np.uint8)


def add_grain(rgb: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The renderer's grain contract, applied after :func:`normalise_tones`.

    Every pixel is multiplied by ``1 + GRAIN_SD * z``, z ~ N(0, 1) drawn from `rng`, the
    same for its three channels (hue and the saturation floor stay). Returns uint8.
    """
    x = np.asarray(rgb, dtype=np.float64)
    grain = 1.0 + GRAIN_SD * rng.standard_normal(x.shape[:2])
    return np.clip(np.floor(x * grain[..., None] + 0.5), 0, 255).astype(np.uint8)


# -- features -------------------------------------------------------------------------------

@dataclass(frozen=True)
class ImageFeatures:
    """What the simulated judge perceives in one image.

    Coordinates (`text_box`, `boxes`) are in the content's pixels, the image less its black
    border; `text_box` is half-open like manipulate.overlay_extent, `boxes` inclusive like
    the annotations manipulate.bounding_box draws.
    """

    border: tuple[int, int, int, int]  # black rows/columns: top, bottom, left, right
    padding_1024: float  # mean border width at the 1024-px reference
    tone: str  # "none", "brightness" or "gamma"
    brightness_factor: float
    gamma_value: float
    text_box: tuple[int, int, int, int] | None
    text_position: str | None  # one of recipes.POSITIONS
    text_lines: int
    text_kind: str | None  # "authenticity", "keyword", "instruction"
    boxes: tuple[tuple[int, int, int, int], ...]
    smoothness: float  # median |Laplacian V| / V, tone-corrected
    beauty: bool

    @property
    def has_boxes(self) -> bool:
        return bool(self.boxes)


def _as_array(image: bytes | Image.Image | np.ndarray) -> np.ndarray:
    if isinstance(image, bytes | bytearray):
        image = Image.open(io.BytesIO(image))
    if isinstance(image, Image.Image):
        image = np.asarray(image.convert("RGB"))
    array = np.asarray(image)
    if array.ndim != 3 or array.shape[2] != 3 or array.dtype != np.uint8:
        raise ValueError(f"features takes an RGB image or (H, W, 3) uint8 array, got "
                         f"{array.dtype} {array.shape}")
    return array


def _leading(flags: np.ndarray) -> int:
    """How many of `flags` are True before the first False."""
    return len(flags) if flags.all() else int(np.argmin(flags))


def black_border(value: np.ndarray) -> tuple[int, int, int, int]:
    """Rows and columns (top, bottom, left, right) of black padding around a picture, from
    its :func:`brightest` channel: those whose every channel is <= BORDER_BLACK."""
    dark = np.asarray(value <= BORDER_BLACK)
    rows, cols = np.asarray(dark.all(axis=1)), np.asarray(dark.all(axis=0))
    return _leading(rows), _leading(rows[::-1]), _leading(cols), _leading(cols[::-1])


def dilate(mask: np.ndarray, size: int) -> np.ndarray:
    """``ndimage.maximum_filter(mask, size)`` of a boolean mask for an odd `size`, as ORs of
    shifted copies (a few times faster). The filter's "reflect" edges add nothing: a
    mirrored pixel lies inside the window it is mirrored into, so padding with False gives
    the same mask."""
    out = mask.copy()
    for axis in (0, 1):
        source = out.copy()
        for shift in range(1, size // 2 + 1):
            ahead = [slice(None)] * 2
            behind = [slice(None)] * 2
            ahead[axis], behind[axis] = slice(shift, None), slice(None, -shift)
            out[tuple(behind)] |= source[tuple(ahead)]
            out[tuple(ahead)] |= source[tuple(behind)]
    return out


def _bbox(mask: np.ndarray) -> tuple[int, int, int, int]:
    """Half-open bounding box (x0, y0, x1, y1) of a non-empty mask."""
    rows, cols = np.flatnonzero(mask.any(axis=1)), np.flatnonzero(mask.any(axis=0))
    return int(cols[0]), int(rows[0]), int(cols[-1]) + 1, int(rows[-1]) + 1


def _runs(flags: np.ndarray) -> list[tuple[int, int]]:
    """(start, stop) of each run of True in a 1-d boolean array."""
    edges = np.diff(np.concatenate([[0], flags.astype(np.int8), [0]]))
    return list(zip(np.flatnonzero(edges == 1), np.flatnonzero(edges == -1), strict=True))


def _text_position(box: tuple[int, int, int, int], lines: list[tuple[int, int]],
                   stroke: np.ndarray, size: tuple[int, int]) -> str:
    """Which of recipes.POSITIONS an overlay's block sits at, from its gaps to the edges.

    manipulate.py puts a corner overlay at one margin from its two edges and centres the
    centre one, so: equal gaps both ways is "center"; otherwise the nearer edge vertically
    and horizontally. A block as wide as the image (a wrapped instruction) has equal side
    gaps; its side is the one its lines are aligned to (their left ends agree, or their
    right ends).
    """
    width, height = size
    x0, y0, x1, y1 = box
    tolerance = max(2, round(0.02 * width))
    left, right, top, bottom = x0, width - x1, y0, height - y1
    if abs(top - bottom) <= tolerance and abs(left - right) <= tolerance:
        return "center"
    vertical = "top" if top < bottom else "bottom"
    if abs(left - right) > tolerance:
        return f"{vertical}-{'left' if left < right else 'right'}"
    ends = np.array([_bbox(stroke[a:b])[::2] for a, b in lines])
    return f"{vertical}-{'left' if np.ptp(ends[:, 0]) <= np.ptp(ends[:, 1]) else 'right'}"


@lru_cache(maxsize=4096)
def _candidate_stroke(size: tuple[int, int], text: str, position: str, font_size: float,
                      wrap: bool) -> bytes:
    """The stroke pixels of a candidate overlay inside its extent (packed bits)."""
    blank = Image.new("RGB", size, (128, 128, 128))
    drawn = np.asarray(manipulate.text_overlay(blank, text, position, font_size, wrap))
    x0, y0, x1, y1 = manipulate.overlay_extent(size, text, position, font_size, wrap)
    return np.packbits(brightest(drawn[y0:y1, x0:x1]) <= STROKE_BLACK).tobytes()


def _text_kind(box: tuple[int, int, int, int], position: str, stroke: np.ndarray,
               size: tuple[int, int], instruction: str | None,
               keyword: str | None) -> str:
    """Which text an overlay carries: the candidate whose rendered extent is nearest.

    A stand-in for reading: the simulated judge knows the texts an image could carry ("Reference
    Image" at size 30, the item's keyword at 30, its instruction at 20 wrapped, App. B.3) and
    compares the detected block with where each would land at this width (sum of the four
    coordinate differences). When two candidates land within 2 px of each other (a keyword
    as long as "Reference Image"), the one whose stroke pixels match better wins; only then
    are the candidates drawn (their extents come from the layout alone, issue 24).
    """
    candidates = [("authenticity", manipulate.AUTHENTICITY_TEXT,
                   manipulate.AUTHENTICITY_FONT_SIZE, False)]
    if keyword:
        candidates.append(("keyword", keyword, manipulate.KEYWORD_FONT_SIZE, False))
    if instruction:
        candidates.append(("instruction", instruction, manipulate.INSTRUCTION_FONT_SIZE, True))
    scored = []
    for kind, text, font_size, wrap in candidates:
        extent = manipulate.overlay_extent(size, text, position, font_size, wrap)
        distance = sum(abs(a - b) for a, b in zip(box, extent, strict=True))
        scored.append((distance, kind, extent, (text, font_size, wrap)))
    scored.sort(key=lambda item: item[0])
    close = [item for item in scored if item[0] <= scored[0][0] + 2]
    if len(close) == 1:
        return close[0][1]

    def mismatch(item) -> int:
        _, _, (x0, y0, x1, y1), (text, font_size, wrap) = item
        bits = _candidate_stroke(size, text, position, font_size, wrap)
        expected = np.unpackbits(np.frombuffer(bits, np.uint8), count=(y1 - y0) * (x1 - x0))
        return int(np.count_nonzero(expected.reshape(y1 - y0, x1 - x0)
                                    != stroke[y0:y1, x0:x1]))

    return min(close, key=mismatch)[1]


def _quantiles(values: np.ndarray, fills: np.ndarray) -> np.ndarray:
    """V quantiles (0..255) at TONE_P: each level's mass sits at its mid-rank, interpolated.

    Interpolating between mid-ranks reads sub-level quantiles off integer values, also
    where a brightening leaves every other level empty.
    """
    hist = np.bincount(values, minlength=256).astype(np.float64)
    if fills.size:
        hist += np.bincount(np.clip(np.rint(fills), 0, 255).astype(np.intp), minlength=256)
    levels = np.flatnonzero(hist)
    counts = hist[levels]
    mid = np.cumsum(counts) - counts / 2
    return np.interp(TONE_P * counts.sum(), mid, levels)


def _inpaint(v: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Values for the masked pixels, averaged from unmasked ones nearby.

    Text and boxes hide the pixels under them, and the hidden ones are not a random sample
    (a corner, a band); leaving them out would shift the quantiles the tone is read from.
    Filling them from their neighbourhood keeps the picture's V distribution.
    """
    pad = INPAINT_WINDOW
    x0, y0, x1, y1 = _bbox(mask)
    x0, y0 = max(0, x0 - pad), max(0, y0 - pad)
    x1, y1 = min(v.shape[1], x1 + pad), min(v.shape[0], y1 + pad)
    local, hidden = v[y0:y1, x0:x1].astype(np.float32), mask[y0:y1, x0:x1]
    seen = (~hidden).astype(np.float32)
    total = ndimage.uniform_filter(local * seen, INPAINT_WINDOW, mode="nearest")
    weight = ndimage.uniform_filter(seen, INPAINT_WINDOW, mode="nearest")
    usable = hidden & (weight > 0.05)
    return total[usable] / weight[usable]


def _tone(v: np.ndarray, mask: np.ndarray | None) -> tuple[str, float, float]:
    """Brightness or gamma, and its value, from the quantiles of V against the reference.

    A brightness factor f multiplies V, ``log V = log V_ref + log f``; a gamma g raises it,
    ``log V = log V_ref / g``. Both are fitted to the quantiles at TONE_P and the one with
    the smaller residual wins. manipulate.brightness truncates (PIL's blend), half a level
    down on average, so its fit adds the half level back.
    """
    if mask is None:
        q = _quantiles(v.ravel(), np.empty(0))
    else:
        q = _quantiles(v[~mask], _inpaint(v, mask))
    y_bright, y_gamma = np.log((q + 0.5) / 255.0), np.log(np.maximum(q, 0.5) / 255.0)
    log_f = float(np.mean(y_bright - _TONE_X))
    slope = float(np.dot(_TONE_X, y_gamma) / np.dot(_TONE_X, _TONE_X))
    rss_bright = float(np.sum((y_bright - _TONE_X - log_f) ** 2))
    rss_gamma = float(np.sum((y_gamma - slope * _TONE_X) ** 2))
    if rss_bright < rss_gamma:
        factor = float(np.exp(log_f))
        if abs(factor - 1.0) > TONE_TOLERANCE:
            return "brightness", factor, 1.0
    else:
        value = 1.0 / slope
        if abs(value - 1.0) > TONE_TOLERANCE:
            return "gamma", 1.0, value
    return "none", 1.0, 1.0


def _smoothness(v: np.ndarray, exclude: np.ndarray | None, gamma_value: float) -> float:
    """Median relative Laplacian of V, corrected for gamma (which scales it by 1 / g).

    Pixels near text, boxes or clipped white are left out: their Laplacian is the overlay's,
    not the picture's grain. Brightness leaves a relative measure unchanged. `v` is uint8,
    so each pixel's ``|lap| / max(centre, 1)`` (float32) is one of a fixed set of ratios,
    named by the integer key ``|lap| * 256 + max(centre, 1)``; the median is taken over
    the keys (:func:`_median_ratio`), the same number as ``np.median`` of the ratios.
    """
    f = v.astype(np.int16)
    centre = f[1:-1, 1:-1]
    lap = 4 * centre - f[:-2, 1:-1] - f[2:, 1:-1] - f[1:-1, :-2] - f[1:-1, 2:]
    keys = np.abs(lap).astype(np.int32) * 256 + np.maximum(centre, 1)
    if exclude is not None:
        keys = keys[~dilate(exclude, 3)[1:-1, 1:-1]]
    return _median_ratio(keys) * gamma_value if keys.size else 0.0


LAPLACIAN_MAX = 4 * 255  # |4 V - four neighbours| of uint8 V
RANK_BUCKET_BITS = 8  # ranks per coarse bucket of _kth_rank: 2 ** 8


@lru_cache(maxsize=1)
def _ratio_table() -> tuple[np.ndarray, np.ndarray]:
    """Every ratio ``float32(|lap|) / float32(max(centre, 1))`` _smoothness can meet, as
    (the distinct values ascending, each key's rank among them); computed with the same
    float32 division as a per-pixel ratio, so a key's value is that pixel's ratio."""
    lap = np.arange(LAPLACIAN_MAX + 1, dtype=np.float32)[:, None]
    centre = np.maximum(np.arange(256, dtype=np.float32), 1.0)[None, :]
    distinct, rank = np.unique((lap / centre).ravel(), return_inverse=True)
    return distinct, rank.astype(np.intp)


def _median_ratio(keys: np.ndarray) -> float:
    """``float(np.median(ratios))`` of the ratios the keys name (:func:`_smoothness`),
    without sorting them all: the ranks are counted in coarse buckets (2 **
    RANK_BUCKET_BITS ranks each), the middle one or two ranks are selected inside the
    buckets that hold them, and np.median of their one or two float32 values gives its
    own mean of the middle pair."""
    distinct, rank = _ratio_table()
    ranks = np.take(rank, keys).ravel()
    counts = np.bincount(ranks >> RANK_BUCKET_BITS)
    n = ranks.size
    middle = [n // 2] if n % 2 else [n // 2 - 1, n // 2]
    below = np.cumsum(counts)
    first, last = (int(b) for b in np.searchsorted(below, [middle[0], middle[-1]],
                                                    side="right"))
    skipped = int(below[first] - counts[first])  # ranks in the buckets before `first`
    inside = ranks[(ranks >= first << RANK_BUCKET_BITS)
                   & (ranks < (last + 1) << RANK_BUCKET_BITS)]
    picked = [k - skipped for k in middle]
    return float(np.median(distinct[np.partition(inside, picked)[picked]]))


def features(image: bytes | Image.Image | np.ndarray, *, instruction: str | None = None,
             keyword: str | None = None) -> ImageFeatures:
    """Detect FRAME's manipulations in one image (PNG bytes, a PIL image or a uint8 array).

    `instruction` and `keyword` are the item's, the texts an overlay could carry (see
    :func:`_text_kind`). Everything but the border is read inside the black border, on the
    picture the manipulations were applied to before padding (recipes.py puts padding last).
    """
    pixels = _as_array(image)
    value = brightest(pixels)
    border = black_border(value)
    top, bottom, left, right = border
    height, width = pixels.shape[:2]
    inside = (slice(top, height - bottom), slice(left, width - right))
    content = pixels[inside]
    if content.size == 0:
        raise ValueError("the image is entirely black: no picture inside the border")
    ch, cw = content.shape[:2]
    v, lowest = value[inside], darkest(content)

    stroke = np.asarray(v <= STROKE_BLACK)
    text = red = None
    text_box = text_position = text_kind = None
    text_lines = 0
    if stroke.any():
        near_stroke = dilate(stroke, 2 * TEXT_REACH + 1)
        text = stroke | (near_stroke & (lowest >= TEXT_WHITE))
        text_box = _bbox(text)
        x0, y0, x1, y1 = text_box
        inked = np.asarray(stroke[y0:y1, x0:x1].any(axis=1))
        lines = [(y0 + a, y0 + b) for a, b in _runs(inked)]
        text_lines = len(lines)
        text_position = _text_position(text_box, lines, stroke, (cw, ch))
        text_kind = _text_kind(text_box, text_position, stroke, (cw, ch), instruction, keyword)

    boxes: tuple[tuple[int, int, int, int], ...] = ()
    is_red = ((content[..., 0] >= RED_MIN) & (content[..., 1] <= RED_OTHER_MAX)
              & (content[..., 2] <= RED_OTHER_MAX))
    if is_red.any():
        red = is_red
        # text drawn over an outline cuts it; the text's pixels join the pieces again
        joined = red | text if text is not None else red
        labels, _ = ndimage.label(joined, structure=EIGHT_CONNECTED)
        found = ndimage.find_objects(np.where(red, labels, 0))
        boxes = tuple((s[1].start, s[0].start, s[1].stop - 1, s[0].stop - 1)
                      for s in found if s is not None)

    hidden = text if red is None else (red if text is None else text | red)
    if any(border) and min(v.shape) > 4 * EDGE_TRIM:
        # a border resized back (manipulate.padding(resize_back=True)) bleeds into the
        # picture's edge; its outer ring of EDGE_TRIM px is left out of tone and grain
        inner = (slice(EDGE_TRIM, -EDGE_TRIM),) * 2
        v = v[inner]
        hidden = None if hidden is None or not hidden[inner].any() else hidden[inner]
    tone, factor, gamma_value = _tone(v, hidden)
    clipped = v >= TEXT_WHITE
    exclude = hidden
    if clipped.any():
        exclude = clipped if exclude is None else exclude | clipped
    smoothness = _smoothness(v, exclude, gamma_value)
    return ImageFeatures(
        border=border, padding_1024=float(np.mean(border)) * manipulate.REFERENCE_WIDTH / cw,
        tone=tone, brightness_factor=factor, gamma_value=gamma_value, text_box=text_box,
        text_position=text_position, text_lines=text_lines, text_kind=text_kind, boxes=boxes,
        smoothness=smoothness, beauty=smoothness < BEAUTY_THRESHOLD)

