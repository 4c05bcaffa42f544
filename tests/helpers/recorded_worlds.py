"""Small worlds of recorded judgements with planted answers (the recorded study's tests):
a scores table with planted self- and family-preference, a pairwise table with planted
position and informativeness bias, and their side files; and the same without any bias."""

from __future__ import annotations

import numpy as np
import pandas as pd

MODELS = ["alpha", "beta", "gamma", "delta"]
FAMILIES = {"alpha": "first", "beta": "first", "gamma": "second", "delta": "third"}


def scores_world(n_items: int = 60, self_points: dict[str, float] | None = None,
                 family_points: dict[str, float] | None = None, noise: str = "normal",
                 seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every model writes one output per item and every model scores every output on
    0-100: 40 + 40 x quality + planted points (own outputs; siblings') + noise, rounded.
    Noise: normal (sd 6), skewed (a centred gamma) or discrete (steps of 10). Returns the
    recorded table and the human ratings (quality x 5 + noise)."""
    rng = np.random.default_rng(seed)
    self_points = self_points or {}
    family_points = family_points or {}
    quality = {m: q for m, q in zip(MODELS, (0.7, 0.55, 0.6, 0.45), strict=True)}
    rows, human = [], []
    for i in range(n_items):
        item = f"img{i:03d}"
        for generator in MODELS:
            q = float(np.clip(quality[generator] + rng.normal(0, 0.15), 0, 1))
            human.append({"item": item, "output_id": generator,
                          "rating": round(1 + 4 * q + rng.normal(0, 0.3), 1)})
            for judge in MODELS:
                bias = (self_points.get(judge, 0.0) if judge == generator else
                        family_points.get(judge, 0.0)
                        if FAMILIES[judge] == FAMILIES[generator] else 0.0)
                e = rng.gamma(2.0, 4.0) - 8.0 if noise == "skewed" else rng.normal(0, 6)
                score = 40 + 40 * q + bias + e
                score = round(score / 10) * 10 if noise == "discrete" else round(score)
                rows.append({"item": item, "output_id": generator, "generator": generator,
                             "output": f"a caption by {generator}", "judge": judge,
                             "score": float(np.clip(score, 0, 100))})
    return pd.DataFrame(rows), pd.DataFrame(human)


def pairwise_world(n_pairs: int = 300, accuracy: float = 0.8,
                   first_slot: dict[str, float] | None = None,
                   informative_pull: dict[str, float] | None = None,
                   seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Pairs (x, y) of one item each, judged in both orders by judges "fair", "primacy"
    and "swayed". The human prefers x or y; y is the more informative in half the pairs.
    A judge is right with probability `accuracy`, except that `first_slot[j]` of its
    verdicts go to the first slot whatever it is, and on pairs where the less
    informative answer is preferred, `informative_pull[j]` of its verdicts go to the more
    informative one. Returns the table, the human preferences and the informativeness
    labels."""
    rng = np.random.default_rng(seed)
    first_slot = first_slot or {}
    informative_pull = informative_pull or {}
    judges = ["fair", "primacy", "swayed"]
    rows, human, informative = [], [], []
    for p in range(n_pairs):
        item, x, y = f"q{p:03d}", f"q{p:03d}-x", f"q{p:03d}-y"
        preferred = x if rng.random() < 0.5 else y
        more = y if rng.random() < 0.5 else x
        human.append({"item": item, "a": x, "b": y, "preferred": preferred})
        informative.append({"item": item, "a": x, "b": y, "more_informative": more})
        for judge in judges:
            for first, second in ((x, y), (y, x)):
                if rng.random() < first_slot.get(judge, 0.0):
                    pick = first
                elif preferred != more and rng.random() < informative_pull.get(judge, 0.0):
                    pick = more
                else:
                    other = y if preferred == x else x
                    pick = preferred if rng.random() < accuracy else other
                rows.append({"item": item, "judge": judge, "first": first, "second": second,
                             "verdict": "first" if pick == first else "second",
                             "probability": np.nan})
    return pd.DataFrame(rows), pd.DataFrame(human), pd.DataFrame(informative)
