"""``judgebias init DIR``: a researcher's audit in a project folder of its own.

The snakemake-workflows convention: the workflow is installed, and deployed into the
user's project, which holds only what is theirs (params, data, results and the DVC
records of them). The project's Snakefile includes the installed workflow
(judgebias.skeleton.workflow_snakefile), so upgrading judgebias changes none of the
project's files: the next ``snakemake`` or ``dvc repro`` reruns what the new code changes,
as in the repository (a project's rules declare the installed code files as inputs,
judgebias.skeleton.package_file). ``dvc.yaml`` is derived from that DAG the same way
(``judgebias export-dvc``). The repository root is such a project too, with the workflow
beside it.

What ``init`` writes:

- ``params.yaml``: the default, or an example panel of ``configs/`` (``--config mmb``);
- ``Snakefile``: a few lines including the installed workflow;
- ``workflow/profiles/``: the run profiles (resources per backend, Slurm), to edit;
- ``.gitignore`` and ``.dvcignore``: results, logs and caches out of git and DVC's scans;
- a git repository and a DVC project (autostage off, analytics off), and ``dvc.yaml``.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from judgebias.config import ConfigError, load_config
from judgebias.skeleton import copy_files, workflow_root

SNAKEFILE = '''\
# A judgebias project (`judgebias init`). The workflow is the installed judgebias
# package's: this folder holds your params.yaml, data, results and their DVC records.
# Run `snakemake --cores N` or `dvc repro`; after changing the panel or upgrading
# judgebias, `judgebias export-dvc` derives dvc.yaml again.
from judgebias.skeleton import workflow_snakefile


include: workflow_snakefile()


# An included file's target is not the project's default: the workflow's `all` is.
rule default:
    input:
        rules.all.input,
    default_target: True
'''

# Copied from the workflow's own files: what a project keeps out of git and DVC's scans,
# and the profiles it may edit.
COPIED = (".gitignore", ".dvcignore", "workflow/profiles")

DVC_CONFIG = "[core]\n    autostage = false\n    analytics = false\n"


def example_configs() -> list[str]:
    """The names of the example panels ``--config`` accepts (``configs/NAME.yaml``)."""
    return sorted(p.stem for p in (workflow_root() / "configs").glob("*.yaml"))


def _params_source(config: str | None) -> Path:
    if config is None:
        return workflow_root() / "params.yaml"
    path = workflow_root() / "configs" / f"{config}.yaml"
    if not path.is_file():
        raise ConfigError(f"--config {config}: no such example panel; choose one of "
                          f"{', '.join(example_configs())}")
    return path


def init_project(directory: Path, config: str | None = None, *, git: bool = True,
                 dvc: bool = True) -> list[str]:
    """Write a new project into `directory` (absent or empty); return the lines to say.

    `config` names an example panel (``configs/<config>.yaml``) as its params.yaml
    instead of the default. `git` and `dvc` initialise the repositories (and derive
    dvc.yaml); both are on unless a test or a caller managing them says otherwise.
    """
    source = _params_source(config)
    if directory.exists() and (not directory.is_dir() or any(directory.iterdir())):
        raise ConfigError(f"{directory}: exists and is not an empty folder; "
                          f"`judgebias init` makes a new project")
    load_config(source, data=False, needs=False)  # the packaged file is valid, or say so now
    directory.mkdir(parents=True, exist_ok=True)
    copy_files(workflow_root(), COPIED, directory)
    shutil.copy(source, directory / "params.yaml")
    (directory / "Snakefile").write_text(SNAKEFILE)
    said = [f"wrote {directory}/params.yaml ({'configs/' + config if config else 'default'})",
            f"wrote {directory}/Snakefile (runs judgebias {_version()}'s installed workflow)"]
    if git:
        _run(["git", "init", "-q"], directory)
        said.append("initialised git")
    if dvc:
        _run([sys.executable, "-m", "dvc", "init", "-q", *([] if git else ["--no-scm"])],
             directory)
        (directory / ".dvc" / "config").write_text(DVC_CONFIG)
        said.append("initialised DVC")
        said.append(_derive_dvc_yaml(directory))
    said.append(f"next: cd {directory} && snakemake --cores all   (or: dvc repro)")
    return said


def _derive_dvc_yaml(directory: Path) -> str:
    """dvc.yaml from the project's DAG, once the params' data files exist (an example
    panel of real data names files the researcher puts in place first)."""
    try:
        load_config(directory / "params.yaml")
    except ConfigError as exc:
        return (f"dvc.yaml not written yet: {str(exc).splitlines()[0]}; put the data in "
                f"place, then run `judgebias export-dvc`")
    _run([sys.executable, "-m", "judgebias", "export-dvc"], directory)
    return "wrote dvc.yaml (judgebias export-dvc)"


def _version() -> str:
    from importlib.metadata import version

    return version("judgebias")


def _run(command: list[str], cwd: Path) -> None:
    """Run a set-up command in the new project; its failure is the user's error line."""
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise ConfigError(f"`{' '.join(command)}` in {cwd} failed:\n"
                          f"{done.stderr.strip() or done.stdout.strip()}")
