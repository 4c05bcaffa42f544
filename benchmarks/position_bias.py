"""Benchmark: the position-bias tests under simulated nulls, the coverage of their intervals
on planted worlds, and the PF test's power (`judgebias.stats.position`).

    .venv/bin/python benchmarks/position_bias.py [--datasets 4000] [--power-datasets 1000]
        [--coverage-datasets 500] [--resamples 999] [--ns 20 50 200 1000] [--seed 0]

Why: `judgebias.stats.position.position_bias` prints a p-value for PF = 0 (exact binomial of
recency vs primacy counts) and for a first-slot rate of 0.5, and intervals for PC
(Wilson), PF, RS and the both-order first-slot rate (percentile cluster bootstrap over
items), the one-order first-slot rate (Wilson) and the gold-slot gap (Newcombe)
(specs/judge-card.md §3). A test is only worth printing if it rejects a true null at most
at its nominal rate, and an interval only if it covers the truth at its nominal rate;
both are checked here on worlds whose truth is known.

**Judge.** Pair i has a true preference d_i (answer X's quality minus Y's; N(0.5, 1), or
integers -1..2 for ``discrete``), drawn afresh per data set. Shown in an order, the judge
sees the difference s = d (order ab) or -d (order ba), adds its first-slot pull and a
noise e, fresh per judgement, and answers slot A if s + pull + e > tie, B if it is below
-tie, a tie otherwise; 2% of answers fail (unparsed, at random). A pull > 0 is primacy:
P(first) = sigmoid(s + pull) for logistic noise, as in the spec's planted judge. With a
``habit`` the pull of each item is shifted by +habit or -habit (equally likely, the same
in both orders and all repeats): a judge whose slot preference depends on the item but
has no net direction.

**Nulls** (no net pull; PF = 0 and the first-slot rate is 0.5 exactly, whatever d):
``logistic`` (e logistic: Gumbel utility noise per slot), ``skewed`` (each slot's utility
gets its own right-skewed Exp(1) - 1 noise, so e is their difference: symmetric only
because both slots are treated alike, i.e. through the fair design), ``discrete`` (each
slot's utility gets a skewed noise in {-1, 0, 1} with P 0.2, 0.5, 0.3, on integer d; a
tie whenever the two totals are equal, so many CC, AC and BC codes), ``habit`` (logistic,
habit 2: many AA and BB pairs, PC about 0.3). Rows give the rejection rate at alpha =
0.05 of the PF test (both orders, repeat 0), of the first-slot binomial test on one order
with slots randomised (the §3 fallback), of the both-order first-slot test
(``first_slot_pair_test``, a sign-flip over pairs) beside the binomial over the pooled
verdicts of both orders that it replaces, and of the gold-slot gap's score test (one
order, randomised; gold = the better answer, none when d = 0).

**Coverage** on planted worlds with logistic noise: ``fair`` (pull 0), ``primacy`` (pull
+0.5), ``recency`` (pull -0.5), ``ties`` (tie threshold 1.0, pull +0.25: about a third
of answers are ties), ``habit`` (as the null). Each data set is one both-order table with
3 repeats (for RS) and one one-order table with randomised slots and gold (for the
fallbacks), both run through ``position_bias``. The truths are population values computed
without simulation: the per-order verdict probabilities given d and the item's pull in
closed form (logistic CDF), averaged over d by Gauss-Hermite quadrature; RS's by exact
enumeration of the 3 repeats (``expected_modal_share``). An undefined interval counts as
a miss.

**Power**: the PF test's rejection rate at planted primacy pulls, beside the one-order
first-slot test's on the same judge (n pairs judged twice vs n verdicts). Prints
Markdown.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np
import pandas as pd
from scipy import special

from judgebias.stats.position import (
    CLASS_TABLE,
    expected_modal_share,
    first_slot_pair_test,
    first_slot_test,
    gold_gap_test,
    pf_test,
    position_bias,
)

ALPHA = 0.05
LEVEL = 0.95
UNPARSED = 0.02
REPEATS = 3
PULLS = (0.1, 0.25, 0.5, 1.0)
SLOT_NAMES = np.array(["A", "B", "tie", None], dtype=object)


@dataclass(frozen=True)
class World:
    """A judge (module docstring): noise kind, first-slot pull and tie threshold."""

    name: str
    noise: str = "logistic"  # logistic | skewed | discrete
    pull: float = 0.0
    tie: float = 0.0
    habit: float = 0.0  # each item adds +habit or -habit to the pull, equally likely


NULLS = (World("logistic"), World("skewed", "skewed"), World("discrete", "discrete"),
         World("habit", habit=2.0))
WORLDS = (World("fair"), World("primacy", pull=0.5), World("recency", pull=-0.5),
          World("ties", pull=0.25, tie=1.0), World("habit", habit=2.0))


# ---------------------------------------------------------------------------- judge


def _noise(kind: str, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """e = first slot's utility noise minus the second's."""
    if kind == "logistic":
        return rng.logistic(size=shape)
    if kind == "skewed":
        return rng.exponential(size=shape) - rng.exponential(size=shape)
    if kind == "discrete":
        levels, p = [-1.0, 0.0, 1.0], [0.2, 0.5, 0.3]
        return rng.choice(levels, p=p, size=shape) - rng.choice(levels, p=p, size=shape)
    raise ValueError(kind)


def preferences(world: World, rng: np.random.Generator, shape: tuple[int, ...]
                ) -> np.ndarray:
    """True preferences d (X minus Y) of ``shape`` pairs."""
    if world.noise == "discrete":
        return rng.integers(-1, 3, size=shape).astype(float)
    return rng.normal(0.5, 1.0, size=shape)


def pulls(world: World, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Each pair's first-slot pull: ``pull``, plus or minus ``habit``."""
    if not world.habit:
        return np.full(shape, world.pull)
    return world.pull + np.where(rng.random(shape) < 0.5, world.habit, -world.habit)


