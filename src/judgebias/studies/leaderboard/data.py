"""The leaderboard study's inputs: the task's images, every system's outputs on them in
one table, and the human labels, simulated or imported.

Synthetic images are philautia's generated scenes (judgebias.studies.philautia.data):
their content is known, so each caption's true accuracy is too (``accuracy``: the share
of the scene's claims it gets right, judgebias.data.scenes.match_claims), the quantity
the simulated raters rate and the simulated judges read. A simulated captioner describes
each scene with its planted quality, exactly as a simulated panel model omits and
garbles (philautia.sim.described_scene), phrased neutrally as Pomms' synthetic candidates
are, or starting with a family's opener (``style_of``), so that a judge preferring that
family's captions favours it as it would a member's.

Imported outputs and labels are checked before any judge is called: a missing column, an
image the task does not have, an image given twice, an image without output, a label
outside the scale, a system not listed: each an error naming the file and the row. Rows
are counted as every importer counts them (judgebias.data.rows): the data rows from 1, a
CSV's header not counted, so a Parquet file's first row is row 1 too.
:func:`outputs_files` and :func:`labels_files` list the user's files the outputs and
labels steps read, for their rules to declare as inputs (editing one must rerun what
reads it).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from judgebias.data import scenes
from judgebias.data.paths import input_files
from judgebias.data.rows import FIRST_ROW, no_repeats, read_any_table, require_columns
from judgebias.judging.answers import STATUS_OK
from judgebias.studies.philautia.sim import described_scene
from judgebias.studies.pomms.data import neutral_phrase, neutral_writer

NO_CAPTION = "no_caption"  # a model system's captioning call failed: nothing to judge


def outputs_files(task: Mapping[str, Any]) -> list[str]:
    """The files the outputs step of `task` (a ``leaderboard.tasks`` entry) reads: each
    imported system's `outputs` file, for its rule to declare as inputs (as philautia's
    `dataset_files`), so that correcting a caption reruns the step and what follows."""
    return input_files(spec.get("outputs") for spec in task["systems"].values())


def labels_files(task: Mapping[str, Any]) -> list[str]:
    """The file the labels step of `task` reads: its `human_labels.path`, if any."""
    return input_files([(task.get("human_labels") or {}).get("path")])


def true_accuracy(caption: str, scene_json: str | None) -> float:
    """The caption's share of the scene's claims that are right; NaN where the scene is
    unknown (an imported image)."""
    if scene_json is None:
        return float("nan")
    truth = scenes.scene_claims(scenes.scene_from_json(scene_json))
    return float(scenes.match_claims(scenes.read_caption(caption), truth).accuracy)


def synthetic_captions(images: pd.DataFrame, system: str, quality: float,
                       opener: str | None, seed: int) -> pd.DataFrame:
    """One caption per image by a simulated captioner of `quality`, neutral or starting
    with `opener`. Image i draws from its own generator seeded by (seed, system, i), so
    a system's captions do not change when another system is added."""
    writer = neutral_writer(quality)
    stream = [int(b) for b in system.encode()]
    captions = []
    for index, scene_json in enumerate(images["scene"]):
        if scene_json is None:
            raise ValueError(f"system {system!r}: a synthetic captioner needs synthetic "
                             f"images (image {images['image_id'].iloc[index]!r} has no "
                             "known scene)")
        rng = np.random.default_rng([seed, *stream, index])
        text = neutral_phrase(described_scene(writer, scenes.scene_from_json(scene_json),
                                              rng), rng)
        if opener:
            text = f"{opener} {text[:1].lower()}{text[1:]}"
        captions.append(text)
    return _outputs(images, system, captions, [STATUS_OK] * len(captions), "synthetic")


def model_captions(images: pd.DataFrame, system: str, generated: pd.DataFrame
                   ) -> pd.DataFrame:
    """A model system's captions (philautia's captions table of its panel model); a
    failed call stays a failure (status "no_caption"), never an empty caption."""
    by_image = generated.set_index("image_id")
    rows = by_image.reindex(images["image_id"])
    ok = (rows["status"] == STATUS_OK).tolist()
    captions = [str(label) if good else None
                for label, good in zip(rows["label"], ok, strict=True)]
    return _outputs(images, system, captions,
                    [STATUS_OK if good else NO_CAPTION for good in ok], "model")


