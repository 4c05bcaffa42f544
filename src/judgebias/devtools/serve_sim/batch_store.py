"""What serve-sim's two batch APIs share (openai_batch.py, gemini_batch.py): the files and
batches a server holds, kept on disk so a restarted server knows them (a provider outage
mid-batch), their ids, the row faults of a finished batch and the held replies a kill
test needs (:class:`judgebias.devtools.serve_sim.faults.BatchFaults`)."""

from __future__ import annotations

import dataclasses
import itertools
import json
import random
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Generic, TypeVar
from urllib.parse import parse_qs

from judgebias.devtools.serve_sim.faults import BatchFaults
from judgebias.devtools.serve_sim.wire import Reply
from judgebias.io.artifacts import write_bytes

FileT = TypeVar("FileT")
BatchT = TypeVar("BatchT")


class BatchStore(Generic[FileT, BatchT]):
    """Files (dataclasses with ``id`` and ``content: bytes``) and batches (dataclasses
    with ``id``) by id; with a `state_dir`, each written to disk (atomically) the moment
    it changes and read back by a server started on the same folder."""

    def __init__(self, file_type: type[FileT], batch_type: type[BatchT],
                 faults: BatchFaults | None, seed: int, state_dir: Path | None) -> None:
        self._file_type, self._batch_type = file_type, batch_type
        self.faults = faults or BatchFaults()
        self.seed = int(seed)
        self.state_dir = state_dir
        self.files: dict[str, FileT] = {}
        self.batches: dict[str, BatchT] = {}
        # set when a held reply (faults.hold) starts waiting: a test kills its client then
        self.held = {action: threading.Event() for action in self.faults.hold}
        self._lock = threading.Lock()
        self._ids = itertools.count(self._load() + 1)

    def _with_file(self, file_id: str, then: Callable[[FileT], Reply]) -> Reply:
        """`then(file)`, or the provider's 404 for a file it does not hold."""
        found = self.files.get(self._file_key(file_id))
        return then(found) if found is not None else self._missing("file", file_id)

    def _with_batch(self, batch_id: str, then: Callable[[BatchT], Reply]) -> Reply:
        """`then(batch)`, or the provider's 404 for a batch it does not hold."""
        found = self.batches.get(batch_id)
        return then(found) if found is not None else self._missing("batch", batch_id)

    def _file_key(self, file_id: str) -> str:
        """A file's id as the provider's routes name it (Gemini: ``files/ID``)."""
        return file_id

    def _missing(self, kind: str, name: str) -> Reply:
        """The provider's 404 reply for a `kind` ("file" or "batch") it does not hold."""
        raise NotImplementedError

    def _folder(self, item: object) -> Path:
        assert self.state_dir is not None
        return self.state_dir / ("files" if isinstance(item, self._file_type) else "batches")

    def _load(self) -> int:
        """Read a previous server's files and batches from `state_dir`; the largest id."""
        if self.state_dir is None:
            return 0
        for path in sorted((self.state_dir / "files").glob("*.json")):
            meta = json.loads(path.read_text())
            meta["content"] = path.with_suffix(".bin").read_bytes()
            self.files[meta["id"]] = self._file_type(**meta)
        for path in sorted((self.state_dir / "batches").glob("*.json")):
            meta = json.loads(path.read_text())
            self.batches[meta["id"]] = self._batch_type(**meta)
        return max((int(i.rsplit("sim", 1)[1]) for i in [*self.files, *self.batches]),
                   default=0)

    def _save(self, item: Any) -> None:
        if self.state_dir is None:
            return
        record = dataclasses.asdict(item)
        folder = self._folder(item)
        folder.mkdir(parents=True, exist_ok=True)
        if isinstance(item, self._file_type):
            write_bytes(record.pop("content"), folder / f"{record['id']}.bin")
        write_bytes(json.dumps(record).encode(), folder / f"{record['id']}.json")

    def _forget(self, item: Any) -> None:
        if self.state_dir is None:
            return
        for suffix in (".json", ".bin"):
            (self._folder(item) / f"{item.id}{suffix}").unlink(missing_ok=True)

    def _new_id(self, prefix: str = "") -> str:
        return f"{prefix}sim{next(self._ids):06d}"

    def _rng(self, batch_id: str) -> random.Random:
        """The generator of one batch's faults: the server's seed and the batch's id."""
        return random.Random(self.seed * 1_000_003 + zlib.crc32(batch_id.encode()))

    def _hold(self, action: str) -> None:
        """Hold the first reply of a held action back (faults.hold), after the action."""
        event = self.held.get(action)
        if event is None or event.is_set():
            return
        event.set()
        time.sleep(self.faults.hold_s)


def with_row_faults(rows: list[dict[str, Any]], faults: BatchFaults, rng: random.Random,
                    foreign: Callable[[dict[str, Any], str], dict[str, Any]]
                    ) -> list[dict[str, Any]]:
    """The answered rows with some lost, some repeated and some for keys never sent
    (`foreign(template row, key)` makes one in the provider's row format)."""
    lost = set(rng.sample(range(len(rows)), min(faults.missing_rows, len(rows))))
    out = [row for i, row in enumerate(rows) if i not in lost]
    out += [dict(row) for row in out[:faults.duplicate_rows]]
    out += [foreign(out[0] if out else {}, f"foreign-{i}") for i in range(faults.foreign_rows)]
    return out


NOT_JSON = object()  # what :func:`jsonl` yields for a line that is not JSON


def jsonl(content: bytes) -> Iterator[tuple[int, Any]]:
    """(line number from 1, parsed value or NOT_JSON) of each non-blank line of an input
    file, so each provider names a bad line as it does."""
    for number, text in enumerate(content.decode("utf-8", "replace").splitlines(), start=1):
        if text.strip():
            try:
                yield number, json.loads(text)
            except ValueError:
                yield number, NOT_JSON


def first(query: str, name: str) -> str | None:
    """A query parameter's first value, None when absent."""
    values = parse_qs(query).get(name)
    return values[0] if values else None
