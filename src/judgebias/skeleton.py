"""Where the workflow's files lie: in a source checkout, or inside the installed package.

judgebias is a workflow (the Snakefile and its rules), a default params file, example
panels (``configs/``) and run profiles, as well as a Python package. In the repository
they sit at its root, which is itself a project (``make run``). A wheel carries them as
package data under ``judgebias/project_files/`` (``setup.py`` copies the files listed in
``PROJECT_FILES``), so that ``judgebias init DIR`` can make a project of a researcher's
own anywhere, whose Snakefile includes the installed workflow: upgrading judgebias then
touches none of the project's files (judgebias.project).

Only the standard library is imported here: ``setup.py`` reads ``PROJECT_FILES`` from this
file before any dependency is installed.
"""

from __future__ import annotations

import shutil
from pathlib import Path

# The files of the repository root that make up the workflow a project runs, or that
# `judgebias init` copies into a new project (relative to the root; folders whole).
PROJECT_FILES = ("Snakefile", "workflow/rules", "workflow/profiles", "params.yaml", "configs",
                 ".gitignore", ".dvcignore")

PACKAGE_ROOT = Path(__file__).resolve().parent
PACKAGED = PACKAGE_ROOT / "project_files"  # in an installed wheel


def copy_files(source: Path, names: tuple[str, ...] | list[str], dest: Path,
               *skip: str) -> None:
    """Copy each of `names` (a file or a whole folder, relative to `source`) to the same
    place under `dest`, leaving out what matches the `skip` patterns (and __pycache__):
    how the wheel takes the workflow's files, `judgebias init` a project's, and the wheel
    test the sources it builds from."""
    ignore = shutil.ignore_patterns("__pycache__", *skip)
    for name in names:
        if (source / name).is_dir():
            shutil.copytree(source / name, dest / name, dirs_exist_ok=True, ignore=ignore)
        else:
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source / name, dest / name)


def workflow_root() -> Path:
    """The folder holding the Snakefile, its rules, the default params and ``configs/``:
    the installed package's copy, or the source checkout's root (an editable install
    has no copy: its package folder is ``<root>/src/judgebias``)."""
    if (PACKAGED / "Snakefile").is_file():
        return PACKAGED
    root = PACKAGE_ROOT.parents[1]
    if not (root / "Snakefile").is_file():
        raise FileNotFoundError(f"judgebias's workflow files are neither in {PACKAGED} nor "
                                f"at the source checkout's root {root}: reinstall judgebias")
    return root


def workflow_snakefile() -> Path:
    """The workflow's Snakefile, which a project's own Snakefile includes."""
    return workflow_root() / "Snakefile"


def package_file(path: str | Path) -> str:
    """A file of the package (a prompt template, a study's data file), given relative to
    the package folder or as its absolute path there, as a rule declares it: relative to
    the project folder the rule runs in (the working directory).

    A project that holds the package's source (the repository, or a test's copy of it)
    declares its own copy, ``src/judgebias/<relative>``, so that editing it reruns what
    reads it; a project made by ``judgebias init`` declares the installed file by its
    absolute path (Snakemake and DVC both take a dependency outside the project: DVC
    records its hash in dvc.lock like any other)."""
    relative = Path(path).relative_to(PACKAGE_ROOT) if Path(path).is_absolute() else path
    if Path("src/judgebias/__init__.py").is_file():
        return f"src/judgebias/{Path(relative).as_posix()}"
    return (PACKAGE_ROOT / relative).as_posix()
