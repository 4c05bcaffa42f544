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
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import cache
from importlib import resources

_PLACEHOLDER = re.compile(r"(?<!\$)\{\{([A-Za-z][A-Za-z0-9_ ]*)\}\}")


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


def render(prompt_id: str, values: Mapping[str, str | Sequence[str]] | None = None) -> str:
    """Fill every placeholder of a template from `values` (placeholder name -> text).

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

    return _PLACEHOLDER.sub(fill, template(prompt_id))
