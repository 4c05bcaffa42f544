"""Content digests of model files (judgebias.io.filedigest): a settled file is read once per
identity, a rewritten one is read again, and a folder's digest follows its files'
content and names, not where the folder lies (issue 39)."""

from __future__ import annotations

import hashlib
import os
import shutil
import time

import pytest

from judgebias.io import filedigest as filedigest


@pytest.fixture
def reads(monkeypatch) -> list[str]:
    """The files whose bytes were hashed (not taken from the memo)."""
    seen: list[str] = []
    original = filedigest._hash

    def counting(path):
        seen.append(path.name)
        return original(path)

    monkeypatch.setattr(filedigest, "_hash", counting)
    return seen


def _settle(path) -> None:
    """As if the file had been written long ago (its ctime stays recent: see RACY_S)."""
    old = time.time() - 3600
    os.utime(path, (old, old))


def test_a_settled_file_is_hashed_once_and_a_rewritten_one_again(tmp_path, reads,
                                                                 monkeypatch):
    weights = tmp_path / "weights.bin"
    weights.write_bytes(b"version 1")
    memo = tmp_path / "memo"
    expected = hashlib.sha256(b"version 1").hexdigest()
    monkeypatch.setattr(filedigest, "RACY_S", -1.0)  # the file counts as settled
    _settle(weights)
    assert filedigest.file_sha256(weights, memo) == expected
    assert filedigest.file_sha256(weights, memo) == expected
    assert reads == ["weights.bin"]  # the second time from the memo
    time.sleep(0.05)  # past the file system's timestamp granularity
    stat = weights.stat()
    weights.write_bytes(b"version 2")  # same size, same mtime: a new ctime
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert filedigest.file_sha256(weights, memo) == hashlib.sha256(b"version 2").hexdigest()
    assert reads == ["weights.bin"] * 2


def test_a_file_changed_just_now_is_not_remembered(tmp_path, reads):
    weights = tmp_path / "weights.bin"
    weights.write_bytes(b"fresh")
    memo = tmp_path / "memo"
    filedigest.file_sha256(weights, memo)
    filedigest.file_sha256(weights, memo)
    assert reads == ["weights.bin"] * 2 and not memo.exists()
    assert filedigest.file_sha256(weights) == hashlib.sha256(b"fresh").hexdigest()


def test_a_folder_digest_follows_content_and_names_not_place(tmp_path):
    model = tmp_path / "model"
    (model / "unet").mkdir(parents=True)
    (model / "unet" / "weights.bin").write_bytes(b"unet")
    (model / "model_index.json").write_text("{}")
    (model / ".cache").mkdir()
    (model / ".cache" / "lock").write_text("not part of the model")
    digest = filedigest.tree_sha256(model)
    shutil.copytree(model, tmp_path / "copy")
    assert filedigest.tree_sha256(tmp_path / "copy") == digest
    (tmp_path / "copy" / ".cache" / "lock").write_text("changed")
    assert filedigest.tree_sha256(tmp_path / "copy") == digest
    (tmp_path / "copy" / "unet" / "weights.bin").rename(tmp_path / "copy" / "unet" / "w.bin")
    assert filedigest.tree_sha256(tmp_path / "copy") != digest
    (model / "model_index.json").write_text("{ }")
    assert filedigest.tree_sha256(model) != digest
