"""Pomms' input datasets (the `judgements` step): human ratings of candidate captions,
imported or simulated, in one table shape.

Seed 000 (`000_dd1ddac0ce03ecfb.txt`, Sec. 6.3 and Appendix A.2) checks that a judge (or an
ensemble of judges) still agrees with people by Kendall's tau-b / tau-c against the human
ratings of Flickr8k-Expert (1,000 images, 5,664 candidate captions, 16,992 expert ratings
on a 1-4 scale) and Nebula (train / val / test = 26,382 / 3,298 / 3,298 candidates, one
score in [0, 1] each). This module turns those files, any other benchmark a user exports
as CSV / Parquet, and an offline synthetic stand-in into the SAME table, so that the
agreement analysis and the judging code never branch on the source.

The table: one row per human RATING (the caption-metric literature computes Kendall tau
over all ratings, each rating its own row -- all 16,992 rows of Flickr8k-Expert), with
exactly the columns in `COLUMNS`:

- item_id (str): one id per (image, candidate caption) item, stable for a given file
  (the loaders' docstrings give the rule). A judge scores each item once; `items(table)`
  gives that one-row-per-item view.
- dataset (str): "flickr8k-expert", "nebula", "synthetic", or the `dataset` given to
  `load_table` (default: the file's stem).
- image_id (str): the source's image id.
- image_path (str or None): the image file when an `image_dir` was given, else None.
  Without images a dataset still serves to measure agreement with scores computed
  elsewhere (e.g. by the authors' released metric outputs), but it cannot be scored by an
  MLLM judge, which has to see the pixels.
- image_sha256 (str or None): the SHA-256 of that file's bytes
  (judgebias.io.filedigest.file_sha256, each file read once), None with image_path. A
  replaced image thus changes the table, and `dvc repro` (which reruns a stage only when
  a dep's content changed) reruns the judges after it.
- candidate (str): the caption that was rated.
- references (list[str]): the human reference captions of the image, as given.
- human_score (float): the rating on the source's own scale (Flickr8k-Expert 1..4,
  Nebula and the synthetic set [0, 1]); no rescaling, because Kendall tau is invariant to
  monotone maps and the published numbers use the raw scale.
- rater (int): index of the rating within its item, 0-based, in file order. Sources do
  not identify annotators consistently, so this is a position, not a person.
- split (str): "train" | "val" | "test".

Missing images (when `image_dir` is given, every item's image file is checked): with
`missing="error"` the loaders raise `MissingJudgementImagesError`, a subclass of
`judgebias.studies.philautia.data.MissingImagesError` (so one `except` covers every
importer) whose message fits judgement datasets; `missing="skip"` drops the affected items
and logs a warning with the count. Structural problems raise ValueError naming the file and
the offending key or row.

Why this module is long: it holds the step's three importers (Flickr8k-Expert, Nebula, any
CSV/Parquet table) and the synthetic raters, which all build the one table above and share
its checks (splits, missing images, item ids); split, each piece would import the others.
"""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from judgebias.data import scenes
from judgebias.data.paths import input_files, resolve_inside
from judgebias.data.rows import read_any_table
from judgebias.io.filedigest import files_sha256
from judgebias.models.sim import SimModel
from judgebias.studies.philautia.data import (
    MissingImagesError,
    read_json,
    require_key,
    write_if_changed,
)
from judgebias.studies.philautia.sim import described_scene

logger = logging.getLogger(__name__)

COLUMNS: tuple[str, ...] = (
    "item_id",
    "dataset",
    "image_id",
    "image_path",
    "image_sha256",
    "candidate",
    "references",
    "human_score",
    "rater",
    "split",
)
ITEM_COLUMNS: tuple[str, ...] = (
    "item_id",
    "dataset",
    "image_id",
    "image_path",
    "image_sha256",
    "candidate",
    "references",
    "split",
    "human_score_mean",
    "n_ratings",
)
SPLITS: tuple[str, ...] = ("train", "val", "test")
MISSING_MODES: tuple[str, ...] = ("error", "skip")
# Extensions tried, in this order, when a source names an image only by its id.
IMAGE_EXTENSIONS: tuple[str, ...] = (".jpg", ".jpeg", ".png")
TABLE_REQUIRED: tuple[str, ...] = ("image_id", "candidate", "references", "human_score", "split")
TABLE_OPTIONAL: tuple[str, ...] = ("image_file", "item_id")
_SHOWN_MISSING = 20


