"""The synthetic default of BIRCH: pairwise VQA items about the synthetic scenes, answers
varying independently in correctness, informativeness and padding, preferred as the
spec's simulated humans do (spec birch.md, "What the simulated judge must plant").

Each pair is a fresh scene, a question drawn from :data:`judgebias.studies.birch.vqa.DOMAINS`
(the domain is the kind of question), and two answers, each drawn independently:
correct with probability ``p_correct``, ``details`` ~ U{0..max_details} valid extra facts,
``padding`` ~ U{0..max_padding} filler sentences (judgebias.studies.birch.vqa).

Simulated humans prefer the correct answer; between two correct (or two wrong) answers,
the one with more details; equal on both -> "tie" (dropped from every measure, counted).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from judgebias.data.scenes import random_scene, render, scene_to_json, to_png_bytes
from judgebias.io.artifacts import atomic_path
from judgebias.io.filedigest import file_sha256
from judgebias.studies.birch.vqa import draw_question, write_answer


def human_preference(correct_a: bool, correct_b: bool, details_a: int, details_b: int) -> str:
    """The simulated humans' label: correctness first, then informativeness."""
    if correct_a != correct_b:
        return "A" if correct_a else "B"
    if details_a != details_b:
        return "A" if details_a > details_b else "B"
    return "tie"


def synthetic_pairs(options: Mapping[str, Any], seed: int, images: str | Path) -> pd.DataFrame:
    """The pair table (schema tables.PAIRS) and one PNG per pair under `images`.

    `options` is a params block ``birch.datasets.<name>`` of format synthetic: n_pairs,
    p_correct, max_details, max_padding, image_size.
    """
    rng = np.random.default_rng([seed, 3])
    folder = Path(images)
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for index in range(int(options["n_pairs"])):
        scene = random_scene(rng)
        query, truth = draw_question(scene, rng)
        drawn = {}
        for side in ("a", "b"):
            correct = bool(rng.random() < options["p_correct"])
            details = int(rng.integers(options["max_details"] + 1))
            padding = int(rng.integers(options["max_padding"] + 1))
            text, details = write_answer(scene, truth, correct, details, padding, rng)
            drawn[side] = (text, correct, details, padding)
        pair_id = f"syn-{index:05d}"
        path = folder / f"{pair_id}.png"
        with atomic_path(path) as tmp:
            Path(tmp).write_bytes(to_png_bytes(render(scene, options["image_size"])))
        (text_a, correct_a, details_a, padding_a), (text_b, correct_b, details_b, padding_b) = \
            drawn["a"], drawn["b"]
        rows.append({
            "pair_id": pair_id, "source": "synthetic", "domain": truth.attribute,
            "query": query, "image": str(path), "image_sha256": file_sha256(path),
            "answer_a": text_a, "answer_b": text_b,
            "preference": human_preference(correct_a, correct_b, details_a, details_b),
            "file_order": "ab", "overridden": False, "model_a": None, "model_b": None,
            "correct_a": correct_a, "correct_b": correct_b, "details_a": details_a,
            "details_b": details_b, "padding_a": padding_a, "padding_b": padding_b,
            "scene": scene_to_json(scene)})
    return pd.DataFrame(rows)
