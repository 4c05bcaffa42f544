"""Fitted estimators saved as one JSON document that loads without executing code.

A saved de-biaser (the Pomms ensemble, ...) travels through DVC remotes and colleagues'
folders, so loading one must never run code the file names: no pickle, no joblib, no
eval, and no import of a module the file chooses. The file is plain JSON::

    {"format": "judgebias.saved", "format_version": 1,
     "class": "judgebias.studies.pomms.estimator.Pomms", "state_version": 1,
     "written_with": {"judgebias": ..., "numpy": ..., "scikit-learn": ...},
     "state": {...}, "card": {...}}

``state`` is what the class's ``_saved_state()`` returns and its classmethod
``_from_saved_state(state)`` rebuilds the fitted estimator from: JSON values, plus three
tagged forms (a mapping with one key starting with ``$``): ``{"$array": {"dtype",
"shape", "data"}}`` (a NumPy array; data as nested lists, dtype from `DTYPES` only),
``{"$frame": {"columns", "data"}}`` (a DataFrame with a plain range index, one array per
column) and ``{"$float": "NaN" | "Infinity" | "-Infinity"}`` (JSON has no such numbers;
the file is strict JSON, which any parser reads). Floats are written by Python's repr,
which reads back to the same double, so a loaded estimator predicts the same numbers to
the last bit. ``card`` is the model card (plain values, the same encoding): what the
estimator was fitted on and how well it agrees with people.

Trust: ``class`` is only a name until it is found in the caller's allowlist (``trusted``:
"module:Class" strings); only then is that module imported, and the class must be the
one the allowlist names (its ``__module__`` and ``__qualname__``) and have both methods.
The allowlist of the pipeline's estimators is the set the studies declare
(``Study.saved``, judgebias.study.saved_classes), which `judgebias.load` passes; this module
knows no study. Every refusal (not JSON, an unknown format or state version, an untrusted
class, a dtype outside `DTYPES`, an array whose data does not have its shape, an unknown
tag) is a `SavedFileError` naming the file.
"""

from __future__ import annotations

import importlib
import json
import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np

from judgebias.io.atomicfile import atomic_path

FORMAT = "judgebias.saved"
FORMAT_VERSION = 1
# The array dtypes a file may name; "str" is an object array of Python strings (scikit-
# learn's feature_names_in_). Never "object" of anything else: that is pickle's door.
DTYPES = frozenset({"bool", "int8", "int16", "int32", "int64", "uint8", "uint16",
                    "uint32", "uint64", "float32", "float64", "str"})
_NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
_LIBRARIES = ("judgebias", "numpy", "scikit-learn", "pandas")


class SavedFileError(ValueError):
    """A saved estimator file that cannot be trusted or read; the message names it."""


@dataclass(frozen=True)
class Saved:
    """What a saved file holds: the fitted estimator, its model card, and the libraries
    it was written with."""

    estimator: Any
    card: dict[str, Any]
    written_with: dict[str, str]


def class_name(cls: type) -> str:
    """The dotted name a file records for `cls`: ``module.QualifiedName``."""
    return f"{cls.__module__}.{cls.__qualname__}"


def _versions() -> dict[str, str]:
    found = {}
    for name in _LIBRARIES:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            continue
    return found


# -------------------------------------------------------------------------------------
# encoding
# -------------------------------------------------------------------------------------


def _float(value: float) -> Any:
    if math.isfinite(value):
        return value
    return {"$float": "NaN" if math.isnan(value) else ("Infinity" if value > 0
                                                        else "-Infinity")}


def _array(value: np.ndarray, where: str) -> dict[str, Any]:
    if value.dtype == object:
        if not all(isinstance(v, str) for v in value.flat):
            raise TypeError(f"{where}: an object array saves only strings")
        dtype = "str"
    else:
        dtype = value.dtype.name
        if dtype not in DTYPES:
            raise TypeError(f"{where}: arrays of dtype {dtype} are not saved "
                            f"(saved: {', '.join(sorted(DTYPES))})")
    data = value.tolist()  # Python scalars: float64 and float32 widen exactly
    if dtype.startswith("float"):
        data = _map_leaves(data, lambda x: _float(float(x)))
    return {"$array": {"dtype": dtype, "shape": list(value.shape), "data": data}}


def _map_leaves(data: Any, function: Any) -> Any:
    if isinstance(data, list):
        return [_map_leaves(d, function) for d in data]
    return function(data)


