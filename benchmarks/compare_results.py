"""Compare two results folders by content: the check that a reshaping changed no number.

    .venv/bin/python benchmarks/compare_results.py A B [--accept GLOB ...] [--show 10]

Both folders must hold the same files (paths relative to each folder). A byte-identical
file passes. For a file whose bytes differ it says what differs:

* ``.parquet``: both read with pandas; the shapes and column sets, each column that differs
  (how many cells; the largest absolute difference of a numeric one; a first differing
  row), and ``pandas.testing.assert_frame_equal``'s first line; "same frame" when only the
  bytes (encoding or metadata) differ;
* ``.json``: every differing key path with both values (a missing key shows as <absent>);
* anything else (figures, HTML, text): both sizes and SHA-256 digests.

Each ``--accept GLOB`` (fnmatch on the relative path, repeatable) lists the differences it
matches as accepted instead: write down why next to the command. Prints Markdown; exits 1
on any difference not accepted, 0 otherwise. CI smoke run (tests/test_benchmarks.py):
a folder against itself.
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import json
import math
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ABSENT = "<absent>"
SHORT = 120  # characters of a value shown


def files(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}


def describe(a: Path, b: Path, show: int) -> list[str]:
    """What differs between two files whose bytes differ, as Markdown list lines."""
    try:
        if a.suffix == ".parquet":
            return _parquet(pd.read_parquet(a), pd.read_parquet(b))
        if a.suffix == ".json":
            return _json(json.loads(a.read_text()), json.loads(b.read_text()), show)
    except (ValueError, OSError) as exc:  # unreadable as its kind: compare the bytes
        return [f"not readable as {a.suffix} ({exc}); " + _bytes(a, b)[0]]
    return _bytes(a, b)


def _bytes(a: Path, b: Path) -> list[str]:
    def digest(path: Path) -> str:
        return hashlib.sha256(path.read_bytes()).hexdigest()[:16]

    return [f"bytes: {a.stat().st_size} vs {b.stat().st_size}; "
            f"sha256 {digest(a)}... vs {digest(b)}..."]


def _parquet(a: pd.DataFrame, b: pd.DataFrame) -> list[str]:
    lines = []
    if a.shape != b.shape:
        lines.append(f"shape {a.shape} vs {b.shape}")
    only_a, only_b = [c for c in a if c not in b], [c for c in b if c not in a]
    if only_a or only_b:
        lines.append(f"columns only in A: {only_a}; only in B: {only_b}")
    elif list(a.columns) != list(b.columns):
        lines.append("the same columns in another order")
    if len(a) == len(b):
        for column in [c for c in a if c in b]:
            lines += _column(column, a[column].reset_index(drop=True),
                             b[column].reset_index(drop=True))
    try:
        pd.testing.assert_frame_equal(a, b)
    except AssertionError as exc:
        lines.append("assert_frame_equal: " + " ".join(str(exc).split("\n")[:2]).strip())
    return lines or ["same frame (assert_frame_equal passes); only the bytes differ "
                     "(encoding or metadata)"]


def _column(name: str, a: pd.Series, b: pd.Series) -> list[str]:
    if a.dtype != b.dtype:
        return [f"column `{name}`: dtype {a.dtype} vs {b.dtype}"]
    differ = np.array([not _same(x, y) for x, y in zip(a, b, strict=True)], dtype=bool)
    if not differ.any():
        return []
    line = f"column `{name}`: {int(differ.sum())} of {len(a)} cells differ"
    if pd.api.types.is_numeric_dtype(a) and not pd.api.types.is_bool_dtype(a):
        gap = (a[differ].astype(float) - b[differ].astype(float)).abs()
        line += f", max |A - B| = {gap.max():.6g}"
    row = int(np.flatnonzero(differ)[0])
    return [f"{line}; first at row {row}: {_short(a[row])} vs {_short(b[row])}"]


def _same(x: Any, y: Any) -> bool:
    """Cell equality with NaN equal to NaN, arrays and lists compared element by element."""
    if isinstance(x, np.ndarray | list | tuple) or isinstance(y, np.ndarray | list | tuple):
        x, y = list(np.asarray(x, dtype=object)), list(np.asarray(y, dtype=object))
        return len(x) == len(y) and all(_same(i, j) for i, j in zip(x, y, strict=True))
    if isinstance(x, dict) and isinstance(y, dict):
        return x.keys() == y.keys() and all(_same(x[k], y[k]) for k in x)
    if _is_nan(x) and _is_nan(y):
        return True
    return bool(x == y)


def _is_nan(value: Any) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def _json(a: Any, b: Any, show: int) -> list[str]:
    found = list(_json_diff(a, b, ""))
    lines = [f"`{path or '(top)'}`: {_short(x)} vs {_short(y)}"
             for path, x, y in found[:show]]
    if len(found) > show:
        lines.append(f"... and {len(found) - show} more differing keys")
    return lines or ["same JSON value; only the bytes differ (formatting or key order)"]


def _json_diff(a: Any, b: Any, path: str) -> Iterator[tuple[str, Any, Any]]:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in [*a, *(k for k in b if k not in a)]:
            yield from _json_diff(a.get(key, ABSENT), b.get(key, ABSENT),
                                  f"{path}.{key}" if path else str(key))
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for index, (x, y) in enumerate(zip(a, b, strict=True)):
            yield from _json_diff(x, y, f"{path}[{index}]")
    elif type(a) is not type(b) or not _same(a, b):
        yield path, a, b


def _short(value: Any) -> str:
    text = repr(value.item() if isinstance(value, np.generic) else value)
    return text if len(text) <= SHORT else text[:SHORT] + "..."


def compare(a: Path, b: Path, accept: list[str], show: int) -> tuple[list[str], int]:
    """(Markdown lines, number of differences not accepted)."""
    in_a, in_b = files(a), files(b)
    differences: list[tuple[str, list[str]]] = []
    differences += [(path, ["only in A"]) for path in sorted(in_a - in_b)]
    differences += [(path, ["only in B"]) for path in sorted(in_b - in_a)]
    common = sorted(in_a & in_b)
    identical = 0
    for path in common:
        if (a / path).read_bytes() == (b / path).read_bytes():
            identical += 1
        else:
            differences.append((path, describe(a / path, b / path, show)))
    differences.sort()

    def accepted_by(path: str) -> str | None:
        return next((glob for glob in accept if fnmatch.fnmatch(path, glob)), None)

    open_ = [(p, d) for p, d in differences if accepted_by(p) is None]
    lines = ["# Results compared", "", f"A: `{a}`", f"B: `{b}`", "",
             f"{len(in_a)} files in A, {len(in_b)} in B; {identical} of {len(common)} common "
             f"files byte-identical; {len(open_)} differences, "
             f"{len(differences) - len(open_)} accepted.", ""]
    for title, rows in (("Differences", open_),
                        ("Accepted differences", [(p, d) for p, d in differences
                                                  if accepted_by(p) is not None])):
        if not rows:
            continue
        lines += [f"## {title}", ""]
        for path, details in rows:
            glob = accepted_by(path)
            lines.append(f"- `{path}`" + (f" (accepted: `{glob}`)" if glob else ""))
            lines += [f"  - {detail}" for detail in details]
        lines.append("")
    return lines, len(open_)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a", type=Path, help="a results folder (e.g. before)")
    parser.add_argument("b", type=Path, help="the other results folder (e.g. after)")
    parser.add_argument("--accept", action="append", default=[], metavar="GLOB",
                        help="a relative-path glob whose differences are accepted "
                        "(repeatable)")
    parser.add_argument("--show", type=int, default=10,
                        help="differing keys shown per JSON file (default: %(default)s)")
    args = parser.parse_args(argv)
    for folder in (args.a, args.b):
        if not folder.is_dir():
            parser.error(f"{folder} is not a folder")
    lines, open_ = compare(args.a, args.b, args.accept, args.show)
    print("\n".join(lines))
    return 1 if open_ else 0


if __name__ == "__main__":
    sys.exit(main())
