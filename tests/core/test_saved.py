"""Saved estimators (judgebias.io.saved): one JSON file that loads without executing code.

A toy estimator class of this module stands in for a study's: what it saves comes back
to the bit; a file naming a class outside the allowlist, an unknown format or state
version, a shape its data does not have, a dtype or tag outside the format, a NaN literal
or a key stated twice is refused with the file's name, and a refused class's module is
never imported. The allowlist the studies declare (``Study.saved``) loads, and the loader
is a code dependency of the steps that save, not of every job."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from judgebias.io.saved import (
    FORMAT_VERSION,
    SavedFileError,
    class_name,
    encode,
    load,
    read_card,
    save,
)
from judgebias.study import Study, registered, saved_classes


class Toy:
    """A saveable estimator: its state is whatever it was given."""

    _saved_state_version = 2

    def __init__(self, state: dict[str, Any]) -> None:
        self.state = state

    def _saved_state(self) -> dict[str, Any]:
        return self.state

    @classmethod
    def _from_saved_state(cls, state: dict[str, Any]) -> Toy:
        return cls(state)


TRUSTED = [f"{Toy.__module__}:{Toy.__qualname__}"]


def _state() -> dict[str, Any]:
    rng = np.random.default_rng(0)
    return {
        "f64": rng.standard_normal((3, 4)),
        "f32": rng.standard_normal(5).astype(np.float32),
        "odd": np.array([np.nan, np.inf, -np.inf, -0.0, 5e-324, 1.7976931348623157e308]),
        "ints": np.array([-(2**63), 2**63 - 1, 0]),
        "u8": np.arange(4, dtype=np.uint8),
        "flags": np.array([[True, False]]),
        "names": np.array(["a", "b é"], dtype=object),
        "empty": np.empty((0, 3)),
        "scalar": np.float64(0.1),
        "nan": float("nan"),
        "nested": [{"x": 1, "y": None, "z": "s"}, (True, 2.5)],
        "frame": pd.DataFrame({"i": [1, 2], "s": ["p", "q"], "f": [0.5, np.nan],
                               "b": [True, False]}),
    }


def _bits_equal(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def test_a_saved_state_comes_back_to_the_bit(tmp_path: Path) -> None:
    path = save(Toy(_state()), tmp_path / "toy.json", card={"note": "n", "tau": 0.25})
    document = json.loads(path.read_text())  # strict JSON: no NaN literal anywhere
    assert document["class"] == class_name(Toy) and document["state_version"] == 2
    assert "numpy" in document["written_with"]
    saved = load(path, TRUSTED)
    state, expected = saved.estimator.state, _state()
    for key in ("f64", "f32", "odd", "ints", "u8", "flags", "empty"):
        assert _bits_equal(state[key], expected[key]), key
    assert state["names"].dtype == object and list(state["names"]) == ["a", "b é"]
    assert state["scalar"] == 0.1 and np.isnan(state["nan"])
    assert state["nested"] == [{"x": 1, "y": None, "z": "s"}, [True, 2.5]]
    pd.testing.assert_frame_equal(state["frame"], expected["frame"])
    assert saved.card == {"note": "n", "tau": 0.25} == read_card(path)


def _write(tmp_path: Path, edit: Any) -> Path:
    path = save(Toy({"w": np.array([1.0, 2.0, 3.0])}), tmp_path / "toy.json")
    document = json.loads(path.read_text())
    edit(document)
    path.write_text(json.dumps(document))
    return path


def _set(key: str, value: Any) -> Any:
    return lambda d: d.__setitem__(key, value)


def _array(d: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = d["state"]["w"]["$array"]
    return spec


@pytest.mark.parametrize(("edit", "message"), [
    (_set("class", "judgebias_not_a_module.Evil"), "is not a trusted saved estimator"),
    (_set("class", "os.system"), "is not a trusted saved estimator"),
    (_set("format_version", FORMAT_VERSION + 1), "format version 2 is not one"),
    (_set("format", "pickle"), "not a saved estimator"),
    (_set("state_version", 1), "state version 1, this judgebias reads 2"),
    (lambda d: _array(d).__setitem__("shape", [4]), "does not have the shape it states"),
    (lambda d: _array(d).__setitem__("shape", [3, 1]), "does not have the shape it states"),
    (lambda d: _array(d).__setitem__("dtype", "object"), "dtype 'object' is not one of"),
    (lambda d: _array(d).__setitem__("data", [1.0, "2", 3.0]), "'2' is not a float64"),
    (lambda d: d["state"].__setitem__("w", {"$pickle": "gASV"}), "unknown tag '$pickle'"),
    (lambda d: d["state"].__setitem__("w", {"$float": "nan"}), "is not a number"),
    (lambda d: d.pop("card"), "lacks ['card']"),
])
def test_a_file_that_cannot_be_trusted_is_refused_by_name(tmp_path: Path, edit: Any,
                                                         message: str) -> None:
    path = _write(tmp_path, edit)
    with pytest.raises(SavedFileError, match=r"^" + str(path).replace(".", r"\.")) as error:
        load(path, TRUSTED)
    assert message in str(error.value)
    assert "judgebias_not_a_module" not in sys.modules


def test_non_json_numbers_and_repeated_keys_are_refused(tmp_path: Path) -> None:
    path = save(Toy({"x": 1.0}), tmp_path / "toy.json")
    text = path.read_text()
    path.write_text(text.replace('"x": 1.0', '"x": NaN'))
    with pytest.raises(SavedFileError, match="NaN is not JSON"):
        load(path, TRUSTED)
    path.write_text(text.replace('"x": 1.0', '"x": 1.0, "x": 2.0'))
    with pytest.raises(SavedFileError, match="key 'x' is stated twice"):
        load(path, TRUSTED)
    path.write_bytes(b"\x80\x04\x95")  # a pickle's first bytes
    with pytest.raises(SavedFileError, match="not JSON"):
        load(path, TRUSTED)


def test_a_trusted_name_must_be_the_class_it_names(tmp_path: Path) -> None:
    """An allowlist entry that is an alias (a class imported into another module) does not
    let a file name that module."""
    path = _write(tmp_path, _set("class", "judgebias.io.saved.Saved"))
    with pytest.raises(SavedFileError, match="is not a saveable estimator class"):
        load(path, ["judgebias.io.saved:Saved"])


def test_what_cannot_be_saved_is_refused_on_save(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="object array saves only strings"):
        encode({"a": np.array([object()], dtype=object)})
    with pytest.raises(TypeError, match="complex128 are not saved"):
        encode({"a": np.array([1j])})
    with pytest.raises(TypeError, match="not a string without a leading"):
        encode({"$array": 1})
    with pytest.raises(TypeError, match="set is not saved"):
        encode({"a": {1, 2}})
    with pytest.raises(TypeError, match="cannot be saved"):
        save(object(), tmp_path / "x.json")
    assert not (tmp_path / "x.json").exists()


def test_the_studies_declare_the_allowlist() -> None:
    """Every class a study declares saveable exists under that exact name and has both
    methods; Pomms' ensemble is one of them."""
    found = saved_classes()
    assert "judgebias.studies.pomms.estimator:Pomms" in found
    assert len(found) == sum(len(s.saved) for s in registered().values())
    for target in found:
        module, _, name = target.partition(":")
        cls = getattr(__import__(module, fromlist=[name]), name)
        assert class_name(cls) == f"{module}.{name}"
        assert callable(cls._from_saved_state) and callable(cls._saved_state)
    with pytest.raises(ValueError, match="saved 'Pomms' is not 'module:Class'"):
        Study(name="toy", title="Toy", package="pkg.toy", rules="toy.smk", view="V",
              saved=("Pomms",))


def test_the_loader_is_a_code_dependency_of_the_steps_that_save_only() -> None:
    """judgebias.load sits in the package root, which is in every job's code deps: it
    reaches judgebias.io.saved by name, so editing the loader reruns Pomms' fit, not
    philautia's score jobs."""
    from judgebias.workflow.codedeps import step_files

    def deps(step: str) -> set[str]:
        return {Path(f).as_posix().split("src/", 1)[-1] for f in step_files(step)}

    assert "judgebias/io/saved.py" in deps("pomms.fit")
    assert "judgebias/__init__.py" in deps("philautia.score")
    assert "judgebias/io/saved.py" not in deps("philautia.score")


def test_importing_the_package_root_stays_light() -> None:
    code = ("import sys, judgebias; print(sorted(m for m in ('numpy', 'judgebias.io.saved', "
            "'judgebias.study') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"
