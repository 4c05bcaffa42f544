"""The synthetic VQA world: questions about the synthetic scenes (judgebias.data.scenes) and
answers written as sentences of facts, so that correctness, informativeness and padding
vary independently and can be read back from the text (spec birch.md, "What the
simulated judge must plant").

A *fact* is one (subject, attribute, value) statement about a scene: the colour, shape or
size of the shape in one slot (subject ``left`` / ``center`` / ``right``), the background
colour (subject ``background``) or the number of shapes (subject ``count``). Every fact
is written as one sentence of a fixed form (:func:`fact_sentence`) and read back by
:func:`read_facts`; filler sentences (:data:`FILLERS`) carry no fact and no scene word.

An answer is the fact the question asks for, then ``details`` other true facts (the
valid extra details that make it more informative), then ``padding`` filler sentences
(length without information). A wrong answer carries exactly one false fact: the asked-for
fact with a wrong value, or, when it has details, one of its details. So:

* correctness: does the text contain a false fact (the image tells);
* informativeness: how many facts it states (the text alone tells);
* length: words, moved by details and padding independently.

Role: a helper shared by the data (.data.synthetic writes the answers), the simulated
judge (.sim reads them) and the measures (.measures.anchors scores texts against a scene).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from judgebias.data.scenes import (
    BACKGROUND_COLORS,
    MAX_OBJECTS,
    OBJECT_COLORS,
    POSITIONS,
    SHAPES,
    SIZES,
    Scene,
)

ATTRIBUTES = ("color", "shape", "size")
DOMAINS = ("color", "shape", "size", "background", "count")
_SLOT = {"left": "on the left", "center": "in the center", "right": "on the right"}
_SLOT_OF = {phrase: slot for slot, phrase in _SLOT.items()}
_NUMBER = {1: "one", 2: "two", 3: "three"}
_NUMBER_OF = {word: n for n, word in _NUMBER.items()}

# Sentences that add length and no information (no fact, no scene word).
FILLERS = (
    "Looking at the image carefully helps to answer this question.",
    "This is what can be seen in the picture.",
    "I hope this description is helpful to you.",
    "The details are quite easy to make out here.",
    "Let me know if you would like to know anything else about it.",
    "Overall, the image is clear and simple to read.",
    "To put it another way, the answer follows directly from what is shown.",
    "It is worth taking a moment to look at everything that appears in the image.",
)


@dataclass(frozen=True)
class Fact:
    """One statement about a scene: e.g. (``left``, ``color``, ``red``)."""

    subject: str  # a slot, "background" or "count"
    attribute: str  # color | shape | size | background | count
    value: str

    @property
    def key(self) -> tuple[str, str]:
        return self.subject, self.attribute


def question(subject: str, attribute: str) -> str:
    """The question asking for one fact."""
    if attribute == "background":
        return "What colour is the background of the image?"
    if attribute == "count":
        return "How many shapes are there in the image?"
    where = _SLOT[subject]
    return {"color": f"What colour is the shape {where}?",
            "shape": f"What kind of shape is {where}?",
            "size": f"Is the shape {where} large or small?"}[attribute]


_QUESTIONS = {question(s, a): (s, a) for s in POSITIONS for a in ATTRIBUTES}
_QUESTIONS |= {question("background", "background"): ("background", "background"),
               question("count", "count"): ("count", "count")}


def asked(query: str) -> tuple[str, str] | None:
    """(subject, attribute) a synthetic question asks for; None for any other text."""
    return _QUESTIONS.get(query.strip())


def fact_sentence(fact: Fact) -> str:
    """The one sentence that states a fact."""
    if fact.attribute == "background":
        return f"The background is {fact.value}."
    if fact.attribute == "count":
        n = int(fact.value)
        return f"There {'is' if n == 1 else 'are'} {_NUMBER[n]} shape{'' if n == 1 else 's'}" \
               " in the image."
    where = _SLOT[fact.subject]
    if fact.attribute == "shape":
        return f"The shape {where} is a {fact.value}."
    return f"The shape {where} is {fact.value}."


_SHAPE_SENTENCE = re.compile(r"The shape (on the left|in the center|on the right) is "
                             r"(?:a (\w+)|(\w+))\.")
_BACKGROUND_SENTENCE = re.compile(r"The background is (\w+)\.")
_COUNT_SENTENCE = re.compile(r"There (?:is|are) (one|two|three) shapes? in the image\.")


def read_facts(text: str) -> list[Fact]:
    """Every fact stated in `text`, in order (sentences of :func:`fact_sentence`'s form)."""
    found: list[tuple[int, Fact]] = []
    for match in _SHAPE_SENTENCE.finditer(text):
        slot = _SLOT_OF[match.group(1)]
        if match.group(2) is not None and match.group(2) in SHAPES:
            found.append((match.start(), Fact(slot, "shape", match.group(2))))
        elif match.group(3) in OBJECT_COLORS:
            found.append((match.start(), Fact(slot, "color", match.group(3))))
        elif match.group(3) in SIZES:
            found.append((match.start(), Fact(slot, "size", match.group(3))))
    for match in _BACKGROUND_SENTENCE.finditer(text):
        if match.group(1) in BACKGROUND_COLORS:
            found.append((match.start(), Fact("background", "background", match.group(1))))
    for match in _COUNT_SENTENCE.finditer(text):
        found.append((match.start(), Fact("count", "count", str(_NUMBER_OF[match.group(1)]))))
    return [fact for _, fact in sorted(found, key=lambda pair: pair[0])]


def true_facts(scene: Scene) -> dict[tuple[str, str], Fact]:
    """Every fact that holds in `scene`, by (subject, attribute)."""
    facts = {("background", "background"): Fact("background", "background", scene.background),
             ("count", "count"): Fact("count", "count", str(len(scene.objects)))}
    for obj in scene.objects:
        for attribute in ATTRIBUTES:
            facts[obj.position, attribute] = Fact(obj.position, attribute,
                                                  getattr(obj, attribute))
    return facts


def is_true(fact: Fact, truth: Mapping[tuple[str, str], Fact]) -> bool | None:
    """Whether a fact holds (None: the scene has nothing in that slot to check against)."""
    known = truth.get(fact.key)
    if known is None:
        return False if fact.attribute in ATTRIBUTES else None
    return known.value == fact.value


def _values(attribute: str) -> tuple[str, ...]:
    return {"color": tuple(OBJECT_COLORS), "shape": SHAPES, "size": SIZES,
            "background": tuple(BACKGROUND_COLORS),
            "count": tuple(str(n) for n in range(1, MAX_OBJECTS + 1))}[attribute]


def falsify(fact: Fact, rng: np.random.Generator) -> Fact:
    """The same statement with a uniformly drawn wrong value."""
    wrong = [v for v in _values(fact.attribute) if v != fact.value]
    return Fact(fact.subject, fact.attribute, wrong[int(rng.integers(len(wrong)))])


def draw_question(scene: Scene, rng: np.random.Generator) -> tuple[str, Fact]:
    """A question about the scene (domain drawn uniformly) and its true answer."""
    truth = true_facts(scene)
    domain = DOMAINS[int(rng.integers(len(DOMAINS)))]
    if domain in ATTRIBUTES:
        slot = scene.objects[int(rng.integers(len(scene.objects)))].position
        key = (slot, domain)
    else:
        key = (domain, domain)
    fact = truth[key]
    return question(*key), fact


def write_answer(scene: Scene, answer: Fact, correct: bool, details: int, padding: int,
                 rng: np.random.Generator) -> tuple[str, int]:
    """An answer text and the number of details it really got (a scene may have fewer
    facts to tell than asked). A wrong answer's one false fact is the asked-for fact or,
    with probability details / (details + 1), a detail."""
    others = [f for k, f in sorted(true_facts(scene).items()) if k != answer.key]
    chosen = [others[i] for i in rng.permutation(len(others))[:details]]
    facts = [answer, *chosen]
    if not correct:
        wrong = int(rng.integers(len(facts)))
        facts[wrong] = falsify(facts[wrong], rng)
    fillers = [FILLERS[i] for i in rng.permutation(len(FILLERS))[:padding]]
    sentences = [fact_sentence(f) for f in facts] + fillers
    return " ".join(sentences), len(chosen)