def imported_captions(images: pd.DataFrame, system: str, path: Path) -> pd.DataFrame:
    """A system's outputs from a CSV or Parquet file of image_id, caption: every image of
    the task exactly once, no other image, no empty caption."""
    table = read_any_table(path)
    require_columns(table.columns, ("image_id", "caption"), path)
    ids = table["image_id"].astype(str)
    known = set(images["image_id"])
    for row, (image_id, caption) in enumerate(zip(ids, table["caption"], strict=True),
                                              start=FIRST_ROW):
        if image_id not in known:
            raise ValueError(f"{path}: row {row}: image_id {image_id!r} is not an image "
                             "of the task")
        if not isinstance(caption, str) or not caption.strip():
            raise ValueError(f"{path}: row {row}: empty caption for image {image_id!r}")
    no_repeats(ids, path, "image_id")
    absent = sorted(known - set(ids))
    if absent:
        raise ValueError(f"{path}: no caption for {len(absent)} image(s) of the task, e.g. "
                         f"{absent[:3]}: every system needs an output on every item")
    captions = dict(zip(ids, table["caption"].astype(str), strict=True))
    texts = [captions[i] for i in images["image_id"]]
    return _outputs(images, system, texts, [STATUS_OK] * len(texts), "table")


def _outputs(images: pd.DataFrame, system: str, captions: Sequence[str | None],
             status: Sequence[str], source: str) -> pd.DataFrame:
    accuracy = [true_accuracy(c, s) if c is not None else float("nan")
                for c, s in zip(captions, images["scene"], strict=True)]
    return pd.DataFrame({"image_id": images["image_id"].to_numpy(), "system": system,
                         "caption": list(captions), "status": list(status),
                         "source": source, "accuracy": accuracy})


def synthetic_labels(outputs: pd.DataFrame, n_items: int, n_raters: int,
                     rater_noise: float, seed: int) -> pd.DataFrame:
    """Simulated human labels on `n_items` images drawn uniformly without replacement
    (seeded): each of `n_raters` raters rates every system's caption of a drawn image at
    ``clip(accuracy + N(0, rater_noise), 0, 1)``; the label is their mean (Pomms'
    synthetic raters, judgebias.studies.pomms.data). A system without a caption there
    (a failed call) has no label."""
    images = sorted(outputs["image_id"].unique())
    if n_items > len(images):
        raise ValueError(f"n_items {n_items} exceeds the task's {len(images)} images")
    if outputs["accuracy"].isna().all():
        raise ValueError("simulated labels need synthetic images (known accuracy)")
    rng = np.random.default_rng(seed)
    drawn = set(rng.choice(images, size=n_items, replace=False).tolist())
    rows = outputs[outputs["image_id"].isin(drawn) & outputs["accuracy"].notna()]
    rows = rows.sort_values(["image_id", "system"], kind="stable")
    noise = rng.standard_normal((len(rows), n_raters)) * rater_noise
    ratings = np.clip(rows["accuracy"].to_numpy()[:, None] + noise, 0.0, 1.0)
    return pd.DataFrame({"image_id": rows["image_id"].to_numpy(),
                         "system": rows["system"].to_numpy(), "label": ratings.mean(axis=1)})


def imported_labels(path: Path, outputs: pd.DataFrame, scale: tuple[float, float]
                    ) -> pd.DataFrame:
    """Human labels from a CSV or Parquet file of image_id, system, label: each on an
    image and system of the task, within `scale`, once; and of at least two systems
    (labels of one system alone cannot correct a comparison)."""
    table = read_any_table(path)
    require_columns(table.columns, ("image_id", "system", "label"), path)
    images, systems = set(outputs["image_id"]), set(outputs["system"])
    low, high = scale
    seen: dict[tuple[str, str], int] = {}
    values = []
    for row, (image_id, system, label) in enumerate(
            zip(table["image_id"].astype(str), table["system"].astype(str), table["label"],
                strict=True), start=FIRST_ROW):
        if image_id not in images:
            raise ValueError(f"{path}: row {row}: image_id {image_id!r} is not an image of "
                             "the task")
        if system not in systems:
            raise ValueError(f"{path}: row {row}: system {system!r} is not a system of the "
                             f"task ({', '.join(sorted(systems))})")
        try:
            value = float(label)
        except (TypeError, ValueError):
            value = math.nan
        if math.isnan(value):  # an empty Parquet cell, or "nan": no label
            raise ValueError(f"{path}: row {row}: label {label!r} is not a number")
        if not low <= value <= high:
            raise ValueError(f"{path}: row {row}: label {value} is outside the scale "
                             f"[{low}, {high}] (human_labels.scale)")
        if (image_id, system) in seen:
            raise ValueError(f"{path}: row {row}: image {image_id!r}, system {system!r} is "
                             f"labelled again (first at row {seen[(image_id, system)]})")
        seen[(image_id, system)] = row
        values.append((image_id, system, value))
    labelled = {system for _, system, _ in values}
    if len(labelled) < 2:
        raise ValueError(f"{path}: labels cover {len(labelled)} system(s); they must cover at "
                         "least two to correct a comparison")
    return pd.DataFrame(values, columns=["image_id", "system", "label"])
