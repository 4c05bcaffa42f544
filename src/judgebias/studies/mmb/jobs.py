"""MMB's model jobs: every (pair, instruction) judged once by each judge, and the
instruction writer that grows the pool. Both are ordinary journaled judge tasks of the
judging core, so a rerun after adding one instruction pays only for that instruction.

p(A preferred | pair, instruction) (seed 002 §3: p(y | x, a)) is the softmax of the two
answer tokens' log-probs at the answer position (LabelProbabilities), mapped back from the
order shown to the pair's own A/B. An answer whose backend gave no log-probs degrades to
the parsed choice with add-one (Laplace) smoothing of that single vote:
p(shown first preferred) = (1 + [choice = first]) / 3, i.e. 2/3 or 1/3 (spec mmb.md: "p
from the parsed choice with a documented smoothing"); its ``p_source`` says so and the
report counts such answers. Any other status (failed, unparseable, truncated) keeps its
status and no number.

A judge read from samples (``mmb.probability``: a judge without log-probs, such as Claude
or a reasoning model) is asked each (pair, instruction, order) n times, sample r with its
sampling seed + r (judgebias.judging.tasks.resampled: each sample its own journaled
call), and p(shown first preferred) is estimated from the k of its m usable verdicts that
chose the first image as ``(k + prior) / (m + 2 prior)``: the posterior mean under a
symmetric Beta(prior, prior) prior, Laplace's rule of succession at prior = 1, which is
the single-vote smoothing above at n = 1. At temperature 1 a verdict is drawn with the
label probabilities the log-prob route reads, so k / m estimates the same p(y | x, a)
(seed 002 §3); the prior shrinks it towards 1/2 by a factor m / (m + 2 prior), which
benchmarks/mmb_sampling.py measures against the log-prob route. Each sample keeps its own
row (``sample`` r, its raw answer and status); ``p_a`` is the (pair, instruction, order)'s
estimate, on each of its usable samples' rows. A failed or unparseable sample is not a
vote; a (pair, instruction, order) with no usable sample has no number.

The jobs take the run context (judgebias.models.context.RunContext: the journal, the panel
model and its limits) and the values of the ``mmb:`` block they need (the step hands them
from its typed view, params.MmbParams), never the params mapping.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np
import pandas as pd

from judgebias.io.artifacts import read_table
from judgebias.judging.answers import STATUS_NO_LOGPROBS, STATUS_OK, LabelProbabilities
from judgebias.judging.tasks import FreeText, JudgeTask, run_samples, run_task
from judgebias.models.context import RunContext
from judgebias.studies.mmb.params import Sampled
from judgebias.studies.mmb.tables import PAIRS, read_pool

ORDERS = ("ab", "ba")
SMOOTHED_WIN = 2 / 3  # Laplace: (1 + 1) / (1 + 2) for the choice, 1/3 for the other


def judge_task(prompt: str) -> JudgeTask:
    """The pairwise prompt (template `prompt`: ``mmb.prompt``, or its variant for
    ``mmb.layout``, params.judge_prompt): the instruction, the generation prompt, both
    images in the order shown, where the template places them."""
    return JudgeTask(prompt=prompt, answer=LabelProbabilities(),
                     fields={"Instruction": "instruction_text", "Prompt": "prompt"},
                     images=("first_image", "second_image"))


def writer_task() -> JudgeTask:
    """The instruction writer's prompt (no image)."""
    return JudgeTask(prompt="mmb_rephrase", answer=FreeText(),
                     fields={"Instruction": "text"}, images=())


def orders(pairs: pd.DataFrame, instructions: pd.Series, mode: str, seed: int) -> pd.DataFrame:
    """One row per (pair, instruction, order shown). ``random``: one order per (pair,
    instruction) drawn from a generator seeded by (seed, pair id, instruction id), so
    adding a pair or an instruction never redraws the others; ``both``: both orders."""
    grid = pairs.merge(pd.DataFrame({"instruction": instructions}), how="cross")
    if mode == "both":
        return grid.merge(pd.DataFrame({"order": ORDERS}), how="cross")
    grid["order"] = [ORDERS[_draw(seed, p, i)] for p, i in
                     zip(grid["pair_id"], grid["instruction"], strict=True)]
    return grid


