"""`judgebias new-study NAME`: start a study by copying the template study.

The template (src/judgebias/studies/_template, its rules file and its prompt) is a small
study that runs end to end, with one module per role (docs/adding-a-study.md) and each
hook at its role's conventional place (judgebias.study.ROLES), so its declaration names
no hook and the copy's needs nothing but the new name. The copy is renamed
throughout (``_template`` -> NAME) and registered with one line in
judgebias.studies.STUDIES. Nothing else in the project changes: a new study touches only
its package, its rules file, its prompts (``prompts/templates/NAME_*.txt``, beside the
papers' prompts where they are audited together) and the registry line.
"""

from __future__ import annotations

import re
from pathlib import Path

TEMPLATE = "_template"
PACKAGE = Path("src/judgebias/studies")
RULES = Path("workflow/rules")
PROMPTS = Path("src/judgebias/prompts/templates")
REGISTRY = PACKAGE / "__init__.py"


def _renamed(text: str, name: str) -> str:
    return text.replace(TEMPLATE, name).replace(TEMPLATE.upper(), name.upper())


def new_study(root: Path, name: str) -> list[Path]:
    """Copy the template study under `name` in the project at `root`; the paths written."""
    if not re.fullmatch(r"[a-z][a-z0-9_]*", name):
        raise ValueError(f"study name {name!r}: use lower-case letters, digits and _, "
                         "starting with a letter (it names a package and params key)")
    template = root / PACKAGE / TEMPLATE
    if not template.is_dir():
        raise ValueError(f"{template} not found: run `judgebias new-study` in the project "
                         "folder (the one holding src/ and workflow/)")
    registry = (root / REGISTRY).read_text()
    package = root / PACKAGE / name
    if package.exists() or f'"{name}":' in registry:
        raise ValueError(f"study {name!r} already exists ({package} or the registry)")
    written = []
    for source in sorted(template.rglob("*")):
        if "__pycache__" in source.parts or source.is_dir():
            continue
        target = package / _renamed(str(source.relative_to(template)), name)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(_renamed(source.read_text(), name))
        written.append(target)
    for folder, pattern in ((RULES, f"{TEMPLATE}.smk"), (PROMPTS, f"{TEMPLATE}_*.txt")):
        for source in sorted((root / folder).glob(pattern)):
            target = source.with_name(_renamed(source.name, name))
            target.write_text(_renamed(source.read_text(), name))
            written.append(target)
    closing = registry.rindex("}")
    line = f'    "{name}": "judgebias.studies.{name}",\n'
    (root / REGISTRY).write_text(registry[:closing] + line + registry[closing:])
    return [*written, root / REGISTRY]

