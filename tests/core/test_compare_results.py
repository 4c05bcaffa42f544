"""benchmarks/compare_results.py: two results folders compared by content, every
difference named (the check that a reshaping changed no number)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pandas as pd
import pytest
from helpers.project import REPO


@pytest.fixture(scope="module")
def compare_results():
    spec = importlib.util.spec_from_file_location(
        "compare_results", REPO / "benchmarks" / "compare_results.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _write(folder: Path, y: list[float], meta: dict, figure: bytes, only: str,
           compression: str = "snappy") -> Path:
    (folder / "tables").mkdir(parents=True)
    (folder / "same.txt").write_text("unchanged\n")
    (folder / only).write_text("one side only\n")
    frame = pd.DataFrame({"x": [1, 2, 3], "y": y, "refs": [["a"], ["b", "c"], []]})
    frame.to_parquet(folder / "tables" / "t.parquet")
    frame[["x"]].to_parquet(folder / "tables" / "same_frame.parquet", compression=compression)
    (folder / "metrics.json").write_text(json.dumps(meta))
    (folder / "fig.png").write_bytes(figure)
    return folder


def test_every_difference_is_named_and_can_be_accepted(tmp_path, capsys, compare_results):
    a = _write(tmp_path / "a", [0.5, 1.0, float("nan")], {"n": 3, "tau": {"b": [0.1, 0.2]},
               "old": "x"}, b"\x89PNG1", "only_a.txt")
    b = _write(tmp_path / "b", [0.5, 1.5, float("nan")], {"n": 3, "tau": {"b": [0.1, 0.3]},
               "new": 2}, b"\x89PNG22", "only_b.txt", compression="gzip")
    assert compare_results.main([str(a), str(b)]) == 1
    out = capsys.readouterr().out
    assert "6 files in A, 6 in B; 1 of 5 common files byte-identical; 6 differences, " \
        "0 accepted." in out
    for line in [
        "- `only_a.txt`\n  - only in A",
        "- `only_b.txt`\n  - only in B",
        "- `fig.png`\n  - bytes: 5 vs 6; sha256 ",
        "  - `tau.b[1]`: 0.2 vs 0.3\n  - `old`: 'x' vs '<absent>'\n"
        "  - `new`: '<absent>' vs 2",
        "- `tables/t.parquet`\n  - column `y`: 1 of 3 cells differ, max |A - B| = 0.5; "
        "first at row 1: 1.0 vs 1.5\n  - assert_frame_equal: ",
        "- `tables/same_frame.parquet`\n  - same frame (assert_frame_equal passes); only "
        "the bytes differ",
    ]:
        assert line in out, line
    assert "same.txt" not in out  # byte-identical: passes silently

    accept = ["*.txt", "fig.png", "metrics.json", "tables/*"]
    assert compare_results.main([str(a), str(b), *(f"--accept={g}" for g in accept)]) == 0
    out = capsys.readouterr().out
    assert "0 differences, 6 accepted." in out and "## Accepted differences" in out
    assert "- `fig.png` (accepted: `fig.png`)" in out
    assert compare_results.main([str(a), str(a)]) == 0
