"""FRAME's visual concepts (seed 004 Table 8) and the instructions built from them (§4.1).

Table 8 lists four or five concept slots per domain. Two of its lists end in "etc."
(Animals' objects, People's backgrounds): they are truncated in the paper, so ours add a
few values, kept apart in :data:`EXTENSION` so the paper's and ours stay distinguishable.
An instruction is composed from one value per slot (the offline template of
:func:`compose_instruction`, in the style of §4.1's "Generate an image of three
flamingos drinking from a watering hole in a meadow."), and read back by
:func:`parse_instruction`, which the offline renderer and the simulated judge use the way a
text-to-image model and an LVLM read a prompt.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import numpy as np

VOCABULARY: dict[str, dict[str, tuple[str, ...]]] = {
    "animal": {
        "object": ("Dog", "Cat", "Lion", "Tiger", "Elephant", "Giraffe", "Zebra",
                   "Kangaroo", "Panda", "Gorilla", "Eagle"),
        "number": ("one", "two", "three", "four", "five"),
        "background": ("Tropical Rainforest", "Flower Field", "Desert", "Meadow",
                       "Outer Space"),
        "action": ("napping", "drinking from a watering hole", "stretching and yawning",
                   "playing the piano", "riding a skateboard", "driving a car",
                   "painting on a canvas"),
    },
    "people": {
        "object": ("Teacher", "Doctor", "Nurse", "Chef", "Artist", "Police Officer",
                   "Firefighter", "Mechanic", "Farmer", "Scientist", "Pharmacist", "Waiter"),
        "number": ("one", "two", "three", "four", "five"),
        "color": ("Red shirt", "Blue shirt", "Green shirt", "Yellow shirt", "Orange shirt",
                  "Purple shirt", "Pink shirt", "Brown shirt", "Black shirt", "White shirt"),
        "background": ("A city street", "A café", "An open-plan office",
                       "A high school classroom", "A restaurant kitchen", "A living room"),
        "action": ("Clapping and jumping", "Raising a toast", "Typing", "Speaking on phone",
                   "Dancing", "Taking a photo", "Riding a bicycle", "Reading a book"),
    },
    "outdoor": {
        "terrain": ("Mountains", "Forest", "Sea", "Grassland", "Desert", "Canyon", "Glacier",
                    "Lake", "Waterfall"),
        "time_of_day": ("Sunrise", "Afternoon", "Sunset", "Midnight"),
        "climate": ("Sunny", "Cloudy", "Rainy"),
        "season": ("Spring", "Summer", "Autumn", "Winter"),
    },
    "indoor": {
        "space_type": ("Living room", "Attic", "Museum", "Library", "Office", "Theater",
                       "Shopping mall", "Classroom"),
        "object": ("Sofa", "Table", "Chair", "Bookshelf", "Frames", "Plants", "Lamp", "Piano"),
        "color": ("Red", "Blue", "Green", "Yellow", "Orange", "Purple", "Pink", "Brown",
                  "Black", "White"),
        "number": ("one", "two", "three"),
        "angle": ("Eye-level view", "Top-down view", "Side view"),
    },
    "illustration": {
        "art_style": ("Watercolor", "Oil Painting", "Line Art", "Pixel Art", "Comic",
                      "Collage"),
        "object": ("Dog", "Cat", "People", "Bird", "Car", "House", "Tree", "Flower",
                   "Bicycle", "Guitar", "Clock", "Lamp", "Balloon"),
        "number": ("one", "two", "three", "four", "five"),
        "background": ("Forest", "Underwater", "Bedroom", "Outer space", "Beach", "Desert",
                       "City street"),
    },
}

# Ours: values added where Table 8 ends in "etc." (seed 004 Table 8; spec frame.md).
EXTENSION: dict[str, dict[str, tuple[str, ...]]] = {
    "animal": {"object": ("Flamingo", "Bear", "Fox", "Owl")},
    "people": {"background": ("A library", "A park")},
}
for _domain, _slots in EXTENSION.items():
    for _slot, _values in _slots.items():
        VOCABULARY[_domain][_slot] = VOCABULARY[_domain][_slot] + _values

# The slot only one domain has, which tells the domain of an instruction (domain_of), in
# the order that settles shared words: Outdoor's terrains (Desert, Forest) are also other
# domains' backgrounds, and Animal's objects (Dog, Cat) also Illustration's.
DOMAIN_MARKERS = (("illustration", "art_style"), ("people", "object"),
                  ("indoor", "space_type"), ("animal", "object"), ("outdoor", "terrain"))

_PLURALS = {"People": "People", "Waiter": "Waiters", "Frames": "Frames",
            "Plants": "Plants", "Bookshelf": "Bookshelves", "Police Officer": "Police Officers"}


def plural(word: str) -> str:
    """English plural of a Table 8 object (enough for its nouns)."""
    if word in _PLURALS:
        return _PLURALS[word]
    if word.endswith(("ch", "sh", "s", "x")):
        return word + "es"
    if word.endswith("y") and word[-2:-1] not in "aeiou":
        return word[:-1] + "ies"
    return word + "s"


def sample_concepts(domain: str, rng: np.random.Generator) -> dict[str, str]:
    """One value per slot of `domain`, uniformly (§4.1: "random sampling of visual
    elements from a predefined set")."""
    return {slot: str(values[rng.integers(len(values))])
            for slot, values in VOCABULARY[domain].items()}


def perturb(domain: str, concepts: Mapping[str, str], k: int,
            rng: np.random.Generator) -> dict[str, str]:
    """`k` distinct slots changed to another value (§4.1, "controlled perturbations": the
    more concepts perturbed, the lower the expected alignment)."""
    slots = list(VOCABULARY[domain])
    if not 0 <= k <= len(slots):
        raise ValueError(f"{domain}: cannot perturb {k} of {len(slots)} concepts")
    changed = dict(concepts)
    for slot in rng.choice(slots, size=k, replace=False):
        others = [v for v in VOCABULARY[domain][slot] if v != concepts[slot]]
        changed[slot] = str(others[rng.integers(len(others))])
    return changed


def _lower(text: str) -> str:
    return text[:1].lower() + text[1:]


def _subject(concepts: Mapping[str, str]) -> str:
    number, noun = concepts["number"], concepts["object"]
    return f"{number} {_lower(noun if number == 'one' else plural(noun))}"


def compose_instruction(domain: str, concepts: Mapping[str, str]) -> str:
    """The offline template instruction of one concept set (§4.1's example style)."""
    c = concepts
    if domain == "animal":
        text = f"{_subject(c)} {_lower(c['action'])} in {_lower(c['background'])}"
    elif domain == "people":
        text = (f"{_subject(c)} wearing {_lower(c['color'])}s, "
                f"{_lower(c['action'])}, in {_lower(c['background'])}")
    elif domain == "outdoor":
        text = (f"{_lower(c['terrain'])} at {_lower(c['time_of_day'])} on a "
                f"{_lower(c['climate'])} day in {_lower(c['season'])}")
    elif domain == "indoor":
        text = (f"{_lower(c['space_type'])} with {c['number']} {_lower(c['color'])} "
                f"{_lower(c['object'] if c['number'] == 'one' else plural(c['object']))}, "
                f"{_lower(c['angle'])}")
    elif domain == "illustration":
        text = (f"a {_lower(c['art_style'])} illustration of {_subject(c)} "
                f"in {_lower(c['background'])}")
    else:
        raise ValueError(f"unknown domain {domain!r}")
    return f"Generate an image of {text}."


def _pattern(value: str, slot: str) -> re.Pattern[str]:
    forms = {value}
    if slot == "object":
        forms.add(plural(value))
    if slot == "color" and value.endswith("shirt"):
        forms.add(value + "s")
    words = "|".join(re.escape(f).replace(r"\ ", r"\s+") for f in
                     sorted(forms, key=len, reverse=True))
    return re.compile(rf"(?<![\w-])(?:{words})(?![\w-])", re.I)


def parse_instruction(text: str, domain: str) -> dict[str, str | None]:
    """Each slot's value named in `text` (None where no value, or several, are named).

    Longer values are matched first and their text is blanked, so "Outer Space" is not also
    read as a shorter value inside it.
    """
    found: dict[str, str | None] = {}
    for slot, values in VOCABULARY[domain].items():
        rest, hits = text, []
        for value in sorted(values, key=len, reverse=True):
            pattern = _pattern(value, slot)
            if pattern.search(rest):
                hits.append(value)
                rest = pattern.sub(" ", rest)
        found[slot] = hits[0] if len(hits) == 1 else None
    return found


def domain_of(text: str) -> str | None:
    """The domain an instruction belongs to, by the slot only that domain has."""
    for domain, slot in DOMAIN_MARKERS:
        if parse_instruction(text, domain)[slot] is not None:
            return domain
    return None


def keyword(domain: str, concepts: Mapping[str, str]) -> str | None:
    """The keyword of the keyword overlay: the object concept (none in Outdoor scenes,
    which have no objects: seed 004 §5.2 footnote 2)."""
    return None if domain == "outdoor" else concepts.get("object")