def judgement_files(spec: Mapping[str, Any]) -> list[str]:
    """Every file a `judgements` step reads for `spec` (``pomms.datasets.<name>``): the
    judgement file and every file under its `image_dir` where one is given (each loader
    reads its images there: `_image_name`, `_resolve_images`); nothing for simulated
    raters, whose images the step draws itself. Declared as the step's inputs for the
    same reasons as philautia's `dataset_files`: a corrected rating or a replaced image
    reruns the step and what follows."""
    if spec["format"] == "synthetic":
        return []
    return input_files([spec["path"]], [spec.get("image_dir") or None])


def build_judgements(name: str, spec: Mapping[str, Any], images_dir: Path) -> pd.DataFrame:
    """The judgements table of `pomms.datasets.<name>`: simulated human raters (written
    under `images_dir`), or an imported benchmark (its images stay where they are)."""
    images_dir.mkdir(parents=True, exist_ok=True)
    image_dir = Path(spec["image_dir"]) if spec.get("image_dir") else None
    if spec["format"] == "synthetic":
        table = build_synthetic_judgements(
            images_dir, spec["n_items"], spec["seed"], n_raters=spec["n_raters"],
            rater_noise=spec["rater_noise"])
    elif spec["format"] == "flickr8k_expert":
        table = load_flickr8k_expert(Path(spec["path"]), image_dir, spec["missing"])
    elif spec["format"] == "nebula":
        table = load_nebula(Path(spec["path"]), image_dir, spec["split"], spec["missing"])
    else:
        table = load_table(Path(spec["path"]), image_dir, name, spec["missing"])
    return table.assign(dataset=name)


class MissingJudgementImagesError(MissingImagesError):
    """Image files of a judgement dataset are absent; `.missing` lists every one.

    Entries of `.missing` are file names; for sources that name images by id only
    (Nebula, tables without `image_file`) an entry is the id followed by the tried
    extensions, e.g. ``"59cf36...{.jpg,.jpeg,.png}"``.
    """

    def __init__(self, source: Path, image_dir: Path, missing: list[str], dataset: str) -> None:
        # MissingImagesError's own message is about nocaps; keep its attributes, not its text.
        self.annotations = Path(source)
        self.image_dir = Path(image_dir)
        self.missing = list(missing)
        self.dataset = dataset
        shown = ", ".join(self.missing[:_SHOWN_MISSING])
        more = len(self.missing) - _SHOWN_MISSING
        suffix = f", ... and {more} more" if more > 0 else ""
        ValueError.__init__(
            self,
            f"{len(self.missing)} image file(s) of the {dataset} items listed in "
            f"{self.annotations} are missing from {self.image_dir}: {shown}{suffix}. "
            "Put the dataset's images in that directory, pass missing='skip' to drop those "
            "items, or pass no image_dir to load the ratings without images.",
        )


# --------------------------------------------------------------------------- items


@dataclass
class _Item:
    """One (image, candidate) item and its ratings, before images are resolved."""

    item_id: str
    image_id: str
    candidate: str
    references: list[str]
    split: str
    image_names: tuple[str, ...]  # acceptable file names inside image_dir, first wins
    scores: list[float] = field(default_factory=list)
    image_path: str | None = None


def _image_label(names: tuple[str, ...]) -> str:
    """How a missing image is named in error messages (see MissingJudgementImagesError)."""
    if len(names) == 1:
        return names[0]
    stem = names[0][: -len(IMAGE_EXTENSIONS[0])]
    return stem + "{" + ",".join(IMAGE_EXTENSIONS) + "}"


