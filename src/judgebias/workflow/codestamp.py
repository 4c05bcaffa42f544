"""A rule's code stamp: one small file standing for the project source files its step runs.

DVC's job stages depend on the stamp of their rule (`.judgebias/code/<rule>.json`) instead
of listing the rule's ~50 source files each; the `code` stage writes every rule's stamp
with one `judgebias plumbing code-stamp` (judgebias.workflow.dvc_export says why). The stamp is the
sorted JSON {path: sha256 of the file's bytes}: it changes exactly when one of the files
does, so DVC reruns a rule's jobs exactly when their code changed, as with the files
themselves: the `code` stage writes every rule's stamp after any edit, and a rule whose
files did not change gets the same bytes, and a stamp file whose text is already right is
not rewritten (artifacts.write_text_if_changed).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from judgebias.config import ConfigError
from judgebias.io.artifacts import write_text_if_changed


def stamps_of(groups: Iterable[Sequence[str]]) -> dict[str, list[str]]:
    """{STAMP: [FILE...]} from `judgebias plumbing code-stamp`'s `--out STAMP FILE...` groups; a
    group without files or a stamp named twice is refused."""
    stamps: dict[str, list[str]] = {}
    for out, *files in groups:
        if not files or out in stamps:
            raise ConfigError(f"plumbing code-stamp --out {out}: "
                              + ("names no file" if not files else "given twice"))
        stamps[out] = files
    return stamps


def write_stamps(stamps: Mapping[str, Iterable[str]], root: Path = Path(".")) -> None:
    """Write each stamp of `stamps` ({stamp path: the files it stands for}, paths relative
    to `root`, as dvc.yaml spells them). A file several stamps list is read once."""
    digests: dict[str, str] = {}
    for out, files in stamps.items():
        for name in files:
            if name not in digests:
                digests[name] = hashlib.sha256((root / name).read_bytes()).hexdigest()
        write_text_if_changed(json.dumps({name: digests[name] for name in files},
                                         indent=1, sort_keys=True) + "\n", root / out)
