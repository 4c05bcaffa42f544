"""A tiny visual world whose content is known exactly.

The offline demo needs images whose true content is known, so that a simulated judge can
tell a correct caption from a hallucinated one *by looking at the pixels*, exactly as a
real model only sees the image it is sent. A scene is a flat background with one to three
flat shapes in three horizontal slots (left / center / right). Everything here is chosen
so that the round trip ``perceive(to_png_bytes(render(scene))) == scene`` is exact:

* object colours and background colours are disjoint palettes that are far apart in RGB,
  so every pixel maps to exactly one colour name;
* rendering has no anti-aliasing, so every pixel of a rendered image is a palette colour;
* shapes differ in geometry a pixel count can see (fill ratio of the bounding box, and the
  height of the centroid for the two half-filled shapes), sizes differ by a factor of two.

Captions are the other half of the world: ``reference_captions`` writes varied, correct,
human-like sentences, and ``read_caption`` reads the claims (objects and background) back
out of a sentence written in any of those styles, including the simulated models' styles.
``match_claims`` scores claims against the truth; the simulated evaluator uses it.

Why this module is long: the world's two halves (pixels and captions) share one
vocabulary (palettes, shapes, sizes, slots) and one round-trip contract; split, each
half would import the other's tables, and the contract would be tested across modules.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from PIL import Image, ImageDraw

SHAPES: tuple[str, ...] = ("circle", "square", "triangle", "diamond")
OBJECT_COLORS: dict[str, tuple[int, int, int]] = {
    "red": (220, 30, 30),
    "orange": (245, 140, 20),
    "yellow": (240, 215, 30),
    "green": (40, 160, 60),
    "blue": (40, 80, 220),
    "purple": (130, 50, 170),
    "pink": (240, 120, 180),
    "brown": (125, 80, 40),
}
# Disjoint from the object colours, so a colour word alone tells object from background.
BACKGROUND_COLORS: dict[str, tuple[int, int, int]] = {
    "white": (250, 250, 250),
    "black": (15, 15, 15),
    "gray": (128, 128, 128),
    "beige": (225, 210, 170),
}
SIZES: tuple[str, ...] = ("small", "large")
POSITIONS: tuple[str, ...] = ("left", "center", "right")
MAX_OBJECTS = 3

# Radius of a shape as a fraction of the image side; large is twice small.
_RADIUS = {"small": 0.07, "large": 0.14}
_SIZE_THRESHOLD = 0.21  # bounding-box extent / image side separating small from large
_MIN_REGION_FRACTION = 0.004  # smaller colour regions are texture, not objects
_MAX_SIDE = 1024  # larger inputs (real photos) are reduced before perception

# Words a caption may use for each canonical value (canonical word first).
COLOR_WORDS: dict[str, tuple[str, ...]] = {
    "red": ("red",),
    "orange": ("orange",),
    "yellow": ("yellow",),
    "green": ("green",),
    "blue": ("blue",),
    "purple": ("purple", "violet"),
    "pink": ("pink",),
    "brown": ("brown",),
    "white": ("white",),
    "black": ("black",),
    "gray": ("gray", "grey"),
    "beige": ("beige", "cream"),
}
SHAPE_WORDS: dict[str, tuple[str, ...]] = {
    "circle": ("circle", "disc", "disk"),
    "square": ("square",),
    "triangle": ("triangle",),
    "diamond": ("diamond", "rhombus"),
}
SIZE_WORDS: dict[str, tuple[str, ...]] = {
    "small": ("small", "little", "tiny"),
    "large": ("large", "big"),
}
POSITION_WORDS: dict[str, tuple[str, ...]] = {
    "left": ("left",),
    "center": ("center", "centre", "middle"),
    "right": ("right",),
}


def _invert(words: dict[str, tuple[str, ...]], plural: bool = False) -> dict[str, str]:
    out: dict[str, str] = {}
    for canonical, synonyms in words.items():
        for word in synonyms:
            out[word] = canonical
            if plural:
                out[word + ("es" if word.endswith("s") else "s")] = canonical
    return out


_COLOR_OF = _invert(COLOR_WORDS)
_SHAPE_OF = _invert(SHAPE_WORDS, plural=True)
_SIZE_OF = _invert(SIZE_WORDS)
_POSITION_OF = _invert(POSITION_WORDS)
VOCABULARY: frozenset[str] = (
    frozenset(_COLOR_OF) | set(_SHAPE_OF) | set(_SIZE_OF) | set(_POSITION_OF)
)


def scene_words(text: str) -> list[str]:
    """The scene words (colour, shape, size, position) in `text`, sorted. A simulated
    model's style must use none: it would change what a caption claims."""
    return sorted(set(re.findall(r"[a-z]+", text.lower())) & VOCABULARY)


