"""Keep the two front doors' books in step, in both directions, without rerunning anything.

`judgebias dvc-record` records what Snakemake built in dvc.lock; `judgebias
snakemake-record` records what `dvc repro` built (or `dvc pull`, `dvc exp run`, `dvc exp
apply` put in the workspace) in Snakemake's metadata, and `judgebias dvc ARGS` is `dvc
ARGS` followed by it where ARGS put outputs in the workspace (`judgebias dvc-repro` is
`judgebias dvc repro`).

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

Snakemake writes no stamps (the `code` and `params` stages of judgebias.workflow.dvc_export:
its rules keep the source files as inputs and their params values as params), so
recording first writes every rule's code stamp from the files its command lists and every
params key's stamp from params.yaml, as `dvc repro` would, and commits them with the
rest.

`--no-relink` keeps the workspace files as Snakemake wrote them: relinking would recreate
each output from the cache (a fresh copy with the current time for the default `copy`
link type), which shuffles the modification times Snakemake compares.

Before committing it checks that dvc.yaml is the one the Snakefile derives for the current
params (judgebias.workflow.dvc_export): a stale dvc.yaml would record stages that do not
match what Snakemake ran.

The other direction. `dvc repro` after a param edit reruns exactly the stages the edit
touches and records them in dvc.lock, but Snakemake keeps its own provenance per output
(`.snakemake/metadata`: the params, code and inputs of the run that wrote it), which still
holds the old values, so `snakemake -n` plans those jobs again ("Params have changed since
last execution"); for a judging prompt or sampling edit that is every model job again
(free through the journal, but not in time). `snakemake --touch` is Snakemake's mechanism
for "these outputs are current": it runs no command, it touches the outputs of the jobs it
would run (in DAG order) and writes their metadata records with the current params, code
and inputs. With `--forceall` it does so for every job: without it, the jobs whose file
times happen to be in order keep no record (after `dvc pull`, 53 of a project's jobs,
every model job among them), and Snakemake plans no rerun of a job without a record when
its params change, so a colleague's clone would skip the model jobs a param edit reruns
in the project that made the results (issue 39). It is only sound when the outputs really
are current, which is what DVC knows: dvc.yaml is derived from the same DAG (every job a
stage with the same command, inputs, declared params and outputs), so when it is current
and `dvc status` reports nothing changed, every output Snakemake would rebuild is one DVC
has just built or verified for the current params. :func:`record_snakemake` checks both
before touching, and refuses otherwise.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judgebias.config import ConfigError
from judgebias.io.yamlread import load_yaml

if TYPE_CHECKING:
    import argparse

UP_TO_DATE = "Data and pipelines are up to date."
NOTHING_TO_DO = "Nothing to be done"


def _dvc(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dvc", *args], cwd=cwd, capture_output=True,
                          text=True)


def _snakemake(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "snakemake", *args], cwd=cwd,
                          capture_output=True, text=True)


def _check_current(root: Path, dvc_yaml: Path, snakefile: Path) -> None:
    """Refuse a dvc.yaml that is not the one the Snakefile derives for the current params."""
    from judgebias.workflow.dvc_export import render_dvc_yaml

    current = render_dvc_yaml(root / snakefile)
    if not (root / dvc_yaml).is_file() or (root / dvc_yaml).read_text() != current:
        raise ConfigError(f"{dvc_yaml} is not the one the Snakefile derives for these "
                          "params: run `judgebias export-dvc` first")


def _dvc_status(root: Path) -> tuple[bool, str]:
    """Whether `dvc status` reports everything up to date, and what it said."""
    status = _dvc("status", cwd=root)
    text = (status.stdout + status.stderr).strip()
    return status.returncode == 0 and UP_TO_DATE in text, text


def stage_args(stage: dict[str, Any]) -> argparse.Namespace:
    """A stage's `judgebias ...` command, parsed as the CLI parses it: by the command
    table's parser (judgebias.commands), which the CLI builds too."""
    from judgebias.commands import parse_args

    return parse_args(shlex.split(stage["cmd"])[1:])


def write_stamps(root: Path, dvc_yaml: Path = Path("dvc.yaml")) -> None:
    """Write every code stamp and params stamp the `code` and `params` stages' commands
    name, as `dvc repro` would (Snakemake builds no stamp: it keeps the source files as
    its rules' inputs and the values as their params). Each command is parsed as the CLI
    parses it."""
    from judgebias.workflow.codestamp import stamps_of, write_stamps
    from judgebias.workflow.dvc_export import CODE_STAGE, PARAMS_STAGE
    from judgebias.workflow.paramstamp import SEPARATOR, write_param_stamps

    stages = load_yaml((root / dvc_yaml).read_text())["stages"]
    if CODE_STAGE in stages:
        write_stamps(stamps_of(stage_args(stages[CODE_STAGE]).out), root)
    if PARAMS_STAGE in stages:
        args = stage_args(stages[PARAMS_STAGE])
        write_param_stamps([keys.split(SEPARATOR) for keys in args.sets],
                           Path(args.params), args.out, root)


