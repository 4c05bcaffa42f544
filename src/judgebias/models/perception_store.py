"""What the simulated judges saw in each image, kept across a run's jobs.

Why: a simulated judge perceives an image from its pixels (``scenes.perceive``, FRAME's
``look``), a pure function of the image's bytes, the question asked of it and the code
that perceives. A run shows the same images to many judges in separate jobs (philautia's
300 images in each of its 72 score jobs, each FRAME set's renders to every FRAME judge),
and perceiving them again was about half of those jobs' time (issue 24; the per-process
cache in ``models.sim`` cannot help across processes). A real model server keeps the same
kind of cache, keyed the same way: vLLM's multimodal processor cache, by the image's hash.

What keeps it from changing a number:

* an entry's key is the sha256 of the image bytes and of the question; its folder is
  named by the code's version: the sha256 of the source of every project module the
  perceiving module can reach and the versions of numpy, Pillow and scipy
  (:func:`judgebias.importgraph.code_version`: the closure is the same derivation that
  gives the rules their code inputs). Changed code reads a new folder, never a stale entry;
* an entry holds exactly what the code computed, as text its ``encode`` writes and its
  ``decode`` reads back to an equal value (JSON: floats round-trip exactly);
* it is written to a temporary file renamed into place, so a killed job leaves an entry
  whole or absent; an entry that cannot be read is computed again and replaced;
* it lives beside the model-call journal (``journal_dir``), outside every Snakemake and
  DVC output. Deleting it changes no result, only the time: tests/core/
  test_perception_store.py compares the sim's answers with it cold, warm (never
  perceiving) and absent, and tests/frame/test_frame_perception_identity.py reads every
  FRAME fixture picture back through it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from judgebias.importgraph import code_version
from judgebias.io.atomicfile import atomic_path

T = TypeVar("T")


class PerceptionStore:
    """Perceptions of one kind (``kind``, computed by the code of module ``module``),
    stored under ``root``; with ``root=None`` nothing is stored and every call computes."""

    def __init__(self, root: Path | None, kind: str, module: str) -> None:
        self.root = root
        self.kind = kind
        self.module = module

    def fetch(self, image: bytes, question: str, compute: Callable[[], T],
              encode: Callable[[T], str], decode: Callable[[str], T]) -> T:
        """The stored perception of `image` under `question`, or `compute()` stored."""
        if self.root is None:
            return compute()
        path = self._path(image, question)
        try:
            return decode(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, KeyError, TypeError, IndexError):
            pass  # absent, torn or foreign: computed again and written below
        value = compute()
        with atomic_path(path, durable=False) as tmp:  # a lost entry is computed again
            tmp.write_text(encode(value), encoding="utf-8")
        return value

    def _path(self, image: bytes, question: str) -> Path:
        assert self.root is not None
        key = hashlib.sha256(hashlib.sha256(image).digest() + question.encode("utf-8"))
        name = key.hexdigest()
        folder = self.root / f"{self.kind}-{code_version(self.module)}" / name[:2]
        return folder / f"{name}.json"