def judge(world: World, shown: np.ndarray, pull: np.ndarray, rng: np.random.Generator
          ) -> np.ndarray:
    """Letter codes (0 A, 1 B, 2 tie, 3 unparsed) for shown differences ``shown``."""
    u = shown + pull + _noise(world.noise, rng, shown.shape)
    letter = np.where(u > world.tie, 0, np.where(u < -world.tie, 1, 2))
    return np.where(rng.random(shown.shape) < UNPARSED, 3, letter)


def both_orders(world: World, d: np.ndarray, rng: np.random.Generator, repeats: int
                ) -> np.ndarray:
    """Letters ``(..., n, 2, repeats)``: order ab shows d, order ba -d."""
    shape = (*d.shape, 2, repeats)
    shown = np.broadcast_to(np.stack([d, -d], axis=-1)[..., None], shape)
    pull = np.broadcast_to(pulls(world, rng, d.shape)[..., None, None], shape)
    return judge(world, shown, pull, rng)


def one_order(world: World, d: np.ndarray, rng: np.random.Generator
              ) -> tuple[np.ndarray, np.ndarray]:
    """(letters, gold slot code 0/1/-1): each pair shown once, order drawn at random."""
    swapped = rng.random(d.shape) < 0.5
    shown = np.where(swapped, -d, d)
    gold = np.where(shown > 0, 0, np.where(shown < 0, 1, -1))
    return judge(world, shown, pulls(world, rng, d.shape), rng), gold


# ---------------------------------------------------------------------------- nulls


@cache
def _pf_p(primacy: int, recency: int) -> float:
    return pf_test(primacy, recency)


@cache
def _first_p(first: int, second: int) -> float:
    return first_slot_test(first, second)


@cache
def _pair_first_p(aa: int, bb: int, a_tie: int, b_tie: int) -> float:
    return first_slot_pair_test(aa, bb, a_tie, b_tie)


@cache
def _gold_p(right_a: int, n_a: int, right_b: int, n_b: int) -> float:
    return gold_gap_test(right_a, n_a, right_b, n_b)


def test_p_values(world: World, n: int, datasets: int, rng: np.random.Generator, *,
                  gold: bool = True) -> dict[str, np.ndarray]:
    """p-values of the tests (the gold gap's only if ``gold``) on ``datasets`` data sets
    of n pairs, through the functions `position_bias` calls, on the counts they see; and
    the binomial over the pooled verdicts of both orders, which it does not use."""
    d = preferences(world, rng, (datasets, n))
    pairs = both_orders(world, d, rng, 1)[..., 0]  # (D, n, 2), repeat 0
    klass = CLASS_TABLE[pairs[..., 0], pairs[..., 1]]
    primacy, recency = (klass == 1).sum(axis=1), (klass == 2).sum(axis=1)
    both_a, both_b = (pairs == 0).sum(axis=(1, 2)), (pairs == 1).sum(axis=(1, 2))
    surplus = (pairs == 0).sum(axis=2) - (pairs == 1).sum(axis=2)  # (D, n)
    by_size = [(surplus == k).sum(axis=1) for k in (2, -2, 1, -1)]
    letters, slot = one_order(world, preferences(world, rng, (datasets, n)), rng)
    one_a, one_b = (letters == 0).sum(axis=1), (letters == 1).sum(axis=1)
    out = {"PF": _each(_pf_p, primacy, recency),
           "first slot, one order": _each(_first_p, one_a, one_b),
           "first slot, both orders": _each(_pair_first_p, *by_size),
           "pooled binomial": _each(_first_p, both_a, both_b)}
    if gold:
        in_a, in_b = (letters < 3) & (slot == 0), (letters < 3) & (slot == 1)
        out["gold gap"] = _each(_gold_p, (in_a & (letters == 0)).sum(axis=1),
                                in_a.sum(axis=1), (in_b & (letters == 1)).sum(axis=1),
                                in_b.sum(axis=1))
    return out


