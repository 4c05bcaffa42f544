"""The FRAME benchmark's item table, its importer, and the construction of §4.1.

The FRAME table format (one row per instance; CSV or JSON lines), what a researcher with
the real FRAME release writes:

``item_id``       unique id (text)
``domain``        people | animal | illustration | indoor | outdoor
``instruction``   the instruction the image is judged against
``image``         image file, relative to ``image_root`` (or absolute)
``human_score``   1-5; or ``annotator_1`` and ``annotator_2`` (their mean is the score)
``concepts``      optional: JSON object slot -> value (Table 8); the keyword overlay uses
                  its ``object``
``boxes``         optional: JSON list of [x0, y0, x1, y1] pixel boxes of the key objects
                  (seed 004 App. B.3: drawn by hand with makesense.ai)
``image_b``       optional: a second image of the same instruction (Fig. 3's set B)

A bad row is an error naming the file, the row (1-based, after the header) and the key,
before any image is judged.

Construction (§4.1), each stage its own job: :func:`draw_concepts` (Table 8 values, k of
them perturbed), the instructions (judgebias.studies.frame.writer), the images of the
perturbed prompts (judgebias.studies.frame.imagegen), and :func:`attach_humans`
(simulated annotators: judgebias.studies.frame.annotators).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from judgebias.artifacts import table_schema
from judgebias.studies.frame.annotators import simulate_annotators
from judgebias.studies.frame.concepts import VOCABULARY, perturb, sample_concepts
from judgebias.studies.frame.recipes import DOMAINS

ITEMS = table_schema("frame_items", [
    pa.field("item_id", pa.string(), nullable=False),
    pa.field("domain", pa.string(), nullable=False),
    pa.field("instruction", pa.string(), nullable=False),
    pa.field("concepts", pa.string(), nullable=False),  # JSON {slot: value}; "{}" if unknown
    pa.field("prompt", pa.string(), nullable=True),  # the perturbed prompt rendered
    pa.field("n_perturbed", pa.int64(), nullable=True),
    pa.field("image", pa.string(), nullable=False),  # set A
    pa.field("image_b", pa.string(), nullable=True),  # set B (Fig. 3)
    pa.field("human_score", pa.float64(), nullable=True),
    pa.field("annotator_1", pa.float64(), nullable=True),
    pa.field("annotator_2", pa.float64(), nullable=True),
    pa.field("alignment", pa.float64(), nullable=True),  # planted truth (synthetic only)
    pa.field("boxes", pa.string(), nullable=False),  # JSON [[x0, y0, x1, y1], ...]
    pa.field("source", pa.string(), nullable=False),
])


def draw_concepts(n_per_domain: int, domains: list[str], k_weights: list[float],
                  seed: int) -> pd.DataFrame:
    """Per item: its concepts (Table 8) and the perturbed concepts its image is generated
    from, with k ~ k_weights perturbed slots (§4.1: the more, the lower the alignment)."""
    rng = np.random.default_rng(seed)
    weights = np.asarray(k_weights, dtype=float) / np.sum(k_weights)
    rows = []
    for domain in domains:
        for i in range(n_per_domain):
            concepts = sample_concepts(domain, rng)
            k = min(int(rng.choice(len(weights), p=weights)), len(VOCABULARY[domain]))
            rows.append({"item_id": f"{domain}-{i:03d}", "domain": domain,
                         "concepts": json.dumps(concepts),
                         "perturbed_concepts": json.dumps(perturb(domain, concepts, k, rng)),
                         "n_perturbed": k})
    return pd.DataFrame(rows)


def attach_humans(generated: pd.DataFrame, *, sds: list[float], bias: list[float],
                  seed: int) -> pd.DataFrame:
    """The item table of a constructed benchmark, with two simulated annotators scoring the
    true alignment of each image (what it shows vs its instruction)."""
    rng = np.random.default_rng([seed, 1])
    first, second = simulate_annotators(generated["alignment"].to_numpy(), rng,
                                        sds=tuple(sds), bias=tuple(bias))
    items = generated.assign(annotator_1=first, annotator_2=second,
                             human_score=(first + second) / 2, source="synthetic")
    return items[ITEMS.names]


def _row_error(path: str, line: int, key: str, message: str) -> ValueError:
    return ValueError(f"{path}: row {line}: {key}: {message}")


def _json(value: Any, path: str, line: int, key: str, default: str) -> Any:
    if value is None or (isinstance(value, float) and np.isnan(value)) or value == "":
        return json.loads(default)
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError as exc:
            raise _row_error(path, line, key, f"not JSON ({exc.msg})") from exc
    return value


def _score(row: dict[str, Any], key: str, path: str, line: int) -> float | None:
    value = row.get(key)
    if value is None or value == "" or (isinstance(value, float) and np.isnan(value)):
        return None
    try:
        score = float(value)
    except (TypeError, ValueError) as exc:
        raise _row_error(path, line, key, f"{value!r} is not a number") from exc
    if not 1 <= score <= 5:
        raise _row_error(path, line, key, f"{score} is outside 1-5")
    return score


def read_frame_table(path: str, image_root: str) -> pd.DataFrame:
    """Import a FRAME-format table (module docstring) as the item table."""
    source = Path(path)
    table = (pd.read_json(source, lines=True, dtype=False) if source.suffix in (".jsonl", ".json")
             else pd.read_csv(source, dtype=str, keep_default_na=False))
    rows = []
    for line, row in enumerate(table.to_dict("records"), start=1):
        for key in ("item_id", "domain", "instruction", "image"):
            if not isinstance(row.get(key), str) or not row[key].strip():
                raise _row_error(path, line, key, "missing")
        if row["domain"] not in DOMAINS:
            raise _row_error(path, line, "domain", f"{row['domain']!r} is not one of "
                             f"{', '.join(DOMAINS)}")
        image = Path(image_root) / row["image"]
        if not image.is_file():
            raise _row_error(path, line, "image", f"file {image} does not exist")
        boxes = _json(row.get("boxes"), path, line, "boxes", "[]")
        if not isinstance(boxes, list) or not all(
                isinstance(b, list) and len(b) == 4 and all(isinstance(v, int | float) for v in b)
                for b in boxes):
            raise _row_error(path, line, "boxes", "must be a list of [x0, y0, x1, y1]")
        concepts = _json(row.get("concepts"), path, line, "concepts", "{}")
        if not isinstance(concepts, dict):
            raise _row_error(path, line, "concepts", "must be a JSON object slot -> value")
        first, second = (_score(row, k, path, line) for k in ("annotator_1", "annotator_2"))
        human = _score(row, "human_score", path, line)
        if human is None and first is not None and second is not None:
            human = (first + second) / 2
        image_b = row.get("image_b")
        if isinstance(image_b, str) and image_b:
            image_b = str(Path(image_root) / image_b)
            if not Path(image_b).is_file():
                raise _row_error(path, line, "image_b", f"file {image_b} does not exist")
        else:
            image_b = None
        rows.append({"item_id": row["item_id"], "domain": row["domain"],
                     "instruction": row["instruction"], "concepts": json.dumps(concepts),
                     "prompt": None, "n_perturbed": None, "image": str(image),
                     "image_b": image_b, "human_score": human, "annotator_1": first,
                     "annotator_2": second, "alignment": None,
                     "boxes": json.dumps([[int(v) for v in b] for b in boxes]),
                     "source": source.name})
    items = pd.DataFrame(rows, columns=ITEMS.names)
    duplicated = items["item_id"][items["item_id"].duplicated()].tolist()
    if duplicated:
        raise ValueError(f"{path}: duplicate item_id {duplicated[:5]}")
    return items