def _by_extension(stem: str) -> tuple[str, ...]:
    return tuple(stem + ext for ext in IMAGE_EXTENSIONS)


def _check_missing_mode(missing: str) -> None:
    if missing not in MISSING_MODES:
        raise ValueError(f"missing={missing!r}; expected one of {list(MISSING_MODES)}")


def _image_name(name: str, image_dir: Path | None, what: str) -> str:
    """`name` as a normalised file name inside `image_dir`. An absolute name or one whose
    `..` climbs out is an error starting with `what` (file, row, key), checked even
    without an image_dir: such a name would read files outside the dataset's folder."""
    root = Path(image_dir) if image_dir is not None else Path("image_dir")
    return resolve_inside(root, name, what=what).relative_to(root).as_posix()


def _resolve_images(
    items: list[_Item], source: Path, image_dir: Path | None, missing: str, dataset: str
) -> list[_Item]:
    """Set each item's image_path (None without image_dir); report or drop missing files.

    The directory is listed once, so checking tens of thousands of items costs one scan
    rather than a stat per candidate extension.
    """
    if image_dir is None:
        return items
    image_dir = Path(image_dir)
    if not image_dir.is_dir():
        raise ValueError(f"image_dir {image_dir} (for {source}) is not a directory")
    present = {entry.name for entry in os.scandir(image_dir) if entry.is_file()}

    def find(names: tuple[str, ...]) -> str | None:
        for name in names:
            nested = "/" in name or os.sep in name
            if (nested and (image_dir / name).is_file()) or (not nested and name in present):
                return str(image_dir / name)
        return None

    found: dict[tuple[str, ...], str | None] = {}
    absent: list[str] = []
    for item in items:
        if item.image_names not in found:
            found[item.image_names] = find(item.image_names)
            if found[item.image_names] is None:
                absent.append(_image_label(item.image_names))
        item.image_path = found[item.image_names]
    if not absent:
        return items
    if missing == "error":
        raise MissingJudgementImagesError(source, image_dir, absent, dataset)
    kept = [item for item in items if item.image_path is not None]
    logger.warning(
        "%s: skipping %d of %d items (%d missing image file(s)) not found in %s",
        dataset,
        len(items) - len(kept),
        len(items),
        len(absent),
        image_dir,
    )
    return kept


def _frame(items: Iterable[_Item], dataset: str) -> pd.DataFrame:
    """The rating table: one row per (item, rating), items in order, raters 0..k-1,
    each with its image's sha256."""
    items = list(items)
    digests = files_sha256(item.image_path for item in items)
    rows = [
        {
            "item_id": item.item_id,
            "dataset": dataset,
            "image_id": item.image_id,
            "image_path": item.image_path,
            "image_sha256": digest,
            "candidate": item.candidate,
            "references": list(item.references),
            "human_score": float(score),
            "rater": rater,
            "split": item.split,
        }
        for item, digest in zip(items, digests, strict=True)
        for rater, score in enumerate(item.scores)
    ]
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    # Keep None (not NaN) for "no image", and fixed dtypes even for an empty table.
    frame["image_path"] = frame["image_path"].astype(object)
    frame["image_sha256"] = frame["image_sha256"].astype(object)
    frame["references"] = frame["references"].astype(object)
    frame["human_score"] = frame["human_score"].astype("float64")
    frame["rater"] = frame["rater"].astype("int64")
    return frame


