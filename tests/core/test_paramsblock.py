"""A study's params block declared once, as its typed view (judgebias.paramsblock): the
JSON schema, the view and the keys a rule declares come from one declaration, and a step
using a field of the view reads exactly that field's key (judgebias.workflow.paramsread).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal

import jsonschema
import pytest

from judgebias.config import ConfigError, validate_params
from judgebias.paramsblock import block_keys, block_schema, block_values, derived, key, part, view
from judgebias.study import registered
from judgebias.workflow.paramscheck import uncovered
from judgebias.workflow.paramsread import Reads, RecordingParams, recording_views


@view
class Sampling:
    """How the toy draws."""

    ratios: tuple[float, ...] = key((0.5, 1.0), unique=True, min_length=1)
    """Fractions drawn,
    each once."""
    seed: int = 0
    """Seeds the draws."""


@view
class Dataset:
    """One toy dataset."""

    format: Literal["synthetic", "table"]
    """Where its rows come from."""
    path: str = key(absent=True)
    """The table (format table)."""
    seed: int | None = None
    """null: the top-level seed."""


@view
class ToyParams:
    """A toy study."""

    PARAMS_KEY: ClassVar[str] = "toy"

    judges: tuple[str, ...] = key(unique=True, min_length=1)
    """The judges."""
    level: float = key(0.95, gt=0, lt=1)
    """Confidence level."""
    cache: str = key(".cache/toy", run_setting=True)
    """Where draws are cached."""
    sampling: Sampling = part(Sampling)
    """How it draws."""
    datasets: dict[str, Dataset] = key(default_factory=dict, names="^[a-z]+$")
    """The datasets, by name."""
    seed: int = derived()
    """The top-level seed."""

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> ToyParams:
        return cls(**block_values(params, "toy"), seed=params["seed"])


def test_the_schema_is_plain_json_schema_from_the_declaration():
    schema = block_schema(ToyParams)
    assert schema["additionalProperties"] is False and schema["required"] == ["judges"]
    assert schema["description"] == "A toy study."
    judges, level, cache = (schema["properties"][k] for k in ("judges", "level", "cache"))
    assert judges == {"type": "array", "items": {"type": "string"}, "minItems": 1,
                      "uniqueItems": True, "description": "The judges."}
    assert level == {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1,
                     "default": 0.95, "description": "Confidence level."}
    assert cache["x-run-setting"] is True
    sampling = schema["properties"]["sampling"]
    assert sampling["default"] == {} and sampling["additionalProperties"] is False
    assert sampling["properties"]["ratios"]["description"] == "Fractions drawn, each once."
    entry = schema["properties"]["datasets"]["additionalProperties"]
    assert schema["properties"]["datasets"]["propertyNames"] == {"pattern": "^[a-z]+$"}
    assert entry["properties"]["format"] == {"enum": ["synthetic", "table"],
                                             "description": "Where its rows come from."}
    assert entry["properties"]["path"] == {"type": "string",
                                           "description": "The table (format table)."}
    assert entry["properties"]["seed"] == {"type": ["integer", "null"], "default": None,
                                           "description": "null: the top-level seed."}
    assert "seed" not in schema["properties"]  # derived: no key of the block
    assert "title" not in str(schema) and "$ref" not in str(schema)
    validator = jsonschema.Draft202012Validator(schema)
    assert not list(validator.iter_errors({"judges": ["a"], "datasets": {"x": {
        "format": "table", "path": "t.csv"}}}))
    for bad in ({"judges": ["a", "a"]}, {"judges": ["a"], "level": 1},
                {"judges": ["a"], "seed": 1}, {"judges": ["a"], "datasets": {"X": {}}},
                {"judges": ["a"], "datasets": {"x": {"format": "table", "path": None}}}):
        assert list(validator.iter_errors(bad)), bad


def test_a_rule_declares_keys_of_the_declaration_only():
    assert block_keys(ToyParams) == ["toy.judges", "toy.level", "toy.cache",
                                     "toy.sampling", "toy.datasets"]
    assert block_keys(ToyParams, only=("level",)) == ["toy.level"]
    assert block_keys(ToyParams, exclude=("cache", "datasets"))[-1] == "toy.sampling"
    assert block_keys(ToyParams, only=("sampling.seed",)) == ["toy.sampling.seed"]
    for wrong in ({"only": ("levle",)}, {"exclude": ("seed",)}, {"only": ("sampling.sead",)},
                  {"only": ("level.x",)}):
        with pytest.raises(ValueError, match="no key"):
            block_keys(ToyParams, **wrong)


def _toy_params() -> dict[str, Any]:
    return {"seed": 7, "toy": {"judges": ["a"], "level": 0.9, "cache": ".c",
                               "sampling": {"ratios": [0.5], "seed": 3},
                               "datasets": {"x": {"format": "synthetic", "seed": None},
                                            "y": {"format": "table", "path": "y.csv"}}}}


def _reads_of(use) -> set[tuple[str, str]]:
    reads = Reads()
    with recording_views({ToyParams}):
        toy = ToyParams.from_params(RecordingParams(_toy_params(), reads))
        assert reads.as_json() == {kind: [] for kind in reads.as_json()}  # built: none
        use(toy)
    return {(kind, path) for kind, paths in reads.as_json().items() for path in paths}


def test_using_a_field_reads_exactly_its_key():
    assert _reads_of(lambda t: t.level) == {("value", "toy.level")}
    assert _reads_of(lambda t: t.sampling.seed) == {("value", "toy.sampling.seed")}
    assert _reads_of(lambda t: t.datasets["y"].path) == {("value", "toy.datasets.y.path")}
    assert _reads_of(lambda t: sorted(t.datasets)) == {("keys", "toy.datasets")}
    assert _reads_of(lambda t: t.seed) == {("value", "seed")}  # derived: what it is from
    view_ = ToyParams.from_params(_toy_params())  # not recording: a plain view
    assert view_.sampling.ratios == (0.5,) and view_.datasets["x"].seed is None


def test_a_step_reading_an_undeclared_key_is_found():
    """The planted violation: the rule declares `level`, the step also reads a dataset's
    path."""
    declared = block_keys(ToyParams, only=("level",))
    made = _reads_of(lambda t: (t.level, t.datasets["y"].path))
    assert uncovered(made, declared, _toy_params()) == [("value", "toy.datasets.y.path")]
    assert uncovered(_reads_of(lambda t: t.level), declared, _toy_params()) == []


def test_every_study_is_declared_by_its_view(default_params):
    """Each registered study's block comes from its view, and a typo in it is an error
    naming the key."""
    for name, study in registered().items():
        view_class = study.view_class()
        assert name == view_class.PARAMS_KEY
        assert study.schema_fragment() == block_schema(view_class)
    params = dict(default_params)
    params["pomms"] = {**params["pomms"], "setting_typo": 1}
    with pytest.raises(ConfigError, match=r"pomms\.setting_typo: unknown key"):
        validate_params(params)
