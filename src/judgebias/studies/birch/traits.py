"""A helper of the sim role: a simulated model's BIRCH traits, the ``sim.birch`` block of a
panel model (what each does: judgebias.studies.birch.sim). A module of its own because
the params checks (params.py, which every BIRCH step imports for its typed view) and the
sim backend both read them, and neither should depend on the other's code."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Traits:
    """A simulated model's BIRCH traits (the sim module's docstring says what each does)."""

    informativeness: float = 1.0
    correctness: float = 2.0
    perception: float = 0.5
    image_use: float = 0.3
    length: float = 0.0
    position_bias: float = 0.0
    noise: float = 1.0
    reference_trust: float = 0.8
    omission: float = 0.5
    label_noise: float = 0.3
    label_position_bias: float = 0.0
