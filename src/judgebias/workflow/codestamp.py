"""A rule's code stamp: one small file standing for the project source files its step runs.

DVC's job stages depend on the stamp of their rule (`.judgebias/code/<rule>.json`) instead
of listing the rule's ~50 source files each; the `code` stage writes every rule's stamp
with one `judgebias code-stamp` (judgebias.workflow.dvc_export says why). The stamp is the
sorted JSON {path: sha256 of the file's bytes}: it changes exactly when one of the files
does, so DVC reruns a rule's jobs exactly when their code changed, as with the files
themselves: the `code` stage writes every rule's stamp after any edit, and a rule whose
files did not change gets the same bytes. A stamp file whose text is already right is left
as it is (its modification time, and DVC's state entry for it, stay as they were).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from pathlib import Path

from judgebias.artifacts import write_text


def write_stamps(stamps: Mapping[str, Iterable[str]], root: Path = Path(".")) -> None:
    """Write each stamp of `stamps` ({stamp path: the files it stands for}, paths relative
    to `root`, as dvc.yaml spells them). A file several stamps list is read once."""
    digests: dict[str, str] = {}
    for out, files in stamps.items():
        for name in files:
            if name not in digests:
                digests[name] = hashlib.sha256((root / name).read_bytes()).hexdigest()
        text = json.dumps({name: digests[name] for name in files}, indent=1,
                          sort_keys=True) + "\n"
        if not (root / out).is_file() or (root / out).read_text() != text:
            write_text(text, root / out)
