"""Philautia's input dataset (the `dataset` step): the offline synthetic default or the
imported nocaps validation set, in one images table shape (`COLUMNS`).

Synthetic (`build_synthetic_dataset`)
-------------------------------------

Each image is a random :class:`~judgebias.data.scenes.Scene` rendered to PNG; its
references are correct captions in varied styles. The ground-truth scene is kept in the
table (column ``scene``) for tests and reports only: the simulated models never read it,
they perceive the PNG like a real model would.

Determinism: image ``i`` draws its scene and references from its own generator seeded by
``(seed, i)``, so the same ``(n_images, seed)`` gives the same bytes and table, and a
larger ``n_images`` extends a smaller build rather than reshuffling it.

nocaps (`load_nocaps`)
----------------------

The nocaps validation set is the image source of SelfEval-Cap: seed 000
(`000_dd1ddac0ce03ecfb.txt`, Sec. 5 "SelfEval-Cap") uses the 4,500 images of the nocaps
validation split and their human captions as references (45,000 captions, 10 per image).
The annotations file `nocaps_val_4500_captions.json` is COCO-style::

    {"info": ..., "licenses": ...,
     "images": [{"id": 0, "file_name": "0013ea2087020901.jpg", "open_images_id": ...,
                 "domain": "in-domain" | "near-domain" | "out-domain", ...}, ...],
     "annotations": [{"image_id": 0, "id": 0, "caption": "..."}, ...]}

The pixels are Open Images files that the user downloads separately into `image_dir`.

`load_nocaps` returns one row per image with exactly the columns in `COLUMNS`:

- image_id: "nocaps-<id>", unique across the project's datasets.
- image_path: `str(image_dir / file_name)` (normalised; a `file_name` that is absolute or
  climbs out of `image_dir` with `..` is an error, `judgebias.data.paths.resolve_inside`).
- image_sha256: hex SHA-256 of the image file's bytes (judgebias.io.filedigest.file_sha256,
  the one digest every study's data table stores), so a request key (docs/design.md
  principle 5) and every derived artifact pin the exact pixels that were judged, and a
  replaced image changes the table: `dvc repro` then reruns what follows.
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
import re
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from judgebias.data.paths import input_files, resolve_inside
from judgebias.data.scenes import (
    random_scene,
    reference_captions,
    render,
    scene_to_json,
    to_png_bytes,
)
from judgebias.io.artifacts import write_bytes
from judgebias.io.filedigest import file_sha256

logger = logging.getLogger(__name__)

COLUMNS = ("image_id", "image_path", "image_sha256", "references", "source", "scene")
SYNTHETIC_SOURCE = "synthetic"
NOCAPS_SOURCE = "nocaps"
DOMAINS = ("in-domain", "near-domain", "out-domain")
MISSING_MODES = ("error", "skip")
_SHOWN_MISSING = 20


def dataset_files(spec: Mapping[str, Any]) -> list[str]:
    """Every file the `dataset` step reads for `spec` (``philautia.dataset``): nocaps'
    annotations and every file under its `image_dir` (`judgebias.data.paths.input_files`;
    `load_nocaps` reads ``image_dir / file_name``); nothing for the synthetic set, which
    the step builds itself.

    The rule declares them as inputs, so that correcting a caption or replacing an image
    reruns the step and everything after it. Declared one by one, the images cost
    Snakemake a stat() each and no hashing; dvc.yaml lists the folder as one dep
    (judgebias.workflow.dvc_export), which DVC hashes once and then checks through its
    state database, so an untouched folder is not read again on every `dvc status`. The
    whole folder is declared, not only the sampled images: which images the sample holds
    is known only once the annotations are read, and an image added to or removed from
    the folder reruns the step in both front doors alike."""
    if spec["name"] != "nocaps":
        return []
    nocaps = spec["nocaps"]
    return input_files([nocaps["annotations"]], [nocaps["image_dir"]])


def build_dataset(spec: Mapping[str, Any], images_dir: Path) -> pd.DataFrame:
    """The images table for `dataset` in params.yaml.

    Synthetic images are written under `images_dir`; an imported dataset keeps its images
    where they are (the folder is still created, so the step's outputs always exist).
    """
    images_dir.mkdir(parents=True, exist_ok=True)
    if spec["name"] == "synthetic":
        syn = spec["synthetic"]
        return build_synthetic_dataset(images_dir.parent, n_images=syn["n_images"],
                                       seed=syn["seed"], image_size=syn["image_size"],
                                       n_references=syn["n_references"])
    noc = spec["nocaps"]
    return load_nocaps(Path(noc["annotations"]), Path(noc["image_dir"]),
                       n_images=noc["n_images"], n_references=noc["n_references"],
                       seed=noc["seed"], domains=noc.get("domains"), missing=noc["missing"])


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
        "source": SYNTHETIC_SOURCE,
        "scene": scene_to_json(scene),
    }


def write_if_changed(path: Path, data: bytes) -> None:
    """Write atomically (temp file + rename), skipping identical files to keep mtimes."""
    if path.exists() and path.read_bytes() == data:
        return
    write_bytes(data, path)


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
    """Load a JSON file (shared by the dataset importers). Every problem is a ValueError
    naming the file: a syntax error with its line and column, text that is not UTF-8, and
    a key repeated within one object -- Python's json would keep the last one silently, so
    a Flickr8k-Expert image listed twice would lose its first ratings without a word."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    try:
        return json.loads(text, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: line {exc.lineno} column {exc.colno}: not valid JSON "
                         f"({exc.msg})") from exc
    except _RepeatedKeyError as exc:
        raise ValueError(f"{path}: {_repeated_key_message(text, exc.key)}") from exc


class _RepeatedKeyError(Exception):
    """A JSON object names one key twice (raised while parsing, located afterwards)."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """`json.loads`'s object hook: the object's dict, or _RepeatedKeyError."""
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _RepeatedKeyError(key)
        result[key] = value
    return result


def _repeated_key_message(text: str, key: str) -> str:
    """Where a repeated key is: its lines when the key occurs exactly twice in the file
    (an id repeated at the top level), else the key alone (the parser gives no position)."""
    quoted = re.escape(json.dumps(key))
    lines = [text.count("\n", 0, m.start()) + 1 for m in re.finditer(quoted + r"\s*:", text)]
    where = f" (lines {lines[0]} and {lines[1]})" if len(lines) == 2 else ""
    return (f"key {key!r} appears twice in one JSON object{where}; the second would "
            "silently replace the first")


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


def _parse_images(data: dict[str, Any], path: Path, image_dir: Path) -> dict[int, dict[str, Any]]:
    """Images by id, each checked for `id` and a `file_name` inside `image_dir` (kept
    resolved, as `path`, with the 1-based `row` that error messages name). An id or a
    file listed twice is an error: the image would be captioned and scored twice,
    counting double in every mean."""
    images = require_key(data, "images", list, "top level", path)
    by_id: dict[int, dict[str, Any]] = {}
    row_of_id: dict[int, int] = {}
    row_of_file: dict[Path, int] = {}
    for row, image in enumerate(images, start=1):
        where = f"images row {row}"
        image_id = require_key(image, "id", int, where, path)
        file_name = require_key(image, "file_name", str, f"{where} (image id {image_id})", path)
        file_path = resolve_inside(image_dir, file_name, what=f"{path}: {where}: file_name")
        if image_id in row_of_id:
            raise ValueError(f"{path}: {where}: id {image_id} is also images row "
                             f"{row_of_id[image_id]}")
        if file_path in row_of_file:
            raise ValueError(f"{path}: {where}: file_name {file_name!r} is also images row "
                             f"{row_of_file[file_path]} (one image would count twice)")
        row_of_id[image_id], row_of_file[file_path] = row, row
        by_id[image_id] = {**image, "path": file_path, "row": row}
    return by_id


def _parse_captions(data: dict[str, Any], path: Path, image_ids: set[int]) -> dict[int, list[str]]:
    """Captions per image id, in ascending annotation-id order. An annotation id listed
    twice is an error: the ids order the references, and a repeated caption (a file
    concatenated twice) would take a reference slot of its own."""
    annotations = require_key(data, "annotations", list, "top level", path)
    grouped: dict[int, list[tuple[int, str]]] = defaultdict(list)
    row_of_id: dict[int, int] = {}
    for row, ann in enumerate(annotations, start=1):
        where = f"annotations row {row}"
        image_id = require_key(ann, "image_id", int, where, path)
        ann_id = require_key(ann, "id", int, where, path)
        caption = require_key(ann, "caption", str, f"{where} (image id {image_id})", path)
        if image_id not in image_ids:
            raise ValueError(f"{path}: {where}: image_id {image_id} is not an id of 'images'")
        if ann_id in row_of_id:
            raise ValueError(f"{path}: {where}: id {ann_id} is also annotations row "
                             f"{row_of_id[ann_id]}")
        row_of_id[ann_id] = row
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
        if require_key(image, "domain", str, _image_where(image_id, images), path) in wanted
    )


def _image_where(image_id: int, images: dict[int, dict[str, Any]]) -> str:
    """How messages name an image: its row in `images` (from 1) and its id."""
    return f"images row {images[image_id]['row']} (image id {image_id})"


def _check_reference_counts(
    ids: list[int], images: dict[int, dict[str, Any]], captions: dict[int, list[str]],
    n_references: int, path: Path
) -> None:
    """Every candidate image needs at least `n_references` captions."""
    for image_id in ids:
        have = len(captions.get(image_id, []))
        if have < n_references:
            raise ValueError(
                f"{path}: {_image_where(image_id, images)} has {have} caption(s), "
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


def _resolve_missing(
    ids: list[int],
    images: dict[int, dict[str, Any]],
    annotations: Path,
    image_dir: Path,
    missing: str,
) -> list[int]:
    """Drop (skip) or report (error) ids whose image file is not on disk."""
    absent = [i for i in ids if not images[i]["path"].is_file()]
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
    problems in the JSON (a syntax error, missing keys, wrong types, a repeated image id,
    file name or annotation id, a `file_name` outside `image_dir`, an image with fewer than
    `n_references` captions) raise ValueError naming the file, the row (counted from 1 in
    `images` or `annotations`) and the key.
    """
    annotations, image_dir = Path(annotations), Path(image_dir)
    if missing not in MISSING_MODES:
        raise ValueError(f"missing={missing!r}; expected one of {list(MISSING_MODES)}")
    if n_references < 1:
        raise ValueError(f"n_references={n_references} must be at least 1")

    data = _read_json(annotations)
    images = _parse_images(data, annotations, image_dir)
    captions = _parse_captions(data, annotations, set(images))
    pool = _filter_domains(images, domains, annotations)
    _check_reference_counts(pool, images, captions, n_references, annotations)
    selected = _sample(pool, n_images, seed)
    selected = _resolve_missing(selected, images, annotations, image_dir, missing)
    return _frame(selected, images, captions, n_references)


def _frame(
    ids: list[int],
    images: dict[int, dict[str, Any]],
    captions: dict[int, list[str]],
    n_references: int,
) -> pd.DataFrame:
    """Build the output table with exactly `COLUMNS`, in that order."""
    rows = []
    for image_id in ids:
        file_path = images[image_id]["path"]
        rows.append(
            {
                "image_id": f"nocaps-{image_id}",
                "image_path": str(file_path),
                "image_sha256": file_sha256(file_path),
                "references": list(captions[image_id][:n_references]),
                "source": NOCAPS_SOURCE,
                "scene": None,
            }
        )
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    frame["scene"] = frame["scene"].astype(object)
    return frame
