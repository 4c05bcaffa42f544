"""BIRCH's pair table: the synthetic default or an imported benchmark, with the
label-override file applied if one is named, every image checked before any call."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from judgebias.artifacts import write_json, write_table
from judgebias.config import ConfigError, input_errors
from judgebias.studies.birch.tables import PAIRS

log = logging.getLogger(__name__)


def load_pairs(name: str, dataset: Mapping[str, Any], images: Path, seed: int) -> pd.DataFrame:
    """The pair table of the dataset block ``birch.datasets.<name>`` (synthetic, or an
    importer's), with its label-override file applied if one is named."""
    from judgebias.studies.birch import importers
    from judgebias.studies.birch.synthetic import synthetic_pairs

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


def build_data(config: Mapping[str, Any], name: str, pairs_out: str, images: Path,
               summary_out: str) -> None:
    """The pair table of dataset `name` and a summary of it (preferences, ties, domains,
    overrides)."""
    images.mkdir(parents=True, exist_ok=True)
    dataset = config["birch"]["datasets"][name]
    pairs = load_pairs(name, dataset, images, config["seed"])
    write_table(pairs, pairs_out, PAIRS)
    summary = {"pairs": len(pairs),
               "preference": pairs["preference"].value_counts().to_dict(),
               "domains": pairs["domain"].value_counts().to_dict(),
               "overridden": int(pairs["overridden"].sum()),
               "dataset": name, "source": dataset["format"]}
    write_json(summary, summary_out)
    log.info("%s: %d pairs, preferences %s", name, len(pairs), summary["preference"])