def items(table: pd.DataFrame) -> pd.DataFrame:
    """One row per item (columns `ITEM_COLUMNS`): what a judge scores once per item.

    `human_score_mean` is the mean of the item's ratings and `n_ratings` their number;
    items keep the order of their first rating. Agreement analyses that follow the
    literature use the rating table itself; this view is for scheduling judge calls and
    for per-item analyses.
    """
    absent = [c for c in COLUMNS if c not in table.columns]
    if absent:
        raise ValueError(f"not a judgement table: columns {absent} are missing")
    grouped = table.groupby("item_id", sort=False)["human_score"]
    stats = pd.DataFrame({"human_score_mean": grouped.mean(), "n_ratings": grouped.size()})
    first = table.drop_duplicates("item_id", keep="first").set_index("item_id")
    out = first.join(stats).reset_index()
    out["n_ratings"] = out["n_ratings"].astype("int64")
    return out[list(ITEM_COLUMNS)].reset_index(drop=True)


# --------------------------------------------------------------------- JSON sources


def _score(value: Any, where: str, path: Path) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{path}: {where} has a non-numeric or non-finite score {value!r}")
    return float(value)


def _strings(value: Any, key: str, where: str, path: Path) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{path}: {where} key {key!r} must be a list of strings")
    return list(value)


def load_flickr8k_expert(
    path: Path, image_dir: Path | None = None, missing: str = "error"
) -> pd.DataFrame:
    """Load Flickr8k-Expert (FLEUR repo `annotations/flickr8k.json`) as a rating table.

    The file maps image id -> ``{"human_judgement": [{"image_id", "image_path",
    "caption", "rating"}, ...], "ground_truth": [5 references], ...}``; each candidate
    caption appears once per expert rating (3 ratings each, 1-4 scale). Items are the
    unique (image, caption) pairs. Order, and so `item_id` = ``"flickr8k-%06d"``: images
    sorted by id, captions within an image in order of first appearance; raters in file
    order. All rows have split "test" (an evaluation-only benchmark).

    `image_dir` is the folder holding the Flickr8k images (``Flickr8k_Dataset``);
    image_path = ``str(image_dir / basename(listed image_path))``. Without it image_path
    is None for every row: the ratings can then be compared with scores computed elsewhere
    but not scored by an MLLM judge. An image id that is a key twice is an error (JSON
    would keep only the second entry's ratings); errors name a judgement by its image and
    its row in ``human_judgement``, counted from 1.
    """
    path = Path(path)
    _check_missing_mode(missing)
    data = read_json(path)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object (image id -> entry) at the top level")
    result: list[_Item] = []
    for image_id in sorted(data):
        entry = data[image_id]
        where = f"image {image_id!r}"
        judgements = require_key(entry, "human_judgement", list, where, path)
        references = _strings(require_key(entry, "ground_truth", list, where, path), "ground_truth",
                              where, path)
        by_caption: dict[str, _Item] = {}
        file_name: str | None = None
        for row, judgement in enumerate(judgements, start=1):
            at = f"{where} human_judgement row {row}"
            caption = require_key(judgement, "caption", str, at, path)
            rating = _score(require_key(judgement, "rating", (int, float), at, path), at, path)
            listed = require_key(judgement, "image_path", str, at, path)
            if "image_id" in judgement and str(judgement["image_id"]) != image_id:
                raise ValueError(f"{path}: {at} key 'image_id' is {judgement['image_id']!r}, "
                                 f"not the entry's id {image_id!r}")
            name = _image_name(Path(listed).name, image_dir, f"{path}: {at}: image_path")
            if file_name is None:
                file_name = name
            elif name != file_name:
                raise ValueError(f"{path}: {at} key 'image_path' names {name!r}, but earlier "
                                 f"judgements of the image name {file_name!r}")
            if caption not in by_caption:
                by_caption[caption] = _Item(
                    item_id=f"flickr8k-{len(result) + len(by_caption):06d}",
                    image_id=image_id,
                    candidate=caption,
                    references=references,
                    split="test",
                    image_names=(name,),
                )
            by_caption[caption].scores.append(rating)
        result.extend(by_caption.values())
    result = _resolve_images(result, path, image_dir, missing, "flickr8k-expert")
    return _frame(result, "flickr8k-expert")


