"""The leaderboard study's model jobs: a model system captions the task's images (the
philautia generator task), each judge scores every system's caption with the task's
G-VEval prompt (the philautia evaluator task), and on an images task each judge compares
every pair of systems' images with MMB's pairwise prompt and instructions (the MMB judge
task). All go through the judging core (journal, retries, raw answers and log-probs
kept), so adding a system pays only for its own outputs and the judgements that involve
them: every other request is answered from the journal."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

import pandas as pd

from judgebias.io.artifacts import read_table
from judgebias.judging.tasks import run_task
from judgebias.models.context import RunContext
from judgebias.studies.leaderboard.tables import OUTPUTS
from judgebias.studies.mmb.jobs import ask_pairs, pair_items
from judgebias.studies.mmb.params import Sampled
from judgebias.studies.philautia.jobs import judge_task
from judgebias.studies.philautia.params import Setting
from judgebias.studies.philautia.tables import IMAGES


def judged_rows(images_path: str, outputs_path: str) -> pd.DataFrame:
    """Every (image, system) output with what the judge is shown: the image and its
    references; an output without a caption keeps its status and is not asked about."""
    images = read_table(images_path, IMAGES)
    outputs = read_table(outputs_path, OUTPUTS)
    return outputs.merge(images[["image_id", "image_path", "references"]], on="image_id",
                         how="left", validate="many_to_one")


def score_outputs(run: RunContext, judge: str, images_path: str, outputs_path: str, *,
                  prompt: str, references: bool) -> pd.DataFrame:
    """One scores row per (image, system): `judge` scores the caption with template
    `prompt`, given the references where `references`."""
    rows = judged_rows(images_path, outputs_path)
    answers = run_task(run, judge, "judge",
                       judge_task(Setting(prompt=prompt, references=references)), rows)
    return pd.DataFrame({"image_id": rows["image_id"].to_numpy(),
                         "system": rows["system"].to_numpy(), "judge": judge, **answers})


def system_pairs(prompts: pd.DataFrame, pictures: pd.DataFrame, systems: Sequence[str]
                 ) -> pd.DataFrame:
    """Every pair of systems on every prompt of an images task, in MMB's pairs shape
    (pair_id, prompt, image_a, image_b), system_a before system_b in `systems`' order.
    The pair id names the prompt and both systems, so adding a system adds pairs and
    changes none (their seeded orders and journaled answers stay)."""
    image = pictures.set_index(["item_id", "system"])["image_path"]
    rows = [{"pair_id": f"{item_id}|{a}|{b}", "item_id": item_id, "prompt": text,
             "system_a": a, "system_b": b, "image_a": image[(item_id, a)],
             "image_b": image[(item_id, b)]}
            for item_id, text in zip(prompts["item_id"], prompts["prompt"], strict=True)
            for a, b in combinations(systems, 2)]
    return pd.DataFrame(rows, columns=["pair_id", "item_id", "prompt", "system_a",
                                       "system_b", "image_a", "image_b"])


def compare_pictures(run: RunContext, judge: str, pairs: pd.DataFrame, pool: pd.DataFrame,
                     *, prompt: str, order: str, order_seed: int, how: Sampled | None
                     ) -> pd.DataFrame:
    """`judge` compares every pair of `pairs` (`system_pairs`) under every instruction of
    `pool` with MMB's pairwise prompt (`prompt`: ``mmb.prompt`` in ``mmb.layout``, the
    template MMB was fitted with), in the orders `order` asks; p(system_a preferred) is
    read from each answer as the MMB study reads it (``mmb.probability``: `how`)."""
    items = pair_items(pairs, pool, order, order_seed)
    verdicts = ask_pairs(run, judge, items, prompt=prompt, how=how)
    keys = ["item_id", "system_a", "system_b"]
    return pairs[["pair_id", *keys]].merge(
        verdicts.drop(columns=[c for c in keys if c in verdicts]), on="pair_id",
        how="right", validate="one_to_many")
