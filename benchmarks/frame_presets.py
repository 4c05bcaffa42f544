"""Null rejection and coverage of the FRAME presets' statistics
(judgebias.studies.frame.measures.presets.paired_effects): a judge scored at a
pre-specified recipe (seed 004 Tables 9-10), no selection, so the plain paired t interval
and the exact tests should hold their level.

Each data set is one preset cell: n items, each scored once as the original and once
manipulated, by a simulated 0-5 judge (the FRAME sim's form, judgebias.studies.frame.sim):

    score = clip(round(leniency + slope (a - 1/2) + opinion + effect + noise), 0, 5)

with the item's alignment a ~ U(0, 1) and its opinion ~ N(0, 0.3) shared by both versions,
noise drawn per call. Worlds (each with effect 0 for the null, and planted for coverage):

- normal: noise N(0, 0.3), one decimal (the default sim judge);
- skewed: noise N(0, 0.05) plus a generous +2 with probability 0.1 (issue 20's judge);
- discrete: noise N(0, 0.5), whole points (ties and zero differences are the rule);
- ceiling: a lenient judge (leniency 4.5) clipped at 5, noise N(0, 0.3);
- planted worlds add effect 0.3 to every item (normal, discrete, ceiling) or an effect
  that differs per item, 0.3 x Exponential(1) (skewed effects: most items a little, a few a
  lot).

Truth for coverage: the world's mean difference E[manipulated - original], from 400,000
simulated items (clipping and rounding move it off the planted value). Rejection rates at
alpha = 0.05 (two-sided) of the paired t-test, the exact sign-flip permutation test and the
exact sign test; coverage of the 95 % t interval; Monte-Carlo standard error in the header.

Full run (`python benchmarks/frame_presets.py`, 2,000 data sets per row; 42 s on 2 shared
CPU cores): the table and its reading are in judgebias.studies.frame.measures.presets'
docstring.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

from judgebias.studies.frame.measures.presets import paired_effects

ALPHA = 0.05
OPINION = 0.3


def _noise_normal(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.normal(0, 0.3, shape)


def _noise_skewed(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.normal(0, 0.05, shape) + 2.0 * (rng.random(shape) < 0.1)


def _noise_discrete(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.normal(0, 0.5, shape)


# name -> (leniency, noise, decimals)
WORLDS: dict[str, tuple[float, Callable, int]] = {
    "normal": (2.5, _noise_normal, 1),
    "skewed": (2.0, _noise_skewed, 1),
    "discrete": (2.5, _noise_discrete, 0),
    "ceiling": (4.5, _noise_normal, 1),
}
# planted world -> (base world, effect per item)
PLANTED: dict[str, tuple[str, Callable]] = {
    "normal, +0.3": ("normal", lambda rng, shape: np.full(shape, 0.3)),
    "discrete, +0.3": ("discrete", lambda rng, shape: np.full(shape, 0.3)),
    "ceiling, +0.3": ("ceiling", lambda rng, shape: np.full(shape, 0.3)),
    "skewed effect, 0.3 Exp(1)": ("skewed", lambda rng, shape: 0.3 * rng.exponential(1, shape)),
}


def simulate(world: str, effect: Callable | None, shape: tuple[int, ...],
             rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Original and manipulated scores, arrays of `shape` (data sets x items)."""
    leniency, noise, decimals = WORLDS[world]
    base = leniency + 2.0 * (rng.random(shape) - 0.5) + rng.normal(0, OPINION, shape)
    lift = 0.0 if effect is None else effect(rng, shape)

    def judged(latent: np.ndarray) -> np.ndarray:
        return np.clip(np.round(latent + noise(rng, shape), decimals), 0, 5)

    return judged(base), judged(base + lift)


def truth(world: str, effect: Callable, rng: np.random.Generator, items: int = 400_000
          ) -> float:
    original, manipulated = simulate(world, effect, (items,), rng)
    return float((manipulated - original).mean())


def run_row(world: str, effect: Callable | None, n: int, datasets: int, resamples: int,
            rng: np.random.Generator, target: float = 0.0) -> dict[str, float]:
    original, manipulated = simulate(world, effect, (datasets, n), rng)
    differences = manipulated - original
    cells = paired_effects(differences, original.mean(axis=1), resamples,
                           seed=int(rng.integers(2**31)))
    rates = {key: float((cells[key] < ALPHA).mean())
             for key in ("t_p", "permutation_p", "sign_p")}
    covered = (cells["ci_low"] - 1e-9 <= target) & (target <= cells["ci_high"] + 1e-9)
    return rates | {"coverage": float(covered.mean()),
                    "zero_share": float((differences == 0).mean())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", type=int, default=2000, help="data sets per row")
    parser.add_argument("--sizes", type=int, nargs="+", default=[12, 30, 100],
                        help="items per cell (12: the default params; 100: the paper)")
    parser.add_argument("--resamples", type=int, default=1999,
                        help="random sign flips above 16 items (exact enumeration below)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    se = np.sqrt(ALPHA * (1 - ALPHA) / args.datasets)
    start = time.perf_counter()
    print(f"Null rejection at alpha {ALPHA} (two-sided) and 95% t-interval coverage, "
          f"{args.datasets} data sets per row; Monte-Carlo s.e. {100 * se:.2f} points "
          "for both\n")
    print("| world | truth | n | zero diffs | t-test | exact sign-flip | exact sign test "
          "| t-CI coverage |")
    print("|---|---|---|---|---|---|---|---|")
    rows = [(world, None, 0.0) for world in WORLDS]
    rows += [(name, effect, truth(base, effect, rng)) for name, (base, effect)
             in PLANTED.items()]
    for name, effect, target in rows:
        world = PLANTED[name][0] if name in PLANTED else name
        for n in args.sizes:
            got = run_row(world, effect, n, args.datasets, args.resamples, rng, target)
            label = f"{name} (null)" if effect is None else name
            print(f"| {label} | {target:+.3f} | {n} | {100 * got['zero_share']:.0f}% "
                  f"| {100 * got['t_p']:.1f}% | {100 * got['permutation_p']:.1f}% "
                  f"| {100 * got['sign_p']:.1f}% | {100 * got['coverage']:.1f}% |")
    print(f"\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
