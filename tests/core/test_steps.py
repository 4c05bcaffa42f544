"""The generic step command (judgebias.workflow.step_dispatch): a rule's named files and wildcards
become a study step's keyword arguments, and any disagreement between the two is an error before
the step runs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from judgebias.workflow.step_dispatch import (
    StepError,
    bind,
    command_arguments,
    run_step,
    step_function,
)


def _step(params: Mapping[str, Any], *, table: Path, parts: Sequence[Path], dataset: str,
          figure: Path | None = None) -> None:
    """A step: one path, a list of paths, a wildcard, an optional output."""


def test_bind_converts_each_name_by_its_annotation() -> None:
    params = {"k": 1}
    bound = bind(_step, {"table": ["a.parquet"], "parts": ["b", "c"]},
                 {"dataset": "nebula", "setting": "ignored"}, params)
    assert bound == {"params": params, "table": Path("a.parquet"),
                     "parts": [Path("b"), Path("c")], "dataset": "nebula"}


def test_an_empty_expansion_is_an_empty_list() -> None:
    bound = bind(_step, {"table": ["a"]}, {"dataset": "x"}, {})
    assert bound["parts"] == []


@pytest.mark.parametrize(("files", "wildcards", "message"), [
    ({"table": ["a"], "extra": ["b"]}, {"dataset": "x"}, "takes no argument 'extra'"),
    ({}, {"dataset": "x"}, "takes one value for 'table'; the rule gives 0"),
    ({"table": ["a", "b"]}, {"dataset": "x"}, "takes one value for 'table'; the rule gives 2"),
    ({"table": ["a"]}, {}, "takes one value for 'dataset'"),
])
def test_a_rule_and_its_step_that_disagree_are_refused(files, wildcards, message) -> None:
    with pytest.raises(StepError, match=message):
        bind(_step, files, wildcards, {})


def test_command_arguments_name_every_file_and_wildcard() -> None:
    text = command_arguments({"table": "a.parquet", "parts": ["b", "c"], "none": []},
                             {"out": "r/x.json"}, {"dataset": "nebula"})
    assert text == ("--in table a.parquet --in parts b c --out out r/x.json "
                    "--wildcard dataset nebula")


@pytest.mark.parametrize("path", ["has space", "quo'te", "semi;colon", ""])
def test_a_path_that_needs_quoting_is_refused(path: str) -> None:
    with pytest.raises(StepError, match="needs shell quoting"):
        command_arguments({"table": path}, {}, {})


def test_steps_are_found_through_the_registry() -> None:
    from judgebias.studies.pomms import steps

    assert step_function("pomms.fit") is steps.fit
    with pytest.raises(StepError, match="STUDY one of"):
        step_function("nostudy.fit")
    with pytest.raises(StepError, match="has no function 'nope'"):
        step_function("pomms.nope")


def test_a_name_given_twice_is_refused() -> None:
    with pytest.raises(StepError, match="'table' is given twice"):
        run_step("pomms.heatmap", {}, [["table", "a"]], [["table", "b"]], [])


def test_the_code_of_a_step_is_its_function_imports() -> None:
    """A step's rule depends on its own function's imports, not its siblings'."""
    from judgebias.workflow.codedeps import step_modules

    heatmap, fit = step_modules("pomms.heatmap"), step_modules("pomms.fit")
    assert "judgebias.studies.pomms.figures" in heatmap - fit
    assert "judgebias.studies.pomms.measures" in fit


def test_a_step_can_take_its_study_s_typed_view_of_params() -> None:
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class View:
        n: int

        @classmethod
        def from_params(cls, params: Mapping[str, Any]) -> View:
            return cls(n=params["block"]["n"])

    def step(params: View, *, out: Path) -> None:
        """A step annotated with a typed view."""

    step.__annotations__ = {"params": View, "out": Path, "return": None}
    assert bind(step, {"out": ["o"]}, {}, {"block": {"n": 3}})["params"] == View(n=3)