def _draw(seed: int, pair_id: str, instruction: str) -> int:
    ss = np.random.SeedSequence([seed, *json.dumps([pair_id, instruction]).encode("utf-8")])
    return int(np.random.default_rng(ss).integers(2))


def p_first(status: str, probs: str, label: str | None) -> tuple[float | None, str]:
    """p(the image shown first is preferred) and where it came from."""
    if status == STATUS_OK:
        return float(json.loads(probs)["A"]), "logprobs"
    if status == STATUS_NO_LOGPROBS and label in ("A", "B"):
        return (SMOOTHED_WIN if label == "A" else 1 - SMOOTHED_WIN), "smoothed_choice"
    return None, "none"


def judge_items(pairs_path: str, pool_path: str, order: str, order_seed: int
                ) -> pd.DataFrame:
    """Every (pair, instruction, order shown) of the pairs table and the pool files
    (:func:`pair_items`)."""
    return pair_items(read_table(pairs_path, PAIRS), read_pool(pool_path), order, order_seed)


def pair_items(pairs: pd.DataFrame, pool: pd.DataFrame, order: str, order_seed: int
               ) -> pd.DataFrame:
    """Every (pair, instruction, order shown) with the instruction's text and the images
    in the order shown (`first_image`, `second_image`); `pairs` needs pair_id, prompt,
    image_a and image_b, `pool` id and text; `order` and `order_seed` are ``mmb.order``
    and ``mmb.order_seed`` (:func:`orders`)."""
    items = orders(pairs, pool["id"], order, order_seed)
    items = items.merge(pool.rename(columns={"id": "instruction", "text": "instruction_text"}),
                        on="instruction", how="left")
    swapped = items["order"] == "ba"
    items["first_image"] = items["image_a"].where(~swapped, items["image_b"])
    items["second_image"] = items["image_b"].where(~swapped, items["image_a"])
    return items


def layout_sample(items: pd.DataFrame, n_pairs: int, n_instructions: int, seed: int
                  ) -> pd.DataFrame:
    """The layout check's items (``mmb.layout_check``): those of `n_pairs` pairs of
    :func:`pair_items`' `items` drawn with `seed` (from the sorted pair ids), and of each
    such pair `n_instructions` instructions drawn with (seed, pair id) (0: all), in the
    order of `items`. Seeded per pair, so a new instruction redraws no other pair's."""
    pairs = sorted(items["pair_id"].unique())
    rng = np.random.default_rng(seed)
    chosen = set(rng.choice(pairs, size=min(n_pairs, len(pairs)), replace=False).tolist())
    keep = items["pair_id"].isin(chosen).to_numpy(copy=True)
    if n_instructions:
        ids = sorted(items["instruction"].unique())
        asked = {pair: set(np.random.default_rng(np.random.SeedSequence(
            [seed, *json.dumps(["layout", pair]).encode("utf-8")])).choice(
                ids, size=min(n_instructions, len(ids)), replace=False).tolist())
                 for pair in chosen}
        keep &= np.array([i in asked.get(p, ()) for p, i in
                          zip(items["pair_id"], items["instruction"], strict=True)], dtype=bool)
    return items[keep].reset_index(drop=True)


