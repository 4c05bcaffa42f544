"""An images task's inputs: the generation prompts and every system's image for each.

Synthetic prompts and images live in MMB's synthetic world
(judgebias.studies.mmb.data.synthetic): each prompt has one visual style, and a simulated
generator draws its image in that style with a planted quality, the share of the image
free of defects. The MMB study's simulated judges read these images exactly as they read
its own (style, quality and brightness from the pixels alone), and its simulated humans
prefer image A to B with probability ``sigmoid(gamma (q_A - q_B))`` (seed 002's
Bradley-Terry humans, spec mmb.md), so each system's true win rate is known
(`planted_win_rates`).

Inside the pipeline a prompt is an item (``item_id``; ``prompt_id`` names the answers'
template). Imported prompts and images are checked before any judge is called: a missing column, a
prompt given twice, a prompt the task does not have, a prompt without an image, an image
path that leaves the file's folder or does not exist: each an error naming the file and
the row.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import expit

from judgebias.data.paths import resolve_inside
from judgebias.data.rows import FIRST_ROW, no_repeats, read_any_table, require_columns
from judgebias.io.artifacts import write_bytes
from judgebias.studies.mmb.data.synthetic import STYLES, SUBJECTS, png_bytes, render


def synthetic_prompts(n_prompts: int) -> pd.DataFrame:
    """`n_prompts` prompts, the styles of MMB's synthetic world taking turns, worded as
    the MMB study's synthetic groups are."""
    styles = list(STYLES)
    rows = []
    for index in range(n_prompts):
        style = styles[index % len(styles)]
        subject = SUBJECTS[index % len(SUBJECTS)]
        rows.append({"item_id": f"p{index:04d}", "style": style,
                     "prompt": f"a {style} picture of {subject}, variant {index}"})
    return pd.DataFrame(rows, columns=["item_id", "prompt", "style"])


def synthetic_pictures(prompts: pd.DataFrame, system: str, quality: float, spread: float,
                       *, size: int, seed: int, folder: Path) -> pd.DataFrame:
    """One image per prompt by a simulated generator whose images' quality is
    ``clip(quality + spread * N(0, 1), 0, 1)``, written under ``folder/system``. Prompt i
    draws from its own generator seeded by (seed, system, i), so a system's images do
    not change when another system or prompt is added."""
    stream = [int(b) for b in system.encode()]
    paths, qualities = [], []
    for index, (prompt_id, style) in enumerate(zip(prompts["item_id"], prompts["style"],
                                                   strict=True)):
        if style is None or style not in STYLES:
            raise ValueError(f"system {system!r}: a simulated generator draws in MMB's "
                             f"synthetic styles; prompt {prompt_id!r} has none")
        rng = np.random.default_rng([seed, *stream, index])
        q = float(np.clip(quality + spread * rng.standard_normal(), 0.0, 1.0))
        path = folder / system / f"{prompt_id}.png"
        write_bytes(png_bytes(render(style, q, size, int(rng.integers(2**31)))), path)
        paths.append(str(path))
        qualities.append(q)
    return _pictures(prompts, system, paths, "synthetic", qualities)


def imported_prompts(path: Path) -> pd.DataFrame:
    """The task's prompts from a CSV or Parquet file of prompt_id, prompt: each once, none
    empty."""
    table = read_any_table(path)
    require_columns(table.columns, ("prompt_id", "prompt"), path)
    ids = table["prompt_id"].astype(str)
    no_repeats(ids, path, "prompt_id")
    for row, (prompt_id, text) in enumerate(zip(ids, table["prompt"], strict=True),
                                            start=FIRST_ROW):
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"{path}: row {row}: empty prompt for prompt_id {prompt_id!r}")
    return pd.DataFrame({"item_id": ids.to_numpy(), "prompt": table["prompt"].astype(str),
                         "style": None}, columns=["item_id", "prompt", "style"])


def imported_pictures(prompts: pd.DataFrame, system: str, path: Path) -> pd.DataFrame:
    """A system's images from a CSV or Parquet file of prompt_id, image_path (relative to
    the file's folder, inside it): every prompt of the task exactly once, no other, each
    image an existing file."""
    table = read_any_table(path)
    require_columns(table.columns, ("prompt_id", "image_path"), path)
    ids = table["prompt_id"].astype(str)
    known = set(prompts["item_id"])
    images = {}
    for row, (prompt_id, relative) in enumerate(zip(ids, table["image_path"], strict=True),
                                                start=FIRST_ROW):
        if prompt_id not in known:
            raise ValueError(f"{path}: row {row}: prompt_id {prompt_id!r} is not a prompt "
                             "of the task")
        image = resolve_inside(path.parent, str(relative),
                               what=f"{path}: row {row}: image_path")
        if not image.is_file():
            raise ValueError(f"{path}: row {row}: image_path {str(relative)!r}: no such "
                             f"file ({image})")
        images[prompt_id] = str(image)
    no_repeats(ids, path, "prompt_id")
    absent = sorted(known - set(ids))
    if absent:
        raise ValueError(f"{path}: no image for {len(absent)} prompt(s) of the task, e.g. "
                         f"{absent[:3]}: every system needs an output on every item")
    return _pictures(prompts, system, [images[p] for p in prompts["item_id"]], "table",
                     [float("nan")] * len(prompts))


def _pictures(prompts: pd.DataFrame, system: str, paths: Sequence[str], source: str,
              quality: Sequence[float]) -> pd.DataFrame:
    return pd.DataFrame({"item_id": prompts["item_id"].to_numpy(), "system": system,
                         "image_path": list(paths), "source": source,
                         "quality": list(quality)})


def planted_win_rates(pictures: pd.DataFrame, systems: Sequence[str], gamma: float
                      ) -> pd.Series:
    """Each system's true win rate where every image's quality is planted: the mean over
    prompts and opponents of the simulated humans' ``P(a preferred to b) =
    sigmoid(gamma (q_a - q_b))`` (judgebias.studies.mmb.data.synthetic, seed 002's
    Bradley-Terry humans); NaN for all where any quality is unknown (an imported
    image)."""
    quality = pictures.pivot(index="item_id", columns="system", values="quality").reindex(
        columns=list(systems)).to_numpy(dtype=float)
    if np.isnan(quality).any() or len(systems) < 2:
        return pd.Series(np.nan, index=list(systems))
    p = expit(gamma * (quality[:, :, None] - quality[:, None, :]))
    off = ~np.eye(len(systems), dtype=bool)
    return pd.Series((p * off).sum(axis=2).mean(axis=0) / (len(systems) - 1),
                     index=list(systems))