@dataclass(frozen=True)
class SceneObject:
    """One flat shape: its shape, colour, size and horizontal slot."""

    shape: str
    color: str
    size: str
    position: str

    def __post_init__(self) -> None:
        _check("shape", self.shape, SHAPES)
        _check("color", self.color, tuple(OBJECT_COLORS))
        _check("size", self.size, SIZES)
        _check("position", self.position, POSITIONS)


@dataclass(frozen=True)
class Scene:
    """A background colour and up to three objects, ordered left to right."""

    background: str
    objects: tuple[SceneObject, ...]

    def __post_init__(self) -> None:
        _check("background", self.background, tuple(BACKGROUND_COLORS))
        positions = [o.position for o in self.objects]
        if len(set(positions)) != len(positions):
            raise ValueError(f"objects must occupy distinct positions, got {positions}")
        ordered = tuple(sorted(self.objects, key=lambda o: POSITIONS.index(o.position)))
        object.__setattr__(self, "objects", ordered)


def _check(name: str, value: str, allowed: Sequence[str]) -> None:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {list(allowed)}, got {value!r}")


def random_scene(rng: np.random.Generator) -> Scene:
    """A uniformly random scene: background, 1-3 objects in distinct slots."""
    n_objects = int(rng.integers(1, MAX_OBJECTS + 1))
    slots = sorted(rng.choice(len(POSITIONS), size=n_objects, replace=False).tolist())
    objects = tuple(
        SceneObject(
            shape=SHAPES[int(rng.integers(len(SHAPES)))],
            color=tuple(OBJECT_COLORS)[int(rng.integers(len(OBJECT_COLORS)))],
            size=SIZES[int(rng.integers(len(SIZES)))],
            position=POSITIONS[slot],
        )
        for slot in slots
    )
    background = tuple(BACKGROUND_COLORS)[int(rng.integers(len(BACKGROUND_COLORS)))]
    return Scene(background=background, objects=objects)


# --------------------------------------------------------------------------- rendering


def render(scene: Scene, size: int = 128) -> Image.Image:
    """Draw the scene on a ``size`` x ``size`` RGB canvas without anti-aliasing.

    Perception is exact for sizes of 64 pixels and up (smaller shapes get too few pixels
    for the geometry to be unambiguous).
    """
    image = Image.new("RGB", (size, size), BACKGROUND_COLORS[scene.background])
    draw = ImageDraw.Draw(image)
    for obj in scene.objects:
        _draw_object(draw, obj, size)
    return image


def _draw_object(draw: ImageDraw.ImageDraw, obj: SceneObject, side: int) -> None:
    r = round(_RADIUS[obj.size] * side)
    cx = round(side * (2 * POSITIONS.index(obj.position) + 1) / 6)
    cy = side // 2
    fill = OBJECT_COLORS[obj.color]
    if obj.shape == "circle":
        draw.ellipse((cx - r, cy - r, cx + r, cy + r), fill=fill)
    elif obj.shape == "square":
        draw.rectangle((cx - r, cy - r, cx + r, cy + r), fill=fill)
    elif obj.shape == "triangle":
        draw.polygon([(cx, cy - r), (cx + r, cy + r), (cx - r, cy + r)], fill=fill)
    else:  # diamond
        draw.polygon([(cx, cy - r), (cx + r, cy), (cx, cy + r), (cx - r, cy)], fill=fill)


def to_png_bytes(image: Image.Image) -> bytes:
    """Encode as PNG with fixed settings and no metadata, so equal images give equal bytes."""
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", optimize=False, compress_level=6)
    return buffer.getvalue()


