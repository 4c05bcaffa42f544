"""FRAME's concepts (seed 004 Table 8) and template instructions (§4.1): every value
round-trips compose -> parse and domain_of, values are unambiguous, perturb changes k slots."""

from __future__ import annotations

import numpy as np
import pytest

from judgebias.studies.frame import concepts
from judgebias.studies.frame.concepts import (
    EXTENSION,
    TABLE8,
    VOCABULARY,
    compose_instruction,
    domain_of,
    keyword,
    parse_instruction,
    perturb,
    sample_concepts,
)
from judgebias.studies.frame.recipes import DOMAINS

SLOTS = {"animal": ("object", "number", "background", "action"),
         "people": ("object", "number", "color", "background", "action"),
         "outdoor": ("terrain", "time_of_day", "climate", "season"),
         "indoor": ("space_type", "object", "color", "number", "angle"),
         "illustration": ("art_style", "object", "number", "background")}


def test_vocabulary_is_table8_plus_the_marked_extension():
    assert set(VOCABULARY) == set(DOMAINS)
    for domain, slots in SLOTS.items():
        assert tuple(VOCABULARY[domain]) == slots
        for slot in slots:
            ours = EXTENSION.get(domain, {}).get(slot, ())
            assert VOCABULARY[domain][slot] == TABLE8[domain][slot] + ours
            assert len(set(VOCABULARY[domain][slot])) == len(VOCABULARY[domain][slot])
    # Only Table 8's "etc." lists are extended, and §4.1's flamingo is among ours.
    assert {(d, s) for d, slots in EXTENSION.items() for s in slots} == {
        ("animal", "object"), ("people", "background")}
    assert "Flamingo" in EXTENSION["animal"]["object"]
    assert TABLE8["people"]["background"][-1] == "A living room"


@pytest.mark.parametrize("domain", DOMAINS)
def test_every_value_round_trips(domain):
    rng = np.random.default_rng(0)
    base = sample_concepts(domain, rng)
    for slot, values in VOCABULARY[domain].items():
        for value in values:
            for number in VOCABULARY[domain].get("number", ("one",)):
                chosen = {**base, slot: value}
                if "number" in chosen and slot != "number":
                    chosen["number"] = number
                text = compose_instruction(domain, chosen)
                assert text.startswith("Generate an image of ") and text.endswith(".")
                assert parse_instruction(text, domain) == chosen, text
                assert domain_of(text) == domain, text


@pytest.mark.parametrize("domain", DOMAINS)
def test_no_value_is_found_inside_another(domain):
    values = [(slot, v) for slot, vs in VOCABULARY[domain].items() for v in vs]
    for slot, value in values:
        found = parse_instruction(f"Generate an image of {value}.", domain)
        assert found[slot] == value
        assert all(v is None for s, v in found.items() if s != slot), (value, found)


def test_paraphrases_and_plural_forms_are_read():
    text = "Three pink Flamingos, drinking from a watering hole, on a sunny meadow"
    assert domain_of(text) == "animal"
    assert parse_instruction(text, "animal") == {
        "object": "Flamingo", "number": "three", "background": "Meadow",
        "action": "drinking from a watering hole"}
    people = "Picture two TEACHERS in blue shirts typing at the cafe"
    assert parse_instruction(people, "people") == {
        "object": "Teacher", "number": "two", "color": "Blue shirt",
        "background": "A café", "action": "Typing"}
    assert parse_instruction("four people in a forest", "illustration")["object"] == "People"
    assert parse_instruction("one person", "illustration")["object"] == "People"
    assert parse_instruction("two bookshelves", "indoor")["object"] == "Bookshelf"
    assert parse_instruction("cats and dogs", "animal")["object"] is None  # two named
    assert domain_of("a sunny day") is None


def test_example_of_section_4_1():
    concepts_ = {"object": "Flamingo", "number": "three", "background": "Meadow",
                 "action": "drinking from a watering hole"}
    assert compose_instruction("animal", concepts_) == (
        "Generate an image of three flamingos drinking from a watering hole in a meadow.")
    one = compose_instruction("people", {"object": "Police Officer", "number": "one",
                                         "color": "Red shirt", "background": "A café",
                                         "action": "Typing"})
    assert one == "Generate an image of one police officer wearing a red shirt, typing, in a café."


def test_domain_markers_settle_shared_words():
    assert domain_of("Generate an image of two dogs napping in a desert.") == "animal"
    assert domain_of("Generate an image of a desert at sunset on a rainy day in winter.") == \
        "outdoor"
    assert domain_of("a comic style illustration of two dogs in a desert") == "illustration"
    assert domain_of("three nurses dancing in a living room") == "people"
    assert domain_of("a living room with two red lamps") == "indoor"


@pytest.mark.parametrize("domain", DOMAINS)
def test_perturb_changes_exactly_k_slots(domain):
    rng = np.random.default_rng(1)
    for _ in range(50):
        base = sample_concepts(domain, rng)
        for k in range(len(VOCABULARY[domain]) + 1):
            changed = perturb(domain, base, k, rng)
            assert set(changed) == set(base)
            assert sum(changed[s] != base[s] for s in base) == k
            assert all(changed[s] in VOCABULARY[domain][s] for s in base)
    with pytest.raises(ValueError):
        perturb(domain, base, len(VOCABULARY[domain]) + 1, rng)


def test_sampling_is_deterministic_and_keyword_is_the_object():
    def draw(seed):
        rng = np.random.default_rng(seed)
        return [perturb(d, sample_concepts(d, rng), 2, rng) for d in DOMAINS for _ in range(5)]

    assert draw(3) == draw(3)
    assert draw(3) != draw(4)
    assert keyword("animal", {"object": "Cat"}) == "Cat"
    assert keyword("outdoor", {"terrain": "Sea"}) is None
    assert concepts.forms("Police Officer") == ("police officer", "police officers")
