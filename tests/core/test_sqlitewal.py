"""Opening an SQLite file in WAL mode while another connection writes to it."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest

from judgebias.io.sqlitewal import connect_wal
from judgebias.models.journal import Journal


def _writer_holding_a_reserved_lock(path: Path) -> sqlite3.Connection:
    """A connection in the middle of a write to a new, rollback-journal file: the state a
    second job meets when it opens a journal the first is still creating."""
    writer = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    writer.execute("CREATE TABLE t (x)")
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("INSERT INTO t VALUES (1)")
    return writer


def test_sqlite_does_not_wait_to_switch_the_journal_mode(tmp_path):
    """Why connect_wal exists: the plain pragma fails at once, not after its timeout."""
    writer = _writer_holding_a_reserved_lock(tmp_path / "db")
    plain = sqlite3.connect(tmp_path / "db", timeout=30)
    start = time.monotonic()
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        plain.execute("PRAGMA journal_mode=WAL")
    assert time.monotonic() - start < 5
    writer.rollback()


@pytest.mark.parametrize("open_db", [
    lambda path: connect_wal(path, timeout_s=30),
    lambda path: Journal(path)._db,
], ids=["connect_wal", "journal"])
def test_the_switch_waits_for_the_writer_and_then_succeeds(tmp_path, open_db):
    path = tmp_path / "db"
    writer = _writer_holding_a_reserved_lock(path)
    threading.Timer(0.5, lambda: writer.execute("COMMIT")).start()
    start = time.monotonic()
    db = open_db(path)
    assert time.monotonic() - start >= 0.4
    assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert db.execute("SELECT x FROM t").fetchall() == [(1,)]


def test_the_switch_gives_up_at_its_timeout(tmp_path):
    writer = _writer_holding_a_reserved_lock(tmp_path / "db")
    start = time.monotonic()
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        connect_wal(tmp_path / "db", timeout_s=0.5)
    assert 0.3 <= time.monotonic() - start < 5
    writer.rollback()
