"""The simulated FRAME judge's planted response (judgebias.studies.frame.sim): dose
curves, prompt multipliers, the combination rule and the prompt reading, by hand."""

from __future__ import annotations

import math

import pytest

from judgebias.prompts import render
from judgebias.studies.frame.jobs import DEFINITIONS
from judgebias.studies.frame.sim import (
    JudgeTraits,
    PairwiseTask,
    ScoreTask,
    combined,
    dose,
    gain,
    planted_change,
    prompt_kind,
)

TRAITS = JudgeTraits.from_block({
    "saturation": 0.8,
    "off_target": 0.5,
    "susceptibility": {
        "brightness": {"strength": 0.2, "best": 1.5, "domains": {"outdoor": 0.0}},
        "padding": {"strength": 0.3, "best": 40},
        "instruction_overlay": {"strength": 0.4, "best": "center"},
        "bounding_box": {"strength": 0.1},
    },
    "prompts": {"bias_aware": 0.9, "bias_definition": 0.25, "cot": 0.8},
    "cot": {"lift": 0.3, "bounding_box": 3.0},
})


def test_tone_dose_is_a_tent_in_log_factor():
    assert dose("brightness", 1.5, 1.5, 0.5) == 1.0
    assert dose("brightness", 1.0, 1.5, 0.5) == 0.0
    assert dose("brightness", 0.9, 1.5, 0.5) == 0.0  # the other side of the identity
    assert dose("brightness", 2.25, 1.5, 0.5) == pytest.approx(0.0, abs=1e-12)  # best squared
    expected = 1 - abs(math.log(1.2) - math.log(1.5)) / math.log(1.5)
    assert dose("brightness", 1.2, 1.5, 0.5) == pytest.approx(expected)
    assert dose("gamma", 0.9, 0.9, 0.5) == 1.0


def test_padding_overlay_and_box_doses():
    assert dose("padding", 40, 40, 0.5) == 1.0
    assert dose("padding", 20, 40, 0.5) == pytest.approx(0.5)
    assert dose("padding", 80, 40, 0.5) == 0.0
    assert dose("instruction_overlay", "center", "center", 0.5) == 1.0
    assert dose("instruction_overlay", "top-left", "center", 0.5) == 0.5
    assert dose("bounding_box", None, None, 0.5) == 1.0


def test_gain_by_domain_and_prompt():
    assert gain(TRAITS, "brightness", 1.5, "people") == pytest.approx(0.2)
    assert gain(TRAITS, "brightness", 1.5, "outdoor") == 0.0  # a planted zero cell
    assert gain(TRAITS, "gamma", 1.3, "people") == 0.0  # never listed: zero
    assert gain(TRAITS, "padding", 40, "animal", "bias_aware") == pytest.approx(0.27)
    assert gain(TRAITS, "padding", 40, "animal", "bias_definition", "padding") == \
        pytest.approx(0.075)
    # Fig. 6 names another manipulation: only the bias-aware sentence applies
    assert gain(TRAITS, "padding", 40, "animal", "bias_definition", "gamma") == \
        pytest.approx(0.27)
    assert gain(TRAITS, "bounding_box", None, "indoor", "cot") == pytest.approx(0.1 * 0.8 * 3)


def test_combination_saturates():
    assert combined(TRAITS, []) == 0.0
    assert combined(TRAITS, [0.4]) == pytest.approx(0.8 * math.tanh(0.5))
    pair = planted_change(TRAITS, [("instruction_overlay", "center"), ("padding", 40)],
                          "indoor")
    assert pair == pytest.approx(0.8 * math.tanh(0.7 / 0.8))
    assert pair < 0.4 + 0.3


@pytest.mark.parametrize("kind", ["standard", "bias_aware", "cot"])
def test_prompt_kind_is_read_from_the_templates(kind):
    text = render(f"frame_{kind}", {"Instruction": "Generate an image of a cat."})
    assert prompt_kind(text) == (kind, None)
    assert ScoreTask().recognise(text)
    assert not PairwiseTask().recognise(text)


@pytest.mark.parametrize("manipulation", sorted(DEFINITIONS))
def test_bias_definition_names_each_manipulation(manipulation):
    title, definition = DEFINITIONS[manipulation]
    text = render("frame_bias_definition", {"Instruction": "Generate an image of a cat.",
                                            "Perturbation": title, "Definition": definition})
    assert prompt_kind(text) == ("bias_definition", manipulation)


def test_pairwise_prompt_is_recognised():
    text = render("frame_pairwise", {"Instruction": "Generate an image of a cat."})
    assert PairwiseTask().recognise(text)
    assert not ScoreTask().recognise(text)
