"""The papers' prompts, verbatim, as templates with ids.

Each template is a file `templates/<id>.txt` holding the exact prompt text from its paper
(a user message, or a system prompt where a paper gives one). Placeholders keep the
paper's own `{{Name}}` spelling and are filled by :func:`render` with named fields; a
list value (reference captions) is written one item per line. Ids of the philautia study:

- ``caption_llava_ov``: the generator prompt of seed 000 §5 / Appendix C (taken there
  from LLaVA-OneVision): "Provide a one-sentence caption for the provided image."
- ``gveval_ref``: the G-VEval evaluator prompt, reference-based setting (seed 000,
  Appendix C, "Full prompt for Evaluators in the reference-based setting").
- ``gveval_ref_free``: the same, reference-free setting.

The PDF's line wrapping was undone (paragraphs are single lines); words are unchanged.

Reference captions (``{{Reference}}`` of ``gveval_ref``) are written one per line,
stripped, in the order the dataset gives them. This is *our* format, not G-VEval's:
seed 000 Appendix C prints only the placeholder, and G-VEval's public scorer
(github.com/ztangaj/gveval, ``evaluation/gveval/scorer.py``, ``Scorer.gveval``, commit
fee3fd7) fills it with ``"'" + "'; '".join(refs)``, i.e. ``'ref 1'; 'ref 2'; 'ref 3`` on
one line -- each reference quoted and separated by ``; ``, with an opening quote but no
closing quote after the last one. We do not copy that (the unbalanced quote reads as a
slip, and the philautia paper does not say it used G-VEval's code to fill the prompt);
one reference per line keeps every caption whole and unquoted. The rest of the
reference-based prompt (its text and the ``{{Caption}}`` slot) is G-VEval's own
``prompts/img/combined.txt`` word for word.
A `{{...}}` right after a dollar sign is not a placeholder: the G-VEval prompts print
``The final score is ${{score}}$.`` as an instruction to the model, and it stays as is.

Image places (issue 19). ``{{image}}`` marks where an attached image goes: the k-th marker
takes the task's k-th image, and the text before it carries its label where the paper
gives one. A template marks the place of every image its task attaches, or of none; an
unmarked template's images follow the whole text (the default layout, see
:class:`judgebias.models.base.ChatRequest`). Every backend sends the text and images in
that order. Where each paper puts its images:

- ``birch_reference``, ``birch_anchor``, ``birch_judge_reference``: under "Inputs",
  before the user instruction, where seed 003 prints ``{ image }`` (Figs. 19, 20, 21).
  ``birch_judge_base`` and ``birch_judge_caption`` are Fig. 21 without the reference
  (ours, spec birch.md), so the image sits at the same place.
- ``frame_standard``, ``frame_bias_aware``, ``frame_bias_definition``, ``frame_cot``: after
  the instruction, labelled "Image:" (seed 004, Figs. 4-7 print "- Image: (The
  AI-generated image ...)" under the user prompt; the bullet is the figure's list
  styling and is left out). ``frame_pairwise``: "Image 1:" then "Image 2:" after the
  question (Fig. 8).
- ``caption_llava_ov``: the image first, as LLaVA-OneVision's own conversations put it
  (``<image>`` then the question) and seed 000 §5 takes the prompt from there.
- ``gveval_ref``, ``gveval_ref_free``: unmarked, so after the text, as G-VEval's scorer
  sends it (``evaluation/gveval/scorer.py``, commit fee3fd7: text part, then image part;
  seed 000 Appendix C prints no place). ``mmb_pairwise`` (ours; seed 002 prints no
  prompt) likewise: the two images after the text, in the order "Image A", "Image B".

Layouts and prompt caches (issue 45). A provider discounts a prompt prefix it has just
seen, so the parts a job's requests share pay less where they come first. Each study
keeps its paper's layout by default; where its protocol leaves the layout open and the
shared parts lie within one job, a ``layout`` parameter offers the shared-first order as
a variant template with the same words:

- MMB (``mmb.layout``): ``paper`` is ``mmb_pairwise`` above, whose varying instruction
  comes first; ``shared_first`` is ``mmb_pairwise_shared_first``: the two images in the
  order shown, the generation prompt and the answer format, then the instruction, so the
  requests about a pair shown in one order (one per instruction) share everything up to
  the instruction. Seed 002 prints no prompt, so both layouts are ours; ``mmb.layout_check``
  measures what the change does to the judge's answers
  (judgebias.studies.mmb.measures.layout).
- FRAME's ``frame_*`` templates already put the shared part first: the system prompt,
  then the instruction, the same for all of an item's versions (a score job holds one
  manipulation's grid of up to 16 settings per item), then the image, which is what
  varies between them; no variant is needed (and seed 004's figures print this order).
- BIRCH's judge and anchor templates open with the fixed instruction block, the same for
  every request of a job, then the image and the user's question, then the varying
  answers (and the reference last): already shared-first, and it is seed 003's printed
  layout (Figs. 19-21), which the study reproduces, so it has no ``layout`` parameter.
  (The image cannot come before the instruction block without leaving Fig. 21's order,
  and the block is the longer shared part.)
- Philautia's G-VEval prompts open with the fixed evaluator text too; their image
  follows the text as G-VEval's scorer sends it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import cache
from importlib import resources
from itertools import accumulate

IMAGE_MARKER = "{{image}}"
_PLACEHOLDER = re.compile(r"(?<!\$)\{\{(?!image\}\})([A-Za-z][A-Za-z0-9_ ]*)\}\}")


@cache
def available_prompts() -> frozenset[str]:
    folder = resources.files("judgebias.prompts").joinpath("templates")
    return frozenset(p.name.removesuffix(".txt") for p in folder.iterdir()
                     if p.name.endswith(".txt"))


@cache
def template(prompt_id: str) -> str:
    if prompt_id not in available_prompts():
        raise KeyError(f"unknown prompt id {prompt_id!r}; available: "
                       f"{', '.join(sorted(available_prompts()))}")
    return resources.files("judgebias.prompts").joinpath(f"templates/{prompt_id}.txt").read_text()


@cache
def fields(prompt_id: str) -> frozenset[str]:
    """The placeholder names of a template (``{"Caption", "Reference"}`` for gveval_ref)."""
    return frozenset(_PLACEHOLDER.findall(template(prompt_id)))


@cache
def image_places(prompt_id: str) -> int:
    """How many image places (``{{image}}``) a template marks; 0: the default layout."""
    return template(prompt_id).count(IMAGE_MARKER)


def render(prompt_id: str, values: Mapping[str, str | Sequence[str]] | None = None) -> str:
    """The filled text of a template, as :func:`render_layout` makes it, without where
    its images go (what a reader of the text sees: a system prompt, the sim's tests)."""
    return render_layout(prompt_id, values)[0]


def render_layout(prompt_id: str, values: Mapping[str, str | Sequence[str]] | None = None
                  ) -> tuple[str, tuple[int, ...]]:
    """The filled text, without its image markers, and the offset in that text where each
    marked image goes (empty for an unmarked template): `ChatRequest`'s ``prompt`` and
    ``image_at``. Placeholders are filled from `values` (placeholder name -> text).

    A list value is written one item per line, stripped (our format for the G-VEval
    reference list, not G-VEval's ``'a'; 'b'; 'c`` join: see the module docstring). A
    placeholder without a value, an empty list, or a value for a placeholder the template
    lacks is an error: a prompt must never go out with a hole in it, or silently without
    the field a study meant.
    """
    values = dict(values or {})
    needed = fields(prompt_id)
    unknown = sorted(set(values) - needed)
    if unknown:
        raise ValueError(f"prompt {prompt_id!r} has no placeholder {unknown} "
                         f"(it has: {sorted(needed) or 'none'})")
    missing = sorted(needed - set(values))
    if missing:
        raise ValueError(f"prompt {prompt_id!r} needs {missing}")

    def fill(match: re.Match[str]) -> str:
        value = values[match.group(1)]
        if isinstance(value, str):
            return value.strip()
        lines = [str(v).strip() for v in value]
        if not lines:
            raise ValueError(f"prompt {prompt_id!r}: {match.group(1)} is an empty list")
        return "\n".join(lines)

    pieces = [_PLACEHOLDER.sub(fill, piece)
              for piece in template(prompt_id).split(IMAGE_MARKER)]
    return "".join(pieces), tuple(accumulate(len(piece) for piece in pieces[:-1]))