def _each(test: Callable[..., float], *counts: np.ndarray) -> np.ndarray:
    return np.array([test(*(int(c) for c in row)) for row in zip(*counts, strict=True)])


def null_section(args: argparse.Namespace, rng: np.random.Generator) -> None:
    band = 1.96 * np.sqrt(ALPHA * (1 - ALPHA) / args.datasets)
    print(f"## Rejection rate under the null (alpha {ALPHA}; {args.datasets} data sets per "
          f"row; Monte-Carlo 95% band {max(ALPHA - band, 0):.3f}-{ALPHA + band:.3f})\n")
    print("| null | n | PF exact binomial | first slot, one order (randomised): binomial | "
          "first slot, both orders: pair sign-flip | (pooled verdict binomial, not used) | "
          "gold gap score test |")
    print("|---|---|---|---|---|---|---|")
    for world in NULLS:
        for n in args.ns:
            p = test_p_values(world, n, args.datasets, rng)
            cells = " | ".join(f"{np.mean(v < ALPHA):.3f}" for v in p.values())
            print(f"| {world.name} | {n} | {cells} |", flush=True)


def power_section(args: argparse.Namespace, rng: np.random.Generator) -> None:
    print(f"\n## Power at alpha {ALPHA} (logistic noise, primacy pull; "
          f"{args.power_datasets} "
          "data sets per cell): PF test (both orders) / first-slot test (one order, "
          "randomised; n verdicts)\n")
    print("| pull | " + " | ".join(f"n={n}" for n in args.ns) + " |")
    print("|---|" + "---|" * len(args.ns))
    for pull in PULLS:
        cells = []
        for n in args.ns:
            p = test_p_values(World("pull", pull=pull), n, args.power_datasets, rng,
                              gold=False)
            cells.append(f"{np.mean(p['PF'] < ALPHA):.3f} / "
                         f"{np.mean(p['first slot, one order'] < ALPHA):.3f}")
        print(f"| {pull} | " + " | ".join(cells) + " |", flush=True)


# ------------------------------------------------------------------------- coverage


def _probabilities(world: World, shown: np.ndarray, pull: float) -> np.ndarray:
    """(..., 3): P(A), P(B), P(tie) of a parsed answer at shown difference ``shown``
    (logistic noise)."""
    p_a = special.expit(shown + pull - world.tie)
    p_b = special.expit(-world.tie - shown - pull)
    return np.stack([p_a, p_b, 1.0 - p_a - p_b], axis=-1)


def truth(world: World, nodes: int = 201) -> dict[str, float]:
    """Population values of every covered measure (logistic worlds; module docstring):
    expectations over d (Gauss-Hermite) and the item's pull (both signs of the habit),
    ratios taken after the expectations, as the estimators' limits."""
    x, w = np.polynomial.hermite_e.hermegauss(nodes)
    w = w / w.sum()
    d = 0.5 + x  # N(0.5, 1)
    klass = CLASS_TABLE[:3, :3]
    signs = (1.0, -1.0) if world.habit else (1.0,)
    parts: dict[str, float] = {}
    for sign in signs:
        pull = world.pull + sign * world.habit
        ab, ba = _probabilities(world, d, pull), _probabilities(world, -d, pull)
        joint = ab[:, :, None] * ba[:, None, :]  # (nodes, 3, 3): order-1 x order-2 letter
        rs = [w @ expected_modal_share(p * (1 - UNPARSED), REPEATS) for p in (ab, ba)]
        found = {f"class {c}": w @ joint[:, klass == c].sum(axis=1) for c in (0, 1, 2)}
        found |= {"rs": float(np.mean(rs)), "first": w @ (ab[:, 0] + ba[:, 0]),
                  "non-tie": w @ (ab[:, :2].sum(axis=1) + ba[:, :2].sum(axis=1)),
                  "gold first": w @ _probabilities(world, np.abs(d), pull)[:, 0],
                  "gold second": w @ _probabilities(world, -np.abs(d), pull)[:, 1]}
        for key, value in found.items():
            parts[key] = parts.get(key, 0.0) + float(value) / len(signs)
    first = parts["first"] / parts["non-tie"]
    return {"pc": parts["class 0"], "pf": parts["class 2"] - parts["class 1"],
            "rs": parts["rs"], "first_slot_rate (both)": first,
            "first_slot_rate (one)": first,
            "gold_slot_gap": parts["gold first"] - parts["gold second"]}


