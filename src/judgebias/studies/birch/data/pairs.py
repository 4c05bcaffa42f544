"""BIRCH's pair table of one dataset block: the synthetic default (.synthetic) or an
imported benchmark (.importers), with the label-override file applied if one is named,
every image checked before any call."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from judgebias.config import ConfigError, input_errors
from judgebias.data.paths import input_files


def dataset_files(dataset: Mapping[str, Any]) -> list[str]:
    """Every file :func:`load_pairs` reads for the block ``birch.datasets.<name>``: an
    imported benchmark's file and every file under its ``images`` folder (the importers
    resolve each row's ``image_path`` there, ``check_images`` finds them, and the judges
    read them through the pair table), and the label-override file where one is named
    (for the synthetic set too, whose images the step draws itself).

    The `birch_data` rule declares them as inputs, so that correcting a label or
    replacing an image reruns the dataset's jobs: Snakemake stat()s them, and dvc.yaml
    lists the image folder as one dep (judgebias.workflow.dvc_export)."""
    overrides = dataset.get("overrides")
    if dataset["format"] == "synthetic":
        return input_files([overrides])
    return input_files([dataset["path"], overrides], [dataset["images"]])


def load_pairs(name: str, dataset: Mapping[str, Any], images: Path, seed: int) -> pd.DataFrame:
    """The pair table of the dataset block ``birch.datasets.<name>`` (synthetic, or an
    importer's), with its label-override file applied if one is named."""
    from judgebias.studies.birch.data import importers
    from judgebias.studies.birch.data.synthetic import synthetic_pairs

    where = f"birch.datasets.{name}"
    kind = dataset["format"]
    with input_errors(where):
        if kind == "synthetic":
            own_seed = dataset["seed"]
            pairs = synthetic_pairs(dataset, seed if own_seed is None else own_seed, images)
        elif kind == "vl_rewardbench":
            pairs = importers.read_vl_rewardbench(dataset["path"], dataset["images"],
                                                  dataset["order_seed"])
        else:
            pairs = importers.read_mllm_judge(dataset["path"], dataset["images"],
                                              dataset["order_seed"])
    if dataset["overrides"]:
        with input_errors(f"{where}.overrides"):
            pairs = importers.apply_overrides(pairs, dataset["overrides"])
    missing = importers.check_images(pairs, where)
    if missing:
        raise ConfigError("\n".join(missing))
    if (pairs["preference"] == "tie").all():
        raise ConfigError(f"{where}: all {len(pairs)} pairs are human ties, "
                          "which every measure drops: nothing would be measured")
    return pairs
