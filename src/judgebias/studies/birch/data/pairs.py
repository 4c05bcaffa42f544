"""BIRCH's pair table of one dataset block: the synthetic default (.synthetic) or an
imported benchmark (.importers), with the label-override file applied if one is named,
every image checked before any call."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from judgebias.config import ConfigError, input_errors


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