def load_nebula(
    path: Path, image_dir: Path | None = None, split: str = "test", missing: str = "error"
) -> pd.DataFrame:
    """Load a Nebula split file (EXPERT repo `annotations/nebula_<split>.json`).

    The file is a JSON list of ``{"imgid", "mt" (candidate), "refs" (5-10 references),
    "score" (human score in [0, 1])}``, one rating per entry (row, counted from 1 in
    errors). Entries sharing imgid and candidate are ratings of one item (the published
    test split has none; a warning counts them, since two models can write the same
    caption of an image and a judge sees one item). `item_id` = ``"nebula-<imgid>"``, or
    ``"nebula-<imgid>-<j>"`` (j = order of first appearance) for an imgid rated with more
    than one candidate. `split` labels every row (the file itself does not say which
    split it is; the paper trains an ensemble on train, selects on val, reports test).

    Image files are named by imgid with one of `IMAGE_EXTENSIONS` in `image_dir`; without
    `image_dir` image_path is None (agreement with external scores only, no MLLM judging).
    """
    path = Path(path)
    _check_missing_mode(missing)
    if split not in SPLITS:
        raise ValueError(f"split={split!r}; expected one of {list(SPLITS)}")
    data = read_json(path)
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON list of judgements at the top level")
    keyed: dict[tuple[str, str], _Item] = {}
    first_row: dict[tuple[str, str], int] = {}
    for row, record in enumerate(data, start=1):
        where = f"row {row}"
        imgid = str(require_key(record, "imgid", (str, int), where, path))
        stem = _image_name(imgid, image_dir, f"{path}: {where}: imgid")
        candidate = require_key(record, "mt", str, where, path)
        references = _strings(require_key(record, "refs", list, where, path), "refs", where, path)
        score = _score(require_key(record, "score", (int, float), where, path), where, path)
        key = (imgid, candidate)
        if key not in keyed:
            keyed[key] = _Item("", imgid, candidate, references, split, _by_extension(stem))
            first_row[key] = row
        elif keyed[key].references != references:
            raise ValueError(f"{path}: {where}: refs differ from row {first_row[key]}, which "
                             f"rates the same candidate of imgid {imgid!r}")
        keyed[key].scores.append(score)
    repeated = len(data) - len(keyed)
    if repeated:
        logger.warning("%s: %d row(s) repeat an earlier row's imgid and candidate; each is "
                       "read as a further rating of that item", path, repeated)
    per_image: dict[str, list[_Item]] = {}
    for item in keyed.values():
        per_image.setdefault(item.image_id, []).append(item)
    for imgid, group in per_image.items():
        for j, item in enumerate(group):
            item.item_id = f"nebula-{imgid}" if len(group) == 1 else f"nebula-{imgid}-{j}"
    result = _resolve_images(list(keyed.values()), path, image_dir, missing, "nebula")
    return _frame(result, "nebula")


# -------------------------------------------------------------------- generic tables


def parse_references(value: Any) -> list[str]:
    """References of a table cell: a list (Parquet), a JSON list string, or "a|b|c".

    A string starting with "[" must be a JSON list of strings; any other string is split
    on "|" (parts stripped, empty parts dropped), so "" is an empty list (a
    reference-free benchmark). Anything else raises ValueError.
    """
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, list | tuple):
        if not all(isinstance(v, str) for v in value):
            raise ValueError(f"references must be strings, got {value!r}")
        return list(value)
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                parsed = json.loads(text)
            except json.JSONDecodeError as exc:
                raise ValueError(f"references look like JSON but are not: {exc}") from exc
            return parse_references(parsed)
        return [part.strip() for part in text.split("|") if part.strip()]
    raise ValueError(f"references must be a list or a string, got {type(value).__name__}")


def _cell_text(value: Any, column: str, where: str, path: Path, allow_empty: bool = False) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        raise ValueError(f"{path}: {where} column {column!r} is empty")
    if isinstance(value, bool) or not isinstance(value, str | int | np.integer):
        raise ValueError(f"{path}: {where} column {column!r} has unexpected value {value!r}")
    text = str(value)
    if not text.strip() and not allow_empty:
        raise ValueError(f"{path}: {where} column {column!r} is empty")
    return text


