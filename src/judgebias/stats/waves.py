"""Items in waves, and the record of each look (issue 45; beyond the five seed papers,
which judge every item of a fixed design).

A study that runs in waves splits its items into `count` waves once: a seeded permutation
of the item ids cut into near-equal parts (``np.array_split``), so a rerun, or a run
extended later, asks the same items in the same waves. After each wave the study
computes its headline measures on the items judged so far with repeated confidence
intervals (judgebias.stats.sequential: a group-sequential design with Lan-DeMets alpha
spending), and stops when every chosen measure is decided. The looks are at the planned
information fractions (items scheduled by the end of the wave over all items), not the
observed ones: a failed call leaves a little less information than planned, which the
interval's own standard error already carries, and the boundaries stay the ones fixed
before any answer was seen.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


def wave_of(item_ids: Sequence[str], count: int, seed: int) -> dict[str, int]:
    """Item id -> its wave (1..count): a `seed`-ed permutation of the sorted ids cut into
    `count` near-equal parts. Sorting first makes the partition a function of the set of
    ids, not of the order a table lists them in."""
    ids = sorted(set(item_ids))
    if len(ids) != len(item_ids):
        raise ValueError("wave_of: item ids repeat")
    if not 1 <= count <= max(len(ids), 1):
        raise ValueError(f"waves.count is {count}, but there are {len(ids)} items")
    order = np.random.default_rng(seed).permutation(len(ids))
    waves: dict[str, int] = {}
    for wave, part in enumerate(np.array_split(order, count), start=1):
        waves.update({ids[i]: wave for i in part})
    return waves


def wave_sizes(waves: Mapping[str, int], count: int) -> list[int]:
    """Items per wave, waves 1..count."""
    sizes = np.bincount(np.fromiter(waves.values(), dtype=int), minlength=count + 1)
    return [int(n) for n in sizes[1:]]


@dataclass(frozen=True)
class Look:
    """What a study decided after one wave: recorded as JSON (``as_record``), read by the
    next wave's jobs (run or not) and by the report.

    `stopped_at` is the wave whose look decided to stop (None: still running; at the last
    wave the items ran out). `measures` holds one entry per measure looked at: its name,
    estimate, standard error, repeated interval and decision (None: undecided).
    """

    wave: int
    count: int
    fraction: float
    critical: float
    level: float
    n_items: int
    measures: tuple[Mapping[str, Any], ...]
    stopped_at: int | None
    reason: str

    def as_record(self) -> dict[str, Any]:
        # an infinite boundary (a look that spends no alpha) is written as null: JSON
        # has no infinity
        critical = self.critical if np.isfinite(self.critical) else None
        return {"wave": self.wave, "count": self.count, "fraction": self.fraction,
                "critical": critical, "level": self.level, "n_items": self.n_items,
                "measures": [dict(m) for m in self.measures],
                "stopped_at": self.stopped_at, "reason": self.reason}

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Look:
        return cls(wave=int(record["wave"]), count=int(record["count"]),
                   fraction=float(record["fraction"]),
                   critical=float("inf") if record["critical"] is None
                   else float(record["critical"]),
                   level=float(record["level"]), n_items=int(record["n_items"]),
                   measures=tuple(record["measures"]), stopped_at=record["stopped_at"],
                   reason=str(record["reason"]))

    @property
    def runs_next_wave(self) -> bool:
        """Whether the next wave's jobs ask their models (False once stopped)."""
        return self.stopped_at is None and self.wave < self.count


def stop_reason(measures: Sequence[Mapping[str, Any]]) -> str | None:
    """Why to stop after a look, or None to go on: every measure decided (an undecided or
    unidentified measure keeps the run going)."""
    if not measures:
        return None
    decisions = [m.get("decision") for m in measures]
    if any(d is None for d in decisions):
        return None
    counts = {d: decisions.count(d) for d in dict.fromkeys(decisions)}
    return "every measure decided: " + ", ".join(f"{n} {d}" for d, n in counts.items())
