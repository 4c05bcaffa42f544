"""BIRCH's synthetic world, simulated tasks, jobs helpers and params checks (fast)."""

from __future__ import annotations

import copy
import json

import numpy as np
import pandas as pd
import pytest

from judgebias.config import ConfigError, validate_params
from judgebias.data.scenes import Scene, SceneObject, render, to_png_bytes
from judgebias.models.base import ChatRequest, Sampling
from judgebias.models.sim import SimBackend, SimModel
from judgebias.prompts import fields as prompt_fields
from judgebias.prompts import render as render_prompt
from judgebias.studies.birch import jobs, sim, vqa
from judgebias.studies.birch.data.synthetic import human_preference, synthetic_pairs
from judgebias.studies.birch.params import validate

SCENE = Scene("white", (SceneObject("circle", "red", "large", "left"),
                        SceneObject("square", "blue", "small", "right")))
IMAGE = to_png_bytes(render(SCENE, 128))
QUERY = "What colour is the shape on the left?"
RIGHT = "The shape on the left is red."
WRONG = "The shape on the left is green."
DETAIL = "The shape on the right is a square. The background is white."


def backend(**traits: float) -> SimBackend:
    model = SimModel.from_params("m", "f", {"caption_quality": 1.0,
                                            "style": {"opener": "Here", "signature": "fine"},
                                            "birch": traits})
    return SimBackend({"sim/m": model}, seed=1)


def ask(sim_backend: SimBackend, prompt_id: str, fields: dict, image: bool = True,
        seed: int = 0) -> str:
    request = ChatRequest("sim/m", render_prompt(prompt_id, fields),
                          images=(IMAGE,) if image else (),
                          sampling=Sampling(temperature=0.0, seed=seed))
    response = sim_backend.answer(request)
    assert response.ok, response.error
    return response.text


def test_facts_round_trip_and_answers_count_what_they_say():
    truth = vqa.true_facts(SCENE)
    for fact in truth.values():
        assert vqa.read_facts(vqa.fact_sentence(fact)) == [fact]
    assert vqa.asked(QUERY) == ("left", "color")
    rng = np.random.default_rng(0)
    for correct in (True, False):
        for details in range(4):
            text, given = vqa.write_answer(SCENE, truth["left", "color"], correct, details, 2,
                                           rng)
            facts = vqa.read_facts(text)
            assert len(facts) == 1 + given and given == min(details, len(truth) - 1)
            false = [f for f in facts if not vqa.is_true(f, truth)]
            assert len(false) == (0 if correct else 1)
            assert sum(s in text for s in vqa.FILLERS) == 2


def test_simulated_humans_prefer_correct_then_informative():
    assert human_preference(True, False, 0, 3) == "A"
    assert human_preference(False, True, 3, 0) == "B"
    assert human_preference(True, True, 1, 2) == "B"
    assert human_preference(False, False, 2, 1) == "A"
    assert human_preference(True, True, 2, 2) == "tie"


def test_synthetic_pairs_carry_their_planted_truth(tmp_path):
    pairs = synthetic_pairs({"n_pairs": 40, "p_correct": 0.5, "max_details": 3,
                             "max_padding": 3, "image_size": 128}, 7, tmp_path)
    assert len(pairs) == 40 and all((tmp_path / f"{p}.png").exists() for p in pairs["pair_id"])
    for row in pairs.itertuples():
        assert len(vqa.read_facts(row.answer_a)) == 1 + row.details_a
        assert row.preference == human_preference(row.correct_a, row.correct_b,
                                                  row.details_a, row.details_b)
    again = synthetic_pairs({"n_pairs": 40, "p_correct": 0.5, "max_details": 3,
                             "max_padding": 3, "image_size": 128}, 7, tmp_path / "again")
    assert again["answer_a"].tolist() == pairs["answer_a"].tolist()