def load_table(
    path: Path,
    image_dir: Path | None = None,
    dataset: str | None = None,
    missing: str = "error",
) -> pd.DataFrame:
    """Load any judgement benchmark exported as CSV or Parquet (chosen by suffix).

    Required columns: image_id, candidate, references, human_score (a number, any scale),
    split (train | val | test). references is a list column in Parquet; in CSV a JSON list
    string (``["a", "b"]``) or a "|"-separated string (``a|b``); see `parse_references`.
    Optional: image_file (file name inside `image_dir`; default: image_id with one of
    `IMAGE_EXTENSIONS`) and item_id. Other columns are ignored (with a warning).

    One row per rating. Rows with the same item_id (or, without that column, the same
    (image_id, candidate)) are ratings of one item and must agree on image, candidate,
    references, split and image_file; two item_ids for one (image_id, candidate) are an
    error (the item would be judged and counted twice). Without item_id, ids are
    ``"<dataset>-%06d"`` in order of first appearance. `dataset` defaults to the file's
    stem. Errors count data rows from 1, a CSV's header not counted (not its lines: a
    quoted cell may span several). Without `image_dir` image_path is None (agreement with
    external scores only, no MLLM judging).

    This is how e.g. the full Nebula (train / val / test = 26,382 / 3,298 / 3,298) comes
    in: one file with a split column.
    """
    path = Path(path)
    _check_missing_mode(missing)
    dataset = dataset or path.stem
    frame = read_any_table(path)
    absent = [c for c in TABLE_REQUIRED if c not in frame.columns]
    if absent:
        raise ValueError(f"{path}: required column(s) {absent} missing; found "
                         f"{list(frame.columns)}; required: {list(TABLE_REQUIRED)}")
    ignored = [c for c in frame.columns if c not in TABLE_REQUIRED + TABLE_OPTIONAL]
    if ignored:
        logger.warning("%s: ignoring column(s) %s", path, ignored)
    has_file, has_id = "image_file" in frame.columns, "item_id" in frame.columns
    keyed: dict[Any, _Item] = {}
    first_row: dict[Any, int] = {}
    item_of_pair: dict[tuple[str, str], Any] = {}
    for row, record in enumerate(frame.to_dict("records"), start=1):
        where = f"row {row}"
        item = _table_item(record, path, where, image_dir, has_file)
        key = (_cell_text(record["item_id"], "item_id", where, path) if has_id
               else (item.image_id, item.candidate))
        pair = (item.image_id, item.candidate)
        if key in keyed:
            _check_same(keyed[key], item, where, path)
            keyed[key].scores.extend(item.scores)
        elif pair in item_of_pair:
            raise ValueError(f"{path}: {where} column 'item_id': {key!r} rates the same image "
                             f"and candidate as item {item_of_pair[pair]!r} (row "
                             f"{first_row[item_of_pair[pair]]}); one item would count twice")
        else:
            item.item_id = str(key) if has_id else f"{dataset}-{len(keyed):06d}"
            keyed[key], first_row[key], item_of_pair[pair] = item, row, key
    result = _resolve_images(list(keyed.values()), path, image_dir, missing, dataset)
    return _frame(result, dataset)


