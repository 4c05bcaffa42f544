"""Steps read only the params keys their rules declare (issue 42 item 5, the params loop).

judgebias.workflow.paramsread records what a step reads (``$JUDGEBIAS_RECORD_PARAMS``),
judgebias.workflow.paramscheck checks it against its rule's ``dvc_params``. Here: what
counts as a read, on hand-made params and views, and what covers it; and a planted
violation, a step reading a key its rule does not declare, reported through the real
dispatcher, record and DAG, and no longer reported once the rule declares it. The check
over every step of every study runs inside the pipeline runs that exist already (the one
of all five studies on the default sim panel in tests/core/test_plan.py, today's API
judges in test_todays_judges.py, FRAME's presets, BIRCH's repeats, a new study from the
template), so it adds no pipeline run of its own.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import pickle
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from judgebias.config import PARAMS_ENV
from judgebias.models.panel import PanelModel
from judgebias.studies.philautia.params import PhilautiaParams
from judgebias.workflow.paramscheck import check, uncovered
from judgebias.workflow.paramsread import (
    RECORD_ENV,
    Reads,
    RecordingParams,
    recording_view,
    recording_views,
    views_of,
)
from judgebias.workflow.step_dispatch import run_step

PARAMS = {"seed": 1, "journal_dir": ".journal",
          "panel": {"a": {"backend": "sim", "family": "x", "sampling": {"seed": 0, "t": 1.0}},
                    "b": {"backend": "sim", "family": "y", "sampling": {"seed": 0, "t": 1.0}}},
          "study": {"grid": {"gamma": [1, 2], "blur": [3]}, "n": 5, "empty": {},
                    "nested": {"k": 3, "deep": {"z": 4}}}}


def recording(params: Mapping[str, Any] = PARAMS) -> tuple[RecordingParams, Reads]:
    reads = Reads()
    return RecordingParams(copy.deepcopy(dict(params)), reads), reads


def test_a_leaf_is_read_by_its_path_and_a_block_only_by_what_is_used_of_it():
    params, reads = recording()
    block = params["panel"]["a"]
    assert isinstance(block, Mapping) and reads.reads == set()  # a block: nothing yet
    assert block["sampling"]["t"] == 1.0 and params["study"]["grid"]["gamma"] == [1, 2]
    assert reads.reads == {("value", "panel.a.sampling.t"), ("value", "study.grid.gamma")}


def test_listing_a_block_reads_its_keys_not_its_values():
    params, reads = recording()
    assert sorted(params["panel"]) == ["a", "b"] and len(params["study"]["grid"]) == 2
    assert "grid" in list(params["study"].keys())
    assert reads.reads == {("keys", "panel"), ("keys", "study.grid"), ("keys", "study")}


def test_items_read_the_keys_and_each_value_used():
    params, reads = recording()
    families = {name: model["family"] for name, model in params["panel"].items()}
    assert families == {"a": "x", "b": "y"}
    assert reads.reads == {("keys", "panel"), ("value", "panel.a.family"),
                           ("value", "panel.b.family")}


def test_presence_absence_and_emptiness_are_reads_of_their_own():
    params, reads = recording()
    study = params["study"]
    assert "n" in study and "m" not in study and study.get("m", 7) == 7
    assert study["nested"] and not study["empty"]
    assert reads.reads == {("present", "study.n"), ("absent", "study.m"),
                           ("empty", "study.nested"), ("absent", "study.empty")}


def test_a_block_used_whole_is_read_whole_and_its_copies_are_plain():
    params, reads = recording()
    nested = params["study"]["nested"]
    assert nested == {"k": 3, "deep": {"z": 4}}
    for copied in (copy.deepcopy(nested), copy.copy(nested), pickle.loads(pickle.dumps(nested))):
        assert type(copied) is dict and copied == {"k": 3, "deep": {"z": 4}}
    assert reads.reads == {("value", "study.nested")}
    reads.reads.clear()
    copied = dict(nested)  # the key set and each value: a sub-block stays recording
    assert copied["k"] == 3 and isinstance(copied["deep"], RecordingParams)
    assert json.dumps({**params["panel"]["a"]["sampling"]}) == '{"seed": 0, "t": 1.0}'
    assert reads.reads == {("keys", "study.nested"), ("value", "study.nested.k"),
                           ("keys", "panel.a.sampling"), ("value", "panel.a.sampling.seed"),
                           ("value", "panel.a.sampling.t")}


def test_the_recording_params_are_read_only():
    params, _ = recording()
    with pytest.raises(TypeError):
        params["seed"] = 2  # type: ignore[index]
    assert not hasattr(params, "setdefault") and not hasattr(params, "update")


# ---- typed views: a field reads what it was computed from --------------------------


@dataclasses.dataclass(frozen=True)
class Inner:
    k: int
    z: int


@dataclasses.dataclass(frozen=True)
class Sampling:
    seed: int
    t: float


@dataclasses.dataclass(frozen=True)
class View:
    models: tuple[str, ...]
    n: int
    inner: Inner
    sampling: Sampling
    unpacked: Sampling
    helper: Inner
    grid: Mapping[str, tuple[int, ...]]
    nested: Mapping[str, Any]
    families: Mapping[str, str]

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> View:
        study = params["study"]
        models = tuple(params["panel"])
        return cls(
            models=models, n=study["n"],
            inner=Inner(k=study["nested"]["k"], z=study["nested"]["deep"]["z"]),
            sampling=Sampling(**{key: params["panel"]["a"]["sampling"][key]
                                 for key in ("seed", "t")}),
            unpacked=Sampling(**params["panel"]["b"]["sampling"]),
            helper=_inner(study["nested"]),
            grid={name: tuple(values) for name, values in study["grid"].items()},
            nested=study["nested"],
            families={m: params["panel"][m]["family"] for m in models})


def _inner(block: Mapping[str, Any]) -> Inner:
    deep = block["deep"]
    return Inner(k=block["k"], z=deep["z"])


def view_reads(path: str) -> set[tuple[str, str]]:
    """What using `path` (``inner.k``) of a fresh recording View reads."""
    params, reads = recording()
    value: Any = recording_view(View.from_params, params)
    assert reads.reads == set()  # building the view reads nothing for the step
    for name in path.split("."):
        value = getattr(value, name)
    return reads.reads


def test_a_view_field_reads_only_what_it_was_computed_from():
    assert view_reads("n") == {("value", "study.n")}
    assert view_reads("models") == {("keys", "panel")}  # a local it names
    assert view_reads("inner.k") == {("value", "study.nested.k")}
    assert view_reads("inner.z") == {("value", "study.nested.deep.z")}
    assert view_reads("inner") == set()  # a nested view: its fields read when used
    # a helper whose call is the field's value, returning a constructor call itself
    assert view_reads("helper.k") == {("value", "study.nested.k")}
    # ** credits a key to the field of its name, and the unpacked key set to each
    assert view_reads("sampling.seed") == {("value", "panel.a.sampling.seed")}
    assert view_reads("unpacked.t") == {("keys", "panel.b.sampling"),
                                        ("value", "panel.b.sampling.t")}
    assert view_reads("nested") == set()  # a block kept as such reads when read


def test_a_dict_field_reads_per_entry():
    params, reads = recording()
    view: Any = recording_view(View.from_params, params)
    assert view.grid["gamma"] == (1, 2)
    assert reads.reads == {("present", "study.grid.gamma"), ("value", "study.grid.gamma")}
    reads.reads.clear()
    assert view.families["b"] == "y"  # the entry of model b, which is in the panel
    assert reads.reads == {("present", "panel.b"), ("value", "panel.b.family")}
    reads.reads.clear()
    assert sorted(view.grid) == ["blur", "gamma"]  # listing it: everything
    assert reads.reads == {("keys", "study.grid"), ("value", "study.grid.gamma"),
                           ("value", "study.grid.blur")}


def test_a_panel_model_reads_only_the_fields_used(default_params):
    params, reads = recording(default_params)
    constructor = PanelModel.__dict__["from_params"]
    with recording_views({PanelModel}):
        model = PanelModel.from_params(params, "lumen-large")
        assert reads.reads == set()
        assert model.backend == "sim" and model.sampling.seed == 0
    assert PanelModel.__dict__["from_params"] is constructor  # put back
    assert reads.reads == {("value", "panel.lumen-large.backend"),
                           ("keys", "panel.lumen-large.sampling"),
                           ("value", "panel.lumen-large.sampling.seed")}
    assert views_of(globals()) == {View, PhilautiaParams, PanelModel}


def test_a_view_is_still_its_dataclass():
    params, reads = recording()
    view = recording_view(View.from_params, params)
    plain = View.from_params(PARAMS)
    assert isinstance(view, View) and dataclasses.is_dataclass(view)
    plain_dict = dataclasses.asdict(view)
    assert plain_dict["inner"] == {"k": 3, "z": 4} and type(plain_dict["grid"]) is dict
    assert dataclasses.replace(view, n=6).n == 6
    assert view.inner == plain.inner and plain.inner == view.inner
    assert hash(view.inner) == hash(plain.inner)
    for copied in (copy.copy(view.inner), copy.deepcopy(view), pickle.loads(pickle.dumps(view))):
        assert type(copied) in (View, Inner)
    assert type(copy.deepcopy(view).grid) is dict
    assert ("value", "study.grid.blur") in reads.reads  # a copy reads every field


# ---- what covers a read -----------------------------------------------------------------


def test_a_declared_key_covers_itself_and_everything_below_it():
    reads = [("value", "study.nested.k"), ("value", "study.nested.deep.z"),
             ("value", "study.n")]
    assert uncovered(reads, ["study.nested"], PARAMS) == [("value", "study.n")]
    assert uncovered(reads, ["study"], PARAMS) == []
    assert uncovered([("value", "study.nested")], ["study.nested.k"], PARAMS) == [
        ("value", "study.nested")]  # a block read whole needs all of it
    assert uncovered([("value", "study.nested")],
                     ["study.nested.k", "study.nested.deep.z"], PARAMS) == []


def test_a_key_set_is_covered_when_each_key_of_the_block_is_declared_within():
    keys = [("keys", "panel")]
    assert uncovered(keys, ["panel.a.family", "panel.b.family"], PARAMS) == []
    assert uncovered(keys, ["panel.a.family"], PARAMS) == keys  # one more model: no rerun
    assert uncovered([("keys", "study.empty")], ["study.n"], PARAMS) == [
        ("keys", "study.empty")]
    assert uncovered([("present", "panel.a.family"), ("empty", "study.nested"),
                      ("absent", "panel.a.also_in")], ["panel.a", "study.nested.k"],
                     PARAMS) == []


def test_the_truth_of_a_block_is_a_guard_when_the_step_looks_inside():
    assert uncovered([("empty", "study.nested")], ["study.n"], PARAMS) == [
        ("empty", "study.nested")]  # `if block:` alone
    assert uncovered([("empty", "study.nested"), ("absent", "study.nested.x")], ["study.n"],
                     PARAMS) == []  # `(block or {}).get("x")`


def test_run_settings_may_be_read_undeclared(params):
    params["panel"]["lumen-large"].update(max_requests=10, pricing={"input": 1.0})
    reads = [("value", "journal_dir"), ("value", "panel.lumen-large.max_requests"),
             ("value", "panel.lumen-large.pricing.input"),
             ("value", "panel.lumen-large.model_id")]
    assert uncovered(reads, [], params) == [("value", "panel.lumen-large.model_id")]
    # a model's block read whole: covered by its answer keys, run settings aside
    answer = [f"panel.lumen-large.{k}" for k in params["panel"]["lumen-large"]
              if k not in ("max_requests", "pricing")]
    assert uncovered([("value", "panel.lumen-large")], answer, params) == []


# ---- a planted violation, through the dispatcher, the record and the DAG ---------------


def planted(params: Mapping[str, Any], *, out: Path) -> None:
    """A step reading philautia.seed and philautia.ci."""
    out.write_text(f"{params['philautia']['seed']} {params['philautia']['ci']}")


def planted_view(params: PhilautiaParams, *, out: Path) -> None:
    """A step reading the typed view's ci (philautia.ci) only."""
    out.write_text(f"{params.ci}")


