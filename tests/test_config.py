"""params.yaml validation: bad input is an error naming the key, before any job runs."""

from __future__ import annotations

import pytest
import yaml

from judgebias.config import ConfigError, get_key, load_config, validate_params


def test_default_params_are_valid(params):
    config = validate_params(params)
    assert len(config["philautia"]["models"]) >= 6
    assert len({config["models"][m]["family"] for m in config["philautia"]["models"]}) >= 2
    for key, model in config["models"].items():
        assert {"backend", "model_id", "family", "sampling", "resources"} <= set(model), key


def test_defaults_are_filled(params):
    del params["philautia"]["ddof"]
    assert validate_params(params)["philautia"]["ddof"] == 0


def _error(params) -> str:
    with pytest.raises(ConfigError) as info:
        validate_params(params)
    return str(info.value)


def test_unknown_key_is_named(params):
    params["models"]["lumen-large"]["sampling"]["temprature"] = 0.5
    message = _error(params)
    assert "models.lumen-large.sampling.temprature: unknown key" in message
    assert "temperature" in message  # the allowed keys are listed


def test_wrong_type_is_named(params):
    params["philautia"]["n_bootstrap"] = "many"
    assert "philautia.n_bootstrap: 'many' is not of type 'integer'" in _error(params)


def test_model_referenced_but_not_defined(params):
    params["philautia"]["models"].append("gpt-9")
    assert "philautia.models[6]: model 'gpt-9' is referenced but not defined" in _error(params)


def test_undefined_family_and_preference(params):
    params["models"]["lumen-large"]["family"] = "nope"
    params["models"]["corvid-pro"]["sim"]["preferences"] = {"models": {"ghost": 0.1}}
    message = _error(params)
    assert "models.lumen-large.family: family 'nope' is not defined" in message
    assert "models.corvid-pro.sim.preferences.models.ghost" in message


def test_unknown_prompt_and_reference_mismatch(params):
    params["philautia"]["settings"]["ref_free"]["prompt"] = "gveval_typo"
    params["philautia"]["settings"]["ref_based"]["references"] = False
    message = _error(params)
    assert "philautia.settings.ref_free.prompt: unknown prompt id 'gveval_typo'" in message
    assert "philautia.settings.ref_based.references" in message


def test_sim_block_required_exactly_for_sim(params):
    params["models"]["lumen-large"]["backend"] = "openai"
    assert "models.lumen-large.sim: required exactly when backend is 'sim'" in _error(params)


def test_missing_required_key(params):
    del params["models"]["corvid-lite"]["model_id"]
    assert "models.corvid-lite: 'model_id' is a required property" in _error(params)


def test_load_config_reports_file(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text("seed: [unclosed\n")
    with pytest.raises(ConfigError, match=str(path)):
        load_config(path)
    with pytest.raises(ConfigError, match="file not found"):
        load_config(tmp_path / "absent.yaml")


def test_get_key(params):
    assert get_key(params, "models.lumen-large.family") == "lumen"


def test_cli_validate_fails_before_any_job(tmp_path, params, capsys):
    from judgebias.cli import main

    params["models"]["lumen-large"]["sampling"]["temperature"] = -1
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(params))
    assert main(["--params", str(path), "validate"]) == 2
    assert "models.lumen-large.sampling.temperature" in capsys.readouterr().err
