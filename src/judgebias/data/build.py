"""The dataset step: the synthetic default or an imported real dataset, one table shape."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd


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