SNAKEFILE = """\
rule planted:
    output: out="planted.txt"
    params: dvc_params={keys}
    shell: "judgebias step philautia.planted --out out planted.txt"
"""


@pytest.mark.parametrize("step", [planted, planted_view])
def test_a_planted_undeclared_read_is_reported_and_declaring_it_clears_it(
        step, tmp_path, monkeypatch, default_params):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(PARAMS_ENV, raising=False)  # Snakemake's workflow sets it
    monkeypatch.setenv(RECORD_ENV, str(tmp_path / "reads"))
    monkeypatch.setattr("judgebias.workflow.step_dispatch.step_function", lambda target: step)
    run_step("philautia.planted", default_params, [], [["out", "planted.txt"]], [])
    record = json.loads(next((tmp_path / "reads").glob("philautia.planted.*.json")).read_text())
    assert record["outputs"] == ["planted.txt"] and "philautia.ci" in record["value"]

    snakefile = tmp_path / "Snakefile"
    snakefile.write_text(SNAKEFILE.format(keys=["philautia.seed"]))
    problems = check(snakefile, tmp_path / "reads", default_params)
    assert [(p.rule, p.read) for p in problems] == [("planted", ("value", "philautia.ci"))]
    assert "philautia.ci" in str(problems[0])

    snakefile.write_text(SNAKEFILE.format(keys=["philautia.seed", "philautia.ci"]))
    assert check(snakefile, tmp_path / "reads", default_params) == []


def test_a_step_job_without_a_record_is_reported(tmp_path, monkeypatch, default_params):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(PARAMS_ENV, raising=False)
    (tmp_path / "reads").mkdir()
    (tmp_path / "Snakefile").write_text(SNAKEFILE.format(keys=[]))
    problems = check(tmp_path / "Snakefile", tmp_path / "reads", default_params)
    assert [(p.rule, p.read) for p in problems] == [("planted", None)]
    assert "no record" in str(problems[0])


def test_recording_is_off_without_the_variable(tmp_path, monkeypatch, default_params):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(RECORD_ENV, raising=False)
    given = []

    def step(params: Mapping[str, Any], *, out: Path) -> None:
        given.append(params)

    monkeypatch.setattr("judgebias.workflow.step_dispatch.step_function", lambda target: step)
    run_step("philautia.planted", default_params, [], [["out", "planted.txt"]], [])
    assert given == [default_params] and type(given[0]) is dict
    assert not list(tmp_path.glob("**/*.json"))
