"""FRAME's visual concepts (seed 004 Table 8) and the instructions built from them (§4.1).

Table 8 (/work/shared/seeds/004_eb2847ac5d078cb2.txt, Appendix A) lists four or five concept
slots per domain. Two of its lists end in "etc." (Animals' objects, People's backgrounds):
they are truncated in the paper, so ours add a few values (spec frame.md, "Benchmark"), kept
apart in :data:`EXTENSION` so the paper's values (:data:`TABLE8`) and ours stay
distinguishable; :data:`VOCABULARY` is the union. An instruction is composed from one value
per slot (:func:`compose_instruction`, an offline template in the style of §4.1's "Generate an
image of three flamingos drinking from a watering hole in a meadow.") and read back by
:func:`parse_instruction`, which the offline renderer and the simulated judge use the way a
text-to-image model and an LVLM read a prompt. Every value is found as whole words,
case-insensitively, in its singular or plural form; no value of a domain is found inside the
text of another value of that domain (tests/frame/test_frame_concepts.py checks it), so a
paraphrase that keeps the value words parses like the template.

Role: a helper of data.py (the synthetic benchmark's concepts and instructions), also
read by sim.py and writer.py.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache

import numpy as np

# Seed 004 Table 8, verbatim (the "etc." left out).
TABLE8: dict[str, dict[str, tuple[str, ...]]] = {
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

# Ours, not the paper's: values added where Table 8 ends in "etc." (spec frame.md). Flamingo
# is §4.1's own example; the others are common animals and everyday places.
EXTENSION: dict[str, dict[str, tuple[str, ...]]] = {
    "animal": {"object": ("Flamingo", "Bear", "Fox", "Owl")},
    "people": {"background": ("A library", "A park")},
}

VOCABULARY: dict[str, dict[str, tuple[str, ...]]] = {
    domain: {slot: values + EXTENSION.get(domain, {}).get(slot, ())
             for slot, values in slots.items()}
    for domain, slots in TABLE8.items()}

# The slot only one domain has, in the order that settles shared words (domain_of): a People
# instruction may name a place that is an Indoor space type ("a living room"), and Outdoor's
# terrains (Desert, Forest) are also Animal and Illustration backgrounds, so an animal object
# is looked for before a terrain (Illustration, which also has Dog and Cat, goes first).
DOMAIN_MARKERS = (("illustration", "art_style"), ("people", "object"),
                  ("indoor", "space_type"), ("animal", "object"), ("outdoor", "terrain"))

_IRREGULAR = {"People": ("person", "people"), "Frames": ("frame", "frames"),
              "Plants": ("plant", "plants"), "Bookshelf": ("bookshelf", "bookshelves")}
_ARTICLE = re.compile(r"^an?\s+", re.I)

# English the templates need beyond "in a <place>", "a <terrain>", "at <time>".
_PLACE = {"Outer Space": "in outer space", "Outer space": "in outer space",
          "Underwater": "underwater", "Beach": "on a beach", "City street": "on a city street",
          "A city street": "on a city street"}
_TERRAIN = {"Sea": "the sea", "Mountains": "mountains"}
_TIME = {"Afternoon": "in the afternoon"}


def _lower(text: str) -> str:
    """A value as it is written inside a sentence (Table 8's values are common nouns)."""
    return text.lower()


def _with_article(phrase: str) -> str:
    """`phrase` with "a" or "an" in front."""
    return f"{'an' if phrase[:1].lower() in 'aeiou' else 'a'} {phrase}"


def forms(value: str) -> tuple[str, str]:
    """The singular and plural of a Table 8 object noun (enough English for its nouns)."""
    if value in _IRREGULAR:
        return _IRREGULAR[value]
    word = _lower(value)
    if word.endswith(("ch", "sh", "s", "x")):
        return word, word + "es"
    if word.endswith("y") and word[-2:-1] not in "aeiou":
        return word, word[:-1] + "ies"
    return word, word + "s"


def sample_concepts(domain: str, rng: np.random.Generator) -> dict[str, str]:
    """One value per slot of `domain`, uniformly (§4.1: "random sampling of visual
    elements from a predefined set of domain-specific concepts")."""
    return {slot: str(values[rng.integers(len(values))])
            for slot, values in VOCABULARY[domain].items()}


def perturb(domain: str, concepts: Mapping[str, str], k: int,
            rng: np.random.Generator) -> dict[str, str]:
    """`k` distinct slots changed to another value, the rest kept (§4.1, "controlled
    perturbations": the more concepts perturbed, the lower the expected alignment)."""
    slots = list(VOCABULARY[domain])
    if not 0 <= k <= len(slots):
        raise ValueError(f"{domain}: cannot perturb {k} of {len(slots)} concepts")
    changed = dict(concepts)
    for slot in rng.choice(slots, size=k, replace=False):
        others = [v for v in VOCABULARY[domain][slot] if v != concepts[slot]]
        changed[slot] = str(others[rng.integers(len(others))])
    return changed


def _subject(concepts: Mapping[str, str]) -> str:
    """"three flamingos", "one flamingo" (§4.1's example keeps the number word)."""
    singular, many = forms(concepts["object"])
    return f"{concepts['number']} {singular if concepts['number'] == 'one' else many}"


def _place(value: str) -> str:
    """A background or place with its preposition: "in a meadow", "on a beach"."""
    if value in _PLACE:
        return _PLACE[value]
    return f"in {_with_article(_lower(_ARTICLE.sub('', value)))}"


def compose_instruction(domain: str, concepts: Mapping[str, str]) -> str:
    """The offline template instruction of one concept set, in the style of §4.1's example
    ("Generate an image of three flamingos drinking from a watering hole in a meadow."),
    with number agreement ("one teacher wearing a red shirt", "two teachers wearing red
    shirts"). Every value's words appear in it, so :func:`parse_instruction` recovers them.
    """
    c = {slot: str(value) for slot, value in concepts.items()}
    if domain == "animal":
        text = f"{_subject(c)} {_lower(c['action'])} {_place(c['background'])}"
    elif domain == "people":
        shirt = _lower(c["color"])
        worn = _with_article(shirt) if c["number"] == "one" else shirt + "s"
        text = (f"{_subject(c)} wearing {worn}, {_lower(c['action'])}, "
                f"{_place(c['background'])}")
    elif domain == "outdoor":
        scene = _TERRAIN.get(c["terrain"], _with_article(_lower(c["terrain"])))
        time = _TIME.get(c["time_of_day"], f"at {_lower(c['time_of_day'])}")
        text = f"{scene} {time} on a {_lower(c['climate'])} day in {_lower(c['season'])}"
    elif domain == "indoor":
        singular, many = forms(c["object"])
        things = singular if c["number"] == "one" else many
        text = (f"{_with_article(_lower(c['space_type']))} with {c['number']} "
                f"{_lower(c['color'])} {things}, seen in {_with_article(_lower(c['angle']))}")
    elif domain == "illustration":
        text = (f"{_with_article(_lower(c['art_style']))} style illustration of "
                f"{_subject(c)} {_place(c['background'])}")
    else:
        raise ValueError(f"unknown domain {domain!r}")
    return f"Generate an image of {text}."


def _words(phrase: str) -> str:
    """A regex for `phrase`'s words with any whitespace between them (accents optional)."""
    return r"\s+".join(re.escape(word).replace("é", "[ée]") for word in phrase.split())


@cache
def _pattern(value: str, slot: str) -> re.Pattern[str]:
    """Whole-word, case-insensitive pattern of every form a value is written in: plurals of
    objects ("flamingos"), plural shirts, places without their article ("a café" ->
    "café", so "at the café" is found too)."""
    variants = {value, _ARTICLE.sub("", value)}
    if slot == "object":
        variants.update(forms(value))
    if slot == "color" and value.endswith("shirt"):
        variants.add(value + "s")
    alternatives = "|".join(_words(v) for v in sorted(variants, key=len, reverse=True))
    return re.compile(rf"(?<![\w-])(?:{alternatives})(?![\w-])", re.I)


def parse_instruction(text: str, domain: str) -> dict[str, str | None]:
    """Each slot's value named in `text` (None where no value, or several, are named).

    Within a slot, longer values are matched first and their text is blanked, so "Outer
    Space" is not also read as a shorter value inside it.
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
    """The domain an instruction belongs to, by the slot only that domain has (an art style
    is Illustration, a profession People, a space type Indoor, an animal Animal, a terrain
    Outdoor; :data:`DOMAIN_MARKERS` gives the order); None if it names none of them."""
    for domain, slot in DOMAIN_MARKERS:
        values = VOCABULARY[domain][slot]
        if any(_pattern(value, slot).search(text) for value in values):
            return domain
    return None


def keyword(domain: str, concepts: Mapping[str, str | None]) -> str | None:
    """The keyword of the keyword overlay: the object concept (spec frame.md, "Keyword = the
    object concept"); none in Outdoor scenes, which have no objects (seed 004 §5.2
    footnote 2)."""
    return None if domain == "outdoor" else concepts.get("object")
