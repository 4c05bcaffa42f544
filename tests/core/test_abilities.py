"""What a study needs from a judge is checked against each model's abilities before any
call (judgebias.abilities, issue 41 item 6): a refusal names the study, the role, the
model, what is missing and the fallback; the fallback then passes; `judgebias validate`
and Snakemake refuse before any job runs; a panel model's own `abilities` override its
backend's defaults and change no job."""

from __future__ import annotations

import copy

import pytest
from helpers.project import BIN, make_project, planned_jobs, run, study_params

from judgebias.abilities import model_abilities, study_needs, unmet_needs
from judgebias.config import ConfigError, answer_keys, validate_params


def refusal(params: dict) -> str:
    with pytest.raises(ConfigError) as info:
        validate_params(params)
    return str(info.value)


def without(params: dict, key: str, **abilities) -> dict:
    params = copy.deepcopy(params)
    params["panel"][key]["abilities"] = abilities
    return params


def test_the_default_panel_meets_every_studys_needs(default_params):
    params = validate_params(default_params)
    assert unmet_needs(params) == []
    roles = {(n.study, n.role) for n in study_needs(params)}
    assert {("philautia", "evaluator"), ("mmb", "judge"), ("frame", "analysis judge"),
            ("birch", "labeller"), ("pomms", "judge")} <= roles


def test_a_judge_without_logprobs_is_refused_where_they_are_needed(default_params):
    message = refusal(without(default_params, "corvid-pro", answer_logprobs=False))
    lines = [line for line in message.splitlines() if "panel.corvid-pro" in line]
    assert any(line.strip().startswith("philautia (evaluator): panel.corvid-pro cannot "
                                       "give the answer token's log-probs") and
               "philautia.score: parsed" in line for line in lines), message
    assert any(line.strip().startswith("mmb (judge): panel.corvid-pro") and
               "leave the model out of mmb.models" in line for line in lines), message
    assert any(line.strip().startswith("pomms (judge)") for line in lines), message
    # BIRCH and FRAME read parsed verdicts and scores: no line for them
    assert not any(line.strip().startswith(("birch", "frame")) for line in lines)


def test_the_fallback_it_names_is_accepted(default_params):
    params = without(study_params(default_params, "philautia", "pomms"), "lumen-base",
                     answer_logprobs=False)
    assert "philautia (evaluator): panel.lumen-base" in refusal(params)
    params["philautia"]["score"] = "parsed"
    validate_params(params)


@pytest.mark.parametrize("abilities, expected", [
    ({"images_per_request": 1}, "frame (analysis judge): panel.corvid-pro cannot give 2 "
                                "images in one request (it takes 1)"),
    ({"system_prompt": False}, "frame (judge): panel.corvid-pro cannot give a system prompt"),
])
def test_frame_needs_two_images_and_a_system_prompt(default_params, abilities, expected):
    params = without(study_params(default_params, "frame"), "corvid-pro", **abilities)
    assert expected in refusal(params)


def test_birch_repeats_need_sampling(default_params):
    params = without(study_params(default_params, "birch"), "corvid-pro", temperature=False)
    validate_params(params)  # one verdict each: no sampling needed
    params["birch"]["repeats"] = 3
    message = refusal(params)
    assert "birch (judge): panel.corvid-pro cannot give sampling at a temperature above " \
           "0 (birch.repeats > 1 asks each verdict again)" in message
    assert "birch.repeats: 1" in message


def test_a_models_own_abilities_override_its_backends(default_params):
    params = validate_params(without(default_params, "lumen-mini", images_per_request=4))
    assert model_abilities(params, "lumen-mini").images_per_request == 4
    assert model_abilities(params, "lumen-base").images_per_request is None


def test_abilities_are_a_run_setting(default_params):
    """Stating a model's abilities changes which configurations pass, never an answer:
    no job declares them."""
    before = validate_params(default_params)
    after = validate_params(without(default_params, "lumen-mini", temperature=True))
    keys = ["panel.lumen-mini"]
    assert answer_keys(before, keys) == answer_keys(after, keys)
    assert "panel.lumen-mini.abilities" not in answer_keys(after, keys)


@pytest.mark.slow
def test_snakemake_and_validate_refuse_before_any_job(default_params, tmp_path):
    params = without(study_params(default_params, "philautia", small=True), "lumen-large",
                     answer_logprobs=False)
    project = make_project(tmp_path, params)
    checked = run([str(BIN / "judgebias"), "validate"], project, check=False)
    assert checked.returncode != 0
    assert "philautia (evaluator): panel.lumen-large" in checked.stderr + checked.stdout
    dry = run([str(BIN / "snakemake"), "-n", "--cores", "1"], project, check=False)
    assert dry.returncode != 0
    assert "philautia (evaluator): panel.lumen-large" in dry.stderr + dry.stdout
    assert not (project / ".judgebias").exists()  # no journal: nothing was called
    params["philautia"]["score"] = "parsed"
    (tmp_path / "fallback").mkdir()
    project = make_project(tmp_path / "fallback", params)
    assert sum(planned_jobs(project).values()) > 0
