"""MMB's judge calls on the judging core: the simulated pairwise judge's planted p, p(A)
read back from the log-probs in either order shown, the documented degradation without
log-probs, the instruction writer, and the params checks."""

from __future__ import annotations

import copy
import json
import math

import pandas as pd
import pytest
import yaml
from helpers.mmb import judge_inputs

from judgebias.config import ConfigError, validate_params
from judgebias.judging.answers import LabelProbabilities
from judgebias.models.base import ChatRequest, Sampling
from judgebias.models.context import RunContext
from judgebias.models.journal import TooManyFailures
from judgebias.models.sim import SimBackend, SimModel
from judgebias.studies.mmb.data import synthetic
from judgebias.studies.mmb.jobs import grow_pool, judge_pairs
from judgebias.studies.mmb.params import SIM_TRAITS, builtin_pool, sampled
from judgebias.studies.mmb.sim import (
    PAIR_MARK,
    PairwiseTask,
    RephraseTask,
    landscape_key,
    position_bias,
    slope,
)
from judgebias.studies.mmb.sim import JudgeTraits as Traits

JUDGE = "corvid-pro"


@pytest.fixture
def params(default_params, tmp_path):
    params = copy.deepcopy(default_params)
    params["journal_dir"] = str(tmp_path / "journal")
    return validate_params(params)


def judged(params: dict, files: tuple[str, str]) -> pd.DataFrame:
    """`JUDGE`'s judgements rows of the pair table and pool `files`, the job given what
    the judge step gives it (the ``mmb:`` values it needs, steps.judge)."""
    mmb = params["mmb"]
    return judge_pairs(RunContext(params), JUDGE, *files, prompt=mmb["prompt"],
                       order=mmb["order"], order_seed=mmb["order_seed"],
                       how=sampled(params, JUDGE))


def test_the_pool_has_forty_instructions_and_one_expert_per_planted_style(default_params):
    pool = builtin_pool()
    assert len(pool) >= 40 and len({p["id"] for p in pool}) == len(pool)
    assert {p["kind"] for p in pool} == {"definition", "template", "rephrasing", "persona"}
    experts = default_params["panel"][JUDGE]["sim"]["mmb"]["experts"]
    assert set(experts) == set(synthetic.STYLES)
    for phrase in experts.values():
        assert sum(phrase.casefold() in p["text"].casefold() for p in pool) == 1


def test_sim_judge_answers_its_planted_probability(tmp_path):
    traits = {"experts": {"ink sketch": "comic book inker"}, "gamma": 6.0,
              "position_bias": 0.5, "brightness_bias": 1.0, "noise": 0.0}
    model = SimModel.from_params("j", "f", {"caption_quality": 1.0, "style": {
        "opener": "Here", "signature": "calm"}, "mmb": traits})
    backend = SimBackend({"sim/j": model}, tasks=[PairwiseTask()])
    first = synthetic.render("ink sketch", 0.9, 32, 1)
    second = synthetic.render("ink sketch", 0.4, 32, 2)
    instruction = "You are a comic book inker with an eye for line work. Judge."
    request = ChatRequest(model="sim/j", prompt=instruction + PAIR_MARK + ' "x"',
                          images=(synthetic.png_bytes(first), synthetic.png_bytes(second)),
                          sampling=Sampling(temperature=0, top_logprobs=5))
    answer = backend.answer(request)
    seen = [synthetic.perceive(synthetic.png_bytes(i)) for i in (first, second)]
    parsed = Traits(**traits, world=landscape_key(0, "j"))
    assert slope(parsed, instruction, "ink sketch") == 6.0
    logit = (6.0 * (seen[0].quality - seen[1].quality) + position_bias(parsed, instruction)
             + 1.0 * (seen[0].brightness - seen[1].brightness))
    read = LabelProbabilities().parse(answer.text, answer.tokens)
    assert read.status == "ok" and answer.text == "Judgement: [[A]]"
    assert read.probs["A"] == pytest.approx(1 / (1 + math.exp(-logit)), rel=1e-9)
    other = slope(parsed, "Which image is better?", "ink sketch")
    assert other != 6.0


def test_each_judge_and_world_seed_has_its_own_landscape():
    """Issue 20: the slopes and position biases of non-expert instructions are drawn per
    (world seed, judge), not shared by every judge; a judge with no bias is calibrated
    everywhere."""
    pool = [p["text"] for p in builtin_pool()]
    styles = list(synthetic.STYLES)

    def landscape(world: str, **traits: float) -> list[float]:
        judge = Traits(experts={}, world=world, **traits)
        return ([slope(judge, a, s) for a in pool for s in styles]
                + [position_bias(judge, a) for a in pool])

    mine = landscape(landscape_key(0, "a"))
    assert mine == landscape(landscape_key(0, "a"))  # deterministic
    assert mine != landscape(landscape_key(0, "b")) != landscape(landscape_key(1, "a"))
    assert Traits.numeric_traits() == SIM_TRAITS  # what params checks is what sim reads
    unbiased = landscape(landscape_key(0, "a"), miscalibrated=0.0, position_bias=0.0)
    assert unbiased == [6.0] * (len(pool) * len(styles)) + [0.0] * len(pool)


