"""Params stamps: one small file per set of params keys that DVC job stages read.

DVC's job stages depend on the stamp of the keys their rule declares
(`.judgebias/params/<set>.json`) instead of declaring the keys as DVC params; one stage,
`params`, writes every stamp with `judgebias plumbing params-stamp` (judgebias.workflow.dvc_export
says why: DVC parses params.yaml again for every stage that declares params, and walks the
whole file for each key). A stamp is the sorted JSON {key: value} of its keys: it changes
exactly when one of the values does, so DVC reruns a job exactly when one of its keys
changed, as with the keys themselves. Jobs reading the same keys share a stamp (the score
jobs of one evaluator and setting, whatever the generator), named by a hash of the keys
(:func:`set_name`), so the name is the same in every export and its content says which
keys it holds.

The values are read the way the pipeline reads params.yaml (judgebias.io.yamlread.load_yaml),
from the file as written, as DVC reads it; a key the file leaves out stamps its schema
default (judgebias.config.with_defaults), the value the job reads. (DVC itself reads only
the top-level blocks, which the export asks the file to hold:
dvc_export.check_params_declared; a default that changes with the code reruns the jobs
through their code stamps.) A key neither the file nor the schema sets is an error. A
stamp whose text is unchanged is not rewritten (artifacts.write_text_if_changed).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from judgebias.config import ConfigError, get_key, with_defaults
from judgebias.io.artifacts import write_text_if_changed
from judgebias.io.yamlread import load_yaml

PARAMS_DIR = ".judgebias/params"  # where the stamps are
SEPARATOR = ","  # between the keys of one set on the command line (keys have none)


def set_name(keys: Iterable[str]) -> str:
    """The stamp name of a set of dotted keys: the same for the same set in any order."""
    return hashlib.sha256(SEPARATOR.join(sorted(set(keys))).encode()).hexdigest()[:16]


def stamp_path(keys: Iterable[str], out: str = PARAMS_DIR) -> str:
    return f"{out}/{set_name(keys)}.json"


def write_param_stamps(sets: Iterable[Iterable[str]], params_file: Path = Path("params.yaml"),
                       out: str = PARAMS_DIR, root: Path = Path(".")) -> None:
    """Write the stamp of every set of keys in `sets` from `params_file` (paths relative to
    `root`, as dvc.yaml spells them), a key it leaves out at its schema default; raise
    ConfigError naming the keys neither sets."""
    params = load_yaml((root / params_file).read_text()) or {}
    defaults: dict[str, Any] | None = None  # filled in for the first key the file lacks
    texts, missing = {}, []
    for keys in map(set, sets):
        values = {}
        for key in sorted(keys):
            try:
                values[key] = get_key(params, key)
                continue
            except (KeyError, TypeError):
                pass
            defaults = with_defaults(params) if defaults is None else defaults
            try:
                values[key] = get_key(defaults, key)
            except (KeyError, TypeError):
                missing.append(key)
        texts[stamp_path(keys, out)] = json.dumps(values, indent=1, sort_keys=True,
                                                    default=str) + "\n"
    if missing:
        raise ConfigError(f"{params_file}: no value for params keys "
                          f"{', '.join(dict.fromkeys(missing))}")
    for path, text in texts.items():
        write_text_if_changed(text, root / path)
