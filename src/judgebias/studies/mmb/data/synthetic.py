"""MMB's offline default: generated images in several visual styles, with a planted quality
and simulated human preferences, written in the published HPDv2 and MJ-Bench shapes so the
real importers (judgebias.studies.mmb.data.pairs) build the tables (spec mmb.md, "What the
simulated judge must plant").

Images
    Each style has a palette of three colours no other style uses and a texture that varies
    along x (bands, neon lines, diagonal hatching, 4-px blocks), so pixels separate cleanly
    and even untrained embeddings can cluster them. A prompt group has one style; each image
    is a seeded composition in it.
Planted quality q in [0, 1]
    Visible defects: 4 x 4 blotches of magenta (255, 0, 255), a colour no palette uses,
    covering (1 - q) x MAX_DEFECT of the image (to the nearest block).
Simulated humans
    Utilities u = gamma * q + Gumbel(0, 1), one draw per image and annotation; the
    difference of two independent Gumbels is logistic, so P(u_A > u_B) =
    sigmoid(gamma (q_A - q_B)) exactly: the spec's humans. Test groups are ranked by u
    (HPDv2 test: rank 1 = best); training groups mark argmax u preferred (HPDv2 train).

:func:`perceive` is what a simulated judge sees of an image, from its pixels alone.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path

import numpy as np
from PIL import Image

from judgebias.io.artifacts import write_bytes, write_json

MAX_DEFECT = 0.25
BLOCK = 4
DEFECT = (255, 0, 255)
TOLERANCE = 24  # L-inf distance within which a pixel counts as a palette colour

STYLES: dict[str, tuple[tuple[int, int, int], ...]] = {
    "pastel landscape": ((170, 200, 150), (150, 180, 210), (210, 190, 140)),
    "neon sci-fi": ((40, 30, 80), (60, 200, 200), (200, 60, 160)),
    "ink sketch": ((235, 235, 225), (90, 90, 90), (150, 150, 140)),
    "pixel mosaic": ((200, 100, 40), (60, 130, 60), (230, 210, 60)),
}
SUBJECTS = ("a lake", "a city", "a cat", "a mountain", "a ship", "a forest", "a robot",
            "a garden", "a castle", "a bridge")


@dataclass(frozen=True)
class Percept:
    """What the simulated judge sees: the style, the quality and the brightness."""

    style: str | None
    quality: float
    brightness: float


def _texture(style: str, size: int, rng: np.random.Generator) -> np.ndarray:
    palette = np.array(STYLES[style], dtype=np.uint8)
    x = np.arange(size)
    if style == "pastel landscape":  # vertical bands 2-5 px wide
        widths = rng.integers(2, 6, size)
        column = np.repeat(rng.integers(3, size=size), widths)[:size]
        index = np.tile(column, (size, 1))
    elif style == "neon sci-fi":  # dark field with neon lines every few columns
        column = np.where(rng.random(size) < 0.35, rng.integers(1, 3, size), 0)
        index = np.tile(column, (size, 1))
    elif style == "ink sketch":  # diagonal hatching
        period = int(rng.integers(3, 6))
        index = ((x[None, :] + x[:, None]) % period == 0).astype(int)
        index[rng.random((size, size)) < 0.1] = 2
    else:  # pixel mosaic: 4 x 4 blocks
        blocks = rng.integers(3, size=(size // BLOCK + 1, size // BLOCK + 1))
        index = np.kron(blocks, np.ones((BLOCK, BLOCK), dtype=int))[:size, :size]
    return palette[index]


def render(style: str, quality: float, size: int, seed: int) -> np.ndarray:
    """One image (H, W, 3 uint8) of `style` with planted quality `quality`."""
    if style not in STYLES:
        raise ValueError(f"unknown style {style!r} (known: {', '.join(STYLES)})")
    rng = np.random.default_rng(seed)
    img = _texture(style, size, rng)
    cells = (size // BLOCK) ** 2
    n_defects = round((1 - quality) * MAX_DEFECT * cells)
    for cell in rng.choice(cells, size=n_defects, replace=False):
        r, c = divmod(int(cell), size // BLOCK)
        img[r * BLOCK:(r + 1) * BLOCK, c * BLOCK:(c + 1) * BLOCK] = DEFECT
    return img


def png_bytes(img: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(img).save(buffer, format="PNG", optimize=False)
    return buffer.getvalue()


@cache
def _palettes() -> tuple[np.ndarray, np.ndarray]:
    colours = np.array([c for p in STYLES.values() for c in p], dtype=np.int16)
    owner = np.repeat(np.arange(len(STYLES)), [len(p) for p in STYLES.values()])
    return colours, owner


@lru_cache(maxsize=4096)
def perceive(image: bytes) -> Percept:
    """The style, quality and brightness of an encoded image, from its pixels.

    Memoised on the encoded bytes: a pure function of them, and a judge sees each image
    once per instruction of the pool (44 times by default). Unmemoised, perceiving was
    89% of the default `mmb-judge` job (py-spy); memoised, its 25,520 calls run at
    ~1,200/s instead of ~100/s, with byte-identical judgements.

    A pixel is *clean* when it lies within TOLERANCE (L-inf) of a palette colour. The style
    is the one whose palette holds most clean pixels (None if none is clean); the quality is
    ``1 - (1 - clean share) / MAX_DEFECT`` clipped to [0, 1], which recovers the planted q
    of an undamaged image (its only unclean pixels are the defects) and falls when a
    degradation moves pixels off the palette; brightness is the mean luma in [0, 1].
    """
    img = np.asarray(Image.open(io.BytesIO(image)).convert("RGB"), dtype=np.int16)
    pixels = img.reshape(-1, 3)
    colours, owner = _palettes()
    distance = np.abs(pixels[:, None, :] - colours[None, :, :]).max(axis=2)
    nearest = distance.argmin(axis=1)
    clean = distance[np.arange(len(pixels)), nearest] <= TOLERANCE
    votes = np.bincount(owner[nearest[clean]], minlength=len(STYLES))
    style = list(STYLES)[int(votes.argmax())] if clean.any() else None
    quality = float(np.clip(1 - (1 - clean.mean()) / MAX_DEFECT, 0.0, 1.0))
    luma = (pixels @ np.array([0.299, 0.587, 0.114])) / 255.0
    return Percept(style, quality, float(luma.mean()))


def _utilities(quality: np.ndarray, gamma: float, rng: np.random.Generator) -> np.ndarray:
    return gamma * quality + rng.gumbel(0.0, 1.0, quality.shape)


def generate(out_dir: Path, *, styles: list[str] | None = None, n_test_groups: int = 30,
             images_per_test_group: int = 5, n_train_groups: int = 160,
             images_per_train_group: int = 4, n_mjb_groups: int = 20,
             images_per_mjb_group: int = 3, gamma: float = 6.0, image_size: int = 64,
             seed: int = 0) -> dict[str, Path]:
    """Write the images and their files in the published layouts under `out_dir`: HPDv2's
    ``hpdv2/test.json`` and ``hpdv2/train.json`` with images under ``hpdv2/test/`` and
    ``hpdv2/train/`` (paths in each file relative to its folder), MJ-Bench's
    ``mjbench/bias.json`` (paths relative to ``mjbench/``), and ``styles.json`` (image
    path -> planted style)."""
    styles = list(styles or STYLES)
    rng = np.random.default_rng(seed)
    out_dir = Path(out_dir)
    planted: dict[str, str] = {}

    def group(folder: Path, index: int, n_images: int) -> tuple[str, list[str], np.ndarray]:
        style = styles[index % len(styles)]
        prompt = f"a {style} picture of {SUBJECTS[index % len(SUBJECTS)]}, variant {index}"
        quality = rng.uniform(0.05, 1.0, n_images)
        paths = []
        for j, q in enumerate(quality):
            relative = f"{index:05d}_{j}.png"
            write_bytes(png_bytes(render(style, float(q), image_size,
                                         int(rng.integers(2**31)))), folder / relative)
            planted[str(folder / relative)] = style
            paths.append(relative)
        return prompt, paths, quality

    hpd, mjbench = out_dir / "hpdv2", out_dir / "mjbench"
    test = []
    for i in range(n_test_groups):
        prompt, paths, quality = group(hpd / "test", i, images_per_test_group)
        u = _utilities(quality, gamma, rng)
        ranks = (np.argsort(np.argsort(-u)) + 1).tolist()
        test.append({"prompt": prompt, "image_path": paths, "rank": ranks,
                     "raw_annotation": [{"rank": ranks, "user_hash": f"sim-{i}"}]})
    train = []
    for i in range(n_train_groups):
        prompt, paths, quality = group(hpd / "train", 10_000 + i, images_per_train_group)
        u = _utilities(quality, gamma, rng)
        train.append({"human_preference": [int(j == u.argmax()) for j in range(len(u))],
                      "prompt": prompt, "file_path": paths, "user_hash": f"sim-{i}"})
    bias = []
    for i in range(n_mjb_groups):
        prompt, paths, _ = group(mjbench / "images", 20_000 + i, images_per_mjb_group)
        bias += [{"demographic": f"group-{j}", "occupation": prompt.split(" of ")[-1],
                  "images_dir": f"images/{path}", "prompt": prompt}
                 for j, path in enumerate(paths)]
    written = {"test": hpd / "test.json", "train": hpd / "train.json",
               "mjbench": mjbench / "bias.json", "styles": out_dir / "styles.json"}
    for name, value in (("test", test), ("train", train), ("mjbench", bias),
                        ("styles", planted)):
        write_json(value, written[name])
    return written


def planted_styles(path: Path) -> dict[str, str]:
    return json.loads(Path(path).read_text())
