"""Importer for the nocaps validation set, the image source of SelfEval-Cap.

Seed 000 (`000_dd1ddac0ce03ecfb.txt`, Sec. 5 "SelfEval-Cap") uses the 4,500 images of the
nocaps validation split and their human captions as references (45,000 captions, 10 per
image). The annotations file `nocaps_val_4500_captions.json` is COCO-style::

    {"info": ..., "licenses": ...,
     "images": [{"id": 0, "file_name": "0013ea2087020901.jpg", "open_images_id": ...,
                 "domain": "in-domain" | "near-domain" | "out-domain", ...}, ...],
     "annotations": [{"image_id": 0, "id": 0, "caption": "..."}, ...]}

The pixels are Open Images files that the user downloads separately into `image_dir`.

`load_nocaps` returns one row per image with exactly the columns in `COLUMNS`:

- image_id: "nocaps-<id>", unique across the project's datasets.
- image_path: `str(image_dir / file_name)`.
- image_sha256: hex SHA-256 of the image file's bytes, so a request key (DESIGN.md
  principle 5) and every derived artifact pin the exact pixels that were judged.
- references: the first `n_references` captions of the image in ascending annotation
  `id` order. Annotation ids are the file's own stable order, so the choice does not
  depend on how a JSON writer ordered the list, and it is the same for every run.
- source: "nocaps"; scene: None (nocaps has no scene labels; the column exists so that
  all image tables share one schema).

Selection is reproducible: with `n_images`, a sample of that size is drawn with
`numpy.random.default_rng(seed)` from the (domain-filtered) images sorted by id, and the
sample is returned sorted by id. The sample depends only on the annotations file and the
seed, never on which image files happen to be on disk, so `missing="skip"` drops images
from a fixed sample rather than silently drawing different ones.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

logger = logging.getLogger(__name__)

COLUMNS = ("image_id", "image_path", "image_sha256", "references", "source", "scene")
SOURCE = "nocaps"
DOMAINS = ("in-domain", "near-domain", "out-domain")
MISSING_MODES = ("error", "skip")
_SHOWN_MISSING = 20
_HASH_CHUNK = 1 << 20


class MissingImagesError(ValueError):
    """Some selected images are not on disk; `.missing` lists every missing file name."""

    def __init__(self, annotations: Path, image_dir: Path, missing: list[str]) -> None:
        self.annotations = Path(annotations)
        self.image_dir = Path(image_dir)
        self.missing = list(missing)
        shown = ", ".join(self.missing[:_SHOWN_MISSING])
        more = len(self.missing) - _SHOWN_MISSING
        suffix = f", ... and {more} more" if more > 0 else ""
        super().__init__(
            f"{len(self.missing)} image file(s) listed in {self.annotations} are missing from "
            f"{self.image_dir}: {shown}{suffix}. Download the nocaps validation images "
            "(Open Images) into that directory, or pass missing='skip' to drop them."
        )


# --------------------------------------------------------------------------- parsing


def read_json(path: Path) -> Any:
    """Load a JSON file; invalid JSON is a ValueError naming the file (shared by the
    dataset importers)."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc})") from exc


def _read_json(path: Path) -> dict[str, Any]:
    """Load the annotations; non-object content is a ValueError naming the file."""
    data = read_json(path)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object at the top level")
    return data


