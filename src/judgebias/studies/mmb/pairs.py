"""MMB's pairwise preference data: one pair table (tables.PAIRS) from HPDv2 and MJ-Bench in
their published shapes, built with the paper's protocols (seed 002 §5, spec mmb.md).

The ``mmb.dataset`` params block::

    name: synthetic | hpdv2
    seed: 0                      # validation pair per training group; D_sup order; MJBench
    synthetic: {styles, n_test_groups, images_per_test_group, n_train_groups,
                images_per_train_group, n_mjb_groups, images_per_mjb_group, gamma,
                image_size, seed}            # judgebias.studies.mmb.synthetic.generate
    hpdv2: {test: test.json, train: train.json, image_root: folder}
    mjbench: null | {path: bias.json, image_root: folder}   # synthetic: always generated
    mjbench_protocol: {n_folds: 10, counterpart: other | same, degradations: {name: params}}

HPSv2 protocol: every pair of each test group (C(9, 2) x 400 = 14.4k in the paper; tied
human ranks dropped and counted), split "test"; one candidate validation pair per training
group, split "train" (D_val draws from these); the support set D_sup comes from the
training images, in a seeded order (the factorial takes the first 256 x K).
MJBench protocol: prompts split into folds; each original paired with a degraded
counterpart (of another image of its prompt by default), the original preferred, split
"mjb_train"; all pairs of originals sharing a prompt, no preference, split "mjb_test".
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

from judgebias.artifacts import write_bytes
from judgebias.studies.mmb.degrade import degrade
from judgebias.studies.mmb.synthetic import generate, planted_styles, png_bytes

PAIR_COLUMNS = ["pair_id", "group", "prompt", "image_a", "image_b", "preference", "split",
                "fold", "source", "style_a", "style_b"]
SUPPORT_COLUMNS = ["image_path", "group", "fold", "style"]


def _records(path: str | Path, keys: Mapping[str, type]) -> list[dict[str, Any]]:
    """A JSON list of records, each with `keys` of the given types (error names the row)."""
    with open(path, encoding="utf-8") as handle:
        records = json.load(handle)
    if not isinstance(records, list):
        raise ValueError(f"{path}: expected a JSON list of records")
    for i, record in enumerate(records):
        if not isinstance(record, dict):
            raise ValueError(f"{path}: record {i} is not an object")
        for key, kind in keys.items():
            if key not in record:
                raise ValueError(f"{path}: record {i} has no key {key!r}")
            if not isinstance(record[key], kind):
                raise ValueError(f"{path}: record {i} key {key!r} must be "
                                 f"{kind.__name__}, got {type(record[key]).__name__}")
    return records


def _image(root: str | Path, relative: str, path: str | Path, row: int) -> str:
    full = Path(root) / relative
    if not full.is_file():
        raise ValueError(f"{path}: record {row}: image {full} does not exist")
    return str(full)


def read_hpdv2_test(path: str | Path, image_root: str | Path) -> tuple[pd.DataFrame, int]:
    """HPDv2 test.json (list of {prompt, image_path[], rank[] (lower is better, averaged
    over annotators, may tie), raw_annotation}): every pair of each group, A = the earlier
    image, preference 1 if A ranks better; tied pairs dropped. Returns (pairs, n tied)."""
    rows, tied = [], 0
    for g, record in enumerate(_records(path, {"prompt": str, "image_path": list,
                                               "rank": list})):
        if len(record["image_path"]) != len(record["rank"]):
            raise ValueError(f"{path}: record {g}: image_path and rank differ in length")
        images = [_image(image_root, p, path, g) for p in record["image_path"]]
        for i, j in combinations(range(len(images)), 2):
            ri, rj = float(record["rank"][i]), float(record["rank"][j])
            if ri == rj:
                tied += 1
                continue
            rows.append({"pair_id": f"test-{g:05d}-{i}-{j}", "group": f"test-{g:05d}",
                         "prompt": record["prompt"], "image_a": images[i],
                         "image_b": images[j], "preference": float(ri < rj),
                         "split": "test", "fold": None, "source": "hpdv2"})
    return pd.DataFrame(rows), tied


def read_hpdv2_train(path: str | Path, image_root: str | Path, seed: int
                     ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """HPDv2 train.json (list of {human_preference[] (1 = preferred), prompt, file_path[],
    user_hash}), grouped by prompt: one validation candidate per group (a preferred vs a
    non-preferred image, and which is A, drawn with `seed`), and every training image
    (the support pool). Groups without both kinds of image give no pair."""
    records = _records(path, {"prompt": str, "file_path": list, "human_preference": list})
    groups: dict[str, list[tuple[str, int]]] = {}
    for r, record in enumerate(records):
        if len(record["file_path"]) != len(record["human_preference"]):
            raise ValueError(f"{path}: record {r}: file_path and human_preference differ "
                             "in length")
        images = [_image(image_root, p, path, r) for p in record["file_path"]]
        groups.setdefault(record["prompt"], []).extend(
            zip(images, map(int, record["human_preference"]), strict=True))
    rng = np.random.default_rng(seed)
    pairs, pool = [], []
    for g, (prompt, members) in enumerate(groups.items()):
        group = f"train-{g:06d}"
        unique = list(dict.fromkeys(members))
        pool += [{"image_path": image, "group": group} for image, _ in unique]
        good = [image for image, liked in unique if liked == 1]
        bad = [image for image, liked in unique if liked != 1]
        if not good or not bad:
            continue
        winner, loser = good[int(rng.integers(len(good)))], bad[int(rng.integers(len(bad)))]
        a_wins = bool(rng.integers(2))
        pairs.append({"pair_id": f"{group}", "group": group, "prompt": prompt,
                      "image_a": winner if a_wins else loser,
                      "image_b": loser if a_wins else winner, "preference": float(a_wins),
                      "split": "train", "fold": None, "source": "hpdv2"})
    return pd.DataFrame(pairs), pd.DataFrame(pool)


def read_mjbench(path: str | Path, image_root: str | Path) -> pd.DataFrame:
    """MJ-Bench bias file (one record per image: {prompt, images_dir, demographic,
    occupation, ...}) as (image_path, group, prompt), grouped by prompt."""
    records = _records(path, {"prompt": str, "images_dir": str})
    prompts = list(dict.fromkeys(r["prompt"] for r in records))
    number = {p: i for i, p in enumerate(prompts)}
    return pd.DataFrame([{"image_path": _image(image_root, r["images_dir"], path, i),
                          "group": f"mjb-{number[r['prompt']]:05d}", "prompt": r["prompt"]}
                         for i, r in enumerate(records)])


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
    support rows of the HPSv2 part (fold null) come in a seeded order; the factorial uses
    the first support_per_cluster x max(K) of them."""
    out_dir = Path(out_dir)
    name = block["name"]
    protocol = block.get("mjbench_protocol") or {}
    styles: dict[str, str] = {}
    if name == "synthetic":
        written = generate(out_dir, **block["synthetic"])
        sources = {"test": written["test"], "train": written["train"], "root": out_dir,
                   "mjbench": written["mjbench"], "mjbench_root": out_dir}
        styles = planted_styles(written["styles"])
    else:
        hpd, mjb = block["hpdv2"], block.get("mjbench")
        sources = {"test": hpd["test"], "train": hpd["train"], "root": hpd["image_root"],
                   "mjbench": mjb and mjb["path"], "mjbench_root": mjb and mjb["image_root"]}
    test, tied = read_hpdv2_test(sources["test"], sources["root"])
    train, pool = read_hpdv2_train(sources["train"], sources["root"], seed)
    pool = pool.iloc[np.random.default_rng(seed).permutation(len(pool))]
    parts, support = [test, train], [pool.assign(fold=None)]
    if sources["mjbench"]:
        originals = read_mjbench(sources["mjbench"], sources["mjbench_root"])
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
    summary = {"dataset": name, "pairs": pairs["split"].value_counts().to_dict(),
               "tied_pairs_dropped": tied, "test_groups": int(test["group"].nunique()),
               "training_groups": int(pool["group"].nunique()),
               "support_pool": len(pool),
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