def _both_table(letters: np.ndarray) -> pd.DataFrame:
    n = letters.shape[0]
    return pd.DataFrame({
        "item": np.repeat(np.arange(n), 2 * REPEATS),
        "order": np.tile(np.repeat(["ab", "ba"], REPEATS), n),
        "repeat": np.tile(np.arange(REPEATS), 2 * n),
        "slot": SLOT_NAMES[letters.ravel()]})


def _one_table(letters: np.ndarray, gold: np.ndarray) -> pd.DataFrame:
    return pd.DataFrame({"item": np.arange(letters.size), "order": "ab",
                         "slot": SLOT_NAMES[letters],
                         "gold": np.array(["A", "B", None], dtype=object)[gold]})


def _intervals(result: pd.DataFrame) -> dict[str, tuple[float, float]]:
    return dict(zip(result["measure"], zip(result["ci_low"], result["ci_high"], strict=True),
                    strict=True))


def coverage(world: World, n: int, datasets: int, resamples: int, rng: np.random.Generator
             ) -> pd.DataFrame:
    """Coverage and mean width of each interval over ``datasets`` data sets of n pairs."""
    target = truth(world)
    hits = dict.fromkeys(target, 0.0)
    width = dict.fromkeys(target, 0.0)
    for i in range(datasets):
        both = _intervals(position_bias(
            _both_table(both_orders(world, preferences(world, rng, (n,)), rng, REPEATS)),
            n_resamples=resamples, seed=i))
        one = _intervals(position_bias(
            _one_table(*one_order(world, preferences(world, rng, (n,)), rng)),
            randomised=True, n_resamples=resamples, seed=i))
        found = {"pc": both["pc"], "pf": both["pf"], "rs": both["rs"],
                 "first_slot_rate (both)": both["first_slot_rate"],
                 "first_slot_rate (one)": one["first_slot_rate"],
                 "gold_slot_gap": one["gold_slot_gap"]}
        for name, (low, high) in found.items():
            hits[name] += float(low <= target[name] <= high)  # NaN: a miss
            width[name] += float(np.nan_to_num(high - low))
    return pd.DataFrame({"measure": list(target), "truth": list(target.values()),
                         "coverage": [hits[k] / datasets for k in target],
                         "width": [width[k] / datasets for k in target]})


def coverage_section(args: argparse.Namespace, rng: np.random.Generator) -> None:
    band = 1.96 * np.sqrt(LEVEL * (1 - LEVEL) / args.coverage_datasets)
    print(f"\n## Coverage of the 95% intervals ({args.coverage_datasets} data sets per "
          f"row, {args.resamples} resamples; Monte-Carlo 95% band {LEVEL - band:.3f}-"
          f"{min(LEVEL + band, 1):.3f}); cells: coverage (mean width)\n")
    names = list(truth(WORLDS[0]))
    print("| world | n | " + " | ".join(names) + " |")
    print("|---|---|" + "---|" * len(names))
    for world in WORLDS:
        for n in args.ns:
            r = coverage(world, n, args.coverage_datasets, args.resamples, rng)
            cells = " | ".join(f"{c:.3f} ({w:.3f})" for c, w in zip(r["coverage"], r["width"],
                                                                    strict=True))
            print(f"| {world.name} | {n} | {cells} |", flush=True)
    print("\nTruths (population values):\n")
    print("| world | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for world in WORLDS:
        t = truth(world)
        print(f"| {world.name} | " + " | ".join(f"{t[k]:.4f}" for k in names) + " |")


# ------------------------------------------------------------------------------ main


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", type=int, default=4000, help="data sets per null row")
    parser.add_argument("--power-datasets", type=int, default=1000,
                        help="data sets per power cell (0: skip the power table)")
    parser.add_argument("--coverage-datasets", type=int, default=500,
                        help="data sets per coverage row (0: skip the coverage)")
    parser.add_argument("--resamples", type=int, default=999, help="bootstrap B")
    parser.add_argument("--ns", type=int, nargs="+", default=[20, 50, 200, 1000],
                        help="pairs per data set")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    start = time.perf_counter()
    null_section(args, rng)
    if args.power_datasets:
        power_section(args, rng)
    if args.coverage_datasets:
        coverage_section(args, rng)
    print(f"\n({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
