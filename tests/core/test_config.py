"""params.yaml validation: bad input is an error naming the key, before any job runs."""

from __future__ import annotations

import pytest
import yaml

from judgebias.config import ConfigError, get_key, load_config, validate_params
from judgebias.study import active, study_models


def test_default_params_are_valid(params):
    config = validate_params(params)
    models = study_models(config, "philautia")
    assert len(models) >= 6
    assert len({config["panel"][m]["family"] for m in models}) >= 2
    for key, model in config["panel"].items():
        assert {"backend", "model_id", "family", "sampling", "resources"} <= set(model), key


def test_defaults_are_filled(params):
    del params["philautia"]["ddof"]
    assert validate_params(params)["philautia"]["ddof"] == 0


def _error(params) -> str:
    with pytest.raises(ConfigError) as info:
        validate_params(params)
    return str(info.value)


def test_unknown_key_is_named(params):
    params["panel"]["lumen-large"]["sampling"]["temprature"] = 0.5
    message = _error(params)
    assert "panel.lumen-large.sampling.temprature: unknown key" in message
    assert "temperature" in message  # the allowed keys are listed


def test_a_dot_in_a_name_the_user_gives_is_refused(params):
    """A panel model, a family or a dataset is addressed by its dotted key path in the
    rules and in DVC (``panel.gpt-4.1.sampling`` would split inside the name)."""
    params["panel"]["gpt-4.1"] = params["panel"].pop("corvid-pro")
    params["families"]["v1.5"] = {"description": "a family"}
    with pytest.raises(ConfigError) as info:
        validate_params(params)
    assert "panel: the name 'gpt-4.1' does not match" in str(info.value)
    assert "families: the name 'v1.5' does not match" in str(info.value)
    assert "write gpt-4-1 for gpt-4.1" in str(info.value)


def test_wrong_type_is_named(params):
    params["philautia"]["n_bootstrap"] = "many"
    assert "philautia.n_bootstrap: 'many' is not of type 'integer'" in _error(params)


def test_model_referenced_but_not_defined(params):
    params["philautia"]["models"].append("gpt-9")
    assert "philautia.models[6]: model 'gpt-9' is referenced but not defined" in _error(params)


def test_undefined_family_and_preference(params):
    params["panel"]["lumen-large"]["family"] = "nope"
    params["panel"]["corvid-pro"]["sim"]["preferences"] = {"models": {"ghost": 0.1}}
    message = _error(params)
    assert "panel.lumen-large.family: family 'nope' is not defined" in message
    assert "panel.corvid-pro.sim.preferences.models.ghost" in message


def test_also_in_families_are_checked(params):
    params["panel"]["lumen-large"]["also_in"] = ["corvid", "nope"]
    params["panel"]["lumen-base"]["also_in"] = ["lumen"]
    message = _error(params)
    assert "panel.lumen-large.also_in[1]: family 'nope' is not defined" in message
    assert "panel.lumen-large.also_in[0]" not in message
    assert "panel.lumen-base.also_in[0]: 'lumen' is already the model's family" in message
    params["panel"]["lumen-base"]["also_in"] = ["corvid", "corvid"]
    assert ("panel.lumen-base.also_in[1]: 'corvid' is listed twice (first at "
            "panel.lumen-base.also_in[0])") in _error(params)  # uniqueItems


def test_also_in_reaches_the_family_sub_matrices(params):
    from judgebias.studies.philautia.params import PhilautiaParams

    params["panel"]["lumen-large"]["also_in"] = ["corvid"]
    families = PhilautiaParams.from_params(validate_params(params)).families
    assert families["lumen-large"] == ("lumen", "corvid")
    assert families["lumen-base"] == ("lumen",)


def test_unknown_prompt_and_reference_mismatch(params):
    params["philautia"]["settings"]["ref_free"]["prompt"] = "gveval_typo"
    params["philautia"]["settings"]["ref_based"]["references"] = False
    message = _error(params)
    assert "philautia.settings.ref_free.prompt: unknown prompt id 'gveval_typo'" in message
    assert "philautia.settings.ref_based.references" in message


def test_sim_block_required_exactly_for_sim(params):
    params["panel"]["lumen-large"]["backend"] = "openai"
    assert "panel.lumen-large.sim: required exactly when backend is 'sim'" in _error(params)


def test_missing_required_key(params):
    del params["panel"]["corvid-lite"]["model_id"]
    assert "panel.corvid-lite: 'model_id' is a required property" in _error(params)


def test_load_config_reports_file(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text("seed: [unclosed\n")
    with pytest.raises(ConfigError, match=str(path)):
        load_config(path)
    with pytest.raises(ConfigError, match="file not found"):
        load_config(tmp_path / "absent.yaml")


def test_get_key(params):
    assert get_key(params, "panel.lumen-large.family") == "lumen"


def test_cli_validate_fails_before_any_job(tmp_path, params, capsys):
    from judgebias.cli import main

    params["panel"]["lumen-large"]["sampling"]["temperature"] = -1
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(params))
    assert main(["--params", str(path), "validate"]) == 2
    assert "panel.lumen-large.sampling.temperature" in capsys.readouterr().err


def test_philautia_models_default_to_the_whole_panel(params):
    del params["philautia"]["models"]
    config = validate_params(params)
    assert study_models(config, "philautia") == list(params["panel"])
    params["philautia"]["models"] = ["lumen-large", "lumen-mini", "corvid-pro"]
    assert study_models(validate_params(params), "philautia") == [
        "lumen-large", "lumen-mini", "corvid-pro"]


