"""The papers' prompts, verbatim, as templates with ids.

Each template is a file `templates/<id>.txt` holding the exact prompt text from its paper;
placeholders keep the paper's own `{{Name}}` spelling. Ids:

- ``caption_llava_ov``: the generator prompt of seed 000 §5 / Appendix C (taken there
  from LLaVA-OneVision): "Provide a one-sentence caption for the provided image."
- ``gveval_ref``: the G-VEval evaluator prompt, reference-based setting (seed 000,
  Appendix C, "Full prompt for Evaluators in the reference-based setting").
- ``gveval_ref_free``: the same, reference-free setting.

The PDF's line wrapping was undone (paragraphs are single lines); words are unchanged.
The literal `${{score}}$` in the G-VEval prompts is part of the prompt and stays as is.
"""

from __future__ import annotations

from functools import cache
from importlib import resources


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


def render(prompt_id: str, *, caption: str | None = None,
           references: list[str] | None = None) -> str:
    """Fill a template. References are given one per line, as G-VEval lists them."""
    text = template(prompt_id)
    if "{{Reference}}" in text:
        if not references:
            raise ValueError(f"prompt {prompt_id!r} needs reference captions")
        text = text.replace("{{Reference}}", "\n".join(r.strip() for r in references))
    if "{{Caption}}" in text:
        if caption is None:
            raise ValueError(f"prompt {prompt_id!r} needs a caption")
        text = text.replace("{{Caption}}", caption.strip())
    return text


def uses_references(prompt_id: str) -> bool:
    return "{{Reference}}" in template(prompt_id)
