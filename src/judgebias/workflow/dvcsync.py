"""Record what Snakemake built in dvc.lock, without running anything (`judgebias dvc-record`).

Snakemake and DVC keep separate books: Snakemake its `.snakemake/` metadata and file
times, DVC the hashes in `dvc.lock`. After `snakemake --cores N` every output exists, but
`dvc.lock` knows nothing of them, so `dvc status` calls every stage changed, `dvc repro`
would rerun them all (free thanks to the journal, but slow), and `dvc push` has nothing to
push. `dvc commit --force` is the mechanism DVC has for exactly this: for every stage of
dvc.yaml it hashes the deps, reads the params it declares and hashes the outs as they are
on disk, stores the outs in the cache and writes the stage's entry in dvc.lock, the same
entry `dvc repro` would have written, without running the command. Afterwards `dvc status`
says "Data and pipelines are up to date." and `dvc push` sends the outputs to the remote.

Why a command and not a Snakemake `onsuccess:` hook: the hook also fires after a run of
some targets only (`snakemake results/x`), where the other stages' outputs are missing and
the commit fails or records a half-built project; on a cluster it would hash gigabytes on
the submit host after every run; and it would couple every Snakemake run to DVC. Recording
is a deliberate step before `git commit dvc.lock` / `dvc push`, so it is a command.

`--no-relink` keeps the workspace files as Snakemake wrote them: relinking would recreate
each output from the cache (a fresh copy with the current time for the default `copy`
link type), which shuffles the modification times Snakemake compares.

Before committing it checks that dvc.yaml is the one the Snakefile derives for the current
params (judgebias.workflow.dvc_export): a stale dvc.yaml would record stages that do not
match what Snakemake ran.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from judgebias.config import ConfigError

UP_TO_DATE = "Data and pipelines are up to date."


def _dvc(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dvc", *args], cwd=cwd, capture_output=True,
                          text=True)


def record(root: Path = Path("."), dvc_yaml: Path = Path("dvc.yaml"),
           snakefile: Path = Path("Snakefile"), check_current: bool = True) -> str:
    """`dvc commit --force --no-relink` of every stage, then `dvc status`; returns its text.

    Raises ConfigError when dvc.yaml is stale, an output is missing (run Snakemake first)
    or DVC still reports a change afterwards.
    """
    root = root.absolute()
    if check_current:
        from judgebias.workflow.dvc_export import render_dvc_yaml

        current = render_dvc_yaml(root / snakefile)
        if not (root / dvc_yaml).is_file() or (root / dvc_yaml).read_text() != current:
            raise ConfigError(f"{dvc_yaml} is not the one the Snakefile derives for these "
                              "params: run `judgebias export-dvc` first")
    done = _dvc("commit", "--force", "--no-relink", "--quiet", cwd=root)
    if done.returncode != 0:
        raise ConfigError("dvc commit failed (did `snakemake` build every output?):\n"
                          + (done.stderr or done.stdout).strip())
    status = _dvc("status", cwd=root)
    text = (status.stdout + status.stderr).strip()
    if status.returncode != 0 or UP_TO_DATE not in text:
        raise ConfigError(f"after recording, dvc status still reports changes:\n{text}")
    return text
