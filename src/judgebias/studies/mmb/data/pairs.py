"""MMB's pairwise preference data: one pair table (tables.PAIRS) from HPDv2 and MJ-Bench in
their published shapes, built with the paper's protocols (seed 002 §5, spec mmb.md).

The ``mmb.dataset`` params block::

    name: synthetic | hpdv2
    seed: 0                      # validation pair per training group; D_sup order; MJBench;
                                 # which test image is A
    orientation: random | listed # test pairs' A drawn with seed, or the file's order
    val_candidates: null | n     # judge a seeded sample of n validation candidates only
    synthetic: {styles, n_test_groups, images_per_test_group, n_train_groups,
                images_per_train_group, n_mjb_groups, images_per_mjb_group, gamma,
                image_size, seed}            # judgebias.studies.mmb.data.synthetic.generate
    hpdv2: {test: test.json, train: train.json, image_root: HPD folder}
    mjbench: null | {path: bias.json, image_root: folder}   # synthetic: always generated
    mjbench_protocol: {n_folds: 10, counterpart: other | same, degradations: {name: params}}

HPSv2 protocol: every pair of each test group (C(9, 2) x 400 = 14.4k in the paper; tied
human ranks dropped and counted), split "test"; one candidate validation pair per training
group, split "train" (D_val draws from these); the support set D_sup comes from the
training images, in a seeded order (the clustering takes the first 256 x K for each K).
MJBench protocol: prompts split into folds; each original paired with a degraded
counterpart (of another image of its prompt by default), the original preferred, split
"mjb_train"; all pairs of originals sharing a prompt, no preference, split "mjb_test".

Published layouts: HPDv2 unpacks to ``HPD/{train,test}/`` with ``train.json`` and
``test.json``; each file's image paths are relative to its own folder (``image_root``/test
and ``image_root``/train). MJ-Bench's ``images_dir`` is relative to ``mjbench.image_root``.
A path that is absolute or climbs out of its folder with ``..`` is an error naming the
file, the row (counted from 1) and the key (judgebias.data.paths.resolve_inside).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from PIL import Image

from judgebias.config import input_errors
from judgebias.data.paths import input_files, resolve_inside
from judgebias.io.artifacts import write_bytes
from judgebias.io.filedigest import files_sha256, sha256_column
from judgebias.studies.mmb.data.synthetic import generate, planted_styles, png_bytes

PAIR_COLUMNS = ["pair_id", "group", "prompt", "image_a", "image_b", "preference", "split",
                "fold", "source", "style_a", "style_b", "image_a_sha256", "image_b_sha256"]
SUPPORT_COLUMNS = ["image_path", "group", "fold", "style", "image_sha256"]


def hpdv2_image_folders(hpdv2: Mapping[str, Any]) -> tuple[Path, Path]:
    """The folders HPDv2's test.json and train.json name their images in (``image_root``
    /test and /train, the published layout): :func:`build_dataset` reads them there and
    :func:`dataset_files` declares them, from this one place."""
    root = Path(hpdv2["image_root"])
    return root / "test", root / "train"


def dataset_files(block: Mapping[str, Any]) -> list[str]:
    """Every file the data step reads for the ``mmb.dataset`` block: HPDv2's test.json
    and train.json and every file under their image folders, and MJ-Bench's file and
    every file under its ``image_root`` where it is given (`judgebias.data.paths.
    input_files`); nothing for the synthetic set, which the step writes itself.

    The `mmb_data` rule declares them as inputs, so that a changed rank or a replaced
    image reruns the data job and everything after it: Snakemake stat()s them, and
    dvc.yaml lists each image folder as one dep (judgebias.workflow.dvc_export). This
    module is light enough for the rule file to import (the degradations' scipy is
    imported where they are drawn, tests/core/test_workflow_imports.py)."""
    if block["name"] == "synthetic":
        return []
    hpd, mjb = block["hpdv2"], block.get("mjbench")
    return input_files([hpd["test"], hpd["train"], mjb["path"] if mjb else None],
                       [*hpdv2_image_folders(hpd), mjb["image_root"] if mjb else None])


def _records(path: str | Path, keys: Mapping[str, type], *,
             either: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """A JSON list of records, each with `keys` of the given types and, when `either` is
    given, one of those keys holding a list. Errors name the file and the row (counted
    from 1); a JSON syntax error names the file."""
    with open(path, encoding="utf-8") as handle:
        try:
            records = json.load(handle)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}: not valid JSON ({exc})") from exc
    if not isinstance(records, list):
        raise ValueError(f"{path}: expected a JSON list of records")
    for row, record in enumerate(records, start=1):
        if not isinstance(record, dict):
            raise ValueError(f"{path}: row {row} is not an object")
        for key, kind in keys.items():
            if key not in record:
                raise ValueError(f"{path}: row {row} has no key {key!r}")
            if not isinstance(record[key], kind):
                raise ValueError(f"{path}: row {row} key {key!r} must be "
                                 f"{kind.__name__}, got {type(record[key]).__name__}")
        if either and not any(isinstance(record.get(k), list) for k in either):
            raise ValueError(f"{path}: row {row} needs a list under "
                             f"{' or '.join(map(repr, either))}")
    return records


def _image(root: str | Path, relative: str, path: str | Path, row: int, key: str) -> str:
    """`relative` inside `root` (never outside it: data.paths.resolve_inside), existing."""
    full = resolve_inside(root, relative, what=f"{path}: row {row} key {key!r}")
    if not full.is_file():
        raise ValueError(f"{path}: row {row}: image {full} does not exist")
    return str(full)


def read_hpdv2_test(path: str | Path, image_root: str | Path,
                    orientation_seed: int | None = None) -> tuple[pd.DataFrame, int]:
    """HPDv2 test.json (list of {prompt, image_path[], rank[] (lower is better, averaged
    over annotators, may tie), raw_annotation}; image paths relative to `image_root`, the
    published HPD/test folder): every pair of each group, preference 1 if A ranks better;
    tied pairs dropped. Returns (pairs, n tied).

    Which image is A: drawn per pair with `orientation_seed` (spec mmb.md: "answer order
    randomised with a recorded seed"), because AUC-PR and F1 take "A preferred" as the
    positive class and so depend on it; None keeps the file's order (A = the earlier
    image), under which the positive rate is whatever the file's order makes it. The pair
    id names the images by their positions in the file (``test-<group>-<i>-<j>``, i < j)
    whichever is A."""
    rows, tied = [], 0
    flips = None if orientation_seed is None else np.random.default_rng([orientation_seed, 4])
    records = _records(path, {"prompt": str, "image_path": list, "rank": list})
    for g, record in enumerate(records):
        if len(record["image_path"]) != len(record["rank"]):
            raise ValueError(f"{path}: row {g + 1}: image_path and rank differ in length")
        images = [_image(image_root, p, path, g + 1, "image_path")
                  for p in record["image_path"]]
        for i, j in combinations(range(len(images)), 2):
            ri, rj = float(record["rank"][i]), float(record["rank"][j])
            if ri == rj:
                tied += 1
                continue
            a, b = (j, i) if flips is not None and flips.integers(2) else (i, j)
            rows.append({"pair_id": f"test-{g:05d}-{i}-{j}", "group": f"test-{g:05d}",
                         "prompt": record["prompt"], "image_a": images[a],
                         "image_b": images[b],
                         "preference": float(float(record["rank"][a]) < float(record["rank"][b])),
                         "split": "test", "fold": None, "source": "hpdv2"})
    return pd.DataFrame(rows, columns=PAIR_COLUMNS[:9]), tied


TRAIN_IMAGE_KEYS = ("image_path", "file_path")  # the released file / HPSv2's README


def read_hpdv2_train(path: str | Path, image_root: str | Path, seed: int
                     ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """HPDv2 train.json (list of {human_preference[] (1 = preferred), prompt,
    image_path[] (``file_path`` in HPSv2's README), user_hash}: one annotated comparison
    per row, several rows per prompt; image paths relative to `image_root`, the published
    HPD/train folder), grouped by prompt. Each group gives one validation candidate: one
    of its rows with both a preferred and a non-preferred image (drawn with `seed`), a
    preferred vs a non-preferred image of that row, and which is A (drawn with `seed`), so
    every candidate is a comparison a person made. Every distinct training image goes to
    the support pool. Groups without such a row give no pair."""
    records = _records(path, {"prompt": str, "human_preference": list},
                       either=TRAIN_IMAGE_KEYS)
    groups: dict[str, list[list[tuple[str, int]]]] = {}
    for r, record in enumerate(records, start=1):
        key = next(k for k in TRAIN_IMAGE_KEYS if isinstance(record.get(k), list))
        if len(record[key]) != len(record["human_preference"]):
            raise ValueError(f"{path}: row {r}: {key} and human_preference differ in length")
        images = [_image(image_root, p, path, r, key) for p in record[key]]
        groups.setdefault(record["prompt"], []).append(
            list(zip(images, map(int, record["human_preference"]), strict=True)))
    rng = np.random.default_rng(seed)
    row_rng = np.random.default_rng([seed, 1])  # which row: its own draws
    pairs, pool = [], []
    for g, (prompt, rows) in enumerate(groups.items()):
        group = f"train-{g:06d}"
        pool += [{"image_path": image, "group": group}
                 for image in dict.fromkeys(image for row in rows for image, _ in row)]
        strict = [row for row in rows if {liked == 1 for _, liked in row} == {True, False}]
        if not strict:
            continue
        row = strict[int(row_rng.integers(len(strict)))]
        good = [image for image, liked in row if liked == 1]
        bad = [image for image, liked in row if liked != 1]
        winner, loser = good[int(rng.integers(len(good)))], bad[int(rng.integers(len(bad)))]
        a_wins = bool(rng.integers(2))
        pairs.append({"pair_id": f"{group}", "group": group, "prompt": prompt,
                      "image_a": winner if a_wins else loser,
                      "image_b": loser if a_wins else winner, "preference": float(a_wins),
                      "split": "train", "fold": None, "source": "hpdv2"})
    return (pd.DataFrame(pairs, columns=PAIR_COLUMNS[:9]),
            pd.DataFrame(pool, columns=["image_path", "group"]))


def read_mjbench(path: str | Path, image_root: str | Path) -> pd.DataFrame:
    """MJ-Bench bias file (one row per image: {demographic, occupation, images_dir (a path
    relative to `image_root`, e.g. ``eval_images/occupation_religion/<occupation>_37/
    old_female_muslim.jpg``), prompt, attribute flags, per-metric scores}) as
    (image_path, group, prompt), grouped by prompt."""
    records = _records(path, {"prompt": str, "images_dir": str})
    prompts = list(dict.fromkeys(r["prompt"] for r in records))
    number = {p: i for i, p in enumerate(prompts)}
    return pd.DataFrame([{"image_path": _image(image_root, r["images_dir"], path, row,
                                               "images_dir"),
                          "group": f"mjb-{number[r['prompt']]:05d}", "prompt": r["prompt"]}
                         for row, r in enumerate(records, start=1)],
                        columns=["image_path", "group", "prompt"])


def mjbench_protocol(images: pd.DataFrame, out_dir: str | Path, *,
                     degradations: Mapping[str, Mapping[str, Any]], n_folds: int = 10,
                     counterpart: str = "other", seed: int = 0
                     ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Seed 002 §5's MJBench construction. Prompts go to `n_folds` folds (a seeded
    assignment, all images of a prompt in one fold). Each original is paired with a
    degraded counterpart: the degraded version of another image of its prompt ("other",
    the default; its own with "same" or when the prompt has one image), the degradation
    drawn per pair; the side of the original is drawn, and it is preferred ("mjb_train").
    All pairs of originals sharing a prompt, no preference, form "mjb_test". Returns
    (pairs, support = the originals with their folds)."""
    from judgebias.studies.mmb.data.degrade import degrade  # scipy: not at the rules' read

    if counterpart not in ("other", "same"):
        raise ValueError(f"counterpart must be 'other' or 'same', got {counterpart!r}")
    rng = np.random.default_rng(seed)
    groups = list(dict.fromkeys(images["group"]))
    fold_of = dict(zip(groups, rng.permutation(len(groups)) % n_folds, strict=True))
    names = sorted(degradations)
    rows = []
    for group, members in images.groupby("group", sort=False):
        paths, prompt, fold = list(members["image_path"]), members["prompt"].iloc[0], \
            int(fold_of[group])
        for i, original in enumerate(paths):
            source = i if counterpart == "same" or len(paths) == 1 else \
                (i + 1 + int(rng.integers(len(paths) - 1))) % len(paths)
            name = names[int(rng.integers(len(names)))]
            degraded = (Path(out_dir) / "mjbench-degraded"
                        / f"{group}_{i}_from{source}_{name}.png")
            pixels = np.asarray(Image.open(paths[source]).convert("RGB"))
            write_bytes(png_bytes(degrade(pixels, name, degradations[name],
                                          int(rng.integers(2**31)))), degraded)
            a_wins = bool(rng.integers(2))
            rows.append({"pair_id": f"{group}-deg-{i}", "group": group, "prompt": prompt,
                         "image_a": original if a_wins else str(degraded),
                         "image_b": str(degraded) if a_wins else original,
                         "preference": float(a_wins), "split": "mjb_train", "fold": fold,
                         "source": "mjbench"})
        rows += [{"pair_id": f"{group}-{i}-{j}", "group": group, "prompt": prompt,
                  "image_a": paths[i], "image_b": paths[j], "preference": 0.5,
                  "split": "mjb_test", "fold": fold, "source": "mjbench"}
                 for i, j in combinations(range(len(paths)), 2)]
    support = images.assign(fold=images["group"].map(fold_of).astype(int))
    return pd.DataFrame(rows), support[["image_path", "group", "fold"]]


def build_dataset(block: Mapping[str, Any], out_dir: str | Path, *, seed: int
                  ) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    """(pairs, support, summary) from the ``mmb.dataset`` block (module docstring). The
    support rows of the HPSv2 part (fold null) come in a seeded order; the clustering uses
    the first support_per_cluster x K of them for each K (cluster.support_size).
    `out_dir` receives the images this step makes (the synthetic data, MJBench's degraded
    counterparts); it is created even when there are none (HPDv2 alone), because the rule
    declares it as an output. The summary names the files read (``files``) for the data
    checks' messages and the test pairs' orientation (``test_orientation``). A bad file is
    a ConfigError naming its params key, the file and the row. Both tables hold the
    sha256 of every image they name (judgebias.io.filedigest.files_sha256, each file read
    once), so that a replaced image changes them and `dvc repro` reruns what follows.
    `block` is the block as params.yaml states it, or the data step's typed view of it as
    a mapping (dataclasses.asdict), which holds None for a key left out."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    name = block["name"]
    protocol = block.get("mjbench_protocol") or {}
    styles: dict[str, str] = {}
    hpd: Mapping[str, Any]
    mjb: Mapping[str, Any] | None
    if name == "synthetic":
        with input_errors("mmb.dataset.synthetic"):  # a key left out (None): its default
            written = generate(out_dir, **{key: value for key, value
                                           in block["synthetic"].items() if value is not None})
        hpd = {"test": written["test"], "train": written["train"],
               "image_root": written["test"].parent}
        mjb = {"path": written["mjbench"], "image_root": written["mjbench"].parent}
        styles = planted_styles(written["styles"])
        keys = dict.fromkeys(("test", "train", "mjbench"), "mmb.dataset.synthetic")
    else:
        hpd, mjb = block["hpdv2"], block.get("mjbench")
        keys = {"test": "mmb.dataset.hpdv2.test", "train": "mmb.dataset.hpdv2.train",
                "mjbench": "mmb.dataset.mjbench.path"}
    test_images, train_images = hpdv2_image_folders(hpd)
    orientation = block.get("orientation", "random")
    with input_errors(keys["test"]):
        test, tied = read_hpdv2_test(hpd["test"], test_images,
                                     seed if orientation == "random" else None)
    with input_errors(keys["train"]):
        train, pool = read_hpdv2_train(hpd["train"], train_images, seed)
    candidates = block.get("val_candidates")
    if candidates and candidates < len(train):  # a seeded sample, in the file's order
        keep = np.random.default_rng([seed, 2]).choice(len(train), candidates, replace=False)
        train = train.iloc[np.sort(keep)]
    pool = pool.iloc[np.random.default_rng(seed).permutation(len(pool))]
    parts, support = [test, train], [pool.assign(fold=None)]
    if mjb:
        with input_errors(keys["mjbench"]):
            originals = read_mjbench(mjb["path"], mjb["image_root"])
        with input_errors("mmb.dataset.mjbench_protocol"):
            mjb_pairs, mjb_support = mjbench_protocol(
                originals, out_dir, degradations=protocol.get("degradations") or {
                    "brightness_shift": {}}, n_folds=protocol.get("n_folds", 10),
                counterpart=protocol.get("counterpart", "other"), seed=seed)
        parts.append(mjb_pairs)
        support.append(mjb_support)
    pairs = pd.concat(parts, ignore_index=True)
    pairs["style_a"] = pairs["image_a"].map(styles)
    pairs["style_b"] = pairs["image_b"].map(styles)
    support_table = pd.concat(support, ignore_index=True)
    support_table["style"] = support_table["image_path"].map(styles)
    support_table["fold"] = support_table["fold"].astype("Int64")
    pairs["fold"] = pairs["fold"].astype("Int64")
    for table, column in ((pairs, "image_a"), (pairs, "image_b"), (support_table, "image_path")):
        table[sha256_column(column)] = files_sha256(table[column])
    summary = {"dataset": name, "pairs": pairs["split"].value_counts().to_dict(),
               "tied_pairs_dropped": tied, "test_groups": int(test["group"].nunique()),
               "test_orientation": {"mode": orientation,
                                    "seed": seed if orientation == "random" else None,
                                    "a_preferred": float(test["preference"].mean())
                                    if len(test) else None},
               "training_groups": int(pool["group"].nunique()),
               "support_pool": len(pool),
               "files": {"test": str(hpd["test"]), "train": str(hpd["train"]),
                         "mjbench": str(mjb["path"]) if mjb else None},
               "description": _description(name, block, pairs)}
    return pairs[PAIR_COLUMNS], support_table[SUPPORT_COLUMNS], summary


def _description(name: str, block: Mapping[str, Any], pairs: pd.DataFrame) -> str:
    counts = pairs["split"].value_counts().to_dict()
    text = ", ".join(f"{counts.get(s, 0)} {s}" for s in ("test", "train", "mjb_train",
                                                          "mjb_test"))
    if name == "synthetic":
        spec = block["synthetic"]
        return (f"Synthetic data (simulated humans, gamma = {spec.get('gamma')}) in "
                f"{len(spec.get('styles') or [])} styles, written as HPDv2 and MJ-Bench "
                f"files and imported by the real importers: {text} pairs")
    return f"HPDv2{' + MJ-Bench' if block.get('mjbench') else ''}: {text} pairs"
