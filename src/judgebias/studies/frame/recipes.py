"""FRAME's manipulation recipes: which manipulation, with which setting, in which order
(seed 004 Table 1 and Appendix B.3; spec frame.md).

A *step* is one manipulation with one setting, written ``name=setting``
(``brightness=1.3``, ``instruction_overlay=top-right``, ``padding=40``,
``bounding_box=annotated``, ``beauty_filter=gfpgan``). A *recipe* is one or more steps
joined by ``+`` in the canonical order of :data:`MANIPULATIONS` (tone first, then the
face filter, boxes, overlays, and the padding last so that a border stays black and an
overlay's corner is the picture's corner); ``original`` is the empty recipe. The recipe id
is the key of a manipulated image and of its scores: the same steps always give the same
id, whatever order a user lists them in.

Role: a helper of every role: the manipulations, their domains and recipe ids.
"""

from __future__ import annotations

from dataclasses import dataclass

DOMAINS = ("people", "animal", "illustration", "indoor", "outdoor")
DOMAIN_TITLES = {"people": "People", "animal": "Animal", "illustration": "Illustration",
                 "indoor": "Indoor", "outdoor": "Outdoor"}

# Canonical application order (module docstring); the columns of Table 3 use TABLE_ORDER.
MANIPULATIONS = ("brightness", "gamma", "beauty_filter", "bounding_box",
                 "authenticity_overlay", "keyword_overlay", "instruction_overlay", "padding")
TABLE_ORDER = ("brightness", "gamma", "authenticity_overlay", "keyword_overlay",
               "instruction_overlay", "padding", "bounding_box", "beauty_filter")
SHORT_NAMES = {"brightness": "Bright.", "gamma": "Gamma.", "authenticity_overlay": "Refer.",
               "keyword_overlay": "Keyword.", "instruction_overlay": "Inst.",
               "padding": "Padding.", "bounding_box": "Bounding.", "beauty_filter": "Beauty."}
POSITIONS = ("bottom-right", "bottom-left", "top-right", "top-left", "center")
OVERLAYS = ("authenticity_overlay", "keyword_overlay", "instruction_overlay")
TONES = ("brightness", "gamma")

# Seed 004 §5.2 footnote 2 and §5.2 "beauty filter": which domains a manipulation applies to.
NOT_APPLICABLE = {"outdoor": ("keyword_overlay", "bounding_box")}
ONLY_IN = {"beauty_filter": ("people",)}

ORIGINAL = "original"


def applies(manipulation: str, domain: str) -> bool:
    """Whether `manipulation` applies to `domain` (34 cells of 5 x 8: seed 004 Fig. 2)."""
    if manipulation in NOT_APPLICABLE.get(domain, ()):
        return False
    return domain in ONLY_IN.get(manipulation, (domain,))


@dataclass(frozen=True, order=True)
class Step:
    """One manipulation with one setting (a number or a word), e.g. ``padding=40``."""

    manipulation: str
    setting: str

    def __post_init__(self) -> None:
        if self.manipulation not in MANIPULATIONS:
            raise ValueError(f"unknown manipulation {self.manipulation!r}; "
                             f"known: {', '.join(MANIPULATIONS)}")
        if self.manipulation in OVERLAYS and self.setting not in POSITIONS:
            raise ValueError(f"{self.manipulation}: position must be one of "
                             f"{', '.join(POSITIONS)}, got {self.setting!r}")
        if self.manipulation in (*TONES, "padding"):
            float(self.setting)  # raises ValueError naming the bad number

    @property
    def value(self) -> float | str:
        """The setting as a number for brightness, gamma and padding, else the word."""
        return float(self.setting) if self.manipulation in (*TONES, "padding") else self.setting

    @property
    def id(self) -> str:
        return f"{self.manipulation}={self.setting}"


def step(manipulation: str, setting: float | int | str) -> Step:
    """A step with its setting written canonically (``1.30`` -> ``1.3``, ``40.0`` -> ``40``)."""
    if isinstance(setting, int | float) and not isinstance(setting, bool):
        setting = f"{float(setting):g}"
    return Step(manipulation, str(setting))


def recipe_id(steps: tuple[Step, ...] | list[Step]) -> str:
    """The canonical id of a recipe (``original`` for no step)."""
    if not steps:
        return ORIGINAL
    ordered = sorted(steps, key=lambda s: MANIPULATIONS.index(s.manipulation))
    names = [s.manipulation for s in ordered]
    if len(set(names)) != len(names):
        raise ValueError(f"a recipe applies each manipulation once, got {names}")
    return "+".join(s.id for s in ordered)


def parse_recipe(recipe: str) -> tuple[Step, ...]:
    """The steps of a recipe id, in canonical order (``original`` -> no step)."""
    if recipe == ORIGINAL:
        return ()
    steps = []
    for part in recipe.split("+"):
        name, sep, setting = part.partition("=")
        if not sep:
            raise ValueError(f"recipe step {part!r} is not name=setting (in {recipe!r})")
        steps.append(step(name, setting))
    if recipe_id(steps) != recipe:
        raise ValueError(f"recipe {recipe!r} is not canonical; write {recipe_id(steps)!r}")
    return tuple(sorted(steps, key=lambda s: MANIPULATIONS.index(s.manipulation)))