def scene_to_json(scene: Scene) -> str:
    """Canonical JSON (sorted keys, no spaces) of a scene."""
    payload = {
        "background": scene.background,
        "objects": [
            {"shape": o.shape, "color": o.color, "size": o.size, "position": o.position}
            for o in scene.objects
        ],
    }
    return json.dumps(payload, sort_keys=True, separators=(",", ":"))


def scene_from_json(text: str) -> Scene:
    """Inverse of :func:`scene_to_json`."""
    payload = json.loads(text)
    objects = tuple(SceneObject(**obj) for obj in payload["objects"])
    return Scene(background=payload["background"], objects=objects)


# -------------------------------------------------------------------------- perception


def perceive(image_bytes: bytes) -> Scene:
    """Recover a scene from encoded image bytes, looking at the pixels only.

    Each pixel is mapped to its nearest palette colour; the background is the most common
    background colour; objects are connected regions of one object colour, classified by
    geometry. Rendered scenes are recovered exactly. Any other decodable image (a real
    photo) yields a best-effort scene: the largest region per slot, at most three objects,
    possibly none. Raises ``ValueError`` only when the bytes are not a decodable image.
    """
    pixels = _decode(image_bytes)
    labels = _nearest_palette(pixels)
    height, width = labels.shape
    background = _background_of(labels, pixels)
    regions = _object_regions(labels, min_area=_MIN_REGION_FRACTION * height * width)
    by_slot: dict[str, tuple[int, SceneObject]] = {}
    for color, mask in regions:
        obj = _classify_region(mask, color, width)
        area = int(mask.sum())
        if obj.position not in by_slot or area > by_slot[obj.position][0]:
            by_slot[obj.position] = (area, obj)
    return Scene(background=background, objects=tuple(obj for _, obj in by_slot.values()))


_PALETTE_NAMES: tuple[str, ...] = (*OBJECT_COLORS, *BACKGROUND_COLORS)
_PALETTE = np.array([*OBJECT_COLORS.values(), *BACKGROUND_COLORS.values()], dtype=np.int32)
_N_OBJECT_COLORS = len(OBJECT_COLORS)