def require_key(record: Any, key: str, kind: type | tuple[type, ...], where: str,
                path: Path) -> Any:
    """`record[key]` if present and of `kind`; otherwise a ValueError naming file and key."""
    if not isinstance(record, dict) or key not in record:
        raise ValueError(f"{path}: {where} lacks key {key!r}")
    value = record[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise ValueError(f"{path}: {where} key {key!r} has unexpected type {type(value).__name__}")
    return value


def _parse_images(data: dict[str, Any], path: Path) -> dict[int, dict[str, Any]]:
    """Images by id, each checked for `id` and `file_name`; duplicate ids are an error."""
    images = require_key(data, "images", list, "top level", path)
    by_id: dict[int, dict[str, Any]] = {}
    for position, image in enumerate(images):
        image_id = require_key(image, "id", int, f"images[{position}]", path)
        file_name = require_key(image, "file_name", str, f"image id {image_id}", path)
        if Path(file_name).is_absolute() or ".." in Path(file_name).parts:
            raise ValueError(f"{path}: image id {image_id} has unsafe file_name {file_name!r}")
        if image_id in by_id:
            raise ValueError(f"{path}: image id {image_id} appears more than once")
        by_id[image_id] = image
    return by_id


def _parse_captions(data: dict[str, Any], path: Path, image_ids: set[int]) -> dict[int, list[str]]:
    """Captions per image id, in ascending annotation-id order."""
    annotations = require_key(data, "annotations", list, "top level", path)
    grouped: dict[int, list[tuple[int, str]]] = defaultdict(list)
    for position, ann in enumerate(annotations):
        where = f"annotations[{position}]"
        image_id = require_key(ann, "image_id", int, where, path)
        ann_id = require_key(ann, "id", int, where, path)
        caption = require_key(ann, "caption", str, f"{where} (image id {image_id})", path)
        if image_id not in image_ids:
            raise ValueError(f"{path}: {where} refers to unknown image id {image_id}")
        grouped[image_id].append((ann_id, caption))
    return {image_id: [c for _, c in sorted(pairs)] for image_id, pairs in grouped.items()}


def _filter_domains(
    images: dict[int, dict[str, Any]], domains: list[str] | None, path: Path
) -> list[int]:
    """Image ids (sorted) whose `domain` is in `domains`; all ids when `domains` is None."""
    if domains is None:
        return sorted(images)
    unknown = sorted(set(domains) - set(DOMAINS))
    if unknown:
        raise ValueError(f"unknown nocaps domain(s) {unknown}; valid: {list(DOMAINS)}")
    wanted = set(domains)
    return sorted(
        image_id
        for image_id, image in images.items()
        if require_key(image, "domain", str, f"image id {image_id}", path) in wanted
    )


def _check_reference_counts(
    ids: list[int], captions: dict[int, list[str]], n_references: int, path: Path
) -> None:
    """Every candidate image needs at least `n_references` captions."""
    for image_id in ids:
        have = len(captions.get(image_id, []))
        if have < n_references:
            raise ValueError(
                f"{path}: image id {image_id} has {have} caption(s), "
                f"fewer than n_references={n_references}"
            )


def _sample(ids: list[int], n_images: int | None, seed: int) -> list[int]:
    """A seeded sample of `n_images` ids (sorted), or all ids when `n_images` is None."""
    if n_images is None:
        return ids
    if not 0 < n_images <= len(ids):
        raise ValueError(f"n_images={n_images} must be between 1 and {len(ids)} (available)")
    picks = np.random.default_rng(seed).choice(len(ids), size=n_images, replace=False)
    return sorted(ids[int(k)] for k in picks)


# --------------------------------------------------------------------------- files


def sha256_file(path: Path) -> str:
    """Hex SHA-256 of a file, read in chunks so large images never sit in memory twice."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for chunk in iter(lambda: handle.read(_HASH_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _resolve_missing(
    ids: list[int],
    images: dict[int, dict[str, Any]],
    annotations: Path,
    image_dir: Path,
    missing: str,
) -> list[int]:
    """Drop (skip) or report (error) ids whose image file is not on disk."""
    absent = [i for i in ids if not (image_dir / images[i]["file_name"]).is_file()]
    if not absent:
        return ids
    if missing == "error":
        raise MissingImagesError(annotations, image_dir, [images[i]["file_name"] for i in absent])
    logger.warning(
        "nocaps: skipping %d of %d selected images missing from %s",
        len(absent),
        len(ids),
        image_dir,
    )
    gone = set(absent)
    return [i for i in ids if i not in gone]


# --------------------------------------------------------------------------- public API


def load_nocaps(
    annotations: Path,
    image_dir: Path,
    *,
    n_images: int | None = None,
    n_references: int = 5,
    seed: int = 0,
    domains: list[str] | None = None,
    missing: str = "error",
) -> pd.DataFrame:
    """Load nocaps validation images with their human reference captions.

    See the module docstring for the columns, the reference order and the sampling rule.
    `missing="error"` raises `MissingImagesError` if any selected image file is absent;
    `missing="skip"` drops those images and logs a warning with the count. Structural
    problems in the JSON (missing keys, wrong types, an image with fewer than
    `n_references` captions) raise ValueError naming the file and the image id or key.
    """
    annotations, image_dir = Path(annotations), Path(image_dir)
    if missing not in MISSING_MODES:
        raise ValueError(f"missing={missing!r}; expected one of {list(MISSING_MODES)}")
    if n_references < 1:
        raise ValueError(f"n_references={n_references} must be at least 1")

    data = _read_json(annotations)
    images = _parse_images(data, annotations)
    captions = _parse_captions(data, annotations, set(images))
    pool = _filter_domains(images, domains, annotations)
    _check_reference_counts(pool, captions, n_references, annotations)
    selected = _sample(pool, n_images, seed)
    selected = _resolve_missing(selected, images, annotations, image_dir, missing)
    return _frame(selected, images, captions, image_dir, n_references)


def _frame(
    ids: list[int],
    images: dict[int, dict[str, Any]],
    captions: dict[int, list[str]],
    image_dir: Path,
    n_references: int,
) -> pd.DataFrame:
    """Build the output table with exactly `COLUMNS`, in that order."""
    rows = []
    for image_id in ids:
        file_path = image_dir / images[image_id]["file_name"]
        rows.append(
            {
                "image_id": f"nocaps-{image_id}",
                "image_path": str(file_path),
                "image_sha256": sha256_file(file_path),
                "references": list(captions[image_id][:n_references]),
                "source": SOURCE,
                "scene": None,
            }
        )
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    frame["scene"] = frame["scene"].astype(object)
    return frame
