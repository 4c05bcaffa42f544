"""Power before paying: the smallest effect each headline measure can detect at the
configured sizes, and the size a target effect needs (issue 23, item 6).

Researchers pay per call and are rarely told how many images or pairs they need. From a
pilot run's judge card (``results/judges.parquet``: every measure's estimate, 95 %
interval and the units behind it, ``n``) this reads each measure's standard error at the
pilot's size and carries it to the configured size.

Formulas. For an estimate with standard error ``s`` tested two-sided at level ``alpha``,
the minimum detectable effect at power ``1 - beta`` is (Bloom 1995, "Minimum detectable
effects: a simple way to report the statistical power of experimental designs",
Evaluation Review 19(5), eq. 1)::

    MDE = (z_{1 - alpha/2} + z_{1 - beta}) * s

with ``s`` from the pilot's interval, ``s0 = (ci_high - ci_low) / (2 z_{0.975})`` (the
card's intervals are 95 %: t, Wilson, or percentile bootstrap, all close to normal at the
sizes a card reports; a t interval on few clusters makes ``s0`` a little too large, so
the MDE errs on the safe side), and carried to ``n`` units as ``s = s0 sqrt(n0 / n)``: a
mean, a difference of proportions, a cluster-robust regression coefficient all have a
standard error proportional to one over the root of their number of independent units
(images, pairs, items, test groups) when the design keeps its shape. The size a target
effect ``d`` needs is the inverse, ``n = n0 ((z_{1 - alpha/2} + z_{1 - beta}) s0 / d)^2``.
``benchmarks/power_check.py`` checks both against simulation: at the reported size, a
planted effect of the reported MDE is detected at about the stated power, by each
study's own test.

Which units. A card row's ``n`` is the units behind its estimate at the pilot's size.
Each study says how its measures' units grow with its params (its ``power`` hook:
params -> {measure: design size}, e.g. images, pairs, items per cell): the configured
run's units are ``n0 x size(configured) / size(pilot)``.

Which variances. The pilot's row of the same judge where it has one ("pilot"); else
the median standard error of the measure over the pilot's judges ("pilot median", e.g. a
judge not in the pilot). A pilot run of the simulated panel (the default ``make run``)
says "simulated panel": its variances are the simulator's, a stand-in until a pilot of
the real judges exists.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

INTERVAL_LEVEL = 0.95  # the card's intervals (judgebias.card.schema)
POWER_COLUMNS = ["model", "study", "measure", "setting", "unit", "variance_from",
                 "n_pilot", "se_pilot", "n", "mde", "target", "n_for_target"]


@dataclass(frozen=True)
class PowerSettings:
    """The test's level, the power wanted, target effects by measure (in the measure's
    own unit) whose needed size is reported, and a target interval half-width for what a
    study sizes by precision instead (`halfwidth`, the +- of its intervals in their unit:
    the leaderboard's human labels; None: the study's default)."""

    alpha: float = 0.05
    power: float = 0.8
    targets: Mapping[str, float] | None = None
    halfwidth: float | None = None

    def __post_init__(self) -> None:
        if not 0 < self.alpha < 1 or not 0 < self.power < 1:
            raise ValueError(f"alpha and power must be in (0, 1), not {self.alpha}, "
                             f"{self.power}")
        if self.halfwidth is not None and not (math.isfinite(self.halfwidth)
                                               and self.halfwidth > 0):
            raise ValueError(f"the target half-width must be a positive number, not "
                             f"{self.halfwidth}")

    @property
    def multiplier(self) -> float:
        """z_{1 - alpha/2} + z_{power}: the MDE in standard errors (Bloom 1995, eq. 1)."""
        return float(stats.norm.ppf(1 - self.alpha / 2) + stats.norm.ppf(self.power))


def se_from_interval(low: float, high: float, level: float = INTERVAL_LEVEL) -> float:
    """The standard error a two-sided normal interval of `level` implies."""
    return (high - low) / (2 * float(stats.norm.ppf(0.5 + level / 2)))


def mde(se: float, settings: PowerSettings) -> float:
    """The minimum detectable effect of an estimate with standard error `se`."""
    return settings.multiplier * se


def size_for(effect: float, se0: float, n0: float, settings: PowerSettings) -> int:
    """The units needed to detect `effect` where `n0` units give standard error `se0`."""
    return math.ceil(n0 * (settings.multiplier * se0 / abs(effect)) ** 2)


def detection_power(effect: float, se: float, alpha: float = 0.05) -> float:
    """The probability a two-sided level-`alpha` normal test detects `effect` (both
    tails), the inverse of :func:`mde` up to the far tail."""
    z = float(stats.norm.ppf(1 - alpha / 2))
    return float(stats.norm.sf(z - effect / se) + stats.norm.cdf(-z - effect / se))


def power_table(pilot: pd.DataFrame, models: Mapping[str, list[str]],
                growth: Mapping[tuple[str, str], float], settings: PowerSettings,
                simulated: set[str] | frozenset[str] = frozenset()) -> pd.DataFrame:
    """One row per configured judge and powered measure (module docstring).

    `pilot` is a pilot's judge card; `models` the configured judges by study;
    `growth[(study, measure)]` the configured design size over the pilot's (the study's
    ``power`` hook on both params); `simulated` the pilot's panel models on the ``sim``
    backend. Measures without an interval in the pilot are left out.
    """
    rows = []
    rated = pilot[pilot["ci_low"].notna() & pilot["ci_high"].notna() & (pilot["n"] > 0)]
    for (study, measure), ratio in growth.items():
        found = rated[(rated["study"] == study) & (rated["measure"] == measure)]
        for setting, group in found.groupby("setting", sort=False):
            ses = pd.Series([se_from_interval(lo, hi) for lo, hi
                             in zip(group["ci_low"], group["ci_high"], strict=True)],
                            index=group["model"].to_numpy())
            for model in models.get(study, []):
                if model in ses.index:
                    row = group[group["model"] == model].iloc[0]
                    se0, n0 = float(ses[model]), float(row["n"])
                    source = "pilot" + (" (simulated panel)" if model in simulated else "")
                else:
                    se0, n0 = float(ses.median()), float(group["n"].median())
                    source = (f"pilot median of {len(ses)} judge{'s' * (len(ses) > 1)}"
                              + (" (simulated panel)" if set(ses.index) <= simulated else ""))
                n = n0 * ratio
                target = (settings.targets or {}).get(measure, np.nan)
                rows.append({
                    "model": model, "study": study, "measure": measure,
                    "setting": setting, "unit": str(group["unit"].iloc[0]),
                    "variance_from": source, "n_pilot": n0, "se_pilot": se0, "n": n,
                    "mde": mde(se0 * math.sqrt(n0 / n), settings), "target": target,
                    "n_for_target": (size_for(target, se0, n0, settings)
                                     if np.isfinite(target) and target else np.nan)})
    return pd.DataFrame(rows, columns=POWER_COLUMNS)


def power_text(table: pd.DataFrame, settings: PowerSettings) -> str:
    """The power table for people: one line per judge and measure."""
    if table.empty:
        return "no powered measure of this config has an interval in the pilot's card"
    lines = [f"minimum detectable effect at alpha {settings.alpha:g}, power "
             f"{settings.power:g} (two-sided; judgebias.stats.power):"]
    for row in table.itertuples():
        need = (f"; {int(row.n_for_target):,} for {row.target:g}"
                if np.isfinite(row.n_for_target) else "")
        lines.append(f"  {row.model:<20} {row.study}.{row.measure} [{row.setting}]: "
                     f"MDE {row.mde:.3g} {row.unit} with n {row.n:,.0f} (pilot se "
                     f"{row.se_pilot:.3g} at n {row.n_pilot:,.0f}, {row.variance_from})"
                     f"{need}")
    return "\n".join(lines)