def _decode(image_bytes: bytes) -> np.ndarray:
    try:
        with Image.open(io.BytesIO(image_bytes)) as image:
            image.load()
            rgb = image.convert("RGB")
    except Exception as exc:  # PIL raises many types for bad input
        raise ValueError(f"not a decodable image: {exc}") from exc
    if max(rgb.size) > _MAX_SIDE:
        factor = -(-max(rgb.size) // _MAX_SIDE)
        rgb = rgb.reduce(factor)
    return np.asarray(rgb, dtype=np.int32)


def _nearest_palette(pixels: np.ndarray) -> np.ndarray:
    """Index into the joint palette (object colours first) of each pixel's nearest colour.

    Distances are computed once per distinct colour (few in a rendered scene).
    """
    packed = (pixels[:, :, 0] << 16) | (pixels[:, :, 1] << 8) | pixels[:, :, 2]
    colors, inverse = np.unique(packed.ravel(), return_inverse=True)
    rgb = np.stack([(colors >> 16) & 255, (colors >> 8) & 255, colors & 255], axis=1)
    diff = rgb[:, None, :] - _PALETTE[None, :, :]
    nearest = np.argmin((diff * diff).sum(axis=-1), axis=-1)
    return nearest[inverse].reshape(packed.shape)


def _background_of(labels: np.ndarray, pixels: np.ndarray) -> str:
    counts = np.bincount(labels.ravel(), minlength=len(_PALETTE))[_N_OBJECT_COLORS:]
    if counts.sum() > 0:
        return tuple(BACKGROUND_COLORS)[int(np.argmax(counts))]
    # No pixel is nearest to a background colour: take the one nearest the median colour.
    median = np.median(pixels.reshape(-1, 3), axis=0)
    distances = ((_PALETTE[_N_OBJECT_COLORS:] - median) ** 2).sum(axis=1)
    return tuple(BACKGROUND_COLORS)[int(np.argmin(distances))]


def _ndimage():
    """scipy.ndimage, imported on first use: every job validates params.yaml, which reads
    this module (the simulated models' style words), and importing scipy there cost each
    job about a second of start-up (benchmarks/job_startup.py)."""
    from scipy import ndimage

    return ndimage


def _object_regions(labels: np.ndarray, min_area: float) -> list[tuple[str, np.ndarray]]:
    """Connected (8-neighbour) single-colour regions of object colours, largest first."""
    structure = np.ones((3, 3), dtype=bool)
    regions: list[tuple[int, str, np.ndarray]] = []
    for index, color in enumerate(OBJECT_COLORS):
        mask = labels == index
        if not mask.any():
            continue
        components, count = _ndimage().label(mask, structure=structure)
        sizes = np.bincount(components.ravel(), minlength=count + 1)
        for component in np.flatnonzero(sizes >= max(min_area, 1)):
            if component == 0:
                continue
            regions.append((int(sizes[component]), color, components == component))
    regions.sort(key=lambda item: -item[0])
    return [(color, mask) for _, color, mask in regions]


def _classify_region(mask: np.ndarray, color: str, image_width: int) -> SceneObject:
    ys, xs = np.nonzero(mask)
    y0, y1, x0, x1 = ys.min(), ys.max(), xs.min(), xs.max()
    box_h, box_w = y1 - y0 + 1, x1 - x0 + 1
    fill = len(xs) / float(box_h * box_w)
    if fill > 0.92:
        shape = "square"
    elif fill > 0.66:
        shape = "circle"
    else:
        # Both remaining shapes fill about half their box; an upward triangle keeps its
        # mass low (centroid at 2/3 of the height), a diamond at the middle.
        relative_y = (ys.mean() - y0) / max(box_h - 1, 1)
        shape = "triangle" if relative_y > 0.58 else "diamond"
    size = "large" if max(box_h, box_w) > _SIZE_THRESHOLD * image_width else "small"
    third = min(int(3 * xs.mean() / image_width), 2)
    return SceneObject(shape=shape, color=color, size=size, position=POSITIONS[third])


# ------------------------------------------------------------------- reference captions

_POSITION_PHRASES: dict[str, tuple[str, ...]] = {
    "left": ("on the left", "at the left", "to the left"),
    "center": ("in the center", "in the middle", "in the centre"),
    "right": ("on the right", "at the right", "to the right"),
}
_BACKGROUND_PHRASES: tuple[str, ...] = (
    "on a {bg} background",
    "against a {bg} backdrop",
    "on a plain {bg} background",
    "set on {bg}",
)


def _pick(rng: np.random.Generator, options: Sequence[str]) -> str:
    return options[int(rng.integers(len(options)))]


def describe_object(obj: SceneObject, rng: np.random.Generator, article: bool = True) -> str:
    """``"a large red circle on the left"`` with randomly chosen synonyms."""
    size_word = _pick(rng, SIZE_WORDS[obj.size])
    color_word = _pick(rng, COLOR_WORDS[obj.color])
    shape_word = _pick(rng, SHAPE_WORDS[obj.shape])
    where = _pick(rng, _POSITION_PHRASES[obj.position])
    phrase = f"{size_word} {color_word} {shape_word} {where}"
    if not article:
        return phrase
    return ("an " if phrase[0] in "aeiou" else "a ") + phrase


def join_phrases(phrases: Sequence[str]) -> str:
    """English list: ``a``, ``a and b``, ``a, b and c``."""
    if len(phrases) <= 1:
        return "".join(phrases)
    return ", ".join(phrases[:-1]) + " and " + phrases[-1]


_COUNT_WORDS = {1: "One shape", 2: "Two shapes", 3: "Three shapes"}


def reference_captions(scene: Scene, rng: np.random.Generator, n: int = 5) -> list[str]:
    """``n`` correct, varied one-sentence captions, as different annotators might write.

    Templates, object order, synonyms and background phrasing vary; every caption names
    every object with its size, colour, shape and position, and the background colour.
    """
    templates = list(range(len(_REFERENCE_TEMPLATES)))
    captions: list[str] = []
    for i in range(n):
        if i % len(templates) == 0:
            rng.shuffle(templates)
        objects = list(scene.objects)
        if rng.random() < 0.3:
            objects.reverse()
        phrases = [describe_object(o, rng) for o in objects]
        bg = _pick(rng, COLOR_WORDS[scene.background])
        template = _REFERENCE_TEMPLATES[templates[i % len(templates)]]
        captions.append(_capitalise(template(phrases, bg, rng, len(objects))))
    return captions


def _capitalise(text: str) -> str:
    return text[:1].upper() + text[1:]


def _ref_plain(phrases: list[str], bg: str, rng: np.random.Generator, n: int) -> str:
    return f"{join_phrases(phrases)} {_pick(rng, _BACKGROUND_PHRASES).format(bg=bg)}."


def _ref_there_is(phrases: list[str], bg: str, rng: np.random.Generator, n: int) -> str:
    where = _pick(rng, _BACKGROUND_PHRASES).format(bg=bg)
    return f"there is {join_phrases(phrases)} {where}."


def _ref_background_first(phrases: list[str], bg: str, rng: np.random.Generator, n: int) -> str:
    verb = _pick(rng, ("sits", "appears", "is shown")) if n == 1 else "appear"
    if n == 1:
        return f"on a {bg} background, {phrases[0]} {verb}."
    return f"on a {bg} background, {join_phrases(phrases)} {verb} side by side."


def _ref_count(phrases: list[str], bg: str, rng: np.random.Generator, n: int) -> str:
    return f"{_COUNT_WORDS[n]} on a {bg} background: {join_phrases(phrases)}."


def _ref_picture(phrases: list[str], bg: str, rng: np.random.Generator, n: int) -> str:
    lead = _pick(rng, ("the image shows", "a picture of", "a drawing of"))
    return f"{lead} {join_phrases(phrases)}, all on a {bg} background."


_REFERENCE_TEMPLATES = (_ref_plain, _ref_there_is, _ref_background_first, _ref_count, _ref_picture)


# ------------------------------------------------------------------------ caption reader


@dataclass(frozen=True)
class ClaimedObject:
    """An object a caption claims; size and position are ``None`` when not stated."""

    shape: str
    color: str | None
    size: str | None = None
    position: str | None = None


@dataclass(frozen=True)
class CaptionClaims:
    """What a caption claims: its objects in mention order and the background colour."""

    objects: tuple[ClaimedObject, ...]
    background: str | None


_WORD = re.compile(r"[a-z]+")


def read_caption(text: str) -> CaptionClaims:
    """Extract claimed objects and background from a caption in any supported style.

    Rules: every shape noun (or its plural) starts a claimed object; the last object-colour
    and size words since the previous shape noun describe it; a position word belongs to
    the most recent shape noun before it (or to the first one when the caption opens with
    it); any background-colour word names the background (the palettes are disjoint).
    Words outside the vocabulary (openers, signatures, verbs) are ignored.
    """
    words = _WORD.findall(text.lower())
    objects: list[dict[str, str | None]] = []
    pending: dict[str, str | None] = {"color": None, "size": None, "position": None}
    background: str | None = None
    for word in words:
        if word in _SHAPE_OF:
            objects.append({**pending, "shape": _SHAPE_OF[word]})
            pending = {"color": None, "size": None, "position": None}
        elif word in _COLOR_OF:
            color = _COLOR_OF[word]
            if color in BACKGROUND_COLORS:
                background = color
            else:
                pending["color"] = color
        elif word in _SIZE_OF:
            pending["size"] = _SIZE_OF[word]
        elif word in _POSITION_OF:
            target = objects[-1] if objects else pending
            if target.get("position") is None:
                target["position"] = _POSITION_OF[word]
    claimed = tuple(
        ClaimedObject(
            shape=str(o["shape"]), color=o["color"], size=o["size"], position=o["position"]
        )
        for o in objects
    )
    return CaptionClaims(objects=claimed, background=background)


def scene_claims(scene: Scene) -> CaptionClaims:
    """The claims a perfect, complete caption of ``scene`` makes."""
    return CaptionClaims(
        objects=tuple(ClaimedObject(o.shape, o.color, o.size, o.position) for o in scene.objects),
        background=scene.background,
    )


# ----------------------------------------------------------------------- claim matching


@dataclass(frozen=True)
class ClaimMatch:
    """How claims compare with a truth (a scene, or another caption's claims).

    ``accuracy`` = earned / possible points (see :func:`match_claims`). The lists name the
    objects for the evaluator's reasoning: ``correct`` (colour and shape right), ``wrong``
    (pairs of claimed, true object matched to each other but differing), ``missing`` (true
    objects no claim matched) and ``hallucinated`` (claims no true object matched).
    """

    accuracy: float
    correct: tuple[ClaimedObject, ...] = ()
    wrong: tuple[tuple[ClaimedObject, ClaimedObject], ...] = ()
    missing: tuple[ClaimedObject, ...] = ()
    hallucinated: tuple[ClaimedObject, ...] = ()
    background_claimed: str | None = None
    background_true: str | None = None
    details: dict[str, float] = field(default_factory=dict, compare=False)


def _pair_points(claim: ClaimedObject, truth: ClaimedObject) -> tuple[float, float]:
    """(earned, possible) for one matched pair; an attribute counts only if both state it."""
    earned = possible = 0.0
    for attr in ("color", "shape", "size", "position"):
        said, true = getattr(claim, attr), getattr(truth, attr)
        if said is None or true is None:
            # Colour and shape are the content of an object: not saying them costs a point.
            if attr in ("color", "shape") and true is not None:
                possible += 1.0
            continue
        possible += 1.0
        earned += float(said == true)
    return earned, possible


def match_claims(claims: CaptionClaims, truth: CaptionClaims) -> ClaimMatch:
    """Score ``claims`` against ``truth`` with an optimal one-to-one object matching.

    Points: each matched pair earns 1 per attribute stated by both and equal, out of 1 per
    attribute stated by both (colour and shape always count); each unmatched true object
    (missing) and each unmatched claim (hallucinated) adds 2 possible points and earns 0;
    the background adds 1 possible point when the truth states it, earning 1 if claimed
    correctly, 0.5 if not mentioned, 0 if wrong. ``accuracy = earned / possible`` in [0, 1].
    The matching maximises earned points, preferring pairs in the same slot on ties.
    """
    said, true = list(claims.objects), list(truth.objects)
    earned = possible = 0.0
    pairs: list[tuple[int, int]] = []
    if said and true:
        gain = np.zeros((len(said), len(true)))
        for i, claim in enumerate(said):
            for j, obj in enumerate(true):
                points, _ = _pair_points(claim, obj)
                tie = 0.01 * float(claim.position is not None and claim.position == obj.position)
                gain[i, j] = points + tie
        from scipy.optimize import linear_sum_assignment

        rows, cols = linear_sum_assignment(-gain)
        pairs = list(zip(rows.tolist(), cols.tolist(), strict=True))
    correct: list[ClaimedObject] = []
    wrong: list[tuple[ClaimedObject, ClaimedObject]] = []
    for i, j in pairs:
        e, p = _pair_points(said[i], true[j])
        earned, possible = earned + e, possible + p
        if said[i].color == true[j].color and said[i].shape == true[j].shape:
            correct.append(said[i])
        else:
            wrong.append((said[i], true[j]))
    matched_said = {i for i, _ in pairs}
    matched_true = {j for _, j in pairs}
    missing = tuple(o for j, o in enumerate(true) if j not in matched_true)
    hallucinated = tuple(o for i, o in enumerate(said) if i not in matched_said)
    possible += 2.0 * (len(missing) + len(hallucinated))
    if truth.background is not None:
        possible += 1.0
        if claims.background is None:
            earned += 0.5
        elif claims.background == truth.background:
            earned += 1.0
    accuracy = earned / possible if possible > 0 else 0.0
    return ClaimMatch(
        accuracy=accuracy,
        correct=tuple(correct),
        wrong=tuple(wrong),
        missing=missing,
        hallucinated=hallucinated,
        background_claimed=claims.background,
        background_true=truth.background,
        details={"earned": earned, "possible": possible},
    )


def name_object(obj: ClaimedObject) -> str:
    """Short noun phrase for reasoning text, e.g. ``"red circle"``."""
    return " ".join(part for part in (obj.color, obj.shape) if part)