def encode(value: Any, where: str = "state") -> Any:
    """`value` as JSON values and the tagged forms (module docstring); `where` names
    the part of the state in an error."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, np.ndarray):
        return _array(value, where)
    if isinstance(value, np.generic):
        return encode(value.item(), where)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, list | tuple):
        return [encode(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str) or key.startswith("$"):
                raise TypeError(f"{where}: key {key!r} is not a string without a leading $")
            out[key] = encode(item, f"{where}.{key}")
        return out
    import pandas as pd

    if isinstance(value, pd.DataFrame):
        if not value.index.equals(pd.RangeIndex(len(value))):
            raise TypeError(f"{where}: a saved DataFrame has a plain range index")
        columns = [str(c) for c in value.columns]
        if len(set(columns)) != len(columns) or list(value.columns) != columns:
            raise TypeError(f"{where}: a saved DataFrame has distinct string column names")
        return {"$frame": {"columns": columns,
                           "data": [_array(value[c].to_numpy(), f"{where}.{c}")
                                    for c in columns]}}
    raise TypeError(f"{where}: {type(value).__name__} is not saved")


def dumps(document: Mapping[str, Any]) -> str:
    """Strict JSON (no NaN literals), keys sorted, floats by repr."""
    return json.dumps(document, indent=1, sort_keys=True, allow_nan=False) + "\n"


def save(estimator: Any, path: str | Path, card: Mapping[str, Any] | None = None) -> Path:
    """Write fitted `estimator` (a class with ``_saved_state``) and its model `card` to
    `path`, atomically. Loading it needs the class in the loader's allowlist."""
    cls = type(estimator)
    if not callable(getattr(estimator, "_saved_state", None)) or not callable(
            getattr(cls, "_from_saved_state", None)):
        raise TypeError(f"{class_name(cls)} cannot be saved: it has no _saved_state / "
                        "_from_saved_state")
    document = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "class": class_name(cls),
        "state_version": int(getattr(cls, "_saved_state_version", 1)),
        "written_with": _versions(),
        "state": encode(estimator._saved_state(), "state"),
        "card": encode(dict(card or {}), "card"),
    }
    text = dumps(document)
    with atomic_path(path) as tmp:
        tmp.write_text(text)
    return Path(path)


# -------------------------------------------------------------------------------------
# decoding
# -------------------------------------------------------------------------------------


class _Refused(Exception):
    """Inside decoding: what is wrong, before the file's name is added."""


def _scalar(value: Any, dtype: str, where: str) -> Any:
    if dtype == "str":
        ok = isinstance(value, str)
    elif dtype == "bool":
        ok = isinstance(value, bool)
    elif dtype.startswith(("int", "uint")):
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:  # float
        if isinstance(value, dict):
            return _tagged_float(value, where)
        ok = isinstance(value, int | float) and not isinstance(value, bool)
    if not ok:
        raise _Refused(f"{where}: {value!r} is not a {dtype} value")
    return value


def _tagged_float(value: Mapping[str, Any], where: str) -> float:
    if set(value) != {"$float"} or value["$float"] not in _NON_FINITE:
        raise _Refused(f"{where}: {value!r} is not a number")
    return _NON_FINITE[value["$float"]]


def _leaves(data: Any, shape: list[int], dtype: str, where: str) -> list[Any]:
    """The elements of nested lists `data`, in order, checked to have `shape`."""
    if not shape:
        return [_scalar(data, dtype, where)]
    if not isinstance(data, list) or len(data) != shape[0]:
        found = len(data) if isinstance(data, list) else type(data).__name__
        raise _Refused(f"{where}: the data does not have the shape it states "
                       f"(expected {shape[0]} entries, found {found})")
    out: list[Any] = []
    for item in data:
        out += _leaves(item, shape[1:], dtype, where)
    return out


def _decode_array(spec: Any, where: str) -> np.ndarray:
    if not isinstance(spec, dict) or set(spec) != {"dtype", "shape", "data"}:
        raise _Refused(f"{where}: an array has exactly dtype, shape and data")
    dtype, shape = spec["dtype"], spec["shape"]
    if dtype not in DTYPES:
        raise _Refused(f"{where}: dtype {dtype!r} is not one of {', '.join(sorted(DTYPES))}")
    if not isinstance(shape, list) or not all(
            isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape):
        raise _Refused(f"{where}: shape {shape!r} is not a list of sizes")
    flat = _leaves(spec["data"], shape, dtype, where)
    if dtype == "str":
        array = np.empty(len(flat), dtype=object)
        array[:] = flat
        return array.reshape(shape)
    try:
        return np.array(flat, dtype=dtype).reshape(shape)
    except OverflowError as error:
        raise _Refused(f"{where}: a value does not fit {dtype}") from error


