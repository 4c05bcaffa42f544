"""BIRCH's published input formats, a row at a time: VL-RewardBench and MLLM-as-a-Judge
rows, a JSON-lines writer, and the `birch.datasets.<name>` block that reads them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def vl_row(i: int, ranking: Any = (0, 1), **changes: Any) -> dict[str, Any]:
    row = {"id": f"item-{i}", "image_path": f"images/povid/item-{i}.jpg",
           "query": f"question {i}", "response": [f"first {i}", f"second {i}"],
           "human_ranking": list(ranking), "models": [f"m{i}a", f"m{i}b"],
           "query_source": "povid", "meta": {}, "human_error_analysis": []}
    row.update(changes)
    return {k: v for k, v in row.items() if v is not ...}


def mllm_row(i: int, label: str = "A", key: str = "human_answer",
             **changes: Any) -> dict[str, Any]:
    row = {"id": i, "pair_id": 0, "image_path": f"img/{i}.jpg",
           "original_dataset": "COCO", "instruction": f"describe {i}",
           "answer1": {"name": "gpt4v", "answer": f"first {i}"},
           "answer2": {"name": "gemini", "answer": f"second {i}"}, key: label}
    row.update(changes)
    return {k: v for k, v in row.items() if v is not ...}


def jsonl(path: Path, rows: list[Any]) -> Path:
    """One JSON value per line (a str row is written as it is: a malformed line)."""
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n"
                            for r in rows), encoding="utf-8")
    return path


def real_dataset(kind: str, path: Path, images: Path, **options: Any) -> dict[str, Any]:
    """A ``birch.datasets.<name>`` block of a real format, defaults filled as validation
    fills them."""
    return {"format": kind, "path": str(path), "images": str(images), "order_seed": 0,
            "overrides": None, "reference_labels": None, **options}