def test_writer_rewords_an_instruction():
    model = SimModel.from_params("w", "f", {"caption_quality": 1.0, "style": {
        "opener": "Here", "signature": "calm"}})
    backend = SimBackend({"sim/w": model}, tasks=[RephraseTask()])
    prompt = ("Rewrite the following instruction for judging which of two generated images "
              "is better.\n\nInstruction: Pick the image you think is the better generation.")
    answer = backend.answer(ChatRequest(model="sim/w", prompt=prompt))
    assert answer.ok and answer.text != "Pick the image you think is the better generation."
    assert "\n" not in answer.text


def test_both_orders_map_back_to_image_a(params, tmp_path):
    params["mmb"]["order"] = "both"
    rows = judged(params, judge_inputs(tmp_path))
    assert len(rows) == 6 and set(rows["p_source"]) == {"logprobs"}
    for _, group in rows.groupby("instruction"):
        shown = group.set_index("order")
        first_ab = json.loads(shown.loc["ab", "probs"])["A"]
        first_ba = json.loads(shown.loc["ba", "probs"])["A"]
        assert shown.loc["ab", "p_a"] == pytest.approx(first_ab)
        assert shown.loc["ba", "p_a"] == pytest.approx(1 - first_ba)
    again = judged(params, judge_inputs(tmp_path))  # from the journal
    pd.testing.assert_series_equal(rows["p_a"], again["p_a"])


def test_no_logprobs_degrades_to_the_smoothed_choice(params, tmp_path):
    params["panel"][JUDGE]["sampling"]["top_logprobs"] = 0
    rows = judged(params, judge_inputs(tmp_path))
    assert set(rows["status"]) == {"no_logprobs"}
    assert set(rows["p_source"]) == {"smoothed_choice"}
    assert set(rows["p_a"].round(6)) <= {round(2 / 3, 6), round(1 / 3, 6)}


def test_a_failed_answer_keeps_its_status_and_no_number(params, tmp_path):
    params["panel"][JUDGE]["sim"].pop("mmb")  # the sim cannot answer: failed, not a number
    with pytest.raises(TooManyFailures):  # a failed call never satisfies the job ...
        judged(params, judge_inputs(tmp_path))
    params["max_failures"] = {JUDGE: 1.0}  # ... unless the user accepts failures
    rows = judged(params, judge_inputs(tmp_path))
    assert set(rows["status"]) == {"failed"} and rows["p_a"].isna().all()
    assert set(rows["p_source"]) == {"none"}


def test_grow_pool_with_a_panel_writer(params):
    base = pd.DataFrame(builtin_pool())
    grown = grow_pool(RunContext(params), "lumen-large", 4, 0, base)
    assert list(grown["id"]) == [f"gen-lumen-large-0{i}" for i in range(1, 5)]
    assert not set(grown["text"]) & set(base["text"])
    assert set(grown["source"]) <= set(base["id"])


def test_params_checks(default_params):
    params = copy.deepcopy(default_params)
    params["mmb"]["report"]["k"] = 5
    params["panel"][JUDGE]["sim"].pop("mmb")
    params["mmb"]["instructions"]["grow"] = {"writer": "nobody", "n": 2}
    with pytest.raises(ConfigError) as error:
        validate_params(params)
    text = str(error.value)
    assert "mmb.report.k: 5 is not one of mmb.clustering.ks" in text
    assert f"panel.{JUDGE}.sim.mmb: a simulated judge needs its planted MMB traits" in text
    assert "mmb.instructions.grow.writer: model 'nobody'" in text


def test_ensembles_larger_than_the_pool_can_hold_are_rejected(default_params, tmp_path):
    """n_prompts is checked against the built-in pool plus the extra file and grow.n in
    validate, before any job; 44 + 2 extra + 3 grown = 49 is the most it can hold."""
    extra = tmp_path / "extra.yaml"
    extra.write_text(yaml.safe_dump([{"id": f"mine-{i}", "kind": "manual", "text": f"t{i}"}
                                     for i in range(2)]))
    params = copy.deepcopy(default_params)
    params["mmb"]["instructions"] = {"extra": str(extra),
                                     "grow": {"writer": "lumen-large", "n": 3}}
    params["mmb"]["design"]["n_prompts"] = [10, 49]
    validate_params(copy.deepcopy(params))
    params["mmb"]["design"]["n_prompts"] = [10, 50]
    with pytest.raises(ConfigError, match=r"mmb\.design\.n_prompts: 50 prompts per "
                                          r"ensemble, but the pool can hold at most 49"):
        validate_params(params)
