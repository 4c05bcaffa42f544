"""The wheel carries the workflow: the files judgebias.skeleton.PROJECT_FILES lists (the
Snakefile, its rules and profiles, the default params and configs/) are copied from the
repository root into the package as ``judgebias/project_files/`` when it is built, so
``judgebias init`` works after a plain ``pip install``. Everything else is in
pyproject.toml."""

import runpy
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
PROJECT_FILES = runpy.run_path(str(ROOT / "src" / "judgebias" / "skeleton.py"))["PROJECT_FILES"]


class BuildWithWorkflow(build_py):
    """build_py, plus the workflow's files under judgebias/project_files/."""

    def run(self) -> None:
        super().run()
        target = Path(self.build_lib) / "judgebias" / "project_files"
        for name in PROJECT_FILES:
            source, dest = ROOT / name, target / name
            if source.is_dir():
                shutil.copytree(source, dest, dirs_exist_ok=True,
                                ignore=shutil.ignore_patterns("__pycache__"))
            else:
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, dest)


setup(cmdclass={"build_py": BuildWithWorkflow})