def decode(value: Any, where: str = "state") -> Any:
    """The inverse of `encode`; raises `_Refused` (inside `load`) on anything else."""
    if isinstance(value, list):
        return [decode(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if not isinstance(value, dict):
        return value
    tags = [k for k in value if k.startswith("$")]
    if not tags:
        return {k: decode(v, f"{where}.{k}") for k, v in value.items()}
    if len(value) != 1:
        raise _Refused(f"{where}: a tagged value ({tags[0]}) has one key")
    tag, spec = next(iter(value.items()))
    if tag == "$array":
        return _decode_array(spec, where)
    if tag == "$float":
        return _tagged_float(value, where)
    if tag == "$frame":
        import pandas as pd

        if not isinstance(spec, dict) or set(spec) != {"columns", "data"} or not (
                isinstance(spec["columns"], list) and isinstance(spec["data"], list)
                and len(spec["columns"]) == len(spec["data"])
                and all(isinstance(c, str) for c in spec["columns"])):
            raise _Refused(f"{where}: a frame has columns and as many column arrays")
        columns = [_decode_array_tagged(d, f"{where}.{c}")
                   for c, d in zip(spec["columns"], spec["data"], strict=True)]
        if any(c.ndim != 1 for c in columns) or len({len(c) for c in columns}) > 1:
            raise _Refused(f"{where}: a frame's columns are 1-d arrays of one length")
        return pd.DataFrame(dict(zip(spec["columns"], columns, strict=True)))
    raise _Refused(f"{where}: unknown tag {tag!r}")


def _decode_array_tagged(value: Any, where: str) -> np.ndarray:
    if not isinstance(value, dict) or set(value) != {"$array"}:
        raise _Refused(f"{where}: a frame column is an $array")
    return _decode_array(value["$array"], where)


def _no_constants(name: str) -> Any:
    raise _Refused(f"{name} is not JSON (a non-finite number is written as a $float)")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _Refused(f"key {key!r} is stated twice")
        out[key] = value
    return out


def read_document(path: str | Path) -> dict[str, Any]:
    """The file's JSON, its format checked (not its class, nor its state)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
        document = json.loads(text, parse_constant=_no_constants,
                              object_pairs_hook=_unique_keys)
    except FileNotFoundError as error:
        raise SavedFileError(f"{path}: no such saved estimator") from error
    except (UnicodeDecodeError, json.JSONDecodeError, _Refused) as error:
        raise SavedFileError(f"{path}: not a saved estimator (not JSON: {error})") from error
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise SavedFileError(f"{path}: not a saved estimator (no \"format\": {FORMAT!r})")
    if document.get("format_version") != FORMAT_VERSION:
        raise SavedFileError(
            f"{path}: format version {document.get('format_version')!r} is not one this "
            f"judgebias reads ({FORMAT_VERSION}); it was written by "
            f"{document.get('written_with', {})!r}")
    missing = {"class", "state_version", "state", "card"} - set(document)
    if missing:
        raise SavedFileError(f"{path}: saved estimator lacks {sorted(missing)}")
    return document


def trusted_class(name: Any, trusted: Collection[str], path: str | Path) -> Any:
    """The class a file names, if `trusted` ("module:Class" strings) lists it: only then
    is its module imported."""
    allowed = {f"{t.partition(':')[0]}.{t.partition(':')[2]}": t for t in trusted}
    if not isinstance(name, str) or name not in allowed:
        raise SavedFileError(
            f"{path}: class {name!r} is not a trusted saved estimator (trusted: "
            f"{', '.join(sorted(allowed)) or 'none'}); nothing was imported")
    module, _, attribute = allowed[name].partition(":")
    cls = getattr(importlib.import_module(module), attribute, None)
    if not isinstance(cls, type) or class_name(cls) != name or not callable(
            getattr(cls, "_from_saved_state", None)):
        raise SavedFileError(f"{path}: {allowed[name]} is not a saveable estimator class")
    return cls


def load(path: str | Path, trusted: Collection[str]) -> Saved:
    """Read a saved estimator: its class must be in `trusted` ("module:Class"); see the
    module docstring for everything refused (each a `SavedFileError` naming `path`)."""
    document = read_document(path)
    cls = trusted_class(document["class"], trusted, path)
    expected = int(getattr(cls, "_saved_state_version", 1))
    if document["state_version"] != expected:
        raise SavedFileError(f"{path}: {document['class']} state version "
                             f"{document['state_version']!r}, this judgebias reads {expected}")
    try:
        state = decode(document["state"], "state")
        card = decode(document["card"], "card")
    except _Refused as error:
        raise SavedFileError(f"{path}: {error}") from None
    if not isinstance(state, dict) or not isinstance(card, dict):
        raise SavedFileError(f"{path}: state and card are mappings")
    try:
        estimator = cls._from_saved_state(state)
    except (KeyError, TypeError, ValueError) as error:
        raise SavedFileError(f"{path}: its {document['class']} state is not valid: "
                             f"{error!r}") from error
    written = document.get("written_with", {})
    return Saved(estimator, card, dict(written) if isinstance(written, dict) else {})


def read_card(path: str | Path) -> dict[str, Any]:
    """The model card of a saved estimator, without importing or building its class."""
    document = read_document(path)
    try:
        card = decode(document["card"], "card")
    except _Refused as error:
        raise SavedFileError(f"{path}: {error}") from None
    if not isinstance(card, dict):
        raise SavedFileError(f"{path}: its card is not a mapping")
    return card