def test_judge_with_no_pull_but_correctness_and_sharp_eyes_picks_the_true_answer():
    sharp = backend(perception=1.0, image_use=1.0, informativeness=0.0, correctness=5.0,
                    noise=0.01)
    fields = {"Query": QUERY, "AnswerA": WRONG, "AnswerB": RIGHT}
    assert ask(sharp, "birch_judge_base", fields).endswith("[[B]]")
    # without the image nothing can be caught: the tie of utilities goes to noise only,
    # and a pull towards detail decides
    detailed = {"Query": QUERY, "AnswerA": f"{WRONG} {DETAIL}", "AnswerB": RIGHT}
    blindfolded = backend(perception=1.0, image_use=1.0, informativeness=1.0,
                          correctness=5.0, noise=0.01)
    assert ask(blindfolded, "birch_judge_no_image", detailed, image=False).endswith("[[A]]")
    assert ask(blindfolded, "birch_judge_base", detailed).endswith("[[B]]")


def test_reference_contradictions_and_omissions_are_penalised():
    trusting = backend(perception=0.0, image_use=0.0, informativeness=1.0, correctness=5.0,
                       reference_trust=1.0, omission=3.0, noise=0.01)
    fields = {"Query": QUERY, "AnswerA": f"{WRONG} {DETAIL}", "AnswerB": RIGHT,
              "Reference": RIGHT}
    # the wrong answer contradicts the reference, its details are not in it: B
    assert ask(trusting, "birch_judge_reference", fields).endswith("[[B]]")
    # with an anchor that holds every detail, the correct detailed answer wins
    fields = {"Query": QUERY, "AnswerA": f"{RIGHT} {DETAIL}", "AnswerB": RIGHT,
              "Reference": f"{RIGHT} {DETAIL}"}
    assert ask(trusting, "birch_judge_reference", fields).endswith("[[A]]")
    # a caption is not a reference: details it does not mention cost nothing
    fields = {"Query": QUERY, "AnswerA": f"{RIGHT} {DETAIL}", "AnswerB": RIGHT,
              "Caption": "A large red circle on the left."}
    assert ask(trusting, "birch_judge_caption", fields).endswith("[[A]]")


def test_anchor_repairs_false_facts_with_perception():
    fields = {"Query": QUERY, "AnswerA": f"{WRONG} {DETAIL}", "AnswerB": RIGHT}
    repaired = jobs.merged_anchor(ask(backend(perception=1.0), "birch_anchor", fields))
    assert vqa.read_facts(repaired) == vqa.read_facts(f"{RIGHT} {DETAIL}")
    kept = jobs.merged_anchor(ask(backend(perception=0.0), "birch_anchor", fields))
    assert vqa.read_facts(kept)[0] == vqa.read_facts(WRONG)[0]  # A's version, unrepaired
    assert jobs.merged_anchor("no anchor here") is None


def test_reference_answer_is_right_with_perception():
    assert ask(backend(perception=1.0), "birch_reference", {"Query": QUERY}) == RIGHT
    wrong = ask(backend(perception=0.0), "birch_reference", {"Query": QUERY})
    assert vqa.read_facts(wrong)[0].key == ("left", "color") and wrong != RIGHT


def test_labeller_counts_facts_without_the_image():
    labeller = backend(label_noise=0.01)
    fields = {"Query": QUERY, "AnswerA": RIGHT, "AnswerB": f"{WRONG} {DETAIL}"}
    assert ask(labeller, "birch_informativeness", fields, image=False).endswith("[[B]]")


def test_lengthening_adds_words_and_no_information():
    short = RIGHT
    for target in (9, 14, 23, 40):
        longer = ask(backend(), "birch_lengthen", {"Query": QUERY, "Answer": short,
                                                   "Words": str(target)}, image=False)
        assert abs(len(longer.split()) - target) <= 2
        assert vqa.read_facts(longer) == vqa.read_facts(short)


def test_verdicts_map_back_to_the_pair_and_keep_ties_and_failures():
    sides = jobs.to_pair_side(pd.Series(["ok", "ok", "tie", "unparseable", "ok"]),
                              pd.Series(["A", "A", "C", None, "B"]),
                              pd.Series(["ab", "ba", "ab", "ab", "ba"]))
    assert sides == ["A", "B", "tie", None, "A"]