def test_params_without_pomms_run_philautia_only(params):
    del params["pomms"], params["mmb"], params["frame"], params["birch"]
    del params["leaderboard"]  # its pomms method needs the pomms block
    config = validate_params(params)
    assert [s.name for s in active(config)] == ["philautia"]
    assert "pomms" not in config


def test_pomms_without_philautia_is_an_error(params):
    del params["philautia"]
    assert "pomms: needs the philautia study" in _error(params)


def test_duplicate_sim_signature_is_rejected(params):
    params["panel"]["corvid-lite"]["sim"]["signature"] = "Vivid"  # lumen-large's, any case
    message = _error(params)
    assert "panel.corvid-lite.sim.signature: signature 'Vivid' is also panel.lumen-large's" \
        in message


def test_scene_word_in_a_sim_style_is_rejected(params):
    params["panel"]["lumen-mini"]["sim"]["signature"] = "red"
    params["families"]["corvid"]["sim"]["opener"] = "A circle shows"
    message = _error(params)
    assert "panel.lumen-mini.sim.signature: 'red' uses scene words ['red']" in message
    assert "families.corvid.sim.opener: 'A circle shows' uses scene words ['circle']" in message


def test_missing_nocaps_files_are_named(params, tmp_path):
    params["philautia"]["dataset"]["name"] = "nocaps"
    params["philautia"]["dataset"]["nocaps"]["annotations"] = str(tmp_path / "absent.json")
    params["philautia"]["dataset"]["nocaps"]["image_dir"] = str(tmp_path)
    message = _error(params)
    assert f"philautia.dataset.nocaps.annotations: file {tmp_path / 'absent.json'} does not exist" \
        in message
    assert "philautia.dataset.nocaps.image_dir" not in message  # that folder exists
    (tmp_path / "absent.json").write_text("{}")
    params["philautia"]["dataset"]["nocaps"]["image_dir"] = str(tmp_path / "no-images")
    assert f"philautia.dataset.nocaps.image_dir: folder {tmp_path / 'no-images'} does not exist" \
        in _error(params)


def test_pomms_judgement_setting_and_select(params):
    from judgebias.studies.pomms.params import judgement_setting

    del params["leaderboard"]  # its pomms method asks in Pomms' judgement setting
    config = validate_params(params)
    assert config["pomms"]["judgement_setting"] == "ref_based"
    assert config["pomms"]["select"] == "min_philautia"
    assert config["pomms"]["min_members"] == 2
    assert judgement_setting(config["pomms"]) == "ref_based"
    del params["pomms"]["judgement_setting"], params["pomms"]["select"]
    config = validate_params(params)
    assert config["pomms"]["judgement_setting"] is None  # default: the `setting`
    assert judgement_setting(config["pomms"]) == config["pomms"]["setting"]
    assert config["pomms"]["select"] == "min_philautia"  # the paper's Table 2 rule
    params["pomms"]["judgement_setting"] = "ref_typo"
    params["pomms"]["select"] = "smallest"
    message = _error(params)
    assert "pomms.select: 'smallest' is not one of" in message
    del params["pomms"]["select"]
    assert "pomms.judgement_setting: 'ref_typo' is not a philautia setting" in _error(params)


def test_missing_pomms_dataset_files_are_named(params, tmp_path):
    params["pomms"]["datasets"]["bench"] = {"format": "table", "path": str(tmp_path / "b.csv"),
                                            "image_dir": str(tmp_path / "imgs")}
    params["pomms"]["datasets"]["nopath"] = {"format": "nebula"}
    message = _error(params)
    assert f"pomms.datasets.bench.path: file {tmp_path / 'b.csv'} does not exist" in message
    assert f"pomms.datasets.bench.image_dir: folder {tmp_path / 'imgs'} does not exist" \
        in message
    assert "pomms.datasets.nopath.path: required for format 'nebula'" in message


def test_cli_validate_names_a_missing_nocaps_annotations_file(tmp_path, params, capsys):
    from judgebias.cli import main

    params["philautia"]["dataset"]["name"] = "nocaps"
    params["philautia"]["dataset"]["nocaps"].update(annotations=str(tmp_path / "captions.json"),
                                       image_dir=str(tmp_path))
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(params))
    assert main(["--params", str(path), "validate"]) == 2
    err = capsys.readouterr().err
    absent = tmp_path / "captions.json"
    assert f"philautia.dataset.nocaps.annotations: file {absent} does not exist" in err
    (tmp_path / "captions.json").write_text("{}")
    assert main(["--params", str(path), "validate"]) == 0
    out = capsys.readouterr().out
    assert ("valid (6 panel models; studies: philautia, pomms, mmb, frame, birch, "
            "leaderboard)") in out


def test_cli_validate_names_unset_secrets(tmp_path, params, capsys, monkeypatch):
    from judgebias.cli import main

    monkeypatch.delenv("JUDGEBIAS_TEST_UNSET_KEY", raising=False)
    model = params["panel"]["corvid-pro"]
    model.pop("sim")
    model.update(backend="openai", api_key_env="JUDGEBIAS_TEST_UNSET_KEY")
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(params))
    assert main(["--params", str(path), "validate"]) == 2
    assert ("panel.corvid-pro.api_key_env: environment variable JUDGEBIAS_TEST_UNSET_KEY is "
            "not set") in capsys.readouterr().err
