"""FRAME's table format, a row at a time: one good row, and the files it points to."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from PIL import Image

GOOD = {"item_id": "p-1", "domain": "people",
        "instruction": "Generate an image of one chef in a red shirt typing in a café.",
        "image": "a.png", "annotator_1": 2, "annotator_2": 3,
        "concepts": json.dumps({"object": "Chef", "number": "one"}),
        "boxes": "[[1, 2, 30, 40]]"}


def write_png(path: Path, size: tuple[int, int] = (64, 48)) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", size).save(path)


def write_frame_csv(tmp_path: Path, rows: list[dict]) -> Path:
    """`rows` as tmp_path/frame.csv, beside the image of GOOD (tmp_path/img/a.png)."""
    write_png(tmp_path / "img" / "a.png")
    path = tmp_path / "frame.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path
