"""FRAME's model jobs: the single-score prompts (seed 004 Figs. 4-7) and the pairwise
prompt (Fig. 8), each an ordinary journaled judge task of the judging core, so a rerun
after adding one grid value pays only for that value's images; and which images each job
shows (:func:`images_to_score`, :func:`mitigation_images`, :func:`pairwise_shown`), which
plan.py counts the same way.

Prompts (templates ``frame_*``): every prompt has the system prompt of the figures ("You
are a strict and fair evaluator of AI-generated images."). The figures' last lines ("-
Image: (The AI-generated image ...)", "Image 1: / Image 2:") say where the images go:
the images are attached after the text, in that order. The txt of the paper garbles Figs.
6 and 8 (the placeholder braces are lost); the templates restore ``{{Perturbation}}``,
``{{Definition}}`` and ``{{Instruction}}`` (spec frame.md), and Fig. 8's curly quotes
around first/second/tie are written as straight quotes. Scores are read as 0.0-5.0
(``DecimalScore``: the number after the last "Score:", or the whole answer as one
number); pairwise verdicts as first / second / tie words (``Choice(style="words")``).
A failed, unparseable or out-of-range answer keeps its status and gets no score.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import pandas as pd

from judgebias.judging.answers import STATUS_OK, STATUS_TIE, Choice, DecimalScore
from judgebias.judging.tasks import JudgeTask, run_task
from judgebias.models.context import RunContext
from judgebias.studies.frame.recipes import ORIGINAL, applies, parse_recipe

if TYPE_CHECKING:
    from judgebias.studies.frame.params import Prompts

PROMPTS = ("standard", "bias_aware", "bias_definition", "cot")
SYSTEM = "frame_system"

# Seed 004 Table 1: each manipulation's name and definition, as the bias-definition prompt
# (Fig. 6) names them.
DEFINITIONS = {
    "bounding_box": ("Bounding Box Highlighting", "Drawing visible boxes around key objects "
                     "in the image to emphasize their presence or location."),
    "authenticity_overlay": ("Authenticity Overlay", "Adding the phrase \u201cReference "
                             "Image\u201d directly onto the image to imply reference or "
                             "authenticity."),
    "keyword_overlay": ("Keyword Overlay", "Inserting a single keyword from the prompt "
                        "(e.g., \"Cat\") into the image as visible text."),
    "instruction_overlay": ("Instruction Overlay", "Overlaying the entire generation "
                            "instruction (e.g., \u201cCreate an image of one balloon in outer "
                            "space\u2026\u201d) onto the image surface."),
    "beauty_filter": ("Beauty Filter", "Applying visual filters to enhance facial features "
                      "for a more conventionally attractive appearance."),
    "brightness": ("Brightness Adjustment", "Modifying the image to increase overall "
                   "brightness."),
    "gamma": ("Gamma Correction", "Altering the luminance distribution of an image by "
              "adjusting gamma values to change contrast and mid-tone balance."),
    "padding": ("Black Padding", "Adding black borders around the image to change its "
                "framing and composition."),
}
PAIR_LABELS = ("first", "second")
ORDERS = ("ab", "ba")


def score_task(prompts: Prompts, prompt: str) -> JudgeTask:
    """The single-score task of one prompt kind (Figs. 4-7), asked with the prompt id
    `prompts` names for it (``frame.prompts``: FrameParams.prompts)."""
    fields = {"Instruction": "instruction"}
    if prompt == "bias_definition":
        fields |= {"Perturbation": "perturbation", "Definition": "definition"}
    return JudgeTask(prompt=prompts.of(prompt), answer=DecimalScore(),
                     fields=fields, images=("image",), system=SYSTEM)


def pairwise_task(prompt: str) -> JudgeTask:
    """Fig. 8: which of two images is better, words first / second / tie, asked with
    prompt id `prompt` (``frame.pairwise.prompt``)."""
    return JudgeTask(prompt=prompt,
                     answer=Choice(labels=PAIR_LABELS, tie_labels=("tie",), style="words"),
                     fields={"Instruction": "instruction"},
                     images=("first_image", "second_image"), system=SYSTEM)


def recipe_columns(recipes: pd.Series) -> pd.DataFrame:
    """manipulation / setting / n_steps of each recipe id (the score table's keys)."""
    rows = []
    for recipe in recipes:
        steps = parse_recipe(recipe)
        rows.append({
            "manipulation": ORIGINAL if not steps else "+".join(s.manipulation for s in steps),
            "setting": steps[0].setting if len(steps) == 1 else "",
            "n_steps": len(steps)})
    return pd.DataFrame(rows, index=recipes.index, columns=["manipulation", "setting",
                                                            "n_steps"])


def prompt_items(prompt: str, images: pd.DataFrame) -> pd.DataFrame:
    """The images with what the prompt's placeholders need: for Fig. 6, the name and
    Table 1 definition of the manipulation each row names."""
    items = images.reset_index(drop=True).copy()
    if "named" not in items:
        items["named"] = ""
    if prompt == "bias_definition":
        items["perturbation"] = [DEFINITIONS[n][0] for n in items["named"]]
        items["definition"] = [DEFINITIONS[n][1] for n in items["named"]]
    return items


def score_images(run: RunContext, judge: str, prompt: str, images: pd.DataFrame, *,
                 prompts: Prompts) -> pd.DataFrame:
    """Score every row of `images` (item_id, domain, instruction, recipe, image, and for
    bias_definition `named`; an optional `status` marks rows that cannot be asked) with
    `judge` and one prompt kind, asked with the prompt id `prompts` names for it
    (:func:`score_task`; `run`: the journal, the panel model, judgebias.models.context).
    One score row per image row."""
    items = prompt_items(prompt, images)
    answers = run_task(run, judge, "judge", score_task(prompts, prompt), items)
    usable = answers["status"] == STATUS_OK
    keys = pd.DataFrame({"item_id": items["item_id"], "domain": items["domain"],
                         "judge": judge, "prompt": prompt, "recipe": items["recipe"]})
    keys = pd.concat([keys, recipe_columns(items["recipe"])], axis=1)
    keys["named"] = items["named"]
    keys["score"] = answers["value"].where(usable, pd.NA)
    return pd.concat([keys, answers], axis=1)


def pairwise_items(items: pd.DataFrame, conditions: Mapping[str, pd.DataFrame]
                   ) -> pd.DataFrame:
    """Both orders of every (item, condition): set A's image (original, or its manipulated
    version in `conditions[name]` with columns item_id, recipe, image) against set B's.
    Items without a set B image, or whose manipulated image is missing, are left out."""
    rows = []
    for condition, images in conditions.items():
        merged = items.merge(images[["item_id", "recipe", "image"]].rename(
            columns={"image": "image_a"}), on="item_id")
        merged = merged[merged["image_a"].notna() & merged["image_b"].notna()]
        for order in ORDERS:
            shown = merged.assign(condition=condition, order=order)
            swapped = order == "ba"
            shown["first_image"] = shown["image_b"] if swapped else shown["image_a"]
            shown["second_image"] = shown["image_a"] if swapped else shown["image_b"]
            rows.append(shown)
    return pd.concat(rows, ignore_index=True)


def judge_pairs(run: RunContext, judge: str, shown: pd.DataFrame, *, prompt: str
                ) -> pd.DataFrame:
    """One pairwise row per (item, condition, order), asked with prompt id `prompt`
    (:func:`pairwise_task`): the verdict mapped back from the order shown to set A / set B
    ("tie" kept; None unless usable)."""
    answers = run_task(run, judge, "judge", pairwise_task(prompt), shown)
    verdicts: list[str | None] = []
    for status, label, order in zip(answers["status"], answers["label"], shown["order"],
                                    strict=True):
        if status == STATUS_TIE:
            verdicts.append("tie")
        elif status != STATUS_OK:
            verdicts.append(None)
        else:
            first_is_a = order == "ab"
            verdicts.append("A" if (label == "first") == first_is_a else "B")
    keys = pd.DataFrame({"item_id": shown["item_id"], "domain": shown["domain"],
                         "judge": judge, "condition": shown["condition"],
                         "recipe": shown["recipe"], "order": shown["order"],
                         "verdict": verdicts})
    return pd.concat([keys, answers], axis=1)


def images_to_score(items: pd.DataFrame, renders: pd.DataFrame | None) -> pd.DataFrame:
    """The originals (renders None) or a render set's images, with what the prompt needs;
    an unavailable render keeps its status and is never asked."""
    columns = ["item_id", "domain", "instruction"]
    if renders is None:
        return items[[*columns, "image"]].assign(recipe=ORIGINAL, status="ok")
    merged = renders.merge(items[columns], on="item_id", how="left")
    return merged[[*columns, "recipe", "image", "status"]]


def best_images(items: pd.DataFrame, best: pd.DataFrame, renders: pd.DataFrame
                ) -> pd.DataFrame:
    """The image of each item at its domain's best recipe, for every manipulation (the
    recipe of Table 5 and Fig. 3: seed 004 App. B.3, "Recipe for Analysis"), from the
    render tables `renders`."""
    wanted = items[["item_id", "domain"]].merge(best[["domain", "manipulation", "recipe"]],
                                                on="domain")
    return wanted.merge(renders, on=["item_id", "recipe"])


def mitigation_images(mitigation: Sequence[str], items: pd.DataFrame, best: pd.DataFrame,
                      renders: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The images each mitigation prompt (`mitigation`: ``frame.mitigation``) scores: the
    originals and every best recipe. The bias-definition prompt scores each original once
    per manipulation it names, so each manipulation is compared with originals told the
    same thing."""
    manipulated = best_images(items, best, renders)
    manipulated = images_to_score(items, manipulated[["item_id", "recipe", "image", "status"]])
    originals = images_to_score(items, None)
    shown = {}
    for prompt in mitigation:
        if prompt == "bias_definition":
            named = [originals.assign(named=m) for m in best["manipulation"].unique()]
            named = [n[[applies(m, d) for m, d in zip(n["named"], n["domain"], strict=True)]]
                     for n in named]
            shown[prompt] = pd.concat([*named, manipulated.assign(
                named=[parse_recipe(r)[0].manipulation for r in manipulated["recipe"]])],
                ignore_index=True)
        else:
            shown[prompt] = pd.concat([originals, manipulated], ignore_index=True)
    return shown


def pairwise_shown(manipulation: str, items: pd.DataFrame, best: pd.DataFrame,
                   renders: pd.DataFrame) -> pd.DataFrame:
    """Fig. 3's comparisons: set A against set B, and set A with the pairwise manipulation
    (`manipulation`: ``frame.pairwise.manipulation``) at the judge's best setting per
    domain against set B; both orders of each."""
    best = best[best["manipulation"] == manipulation]
    manipulated = best_images(items, best, renders)
    manipulated = manipulated[manipulated["status"] == "ok"]
    originals = items[["item_id", "image"]].assign(recipe=ORIGINAL)
    return pairwise_items(items, {"original": originals, "manipulated": manipulated})
