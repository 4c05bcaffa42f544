"""Validity and yield of the triage threshold (judgebias.stats.triage): Learn then Test
against the naive rule, across judges, audit sizes and target accuracies.

Why: the leaderboard's triage (specs/leaderboard.md, "Triage (MMB)") lets the judge decide
the new pairs above a confidence threshold chosen on the audit. Learn then Test promises
that the accuracy of the decided share is at least the target in at least 1 - delta of
audits; the naive rule (the lowest threshold whose audit accuracy reaches the target)
promises nothing. This measures how often each meets the target, what share of pairs
each lets the judge decide, and how often LTT certifies anything at all.

Worlds. A pair's confidence is ``c = 0.5 + 0.5 B`` and the judge is right with probability
``q(c)``:

* ``calibrated``: B ~ Beta(2.5, 1.5) (mean c 0.81), q(c) = c: the accuracy above t
  is 0.81 at t = 0.5 and reaches 0.9 at t = 0.82 (51 % of pairs above);
* ``over_confident``: the same confidences, q(c) = 0.5 + 0.9 (c - 0.5) (right 95 % of the
  time at c = 1; mean 0.78): the 0.95 target is out of reach at every threshold;
* ``under_confident``: the same confidences, q(c) = 0.5 + 0.5 sqrt(2c - 1) (mean 0.89);
* ``discrete``: a 3-level verdict, c in {0.6, 0.8, 0.95} with shares 0.3, 0.4, 0.3 and
  accuracies 0.62, 0.83, 0.93 (over-confident at the top): thresholds 0.95 / 0.8 / 0.6
  have accuracies 0.93 / 0.873 / 0.797, so only 0.8 can be met at more than the top level,
  0.95 nowhere;
* ``skewed``: most pairs near certainty, B ~ Beta(5, 0.6) (mean c 0.95, 62 % of pairs at
  c >= 0.95), q(c) = c.

Each audit draws n pairs; LTT and the naive rule choose a threshold on it (delta = 0.05).
The truth is a fresh set of 500,000 pairs of the same world, drawn once per world, with
realised correctness: a threshold *meets the target* when the fresh pairs above it are
correct at least the target's share of the time. An audit that certifies nothing decides
nothing and so meets the target vacuously (it counts as met; the "certifies" column says
how often that happens).

    .venv/bin/python benchmarks/triage_validity.py             # 2,000 audits per cell
    .venv/bin/python benchmarks/triage_validity.py --smoke     # a few seconds (CI)

Columns: ``LTT met`` / ``naive met``: % of audits whose decided share meets the target (the
guarantee: LTT >= 95 %); ``oracle``, ``LTT``, ``naive``, ``LTT0``: the mean share of fresh
pairs decided, by the lowest threshold that meets the target on the fresh set (0 where
none does), by LTT, by the naive rule, and by LTT started at `smallest_certifiable`
(``min_decided=0``) instead of at a tenth of the audit (the default, ``min_decided=0.1``,
which the naive rule also gets as its floor; the last line gives the lowest % of audits
in which LTT0 met the target); ``certifies``: % of audits in which LTT certifies any
threshold; ``CP``: % of those audits whose 95 % Clopper-Pearson interval (of the audit
accuracy above the chosen threshold) covers the fresh accuracy above it.
Monte-Carlo error of a % near 95: +-1.0 point (95 %, 2,000 audits).

What it shows. LTT meets the target in at least 95.8 % of audits in every cell (delta =
0.05), near the nominal 95 % where its test has power and the accuracy curve crosses the
target (calibrated at 0.95 with 300 pairs, 95.8; over-confident at 0.8 with 1,000, 96.0),
at 97-100 % where it rarely certifies. The naive rule meets it in 30-60 % of audits
wherever the accuracy above t crosses the target inside the confidence range, at every
audit size: more audit pairs do not help, as it picks the noisy crossing itself. It is
safe only where every threshold meets the target (100 %), or where its lowest passing
threshold happens to be a good one (discrete judge at 0.9: 73-98.5 %, its only passing
level being the top one). Against an over-confident judge whose accuracy never reaches
0.95, LTT certifies in at most 0.4 % of audits; the naive rule still decides 3-15 % of the
pairs.

The price is the share decided. With 1,000 audit pairs LTT decides most of what the oracle
does where the target is met over a wide range (0.95 of 1.00 for the calibrated judge at
0.8; 0.75 of 0.94 for the under-confident at 0.9; 0.88 of 0.99 for the skewed at 0.95; the
discrete judge's top two levels at 0.8), and half of it or less where the target is met
only above a high threshold (0.26 of 0.51 for the calibrated judge at 0.9, 0.03 of 0.20 at
0.95). With 100 pairs it certifies little but easy targets: its first test needs the 14,
29 or 59 most confident pairs (targets 0.8, 0.9, 0.95) all correct. Starting at a tenth
of the audit rather than at `smallest_certifiable` (``LTT0``) decides more in 14 cells
(0.70 against 0.48 for the calibrated judge at 0.8 and 300 pairs; 0.71 against 0.18 for the
over-confident at 0.8 and 1,000), at most 0.002 less in the others; LTT0 meets the target
in at least 95.8 % of audits too.

The Clopper-Pearson interval reported for the chosen threshold is not adjusted for the
choice: it covers the truth in 94-99.5 % of the certifying audits where at least half the
audits certify, but only 17-54 % in the three cells where 2.7-5.7 % of audits certify (the
lucky draws); in cells where fewer than 1 % certify (a handful of audits) it misses.

Measured (2,000 audits per cell, seed 0, 174 s on one core of a shared 2-core machine)::

    .venv/bin/python benchmarks/triage_validity.py

| world | n | target | oracle | LTT met | naive met | LTT | naive | certifies | CP | LTT0 |
|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|
| calibrated | 100 | 0.8 | 1.000 | 100.0 | 100.0 | 0.234 | 0.950 | 57.5 | 98.8 | 0.234 |
| calibrated | 100 | 0.9 | 0.514 | 99.3 | 39.5 | 0.047 | 0.564 | 13.4 | 89.6 | 0.047 |
| calibrated | 100 | 0.95 | 0.202 | 100.0 | 29.9 | 0.000 | 0.295 | 0.1 | 0.0 | 0.000 |
| calibrated | 300 | 0.8 | 1.000 | 100.0 | 100.0 | 0.703 | 0.980 | 93.0 | 98.0 | 0.483 |
| calibrated | 300 | 0.9 | 0.514 | 99.2 | 43.6 | 0.075 | 0.531 | 40.5 | 98.4 | 0.077 |
| calibrated | 300 | 0.95 | 0.202 | 95.8 | 33.5 | 0.013 | 0.247 | 5.7 | 53.5 | 0.013 |
| calibrated | 1000 | 0.8 | 1.000 | 100.0 | 100.0 | 0.949 | 0.995 | 100.0 | 96.5 | 0.747 |
| calibrated | 1000 | 0.9 | 0.514 | 96.9 | 46.0 | 0.256 | 0.519 | 82.1 | 97.9 | 0.145 |
| calibrated | 1000 | 0.95 | 0.202 | 99.1 | 39.0 | 0.025 | 0.220 | 19.4 | 96.4 | 0.025 |
| over_confident | 100 | 0.8 | 0.905 | 99.3 | 45.4 | 0.079 | 0.851 | 26.6 | 98.3 | 0.079 |
| over_confident | 100 | 0.9 | 0.228 | 97.0 | 30.8 | 0.010 | 0.357 | 3.2 | 42.2 | 0.010 |
| over_confident | 100 | 0.95 | 0.001 | 100.0 | 45.6 | 0.000 | 0.146 | 0.0 | - | 0.000 |
| over_confident | 300 | 0.8 | 0.905 | 97.9 | 45.3 | 0.234 | 0.883 | 56.9 | 98.2 | 0.106 |
| over_confident | 300 | 0.9 | 0.228 | 99.2 | 33.8 | 0.012 | 0.295 | 9.2 | 86.3 | 0.013 |
| over_confident | 300 | 0.95 | 0.001 | 99.7 | 58.2 | 0.001 | 0.081 | 0.3 | 0.0 | 0.001 |
| over_confident | 1000 | 0.8 | 0.905 | 96.0 | 47.1 | 0.709 | 0.903 | 98.1 | 94.3 | 0.177 |
| over_confident | 1000 | 0.9 | 0.228 | 98.8 | 36.5 | 0.017 | 0.257 | 10.6 | 92.9 | 0.009 |
| over_confident | 1000 | 0.95 | 0.001 | 99.6 | 77.5 | 0.000 | 0.031 | 0.4 | 0.0 | 0.001 |
| under_confident | 100 | 0.8 | 1.000 | 100.0 | 100.0 | 0.523 | 0.990 | 75.2 | 98.5 | 0.523 |
| under_confident | 100 | 0.9 | 0.936 | 98.9 | 47.1 | 0.164 | 0.875 | 37.2 | 97.6 | 0.164 |
| under_confident | 100 | 0.95 | 0.473 | 97.3 | 36.9 | 0.017 | 0.544 | 2.7 | 16.7 | 0.017 |
| under_confident | 300 | 0.8 | 1.000 | 100.0 | 100.0 | 0.968 | 0.997 | 98.8 | 95.9 | 0.763 |
| under_confident | 300 | 0.9 | 0.936 | 98.0 | 46.2 | 0.251 | 0.913 | 62.8 | 98.0 | 0.253 |
| under_confident | 300 | 0.95 | 0.473 | 99.0 | 39.1 | 0.063 | 0.516 | 23.4 | 95.9 | 0.063 |
| under_confident | 1000 | 0.8 | 1.000 | 100.0 | 100.0 | 0.999 | 0.999 | 100.0 | 96.0 | 0.890 |
| under_confident | 1000 | 0.9 | 0.936 | 96.8 | 49.0 | 0.751 | 0.927 | 97.5 | 94.6 | 0.505 |
| under_confident | 1000 | 0.95 | 0.473 | 99.0 | 43.5 | 0.106 | 0.482 | 52.8 | 99.0 | 0.078 |
| discrete | 100 | 0.8 | 0.700 | 96.7 | 46.9 | 0.310 | 0.842 | 56.0 | 95.6 | 0.310 |
| discrete | 100 | 0.9 | 0.300 | 99.8 | 73.0 | 0.021 | 0.346 | 6.8 | 97.1 | 0.021 |
| discrete | 100 | 0.95 | 0.000 | 100.0 | 59.0 | 0.000 | 0.129 | 0.0 | - | 0.000 |
| discrete | 300 | 0.8 | 0.700 | 97.0 | 52.6 | 0.636 | 0.841 | 96.6 | 97.4 | 0.636 |
| discrete | 300 | 0.9 | 0.300 | 99.9 | 88.3 | 0.054 | 0.304 | 17.8 | 93.8 | 0.054 |
| discrete | 300 | 0.95 | 0.000 | 99.8 | 77.6 | 0.000 | 0.067 | 0.1 | 0.0 | 0.000 |
| discrete | 1000 | 0.8 | 0.700 | 97.3 | 58.4 | 0.708 | 0.825 | 100.0 | 94.6 | 0.708 |
| discrete | 1000 | 0.9 | 0.300 | 100.0 | 98.5 | 0.162 | 0.299 | 54.0 | 96.9 | 0.162 |
| discrete | 1000 | 0.95 | 0.000 | 100.0 | 92.0 | 0.000 | 0.024 | 0.1 | 0.0 | 0.000 |
| skewed | 100 | 0.8 | 1.000 | 100.0 | 100.0 | 0.939 | 0.990 | 98.2 | 97.3 | 0.939 |
| skewed | 100 | 0.9 | 1.000 | 100.0 | 100.0 | 0.648 | 0.989 | 86.2 | 99.5 | 0.648 |
| skewed | 100 | 0.95 | 0.986 | 99.0 | 59.2 | 0.281 | 0.925 | 39.0 | 98.3 | 0.281 |
| skewed | 300 | 0.8 | 1.000 | 100.0 | 100.0 | 0.997 | 0.997 | 100.0 | 96.8 | 0.988 |
| skewed | 300 | 0.9 | 1.000 | 100.0 | 100.0 | 0.931 | 0.997 | 97.8 | 97.3 | 0.931 |
| skewed | 300 | 0.95 | 0.986 | 98.0 | 51.7 | 0.526 | 0.959 | 87.6 | 98.7 | 0.526 |
| skewed | 1000 | 0.8 | 1.000 | 100.0 | 100.0 | 0.999 | 0.999 | 100.0 | 95.0 | 0.998 |
| skewed | 1000 | 0.9 | 1.000 | 100.0 | 100.0 | 0.999 | 0.999 | 100.0 | 95.0 | 0.988 |
| skewed | 1000 | 0.95 | 0.986 | 97.0 | 50.7 | 0.881 | 0.973 | 99.7 | 96.0 | 0.832 |
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from judgebias.stats.triage import certify_threshold

FRESH = 500_000


@dataclass(frozen=True)
class World:
    """How a world draws confidences, and how often the judge is right at each."""

    draw: Callable[[np.random.Generator, int], np.ndarray]
    accuracy: Callable[[np.ndarray], np.ndarray]


def _beta(a: float, b: float) -> Callable[[np.random.Generator, int], np.ndarray]:
    return lambda rng, n: 0.5 + 0.5 * rng.beta(a, b, n)


LEVELS = np.array([0.6, 0.8, 0.95])
LEVEL_SHARES = np.array([0.3, 0.4, 0.3])
LEVEL_ACCURACY = {0.6: 0.62, 0.8: 0.83, 0.95: 0.93}

WORLDS: dict[str, World] = {
    "calibrated": World(_beta(2.5, 1.5), lambda c: c),
    "over_confident": World(_beta(2.5, 1.5), lambda c: 0.5 + 0.9 * (c - 0.5)),
    "under_confident": World(_beta(2.5, 1.5), lambda c: 0.5 + 0.5 * np.sqrt(2 * c - 1)),
    "discrete": World(lambda rng, n: rng.choice(LEVELS, n, p=LEVEL_SHARES),
                      lambda c: np.select([c == lv for lv in LEVEL_ACCURACY],
                                          list(LEVEL_ACCURACY.values()))),
    "skewed": World(_beta(5.0, 0.6), lambda c: c),
}


def draw_pairs(rng: np.random.Generator, world: World, n: int
               ) -> tuple[np.ndarray, np.ndarray]:
    """n pairs of a world: confidences and whether the judge was right."""
    conf = world.draw(rng, n)
    return conf, rng.random(n) < world.accuracy(conf)


class Truth:
    """Accuracy and share of the fresh pairs at or above any threshold."""

    def __init__(self, conf: np.ndarray, correct: np.ndarray) -> None:
        order = np.argsort(conf)
        self.conf = conf[order]
        # correct pairs at or above the i-th smallest confidence
        self.correct_above = np.r_[np.cumsum(correct[order][::-1])[::-1], 0]

    def at(self, threshold: float) -> tuple[float, float]:
        """(accuracy, share) of the fresh pairs with confidence >= threshold."""
        i = int(np.searchsorted(self.conf, threshold, side="left"))
        n_above = self.conf.size - i
        if n_above == 0:
            return math.nan, 0.0
        return self.correct_above[i] / n_above, n_above / self.conf.size

    def oracle_share(self, target: float) -> float:
        """Share decided by the lowest threshold whose fresh accuracy meets the target."""
        n_above = np.arange(self.conf.size, 0, -1)
        meets = self.correct_above[:-1] >= target * n_above
        # the lowest threshold is the smallest confidence; ties decide together
        starts = np.r_[True, self.conf[1:] != self.conf[:-1]]
        ok = np.flatnonzero(meets & starts)
        return float(n_above[ok[0]] / self.conf.size) if ok.size else 0.0


VARIANTS = {"ltt": ("ltt", 0.1), "ltt0": ("ltt", 0.0), "naive": ("naive", 0.1)}


def run_cell(rng: np.random.Generator, world: World, truth: Truth, n: int,
             targets: list[float], reps: int, delta: float) -> dict[float, dict[str, float]]:
    """Per target and variant (`VARIANTS`: method, min_decided): % of audits meeting the
    target, mean share decided, % certifying; for LTT, % CP coverage when certified."""
    sums = {t: {f"{v}_{k}": 0.0 for v in VARIANTS for k in ("met", "share", "certifies")}
            | {"covers": 0.0} for t in targets}
    for _ in range(reps):
        conf, correct = draw_pairs(rng, world, n)
        for target in targets:
            cell = sums[target]
            for variant, (method, min_decided) in VARIANTS.items():
                rule = certify_threshold(conf, correct, target_accuracy=target, delta=delta,
                                         method=method, min_decided=min_decided)
                if rule.threshold is None:
                    cell[f"{variant}_met"] += 1
                    continue
                accuracy, share = truth.at(rule.threshold)
                cell[f"{variant}_met"] += share == 0 or accuracy >= target  # 0: vacuous
                cell[f"{variant}_share"] += share
                cell[f"{variant}_certifies"] += 1
                if variant == "ltt":
                    cell["covers"] += rule.accuracy_low <= accuracy <= rule.accuracy_high
    out = {}
    for target, cell in sums.items():
        result = {key: (100 * value if key.endswith(("met", "certifies")) else value) / reps
                  for key, value in cell.items() if key != "covers"}
        certified = cell["ltt_certifies"]
        result["covers"] = 100 * cell["covers"] / certified if certified else math.nan
        out[target] = result
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=2000, help="audits per cell")
    parser.add_argument("--ns", type=int, nargs="+", default=[100, 300, 1000],
                        help="audit sizes")
    parser.add_argument("--targets", type=float, nargs="+", default=[0.8, 0.9, 0.95])
    parser.add_argument("--worlds", nargs="+", choices=list(WORLDS), default=list(WORLDS))
    parser.add_argument("--delta", type=float, default=0.05)
    parser.add_argument("--fresh", type=int, default=FRESH, help="fresh pairs per world")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--smoke", action="store_true",
                        help="20 audits per cell, sizes 100 and 300, 50,000 fresh pairs")
    args = parser.parse_args()
    if args.smoke:
        args.reps, args.ns, args.fresh = 20, [100, 300], 50_000
    rng = np.random.default_rng(args.seed)
    mc = 1.96 * math.sqrt(0.05 * 0.95 / args.reps)
    print(f"{args.reps} audits per cell, delta = {args.delta}, truth from {args.fresh:,} "
          f"fresh pairs per world; Monte-Carlo error of a % near 95: +-{100 * mc:.1f} "
          "points (95%)\n")
    print("| world | n | target | oracle | LTT met | naive met | LTT | naive | certifies | CP "
          "| LTT0 |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    start = time.perf_counter()
    lowest_ltt0_met = 100.0
    for name in args.worlds:
        world = WORLDS[name]
        truth = Truth(*draw_pairs(rng, world, args.fresh))
        for n in args.ns:
            cells = run_cell(rng, world, truth, n, args.targets, args.reps, args.delta)
            for target, cell in cells.items():
                covers = "-" if math.isnan(cell["covers"]) else f"{cell['covers']:.1f}"
                print(f"| {name} | {n} | {target:g} | {truth.oracle_share(target):.3f} | "
                      f"{cell['ltt_met']:.1f} | {cell['naive_met']:.1f} | "
                      f"{cell['ltt_share']:.3f} | {cell['naive_share']:.3f} | "
                      f"{cell['ltt_certifies']:.1f} | {covers} | {cell['ltt0_share']:.3f} |",
                      flush=True)
            lowest_ltt0_met = min(lowest_ltt0_met, *(c["ltt0_met"] for c in cells.values()))
    print(f"\nLTT0 met the target in at least {lowest_ltt0_met:.1f} % of audits in every cell; "
          f"{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
