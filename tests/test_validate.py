"""Bad params that would silently change numbers are errors (or warnings) in validate."""

from __future__ import annotations

from pathlib import Path

import pytest

from judgebias.data.paths import PathEscapeError, resolve_inside


@pytest.mark.parametrize("relative, expected", [
    ("a.png", "a.png"), ("sub/./a.png", "sub/a.png"), ("sub/../a.png", "a.png")])
def test_resolve_inside_keeps_paths_that_stay_inside(tmp_path, relative, expected):
    assert resolve_inside(tmp_path, relative, what="x") == tmp_path / expected


@pytest.mark.parametrize("relative, reason", [
    ("../a.png", "leaves its folder"), ("sub/../../a.png", "leaves its folder"),
    ("..", "leaves its folder"), ("sub\\..\\..\\a.png", "leaves its folder"),
    ("/etc/passwd", "not an absolute path"), ("C:\\data\\a.png", "not an absolute path"),
    ("\\\\host\\share\\a.png", "not an absolute path"), ("", "the path is empty")])
def test_resolve_inside_rejects_escapes(tmp_path, relative, reason):
    with pytest.raises(PathEscapeError) as info:
        resolve_inside(tmp_path, relative, what="pairs.jsonl row 3: image_path")
    message = str(info.value)
    assert message.startswith("pairs.jsonl row 3: image_path: ")
    assert reason in message
    assert isinstance(info.value, ValueError)


def test_resolve_inside_accepts_path_objects(tmp_path):
    assert resolve_inside(str(tmp_path), Path("a/b.png"), what="x") == tmp_path / "a/b.png"