def record(root: Path = Path("."), dvc_yaml: Path = Path("dvc.yaml"),
           snakefile: Path = Path("Snakefile"), check_current: bool = True) -> str:
    """`dvc commit --force --no-relink` of every stage, then `dvc status`; returns its text.

    Raises ConfigError when dvc.yaml is stale, an output is missing (run Snakemake first)
    or DVC still reports a change afterwards.
    """
    root = root.absolute()
    if check_current:
        _check_current(root, dvc_yaml, snakefile)
    write_stamps(root, dvc_yaml)
    done = _dvc("commit", "--force", "--no-relink", "--quiet", cwd=root)
    if done.returncode != 0:
        raise ConfigError("dvc commit failed (did `snakemake` build every output?):\n"
                          + (done.stderr or done.stdout).strip())
    clean, text = _dvc_status(root)
    if not clean:
        raise ConfigError(f"after recording, dvc status still reports changes:\n{text}")
    return text


def record_snakemake(root: Path = Path("."), dvc_yaml: Path = Path("dvc.yaml"),
                     snakefile: Path = Path("Snakefile")) -> list[str]:
    """Record what DVC built in Snakemake's metadata (`snakemake --touch`); returns the
    jobs whose records were brought up to date.

    Raises ConfigError when dvc.yaml is stale, when `dvc status` reports a change (the
    outputs are not current: run `dvc repro` first), or when `snakemake -n` still plans a
    job afterwards.
    """
    root = root.absolute()
    _check_current(root, dvc_yaml, snakefile)
    clean, text = _dvc_status(root)
    if not clean:
        raise ConfigError("dvc status reports changes, so the outputs are not current for "
                          f"these params: run `dvc repro` first\n{text}")
    common = ("--snakefile", str(snakefile), "--cores", "1")
    # --forceall: every job gets its record, not only those whose file times are out of
    # order (after `dvc pull` most are in order by chance and would keep no record of the
    # params and code they were made from, so a later param edit would not rerun them)
    touched = _snakemake(*common, "--touch", "--forceall", cwd=root)
    if touched.returncode != 0:
        raise ConfigError(f"snakemake --touch failed:\n{touched.stderr.strip()}")
    planned = _snakemake(*common, "--dry-run", cwd=root)
    said = (planned.stdout + planned.stderr).strip()
    if planned.returncode != 0 or NOTHING_TO_DO not in said:
        raise ConfigError(f"after recording, snakemake still plans jobs:\n{said}")
    rules = re.findall(r"^\s*(?:local)?rule (\w+):", touched.stdout + touched.stderr,
                       flags=re.MULTILINE)
    return sorted(set(rules) - {"all"})  # `all` has no outputs: nothing recorded


# DVC commands after which the workspace holds outputs DVC made or restored: Snakemake's
# records are brought up to date after them (record_snakemake).
WORKSPACE_COMMANDS = (("repro",), ("pull",), ("checkout",), ("exp", "run"), ("exp", "apply"))
DRY_FLAGS = frozenset({"--dry", "--help", "-h", "--queue", "--temp"})


def changes_workspace(dvc_args: Sequence[str]) -> bool:
    """Whether `dvc <dvc_args>` leaves outputs in the workspace that Snakemake has no
    record of (a dry run, a queued or temporary experiment leave it as it was)."""
    words = [a for a in dvc_args if not a.startswith("-")]
    return (any(tuple(words[:len(c)]) == c for c in WORKSPACE_COMMANDS)
            and not DRY_FLAGS & set(dvc_args))


@contextmanager
def missing_deps_are_changes() -> Iterator[None]:
    """DVC with a missing dependency treated as a change, not an error, by its run cache.

    `dvc repro --dry` on a project whose upstream outputs are not there yet (a fresh
    clone, a partial run) stops at the first stage that depends on one: "failed to
    reproduce 'caption': [Errno 2] No such file or directory" (DVC 3.67; DVC issue #9818).
    The run cache hashes every dependency before looking a stage up
    (dvc.stage.cache._can_hash), and a missing file raises instead of meaning "not
    cached". A stage with a missing dependency cannot be in the run cache, so this says
    so; the dry run then lists it, as it lists every stage that would run."""
    from dvc.stage import cache

    can_hash = cache._can_hash

    def _can_hash(stage: Any) -> bool:
        return all(dep.exists for dep in stage.deps) and can_hash(stage)

    cache._can_hash = _can_hash
    try:
        yield
    finally:
        cache._can_hash = can_hash


def run_dvc(dvc_args: Sequence[str], root: Path = Path("."),
            dvc_yaml: Path = Path("dvc.yaml"), snakefile: Path = Path("Snakefile")
            ) -> list[str] | None:
    """`dvc <dvc_args>` (in this process, :func:`missing_deps_are_changes`), then, after
    a command that puts DVC's outputs in the workspace (`repro`, `pull`, `checkout`,
    `exp run`, `exp apply`), :func:`record_snakemake`: the DVC front door that leaves
    Snakemake nothing to do. Returns the jobs whose records were brought up to date, or
    None where the command changes no output.

    Raises ConfigError when DVC fails, or (after such a command) when dvc.yaml is stale
    or `dvc status` still reports a change."""
    from dvc.cli import main

    root = root.absolute()
    if changes_workspace(dvc_args):
        _check_current(root, dvc_yaml, snakefile)
    with missing_deps_are_changes():
        code = main(["--cd", str(root), *dvc_args])
    if code != 0:
        raise ConfigError(f"dvc {' '.join(dvc_args)} failed (exit {code}); see its output above")
    return record_snakemake(root, dvc_yaml, snakefile) if changes_workspace(dvc_args) else None
