"""Structure measures of issue 21, reproduced from the source (judgebias.devtools.structure).

    .venv/bin/python benchmarks/structure.py [--src DIR] [--limit 600] [--check]

Prints Markdown:

(a) every core module's import of a study package (the core is judgebias outside
    judgebias/studies/; imports anywhere in a module, and importlib.import_module of a
    string literal): the target is none;
(b) the modules over `--limit` lines, each with the reason its docstring gives (a line
    starting "Why this module is long:") or "(none)";
(c) which module names each study package has, one row per name, so that a role named
    differently in two studies shows as two half-empty rows;
(d) each study package missing a module of a required role, or holding one under a
    retired name (docs/adding-a-study.md, "Module roles").

With ``--check`` it exits 1 when (a) lists an import, (b) a module without a reason or
(d) a role problem; (c) is the table behind (d). CI smoke run (tests/test_benchmarks.py):
``--check``, so the structure cannot regress.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from judgebias.devtools.structure import (
    LONG_LINES,
    LONG_REASON,
    REQUIRED_ROLES,
    RETIRED_NAMES,
    core_study_imports,
    long_modules,
    role_problems,
    study_modules,
)

REPO = Path(__file__).resolve().parents[1]


def report(src: Path, limit: int) -> tuple[list[str], int]:
    """(Markdown lines, number of violations)."""
    study_imports = core_study_imports(src)
    long = long_modules(src, limit)
    unexplained = [m for m in long if m.reason is None]
    lines = ["# Structure", "", f"Source: `{src}`", "",
             f"## (a) Core modules importing a study: {len(study_imports)}", ""]
    lines += [f"- `{i.path}` line {i.line}: `{i.target}` (study `{i.study}`)"
              for i in study_imports] or ["None."]
    lines += ["", f"## (b) Modules over {limit} lines: {len(long)}, "
              f"{len(unexplained)} without a reason (\"{LONG_REASON}\")", ""]
    if long:
        lines += ["| module | lines | reason |", "|---|---:|---|"]
        lines += [f"| `{m.path}` | {m.lines} | {m.reason or '(none)'} |" for m in long]
    else:
        lines.append("None.")
    studies = study_modules(src)
    names = sorted({name for modules in studies.values() for name in modules})
    lines += ["", "## (c) Module names per study package", "",
              "| module | " + " | ".join(studies) + " | studies |",
              "|---|" + "---|" * len(studies) + "---:|"]
    for name in names:
        cells = ["x" if name in modules else "" for modules in studies.values()]
        lines.append(f"| `{name}` | " + " | ".join(cells) + f" | {cells.count('x')} |")
    shared = sum(all(name in modules for modules in studies.values()) for name in names)
    lines += ["", f"{shared} of {len(names)} module names are in every study package."]
    roles = role_problems(src)
    lines += ["", f"## (d) Role modules ({', '.join(REQUIRED_ROLES)} in every study; "
              f"none named {', '.join(RETIRED_NAMES)}): {len(roles)} problems", ""]
    lines += [f"- {problem}" for problem in roles] or ["None."]
    return lines, len(study_imports) + len(unexplained) + len(roles)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", type=Path, default=REPO / "src",
                        help="the folder holding the judgebias package (default: %(default)s)")
    parser.add_argument("--limit", type=int, default=LONG_LINES,
                        help="lines above which a module must say why (default: %(default)s)")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 on a core-to-study import or an unexplained long module")
    args = parser.parse_args(argv)
    lines, violations = report(args.src.resolve(), args.limit)
    print("\n".join(lines))
    return 1 if args.check and violations else 0


if __name__ == "__main__":
    sys.exit(main())