def test_equalised_pairs_replace_the_shorter_answer_and_count_drops():
    pairs = pd.DataFrame({"pair_id": ["p1", "p2", "p3", "p4"],
                          "answer_a": ["one two", "a b c d e f g h i j k", "x y", "same"],
                          "answer_b": ["a b c d e f", "short", "x y z", "same"]})
    items = jobs.lengthen_items(pairs)
    assert items["pair_id"].tolist() == ["p1", "p2", "p3"]
    assert items["shorter_side"].tolist() == ["A", "B", "A"]
    assert items["words"].tolist() == ["6", "11", "3"]
    texts = pd.DataFrame({"pair_id": ["p1", "p2", "p3"],
                          "step": ["lengthen_A", "lengthen_B", "lengthen_A"],
                          "text": ["one two three four five six", "s h o r t e n e d", None]})
    kept, counts = jobs.equalised_pairs(pairs, texts, tolerance=5)
    assert kept["pair_id"].tolist() == ["p1", "p2", "p3", "p4"]
    assert kept.loc[0, "answer_a"] == "one two three four five six"
    assert counts == {"pairs": 4, "lengthened": 2, "failed": 1, "too_far_apart": 0,
                      "kept": 4}
    kept, counts = jobs.equalised_pairs(pairs, texts, tolerance=1)  # p2: 11 vs 9
    assert counts["too_far_apart"] == 1 and "p2" not in kept["pair_id"].tolist()


def test_params_errors_name_the_key(default_params):
    params = copy.deepcopy(default_params)
    params["birch"].update(labeller="nobody", lengthener="gpt-4o", variants=["no_image"],
                           models=["corvid-lite", "lumen-base-x"])
    params["panel"]["corvid-lite"]["sim"]["birch"]["perception"] = 1.5
    params["panel"]["corvid-lite"]["sim"]["birch"]["eyesight"] = 1
    with pytest.raises(ConfigError) as info:
        validate_params(params)
    errors = str(info.value)
    assert "birch.labeller: model 'nobody' is not defined under panel" in errors
    assert "birch.lengthener: model 'gpt-4o' is not defined under panel" in errors
    assert "birch.models[1]: model 'lumen-base-x' is not defined under panel" in errors
    assert "birch.variants: must include base (every measure starts from it)" in errors
    assert "panel.corvid-lite.sim.birch.perception: a probability" in errors
    assert "panel.corvid-lite.sim.birch.eyesight: unknown trait" in errors
    assert validate(validate_params(copy.deepcopy(default_params))) == []


@pytest.mark.parametrize("prompt_id", ["birch_judge_base", "birch_judge_no_image",
                                       "birch_judge_caption", "birch_judge_reference"])
def test_every_judge_prompt_asks_for_the_bracket_verdict(prompt_id):
    text = render_prompt(prompt_id, {f: "x" for f in prompt_fields(prompt_id)})
    assert "Judgement: [[A]] or [[B]]" in text and sim.JUDGE_MARK in text
    assert ("figure" in text) == (prompt_id != "birch_judge_no_image")


def test_the_real_vl_rewardbench_file_goes_through_the_data_step(tmp_path, default_params):
    """The data step on the real file (text only): without the images it stops before
    any call, naming pairs and paths; with an image at every path all 1,250 rows load."""
    from helpers.birch import real_dataset
    from helpers.project import shared_data_dir

    from judgebias.studies.birch.data.pairs import load_pairs

    source = shared_data_dir() / "pairwise-judgments" / "vl_rewardbench.jsonl"
    if not source.exists():
        pytest.skip(f"real data not found: {source}")
    dataset = real_dataset("vl_rewardbench", source, tmp_path)
    with pytest.raises(ConfigError, match=r"birch.datasets.vlrb: pair \S+: image "):
        load_pairs("vlrb", dataset, tmp_path / "unused", seed=0)
    png = to_png_bytes(render(SCENE, 64))
    for line in source.read_text().splitlines():
        path = tmp_path / json.loads(line)["image_path"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(png)
    pairs = load_pairs("vlrb", dataset, tmp_path / "unused", seed=0)
    assert len(pairs) == 1250 and set(pairs["source"]) == {"vl_rewardbench"}
    assert 0.4 < (pairs["preference"] == "A").mean() < 0.6  # the shown order is randomised