def _table_item(record: dict[str, Any], path: Path, where: str, image_dir: Path | None,
                has_file: bool) -> _Item:
    """One table row as an item holding its one rating (item_id still unset)."""
    image_id = _cell_text(record["image_id"], "image_id", where, path)
    candidate = _cell_text(record["candidate"], "candidate", where, path)
    try:
        references = parse_references(record["references"])
    except ValueError as exc:
        raise ValueError(f"{path}: {where} column 'references': {exc}") from exc
    score = _table_score(record["human_score"], where, path)
    split = _cell_text(record["split"], "split", where, path).strip()
    if split not in SPLITS:
        raise ValueError(f"{path}: {where} column 'split' is {split!r}; "
                         f"expected one of {list(SPLITS)}")
    file_name = _cell_text(record["image_file"], "image_file", where, path, allow_empty=True
                           ).strip() if has_file else ""
    names: tuple[str, ...]
    if file_name:
        names = (_image_name(file_name, image_dir, f"{path}: {where} column 'image_file'"),)
    else:
        names = _by_extension(_image_name(image_id, image_dir,
                                          f"{path}: {where} column 'image_id'"))
    return _Item("", image_id, candidate, references, split, names, scores=[score])


def _table_score(value: Any, where: str, path: Path) -> float:
    try:
        score = float(value)
    except (TypeError, ValueError):
        score = math.nan
    if isinstance(value, bool) or not math.isfinite(score):
        raise ValueError(f"{path}: {where} column 'human_score' is not a finite number: "
                         f"{value!r}")
    return score


def _check_same(item: _Item, rating: _Item, where: str, path: Path) -> None:
    """All ratings of one item must describe the same item."""
    for column, attribute in (("image_id", "image_id"), ("candidate", "candidate"),
                              ("references", "references"), ("split", "split"),
                              ("image_file", "image_names")):
        if getattr(rating, attribute) != getattr(item, attribute):
            raise ValueError(f"{path}: {where} column {column!r} differs from earlier ratings "
                             f"of item {item.item_id!r}")


# ---------------------------------------------------------------- synthetic ratings

SYNTHETIC = "synthetic"
_ITEM_STREAM = 0x4A554447  # salts the per-item generators apart from synthetic.py's images
_SPLIT_STREAM = 0x53504C54  # the split permutation's own generator
QUALITY_RANGE = (0.3, 1.0)
# Neutral phrasings of the candidate: no panel opener ("In this picture,", "This image
# shows") and no signature word, so no simulated judge has a style preference for them.
_CANDIDATE_TEMPLATES: tuple[str, ...] = (
    "{objects} on a {bg} background.",
    "{objects} against a {bg} backdrop.",
    "There is {objects} on a {bg} background.",
    "On a {bg} background: {objects}.",
)


def synthetic_image_id(index: int) -> str:
    """Image id of the ``index``-th synthetic judgement item (distinct from ``syn-``)."""
    return f"synjudge-{index:06d}"


def synthetic_item_id(index: int) -> str:
    return f"synthetic-{index:06d}"


def neutral_writer(quality: float) -> SimModel:
    """A stand-in writer whose only trait used is the caption quality.

    `philautia.sim.described_scene` applies exactly the omission / hallucination process of the
    simulated generators, so candidate errors look like the captions the panel writes;
    the sentence itself is phrased by `neutral_phrase`, never by
    `philautia.sim.write_caption`, because the latter always adds an opener and a
    signature. The leaderboard study's simulated captioners write the same way.
    """
    return SimModel(key="synthetic-human", family="none", caption_quality=quality,
                    opener="-", signature="-")


def neutral_phrase(described: scenes.Scene, rng: np.random.Generator) -> str:
    """A caption of the described scene in a neutral style: no panel opener, no
    signature word, so no simulated judge has a style preference for it."""
    objects = scenes.join_phrases([scenes.describe_object(o, rng) for o in described.objects])
    bg = scenes.COLOR_WORDS[described.background][
        int(rng.integers(len(scenes.COLOR_WORDS[described.background])))
    ]
    template = _CANDIDATE_TEMPLATES[int(rng.integers(len(_CANDIDATE_TEMPLATES)))]
    text = template.format(objects=objects, bg=bg)
    return text[:1].upper() + text[1:]


