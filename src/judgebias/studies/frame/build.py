"""The steps of FRAME's benchmark construction (seed 004 §4.1), one per rule: concepts,
instructions, images (sets A and B), and the item table with human scores; or the import
of a FRAME-format table. Each reads the files its rule declares and writes atomically."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from judgebias.artifacts import write_frame, write_json, write_table
from judgebias.config import input_errors
from judgebias.studies.frame.benchmark import ITEMS

log = logging.getLogger(__name__)


def build_concepts(config: Mapping[str, Any], out: str) -> None:
    from judgebias.studies.frame.benchmark import draw_concepts

    block = config["frame"]["dataset"]["synthetic"]
    write_frame(draw_concepts(block["n_per_domain"], block["domains"], block["k_weights"],
                              block["seed"]), out)


def build_instructions(config: Mapping[str, Any], concepts_path: str, out: str) -> None:
    """Stage 2: the instruction judged and the prompt rendered, by the writer model or the
    template (benchmark.write_instructions)."""
    from judgebias.studies.frame.benchmark import write_instructions

    writer = config["frame"]["dataset"]["synthetic"]["writer"]
    write_frame(write_instructions(config, pd.read_parquet(concepts_path), writer), out)


def build_images(config: Mapping[str, Any], instructions_path: str, out: str,
                 images: Path) -> None:
    """Stage 3: set A and set B images of every usable item (benchmark.generate_images)."""
    from judgebias.studies.frame.benchmark import generate_images

    spec = config["frame"]["dataset"]["synthetic"]["images"]
    write_frame(generate_images(config, pd.read_parquet(instructions_path), images, spec), out)


def build_items(config: Mapping[str, Any], generated_path: str | None, out: str,
                summary_out: str) -> None:
    """The item table: the constructed benchmark with simulated annotators, or the
    imported FRAME table."""
    from judgebias.studies.frame.benchmark import attach_humans, read_frame_table

    dataset = config["frame"]["dataset"]
    if dataset["name"] == "table":
        with input_errors("frame.dataset.table"):
            items = read_frame_table(dataset["table"]["path"], dataset["table"]["image_root"])
        description = f"FRAME table {dataset['table']['path']}"
    else:
        block = dataset["synthetic"]
        annotators = block["annotators"]
        with input_errors("frame.dataset.synthetic.annotators.scores"):
            items = attach_humans(pd.read_parquet(generated_path), sds=annotators["sds"],
                                  bias=annotators["bias"], seed=block["seed"],
                                  scores=annotators["scores"])
        description = (f"synthetic FRAME benchmark: {block['n_per_domain']} items per domain, "
                       f"images by the {block['images']['backend']} renderer, "
                       + ("imported human scores" if annotators["scores"]
                          else "two simulated annotators"))
    write_table(items, out, ITEMS)
    write_json({"description": description, "items": len(items),
                "per_domain": items["domain"].value_counts().to_dict()}, summary_out)
