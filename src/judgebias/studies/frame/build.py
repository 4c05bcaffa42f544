"""The steps of FRAME's benchmark construction (seed 004 §4.1), one per rule: concepts,
instructions, images (sets A and B), and the item table with human scores; or the import
of a FRAME-format table. Each reads the files its rule declares and writes atomically."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from judgebias.artifacts import write_bytes, write_frame, write_json, write_table
from judgebias.config import input_errors
from judgebias.judging.answers import STATUS_OK
from judgebias.studies.frame.benchmark import ITEMS

log = logging.getLogger(__name__)


def build_concepts(config: Mapping[str, Any], out: str) -> None:
    from judgebias.studies.frame.benchmark import draw_concepts

    block = config["frame"]["dataset"]["synthetic"]
    write_frame(draw_concepts(block["n_per_domain"], block["domains"], block["k_weights"],
                              block["seed"]), out)


def build_instructions(config: Mapping[str, Any], concepts_path: str, out: str) -> None:
    """The instruction judged (from the item's concepts) and the prompt rendered (from the
    perturbed concepts), by the writer model or the template."""
    from judgebias.studies.frame.writer import write

    writer = config["frame"]["dataset"]["synthetic"]["writer"]
    items = pd.read_parquet(concepts_path)
    instruction, status_i = write(config, writer, items["domain"], items["concepts"])
    prompt, status_p = write(config, writer, items["domain"], items["perturbed_concepts"])
    items["instruction"], items["prompt"] = instruction, prompt
    items["status"] = [a if a != STATUS_OK else b for a, b in zip(status_i, status_p,
                                                                   strict=True)]
    dropped = items["status"] != STATUS_OK
    if dropped.any():
        log.warning("%d items left out: the writer's answer was unusable %s", dropped.sum(),
                    items.loc[dropped, "status"].value_counts().to_dict())
    write_frame(items, out)


def _seeds(item_id: str, seed: int) -> tuple[int, int]:
    digest = np.random.SeedSequence([seed, *item_id.encode("utf-8")]).generate_state(2)
    return int(digest[0]), int(digest[1])


def build_images(config: Mapping[str, Any], instructions_path: str, out: str,
                 images: Path) -> None:
    """Set A and set B images of every usable item's perturbed prompt (Fig. 3: set B is
    the same prompt generated again)."""
    from judgebias.studies.frame.concepts import parse_instruction
    from judgebias.studies.frame.imagegen import backend, cached_generate
    from judgebias.studies.frame.scene import alignment

    block = config["frame"]["dataset"]["synthetic"]
    spec = block["images"]
    generator = backend(spec)
    items = pd.read_parquet(instructions_path)
    items = items[items["status"] == STATUS_OK].reset_index(drop=True)
    rows = []
    for item in items.to_dict("records"):
        seeds = _seeds(item["item_id"], block["seed"])
        paths, drawn, boxes = [], None, []
        for name, seed in zip(("a", "b"), seeds, strict=True):
            path = images / name / f"{item['item_id']}.png"
            if spec["backend"] == "offline":
                scene = generator.scene(item["prompt"], seed)
                if name == "a":
                    drawn, boxes = scene.drawn, [list(b) for b in scene.boxes]
                path.parent.mkdir(parents=True, exist_ok=True)
                scene.image.save(path, format="PNG")
            else:
                write_bytes(cached_generate(generator, Path(spec["cache_dir"]),
                                            item["prompt"], seed), path)
            paths.append(str(path))
        wanted = parse_instruction(item["instruction"], item["domain"])
        rows.append({**item, "image": paths[0], "image_b": paths[1],
                     "alignment": alignment(wanted, drawn) if drawn else None,
                     "boxes": json.dumps(boxes)})
    write_frame(pd.DataFrame(rows), out)
    log.info("%d items, 2 images each (%s)", len(rows), spec["backend"])


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
        generated = pd.read_parquet(generated_path)
        if generated["alignment"].isna().any():
            raise ValueError("frame.dataset.synthetic.images: simulated annotators need the "
                             "true alignment, which only the offline renderer knows; score "
                             "generated images by hand and import them (dataset.name: table)")
        annotators = block["annotators"]
        items = attach_humans(generated, sds=annotators["sds"], bias=annotators["bias"],
                              seed=block["seed"])
        description = (f"synthetic FRAME benchmark: {block['n_per_domain']} items per domain, "
                       f"images by the {block['images']['backend']} renderer, two simulated "
                       "annotators")
    write_table(items, out, ITEMS)
    write_json({"description": description, "items": len(items),
                "per_domain": items["domain"].value_counts().to_dict()}, summary_out)