def _split_labels(n_items: int, seed: int, splits: Sequence[float]) -> list[str]:
    """Deterministic split per item: a seeded permutation cut at the rounded proportions."""
    n_train = round(float(splits[0]) * n_items)
    n_val = min(round(float(splits[1]) * n_items), n_items - n_train)
    order = np.random.default_rng([seed, _SPLIT_STREAM]).permutation(n_items)
    labels = ["test"] * n_items
    for rank, index in enumerate(order.tolist()):
        if rank < n_train:
            labels[index] = "train"
        elif rank < n_train + n_val:
            labels[index] = "val"
    return labels


def build_synthetic_judgements(
    out_dir: Path,
    n_items: int,
    seed: int,
    *,
    n_raters: int = 3,
    rater_noise: float = 0.1,
    splits: Sequence[float] = (0.7, 0.15, 0.15),
    image_size: int = 128,
    n_references: int = 5,
) -> pd.DataFrame:
    """Write ``out_dir/images/{image_id}.png`` and return a synthetic rating table.

    The offline stand-in for Flickr8k-Expert / Nebula, with a known truth: item ``i``
    draws, from its own generator seeded by ``(seed, i)``, a random scene (rendered PNG,
    written atomically and only when changed), `n_references` correct references, and ONE
    candidate caption whose content is degraded like a simulated generator's at a quality
    drawn uniformly from `QUALITY_RANGE`, phrased in a neutral style that carries no
    panel opener or signature. Its true accuracy is
    ``match_claims(read_caption(candidate), scene_claims(scene)).accuracy``; each of
    `n_raters` raters reports ``clip(accuracy + N(0, rater_noise), 0, 1)``, so the human
    scale is [0, 1] like Nebula's. The truth is not stored (the table has exactly
    `COLUMNS`): it is recoverable from the PNG with `scenes.perceive`.

    Splits: a permutation seeded by `seed` alone puts round(p_train * n) items in train,
    round(p_val * n) in val and the rest in test. Identical ``(n_items, seed, ...)`` give
    identical bytes and table. Stale ``synjudge-*.png`` files in the folder are removed.
    """
    if n_items < 0:
        raise ValueError(f"n_items must be >= 0, got {n_items}")
    if n_raters < 1:
        raise ValueError(f"n_raters must be >= 1, got {n_raters}")
    if not rater_noise >= 0:
        raise ValueError(f"rater_noise must be >= 0, got {rater_noise}")
    if image_size < 64:
        raise ValueError(f"image_size must be >= 64 (exact perception), got {image_size}")
    if (len(splits) != 3 or any(not p >= 0 for p in splits)
            or not math.isclose(sum(splits), 1.0, abs_tol=1e-9)):
        raise ValueError(f"splits must be 3 non-negative proportions summing to 1, "
                         f"got {tuple(splits)}")
    image_dir = Path(out_dir) / "images"
    image_dir.mkdir(parents=True, exist_ok=True)
    labels = _split_labels(n_items, seed, splits)
    result = []
    for index in range(n_items):
        rng = np.random.default_rng([seed, index, _ITEM_STREAM])
        scene = scenes.random_scene(rng)
        references = scenes.reference_captions(scene, rng, n=n_references)
        quality = float(rng.uniform(*QUALITY_RANGE))
        candidate = neutral_phrase(described_scene(neutral_writer(quality), scene, rng), rng)
        truth = scenes.scene_claims(scene)
        accuracy = scenes.match_claims(scenes.read_caption(candidate), truth).accuracy
        noisy = accuracy + rater_noise * rng.standard_normal(n_raters)
        image_id = synthetic_image_id(index)
        path = image_dir / f"{image_id}.png"
        write_if_changed(path, scenes.to_png_bytes(scenes.render(scene, image_size)))
        item = _Item(synthetic_item_id(index), image_id, candidate, references, labels[index],
                     (path.name,), scores=np.clip(noisy, 0.0, 1.0).tolist(),
                     image_path=str(path))
        result.append(item)
    keep = {Path(str(item.image_path)).name for item in result}
    for stale in image_dir.glob("synjudge-*.png"):
        if stale.name not in keep:
            stale.unlink()
    return _frame(result, SYNTHETIC)
