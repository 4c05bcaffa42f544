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


def load_pairs(block: Mapping[str, Any], images: Path, seed: int) -> pd.DataFrame:
    """The pair table of the dataset block (synthetic, or an importer's), with the
    label-override file applied if one is named."""
    from judgebias.studies.birch import importers
    from judgebias.studies.birch.synthetic import synthetic_pairs

    dataset = block["dataset"]
    name = dataset["name"]
    with input_errors(f"birch.dataset.{name}"):
        if name == "synthetic":
            pairs = synthetic_pairs(dataset["synthetic"], seed, images)
        elif name == "vl_rewardbench":
            spec = dataset[name]
            pairs = importers.read_vl_rewardbench(spec["path"], spec["images"],
                                                  spec["order_seed"])
        else:
            spec = dataset[name]
            pairs = importers.read_mllm_judge(spec["path"], spec["images"], spec["order_seed"])
    if block["overrides"]:
        with input_errors("birch.overrides"):
            pairs = importers.apply_overrides(pairs, block["overrides"])
    missing = importers.check_images(pairs, f"birch.dataset.{name}")
    if missing:
        raise ConfigError("\n".join(missing))
    if (pairs["preference"] == "tie").all():
        raise ConfigError(f"birch.dataset.{name}: all {len(pairs)} pairs are human ties, "
                          "which every measure drops: nothing would be measured")
    return pairs


def build_data(config: Mapping[str, Any], pairs_out: str, images: Path, summary_out: str
               ) -> None:
    """The pair table and a summary of it (preferences, ties, domains, overrides)."""
    images.mkdir(parents=True, exist_ok=True)
    pairs = load_pairs(config["birch"], images, config["seed"])
    write_table(pairs, pairs_out, PAIRS)
    summary = {"pairs": len(pairs),
               "preference": pairs["preference"].value_counts().to_dict(),
               "domains": pairs["domain"].value_counts().to_dict(),
               "overridden": int(pairs["overridden"].sum()),
               "source": config["birch"]["dataset"]["name"]}
    write_json(summary, summary_out)
    log.info("%d pairs, preferences %s", len(pairs), summary["preference"])
