"""BIRCH's model jobs, each an ordinary journaled judge task of the judging core, so a rerun
pays only for what is new (seed 003 §3, §5, Appendix A and C.5; spec birch.md).

Judging variants (judgebias.studies.birch.params.Variant), each judged by every judge:

``base``          Base with the image: Fig. 21 without its reference block (ours: the
                  paper prints no Base prompt; spec birch.md)
``no_image``      Base without the image, and without the words that point at it (§3.2)
``caption``       Image Caption: Base with the judge's own caption inserted (Fig. 13)
``standard_ref``  Standard Ref: the judge's own answer (Fig. 19), then Fig. 21 (§5.1)
``birch``         BIRCH: the anchor (Fig. 20, one pass), then Fig. 21 (§5.2)
``equalised``     Base on the length-equalised pairs (Appendix C.5)

The texts those variants need come from preparatory passes (:data:`STEPS`): ``reference``
(Fig. 19), ``caption`` (the judge's captioning prompt), ``anchor`` (Fig. 20; its ``Merged
Response:`` is the anchor), and ``lengthen`` (our C.5 prompt, by the lengthener model).
The informativeness labeller answers Fig. 18 in both orders (spec: "Labeller position
bias").

Fig. 21's ``{ image }`` line is not text: the image is attached after the prompt, as in
every study. Verdicts are read as ``[[A]]`` / ``[[B]]`` with ``[[C]]`` a tie
(``Choice(style="brackets")``); a tie keeps status ``tie`` and verdict ``"tie"``, a failed
or unparseable answer keeps its status and no verdict; nothing is guessed. Temperature
and samples are the panel model's sampling block (spec: default temperature 0, one sample).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from judgebias.judging.answers import STATUS_OK, STATUS_TIE, Choice
from judgebias.judging.tasks import FreeText, JudgeTask, run_samples, run_task
from judgebias.models.context import RunContext

STEPS = ("reference", "caption", "anchor")
# The texts each variant needs, from which step.
NEEDS = {"caption": "caption", "standard_ref": "reference", "birch": "anchor"}
JUDGE_PROMPTS = {"base": "birch_judge_base", "no_image": "birch_judge_no_image",
                 "caption": "birch_judge_caption", "standard_ref": "birch_judge_reference",
                 "birch": "birch_judge_reference", "equalised": "birch_judge_base"}
ORDERS = ("ab", "ba")
ANSWERS = {"Query": "query", "AnswerA": "first", "AnswerB": "second"}
MERGED_MARK = "Merged Response:"
STATUS_NO_TEXT = "no_text"  # the reference / caption / anchor a variant needs is missing
STATUS_NO_ANCHOR = "unparseable"


def judge_task(variant: str) -> JudgeTask:
    """The pairwise judging task of one variant."""
    fields = dict(ANSWERS)
    if variant == "caption":
        fields["Caption"] = "text"
    elif variant in ("standard_ref", "birch"):
        fields["Reference"] = "text"
    return JudgeTask(prompt=JUDGE_PROMPTS[variant], answer=Choice(style="brackets"),
                     fields=fields, images=() if variant == "no_image" else ("image",))


def label_task() -> JudgeTask:
    """Fig. 18: the informativeness labeller, image withheld."""
    return JudgeTask(prompt="birch_informativeness", answer=Choice(style="brackets"),
                     fields=dict(ANSWERS), images=())


def text_task(step: str, caption_prompt: str) -> JudgeTask:
    """The preparatory pass of one step."""
    if step == "reference":
        return JudgeTask(prompt="birch_reference", answer=FreeText(), fields={"Query": "query"},
                         images=("image",))
    if step == "caption":
        return JudgeTask(prompt=caption_prompt, answer=FreeText(), images=("image",))
    if step == "anchor":
        return JudgeTask(prompt="birch_anchor", answer=FreeText(), fields=dict(ANSWERS),
                         images=("image",))
    if step == "lengthen":
        return JudgeTask(prompt="birch_lengthen", answer=FreeText(), images=(),
                         fields={"Query": "query", "Answer": "shorter", "Words": "words"})
    raise ValueError(f"unknown step {step!r}")


def shown(pairs: pd.DataFrame, orders: tuple[str, ...]) -> pd.DataFrame:
    """One row per (pair, order shown), with the answers as shown (`first`, `second`)."""
    rows = []
    for order in orders:
        view = pairs.assign(order=order)
        swapped = order == "ba"
        view["first"] = view["answer_b"] if swapped else view["answer_a"]
        view["second"] = view["answer_a"] if swapped else view["answer_b"]
        rows.append(view)
    return pd.concat(rows, ignore_index=True)


def to_pair_side(status: pd.Series, label: pd.Series, order: pd.Series) -> list[str | None]:
    """A shown-order verdict mapped back to the pair's A / B ("tie" kept, None unless
    usable)."""
    out: list[str | None] = []
    for state, choice, shown_as in zip(status, label, order, strict=True):
        if state == STATUS_TIE:
            out.append("tie")
        elif state != STATUS_OK:
            out.append(None)
        else:
            out.append(choice if shown_as == "ab" else {"A": "B", "B": "A"}[choice])
    return out


def with_texts(pairs: pd.DataFrame, texts: pd.DataFrame | None) -> pd.DataFrame:
    """The pairs with the text their variant needs (`text`); an item whose text is
    missing gets status ``no_text`` and is not asked."""
    if texts is None:
        return pairs.assign(status=STATUS_OK)
    merged = pairs.merge(texts[["pair_id", "text"]], on="pair_id", how="left")
    merged["status"] = np.where(merged["text"].notna(), STATUS_OK, STATUS_NO_TEXT)
    merged["text"] = merged["text"].fillna("")
    return merged


def judge(run: RunContext, judge_key: str, variant: str, pairs: pd.DataFrame,
          texts: pd.DataFrame | None = None, repeats: Sequence[int] = (0,), *,
          swap_order: bool) -> pd.DataFrame:
    """Every pair judged by `judge_key` in one variant: the verdicts table's rows, with
    their ``repeat``; in both orders with `swap_order` (``birch.swap_order``), else as
    the pair gives them. `run`: the journal, the judge and its limits
    (judgebias.models.context).

    A repeat r > 0 asks the same requests again with the judge's sampling seed + r
    (judgebias.judging.tasks.run_samples), so each repeat is its own journal entry,
    answered (and paid) once and kept on resume, and a sampling judge may answer
    differently: the repeats behind the judge card's repetition stability
    (``birch.repeats``).
    """
    orders = ORDERS if swap_order else ORDERS[:1]
    items = shown(with_texts(pairs, texts), orders)
    answers = run_samples(run, judge_key, "judge", judge_task(variant), items, repeats)
    asked = pd.concat([items] * len(repeats), ignore_index=True)
    keys = pd.DataFrame({"pair_id": asked["pair_id"], "judge": judge_key, "variant": variant,
                         "order": asked["order"],
                         "verdict": to_pair_side(answers["status"], answers["label"],
                                                 asked["order"])})
    return pd.concat([keys, answers.rename(columns={"sample": "repeat"})], axis=1)


def label(run: RunContext, labeller: str, pairs: pd.DataFrame) -> pd.DataFrame:
    """Fig. 18 in both orders: the labels table's rows (A / B of the pair, None unless
    usable; a tie is not an answer Fig. 18 allows and stays unusable)."""
    items = shown(pairs, ORDERS)
    answers = run_task(run, labeller, "labeller", label_task(), items)
    sides = to_pair_side(answers["status"], answers["label"], items["order"])
    keys = pd.DataFrame({"pair_id": items["pair_id"], "labeller": labeller,
                         "order": items["order"],
                         "more_informative": [s if s in ("A", "B") else None for s in sides]})
    return pd.concat([keys, answers], axis=1)


def merged_anchor(text: str) -> str | None:
    """The anchor: what follows ``Merged Response:`` (None if the answer lacks it)."""
    _, found, anchor = text.rpartition(MERGED_MARK)
    return anchor.strip() or None if found else None


def prepare(run: RunContext, model: str, step: str, pairs: pd.DataFrame, *,
            caption_prompt: str) -> pd.DataFrame:
    """The texts of one preparatory step for every pair (reference, caption or anchor;
    `caption_prompt`: the captioning prompt id, ``birch.caption_prompt``)."""
    items = shown(pairs, ORDERS[:1])
    task = text_task(step, caption_prompt)
    answers = run_task(run, model, step, task, items)
    texts: list[str | None] = []
    statuses = answers["status"].tolist()
    for index, (status, text) in enumerate(zip(statuses, answers["label"], strict=True)):
        if status != STATUS_OK:
            texts.append(None)
        elif step == "anchor":
            anchor = merged_anchor(text)
            texts.append(anchor)
            if anchor is None:
                statuses[index] = STATUS_NO_ANCHOR
        else:
            texts.append(text)
    answers["status"] = statuses
    keys = pd.DataFrame({"pair_id": items["pair_id"], "model": model, "step": step,
                         "text": texts})
    return pd.concat([keys, answers], axis=1)


def lengthen_items(pairs: pd.DataFrame) -> pd.DataFrame:
    """The pairs whose answers differ in length, with the shorter answer and the longer
    one's word count (Appendix C.5: the shorter is extended to match the longer)."""
    words_a = pairs["answer_a"].str.split().str.len()
    words_b = pairs["answer_b"].str.split().str.len()
    items = pairs[words_a != words_b].copy()
    a_shorter = (words_a < words_b)[items.index]
    items["shorter_side"] = np.where(a_shorter, "A", "B")
    items["shorter"] = items["answer_a"].where(a_shorter, items["answer_b"])
    items["words"] = np.maximum(words_a, words_b)[items.index].astype(str)
    return items.reset_index(drop=True)


