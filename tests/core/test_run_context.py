"""The run context (judgebias.models.context): a model job's typed view of params.yaml.

It reads a key only when a job asks for it, so a job's reads stay those of the models it
calls; and what a simulated judge's backend reads is what its rule declares
(judgebias.models.registry.world_params), the promise behind "change a param, rerun only
what depends on it"."""

from __future__ import annotations

from pathlib import Path

from judgebias.config import validate_params
from judgebias.models.context import RunContext
from judgebias.models.limits import ApiLimits
from judgebias.models.panel import PanelModel
from judgebias.models.registry import build_backend, world_params
from judgebias.workflow.paramscheck import uncovered
from judgebias.workflow.paramsread import Reads, RecordingParams, recording_views


def _recorded(params: dict) -> tuple[RunContext, Reads]:
    reads = Reads()
    return RunContext(RecordingParams(params, reads)), reads


def _paths(reads: Reads) -> set[str]:
    return {path for kind, paths in reads.as_json().items() for path in paths}


def test_it_reads_nothing_until_asked_then_only_what_is_asked(params):
    params = validate_params(params)
    run, reads = _recorded(params)
    assert _paths(reads) == set()
    assert run.model("corvid-pro").model_id == "sim/corvid-pro"
    assert run.journal_dir == Path(params["journal_dir"])
    assert {p.split(".")[0] for p in _paths(reads)} == {"panel", "journal_dir"}
    assert not any(p.startswith("panel.") and not p.startswith("panel.corvid-pro")
                   for p in _paths(reads))


def test_values_are_typed_with_the_schema_defaults(params):
    params["max_failures"] = {"corvid-pro": 0.25}
    params = validate_params(params)
    run = RunContext.from_params(params)
    assert isinstance(run.journal_dir, Path) and run.seed == params["seed"]
    assert run.accepted_failures("corvid-pro") == 0.25
    assert run.accepted_failures("lumen-mini") == 0.0  # unlisted: none accepted
    assert run.limits("openai") == ApiLimits()  # no backends block: the defaults
    assert run.model("lumen-mini") is run.model("lumen-mini")  # resolved once
    assert run.opener("lumen") == params["families"]["lumen"]["sim"]["opener"]
    assert run.is_simulated_family("corvid") and run.is_panel_model("corvid-pro")
    assert not run.is_panel_model("no-such-model")


def test_a_sim_judges_backend_reads_only_what_world_params_declares(params):
    """A simulated judge preferring a real (API) model and a family without simulated
    traits asks of them only whether they are simulated: their backend and family block
    are declared, so making one simulated reruns the judge; nothing else of theirs is."""
    params["panel"]["gpt"] = {"backend": "openai", "model_id": "gpt-4o-2024-08-06",
                              "family": "api", "sampling": {},
                              "api_key_env": "OPENAI_API_KEY"}
    params["families"]["api"] = {"description": "a real family"}
    params["panel"]["corvid-pro"]["sim"]["preferences"] = {
        "models": {"gpt": 0.02, "lumen-mini": 0.01}, "families": {"api": 0.01}}
    params = validate_params(params)
    for role in ("evaluator", "generator"):
        run, reads = _recorded(params)
        with recording_views({PanelModel}):  # as a step's job records (step_dispatch)
            build_backend(run, "corvid-pro", role)
        declared = world_params(params, "corvid-pro", role)
        made = {(kind, path) for kind, paths in reads.as_json().items() for path in paths}
        assert uncovered(made, declared, params) == [], role
        assert "panel.gpt" not in declared  # its model id, sampling, ... change nothing
    assert "panel.gpt.backend" in world_params(params, "corvid-pro", "evaluator")
    assert "panel.gpt.backend" not in world_params(params, "corvid-pro", "generator")
