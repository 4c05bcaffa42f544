"""The philautia study in waves (issue 45; beyond seed 000, which scores every image):
the look after each wave, and which images a wave's jobs score.

At look k the judges' effects in score points (selfpref.self_preference: image-clustered
OLS, t intervals) are computed on the images of waves 1..k at the level whose interval is
the repeated confidence interval of look k (judgebias.stats.sequential: Lan-DeMets alpha
spending, Jennison & Turnbull's RCIs), so an interval read at whichever look the run
stopped covers with probability >= ``ci`` and "excludes 0" is a test at 1 - ``ci``. The
run stops when every identified chosen effect (``waves.measures``) is decided: its
interval excludes 0, or is narrower than ``waves.target_width``. Once stopped, the later
looks carry the stopping look forward (their waves ask nothing), so the last look is
always the one the selfpref table and the report read.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from judgebias.io.artifacts import read_table
from judgebias.stats.sequential import critical_values, decision, look_level, wave_fractions
from judgebias.stats.waves import Look, stop_reason, wave_of, wave_sizes
from judgebias.studies.philautia.params import PhilautiaParams, Waves
from judgebias.studies.philautia.tables import IMAGES


def _waves(images: Path, design: Waves) -> dict[str, int]:
    ids = read_table(images, IMAGES)["image_id"].tolist()
    return wave_of(ids, design.count, design.seed)


def wave_images(images: Path, design: Waves, wave: int) -> set[str]:
    """The image ids of wave `wave` of the dataset table `images`."""
    return {i for i, w in _waves(images, design).items() if w == wave}


def read_look(path: Path) -> Look:
    return Look.from_record(json.loads(Path(path).read_text()))


def previous_stopped(path: Path) -> str | None:
    """Why the run stopped at or before the look at `path` (None: the next wave runs)."""
    previous = read_look(path)
    return None if previous.runs_next_wave else f"stopped at wave {previous.stopped_at}: " \
        f"{previous.reason}"


def look_after(long: pd.DataFrame, params: PhilautiaParams, wave: int, images: Path,
               previous: Path | None) -> Look:
    """:func:`look_at` from the rule's files: the waves' sizes from the dataset table."""
    sizes = wave_sizes(_waves(images, params.waves), params.waves.count)
    return look_at(long, params, wave, sizes,
                   read_look(previous) if previous is not None else None)


def look_at(long: pd.DataFrame, params: PhilautiaParams, wave: int, sizes: Sequence[int],
            previous: Look | None) -> Look:
    """The look after wave `wave` (1-based) of a setting, from its long scores table of
    waves 1..`wave` (steps.analysis_scores) and the previous look (None at wave 1);
    `sizes` are the images per wave (all waves)."""
    if previous is not None and previous.stopped_at is not None:
        return dataclasses.replace(previous, wave=wave)
    design = params.waves
    fractions = wave_fractions(sizes)
    critical = float(critical_values(fractions[:wave].tolist(), 1 - params.ci, design.spending)[-1])
    level = look_level(critical)
    # a look so early that the spending function gives it no alpha decides nothing
    measures = _measures(long, params, level) if level < 1 else []
    reason = stop_reason(measures) if any(m["identified"] for m in measures) else None
    stopped = wave if reason is not None else None
    if reason is None and wave == len(sizes):
        stopped, reason = wave, "the images ran out"
    undecided = ("no alpha is spent at this look" if level >= 1
                 else "undecided: " + _undecided(measures))
    return Look(wave=wave, count=len(sizes), fraction=float(fractions[wave - 1]),
                critical=critical, level=level, n_items=int(sum(sizes[:wave])),
                measures=tuple(measures), stopped_at=stopped, reason=reason or undecided)


def _measures(long: pd.DataFrame, params: PhilautiaParams, level: float
              ) -> list[dict[str, Any]]:
    from judgebias.studies.philautia.selfpref import self_preference

    effects = self_preference(long, params.judges, params.families, ci=level)
    rows = []
    for effect in effects.to_dict("records"):
        for kind in params.waves.measures:
            identified = bool(effect.get(f"{kind}_identified", True)) and math.isfinite(
                effect[f"{kind}_se"])
            low, high = effect[f"{kind}_ci_low"], effect[f"{kind}_ci_high"]
            rows.append({
                "model": effect["model"], "measure": kind, "identified": identified,
                "effect": _number(effect[f"{kind}_effect"]), "se": _number(effect[f"{kind}_se"]),
                "ci_low": _number(low), "ci_high": _number(high),
                "decision": (decision(low, high, params.waves.target_width) if identified
                             else "not identified")})
    return rows


def _number(value: Any) -> float | None:
    value = float(value)
    return value if math.isfinite(value) else None


def _undecided(measures: Sequence[dict[str, Any]]) -> str:
    if not any(m["identified"] for m in measures):
        return "no chosen effect is identified"
    names = [f"{m['model']} {m['measure']}" for m in measures if m["decision"] is None]
    return ", ".join(names)
