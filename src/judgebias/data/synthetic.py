"""The default, offline dataset: rendered scenes with human-like reference captions.

Each image is a random :class:`~judgebias.data.scenes.Scene` rendered to PNG; its
references are correct captions in varied styles. The ground-truth scene is kept in the
table (column ``scene``) for tests and reports only: the simulated models never read it,
they perceive the PNG like a real model would.

Determinism: image ``i`` draws its scene and references from its own generator seeded by
``(seed, i)``, so the same ``(n_images, seed)`` gives the same bytes and table, and a
larger ``n_images`` extends a smaller build rather than reshuffling it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pandas as pd

from judgebias.artifacts import write_bytes
from judgebias.data.scenes import (
    random_scene,
    reference_captions,
    render,
    scene_to_json,
    to_png_bytes,
)

COLUMNS: tuple[str, ...] = (
    "image_id",
    "image_path",
    "image_sha256",
    "references",
    "source",
    "scene",
)
SOURCE = "synthetic"


def image_id_for(index: int) -> str:
    """Stable id of the ``index``-th synthetic image, e.g. ``"syn-00000"``."""
    return f"syn-{index:05d}"


def build_synthetic_dataset(
    out_dir: Path,
    n_images: int,
    seed: int,
    image_size: int = 128,
    n_references: int = 5,
) -> pd.DataFrame:
    """Write ``out_dir/images/{image_id}.png`` and return the image table.

    Synthetic images in that folder that are not part of this build are removed.

    Columns: ``image_id``, ``image_path`` (``str(out_dir / "images" / f"{id}.png")``),
    ``image_sha256`` (of the PNG bytes), ``references`` (list of str), ``source``
    (``"synthetic"``) and ``scene`` (JSON ground truth). The caller writes the table.
    """
    if n_images < 0:
        raise ValueError(f"n_images must be >= 0, got {n_images}")
    out_dir = Path(out_dir)
    image_dir = out_dir / "images"
    image_dir.mkdir(parents=True, exist_ok=True)
    rows = [
        _build_one(image_dir, index, seed, image_size, n_references) for index in range(n_images)
    ]
    _remove_stale(image_dir, {f"{row['image_id']}.png" for row in rows})
    return pd.DataFrame(rows, columns=list(COLUMNS))


def _remove_stale(image_dir: Path, keep: set[str]) -> None:
    """Delete synthetic images left by an earlier, larger build so the folder matches."""
    for path in image_dir.glob("syn-*.png"):
        if path.name not in keep:
            path.unlink()


def _build_one(
    image_dir: Path, index: int, seed: int, image_size: int, n_references: int
) -> dict[str, object]:
    rng = np.random.default_rng([seed, index])
    scene = random_scene(rng)
    png = to_png_bytes(render(scene, image_size))
    image_id = image_id_for(index)
    path = image_dir / f"{image_id}.png"
    write_if_changed(path, png)
    return {
        "image_id": image_id,
        "image_path": str(path),
        "image_sha256": hashlib.sha256(png).hexdigest(),
        "references": reference_captions(scene, rng, n=n_references),
        "source": SOURCE,
        "scene": scene_to_json(scene),
    }


def write_if_changed(path: Path, data: bytes) -> None:
    """Write atomically (temp file + rename), skipping identical files to keep mtimes."""
    if path.exists() and path.read_bytes() == data:
        return
    write_bytes(data, path)
