"""The template study's input data: synthetic answers whose quality (the facts they state)
and length (facts plus filler words) are drawn independently, so a judge's preference for
length can be told apart from its preference for quality."""

from __future__ import annotations

import numpy as np
import pandas as pd

FACT, FILLER = "accurate", "indeed"  # the words the simulated judge counts


def build_answers(n_items: int, max_words: int, seed: int) -> pd.DataFrame:
    """`n_items` answers: 0..5 facts, then filler up to a length of 2..`max_words` words."""
    rng = np.random.default_rng(seed)
    facts = rng.integers(0, 6, n_items)
    words = np.maximum(facts, rng.integers(2, max_words + 1, n_items))
    answers = [" ".join([FACT] * f + [FILLER] * (w - f)) for f, w in zip(facts, words, strict=True)]
    return pd.DataFrame({"item_id": [f"item{i:04d}" for i in range(n_items)],
                         "answer": answers, "n_facts": facts.astype("int64"),
                         "n_words": words.astype("int64")})
