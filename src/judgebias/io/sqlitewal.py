"""Open an SQLite database in WAL mode, safely when several processes open it at once.

The request journal and MMB's embedding cache are SQLite files that concurrent jobs open
(every score job of one judge writes that judge's journal). SQLite waits up to the
connection's timeout for a lock held by another connection, with one exception: switching
the journal mode. ``PRAGMA journal_mode=WAL`` on a new file needs an exclusive lock and
fails at once with "database is locked" when another process opens the file at that
instant; the busy handler is not consulted for it. Reproduced here by three processes
polling a journal while a fourth creates it (about one creation in a hundred failed), and
it failed a CI run: a caption job died at start-up because the test polled its journal.
So the switch is retried, with a growing pause, until the same timeout the connection uses
for every other lock. WAL mode persists in the file; once one process has switched it, the
pragma only reads the mode and needs no lock.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Literal


def connect_wal(path: str | Path, timeout_s: float = 120.0,
                isolation_level: Literal["DEFERRED", "EXCLUSIVE", "IMMEDIATE"] | None
                = "DEFERRED") -> sqlite3.Connection:
    """An SQLite connection to `path` in WAL mode (`isolation_level` as in
    :func:`sqlite3.connect`; None: autocommit, transactions begun explicitly).

    Raises the last ``sqlite3.OperationalError`` when the mode cannot be switched within
    `timeout_s` (or at once for any error other than a lock).
    """
    db = sqlite3.connect(path, timeout=timeout_s, isolation_level=isolation_level)
    deadline = time.monotonic() + timeout_s
    pause = 0.005
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return db
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() + pause > deadline:
                db.close()
                raise
            time.sleep(pause)
            pause = min(2 * pause, 0.25)
