"""The dataset step: the synthetic default or an imported real dataset, one table shape."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd


def dataset_files(spec: Mapping[str, Any]) -> list[str]:
    """The file the `dataset` step imports besides its images (nocaps' annotations; none
    for the synthetic set). The rule declares it as an input, so that editing the file
    reruns the step and everything after it; the image folders are not declared (Snakemake
    would see only the folder's mtime, DVC would hash thousands of images on every status),
    and the images table pins each image by its SHA-256."""
    return [spec["nocaps"]["annotations"]] if spec["name"] == "nocaps" else []


def judgement_files(spec: Mapping[str, Any]) -> list[str]:
    """The file a `judgements` step imports (none for simulated raters); declared as an
    input for the same reason as `dataset_files`."""
    return [] if spec["format"] == "synthetic" else [spec["path"]]


def build_dataset(spec: Mapping[str, Any], images_dir: Path) -> pd.DataFrame:
    """The images table for `dataset` in params.yaml.

    Synthetic images are written under `images_dir`; an imported dataset keeps its images
    where they are (the folder is still created, so the step's outputs always exist).
    """
    images_dir.mkdir(parents=True, exist_ok=True)
    if spec["name"] == "synthetic":
        from judgebias.data.synthetic import build_synthetic_dataset

        syn = spec["synthetic"]
        return build_synthetic_dataset(images_dir.parent, n_images=syn["n_images"],
                                       seed=syn["seed"], image_size=syn["image_size"],
                                       n_references=syn["n_references"])
    from judgebias.data.nocaps import load_nocaps

    noc = spec["nocaps"]
    return load_nocaps(Path(noc["annotations"]), Path(noc["image_dir"]),
                       n_images=noc["n_images"], n_references=noc["n_references"],
                       seed=noc["seed"], domains=noc.get("domains"), missing=noc["missing"])


def build_judgements(name: str, spec: Mapping[str, Any], images_dir: Path) -> pd.DataFrame:
    """The judgements table of `pomms.datasets.<name>`: simulated human raters (written
    under `images_dir`), or an imported benchmark (its images stay where they are)."""
    from judgebias.data import judgements

    images_dir.mkdir(parents=True, exist_ok=True)
    image_dir = Path(spec["image_dir"]) if spec.get("image_dir") else None
    if spec["format"] == "synthetic":
        table = judgements.build_synthetic_judgements(
            images_dir, spec["n_items"], spec["seed"], n_raters=spec["n_raters"],
            rater_noise=spec["rater_noise"])
    elif spec["format"] == "flickr8k_expert":
        table = judgements.load_flickr8k_expert(Path(spec["path"]), image_dir, spec["missing"])
    elif spec["format"] == "nebula":
        table = judgements.load_nebula(Path(spec["path"]), image_dir, spec["split"],
                                       spec["missing"])
    else:
        table = judgements.load_table(Path(spec["path"]), image_dir, name, spec["missing"])
    return table.assign(dataset=name)
