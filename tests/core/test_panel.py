"""The typed panel model (judgebias.models.panel): what it reads from a validated panel
entry is exactly what the jobs used to read from the dict, so journal keys, request
bodies and the tables' `sampling` column stay byte-identical."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from judgebias.config import validate_params
from judgebias.models.base import Sampling
from judgebias.models.context import RunContext
from judgebias.models.entry import Pricing, Resources
from judgebias.models.panel import PanelModel, panel_models
from judgebias.models.registry import backend_version, sim_traits


def test_every_default_model_resolves_to_its_entry(default_params):
    models = panel_models(default_params)
    assert list(models) == list(default_params["panel"])
    for key, model in models.items():
        entry = default_params["panel"][key]
        assert (model.key, model.backend, model.model_id, model.revision, model.family) == (
            key, entry["backend"], entry["model_id"], entry["revision"], entry["family"])
        assert model.also_in == tuple(entry.get("also_in", ()))
        assert model.sim == entry.get("sim")
        # the `sampling` column of every answer table: the same JSON as the dict's
        assert (json.dumps(model.sampling.as_dict(), sort_keys=True)
                == json.dumps(entry["sampling"], sort_keys=True))
        if model.sim is not None:
            opener = default_params["families"][model.family]["sim"]["opener"]
            assert model.sim_traits(opener) == sim_traits(RunContext(default_params), key)


def test_optional_fields(params):
    entry = params["panel"]["corvid-pro"]
    entry.pop("sim")
    entry.update(backend="vllm", resources={"gpus": 2, "mem_mb": 9000},
                 engine={"dtype": "bfloat16"}, max_requests=10,
                 pricing={"input_per_mtok": 2.5, "output_per_mtok": 10})
    model = PanelModel.from_params(validate_params(params), "corvid-pro")
    assert model.resources == Resources(gpus=2, mem_mb=9000) and model.gpus == 2
    assert model.pricing == Pricing(2.5, 10, image_tokens=765)  # the schema's default
    assert model.engine == {"dtype": "bfloat16"} and model.max_requests == 10
    assert isinstance(model.sampling, Sampling)
    assert model.label == f"panel.corvid-pro (vllm {model.model_id})"
    with pytest.raises(ValueError, match="not a simulated model"):
        model.sim_traits("An opener")
    with pytest.raises(KeyError):
        PanelModel.from_params(params, "no-such-model")


@pytest.mark.parametrize(("gpus", "engine", "expected"), [
    (2, {"dtype": "bfloat16"}, {"dtype": "bfloat16", "tensor_parallel_size": 2}),
    (4, {"tensor_parallel_size": 2}, {"tensor_parallel_size": 2}),  # the engine block wins
    (1, {}, {}),  # vLLM's own default, 1: the key of a one-GPU model is unchanged
    (0, {}, {}),
])
def test_a_vllm_model_is_split_over_its_gpus_unless_the_engine_says_otherwise(
        params, gpus, engine, expected):
    entry = params["panel"]["corvid-pro"]
    entry.pop("sim")
    entry.update(backend="vllm", resources={"gpus": gpus}, engine=engine)
    model = PanelModel.from_params(validate_params(params), "corvid-pro")
    assert model.engine_args == expected
    assert model.engine == engine  # params as written: the TP default is derived
    # what answers is part of the journal key: the derived size too
    assert backend_version(model) == backend_version(replace(model, engine=expected))
    if expected != engine:  # the same block on one GPU is another engine
        assert backend_version(model) != backend_version(
            replace(model, resources=Resources(gpus=1)))