def sampled_p_first(first: np.ndarray, usable: np.ndarray, prior: float) -> np.ndarray:
    """p(the image shown first is preferred) from sampled verdicts (module docstring):
    ``(k + prior) / (m + 2 prior)`` with k (`first`) of the m (`usable`) verdicts of each
    item choosing the first image; NaN where none is usable."""
    first, usable = np.asarray(first, dtype=float), np.asarray(usable, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(usable > 0, (first + prior) / (usable + 2 * prior), np.nan)


def judge_pairs(run: RunContext, judge: str, pairs_path: str, pool_path: str, *,
                prompt: str, order: str, order_seed: int, how: Sampled | None
                ) -> pd.DataFrame:
    """One judgements row per (pair, instruction, order shown, sample) for `judge`
    (:func:`ask_pairs`). `prompt` is the template of ``mmb.prompt`` in ``mmb.layout``
    (params.judge_prompt), `order` and `order_seed` are ``mmb.order`` and
    ``mmb.order_seed``."""
    return ask_pairs(run, judge, judge_items(pairs_path, pool_path, order, order_seed),
                     prompt=prompt, how=how)


def ask_pairs(run: RunContext, judge: str, items: pd.DataFrame, *, prompt: str,
              how: Sampled | None) -> pd.DataFrame:
    """One judgements row per item of :func:`pair_items` and sample for `judge`: one
    sample (0) when read from log-probs (`how` None), ``mmb.probability.samples`` when
    sampled (`how`: params.Probability.of)."""
    task = judge_task(prompt)
    if how is None:
        answers = run_samples(run, judge, "judge", task, items, (0,))
        read = [p_first(s, p, lab) for s, p, lab in
                zip(answers["status"], answers["probs"], answers["label"], strict=True)]
        return _rows(items, judge, [r[0] for r in read], [r[1] for r in read], answers)
    answers = run_samples(run, judge, "judge", task, items, range(how.n))
    usable = ((answers["status"].isin([STATUS_OK, STATUS_NO_LOGPROBS]))
              & answers["label"].isin(["A", "B"])).to_numpy()
    votes = usable.reshape(how.n, len(items))
    first = (answers["label"] == "A").to_numpy().reshape(how.n, len(items)) & votes
    p_shown = sampled_p_first(first.sum(axis=0), votes.sum(axis=0), how.prior)
    asked = pd.concat([items] * how.n, ignore_index=True)
    return _rows(asked, judge, np.where(usable, np.tile(p_shown, how.n), np.nan),
                 np.where(usable, "samples", "none"), answers)


def _rows(items: pd.DataFrame, judge: str, p_shown: Sequence[float | None] | np.ndarray,
          sources: Sequence[str] | np.ndarray, answers: pd.DataFrame) -> pd.DataFrame:
    """The judgements rows: `items` (one per answer), p(A preferred) mapped back from the
    order shown, where it came from, and the answers (with their ``sample``)."""
    swapped = (items["order"] == "ba").to_numpy()
    p_a = pd.array([None if p is None or p != p else float(p) for p in p_shown],
                   dtype="Float64")
    p_a[swapped] = 1 - p_a[swapped]
    return pd.DataFrame({"pair_id": items["pair_id"].to_numpy(),
                         "instruction": items["instruction"].to_numpy(), "judge": judge,
                         "order": items["order"].to_numpy(), "sample": answers["sample"],
                         "p_a": p_a, "p_source": list(sources),
                         **answers.drop(columns="sample")})


def rephrase_sources(base: pd.DataFrame, n_new: int, seed: int) -> pd.DataFrame:
    """The `n_new` instructions of the pool the writer rephrases (drawn with `seed`)."""
    rng = np.random.default_rng(seed)
    chosen = rng.choice(len(base), size=min(n_new, len(base)), replace=False)
    return base.iloc[chosen].reset_index(drop=True)


def grow_pool(run: RunContext, writer: str, n_new: int, seed: int,
              base: pd.DataFrame) -> pd.DataFrame:
    """Seed 002 §5 ("LLM-driven rephrasings"): `writer` rewrites `n_new` instructions drawn
    (seeded) from the pool; each usable, new text joins it as ``gen-<writer>-<n>``.

    A failed or truncated answer, one on several lines, and a duplicate of an existing
    text are dropped (the log says how many): a pool entry is always a real instruction.
    """
    sources = rephrase_sources(base, n_new, seed)
    answers = run_task(run, writer, "writer", writer_task(), sources)
    known = {t.casefold() for t in base["text"]}
    added: list[dict[str, str]] = []
    for source, status, text in zip(sources["id"], answers["status"], answers["label"],
                                    strict=True):
        text = (text or "").strip()
        if status != STATUS_OK or not text or "\n" in text or text.casefold() in known:
            continue
        known.add(text.casefold())
        added.append({"id": f"gen-{writer}-{len(added) + 1:02d}", "kind": "rephrasing",
                      "text": text, "source": source})
    return pd.DataFrame(added, columns=["id", "kind", "text", "source"])