def lengthen(run: RunContext, model: str, pairs: pd.DataFrame) -> pd.DataFrame:
    """The lengthened shorter answer of every pair of unequal lengths (texts rows; the
    lengthened side is in the `label` column's place: see :func:`equalised_pairs`)."""
    items = lengthen_items(pairs)
    answers = run_task(run, model, "lengthener", text_task("lengthen", ""), items)
    usable = answers["status"] == STATUS_OK
    keys = pd.DataFrame({"pair_id": items["pair_id"], "model": model,
                         "step": "lengthen_" + items["shorter_side"],
                         "text": answers["label"].where(usable, None)})
    return pd.concat([keys, answers], axis=1)


def equalised_pairs(pairs: pd.DataFrame, lengthened: pd.DataFrame, tolerance: int
                    ) -> tuple[pd.DataFrame, dict[str, int]]:
    """Appendix C.5: the pairs with the shorter answer replaced by its lengthened version,
    kept where the two lengths differ by at most `tolerance` words; and the counts of
    what was dropped (failed lengthening, still too far apart)."""
    done = lengthened[lengthened["text"].notna()]
    merged = pairs.merge(done[["pair_id", "step", "text"]], on="pair_id", how="left")
    side_a = merged["step"] == "lengthen_A"
    side_b = merged["step"] == "lengthen_B"
    merged["answer_a"] = merged["text"].where(side_a, merged["answer_a"])
    merged["answer_b"] = merged["text"].where(side_b, merged["answer_b"])
    gap = (merged["answer_a"].str.split().str.len()
           - merged["answer_b"].str.split().str.len()).abs()
    failed = int((lengthened["text"].isna()).sum())
    close = gap <= tolerance
    counts = {"pairs": len(pairs), "lengthened": len(done), "failed": failed,
              "too_far_apart": int((~close).sum()), "kept": int(close.sum())}
    kept = merged[close].drop(columns=["step", "text"]).reset_index(drop=True)
    return kept, counts
