"""The wheel carries the workflow: the files judgebias.skeleton.PROJECT_FILES lists (the
Snakefile, its rules and profiles, the default params and configs/) are copied from the
repository root into the package as ``judgebias/project_files/`` when it is built, so
``judgebias init`` works after a plain ``pip install``. Everything else is in
pyproject.toml."""

import runpy
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
SKELETON = runpy.run_path(str(ROOT / "src" / "judgebias" / "skeleton.py"))


class BuildWithWorkflow(build_py):
    """build_py, plus the workflow's files under judgebias/project_files/."""

    def run(self) -> None:
        super().run()
        target = Path(self.build_lib) / "judgebias" / "project_files"
        SKELETON["copy_files"](ROOT, SKELETON["PROJECT_FILES"], target)


setup(cmdclass={"build_py": BuildWithWorkflow})
