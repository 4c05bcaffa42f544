"""Deriving `dvc.yaml` from the Snakemake DAG (docs/design.md principle 1: one DAG, two doors).

The Snakefile is the single definition of the pipeline. This module asks Snakemake for
the concrete jobs of the current params (every job, as with --forceall) and writes one
DVC stage per job with the same command, the same inputs (deps: data and project code),
the same outputs, and the params keys the rule declares under `params: dvc_params=` (as
the stamp of those keys: "Params stamps" below). What DVC shows people is what the
rule marks on its outputs (judgebias.workflow.dvcviews): an output flagged
``dvc_metric`` is a DVC metric (only the judge card's headline cells, so `dvc metrics
show` is one row per headline measure and one column per judge), one flagged as a
``Curve`` is a data-series plot in dvc.yaml's top-level ``plots:`` (its path the plot's
id, with the curve's x, y, template and titles), and each PNG figure an image plot of its
stage. A test regenerates the file and fails if the committed dvc.yaml differs.

Metrics and plots are cached (`cache: true`, written out so the entry reads as a choice),
like every other output: results/ is git-ignored, so an uncached metric would be kept
nowhere. It would never be pushed (its stage and everything downstream would rerun after
a clone and `dvc pull`), and `dvc metrics diff` / `dvc exp show` could not read it for any
committed revision ("DVC failed to load some metrics", `-` or `!` for the values); cached,
they read it from the cache through dvc.lock.

Code stamps. A job's code inputs (its rule's `code=step_code(...)`, judgebias.workflow.
codedeps) are the same 20-55 source files for every job of a rule; listed per job they
were 10,078 of the default dvc.yaml's 10,747 deps (587 KB; dvc.lock 1.9 MB). DVC rewrites the whole
dvc.lock after every stage it runs or commits, so that cost grows with stages x lock size:
`dvc repro` on a 37-stage project spent 304 s of 402 s rewriting a 300 KB lock. So each
rule with code inputs has a stamp, `.judgebias/code/<rule>.json`, the sha256 of those
files (`judgebias plumbing code-stamp`, judgebias.workflow.codestamp), and the rule's job stages
depend on the stamp instead of the files. One stage, `code`, writes every stamp with one
command (`judgebias plumbing code-stamp --out STAMP FILE... --out STAMP FILE...`, one start of the
CLI, each file read once) and its deps are the files of all of them. One stage per rule
(`code__<rule>`, as before) listed the files every rule shares again in each: 1,764 of the
5,005 deps at the papers' scale, and each dep costs `dvc status` about a millisecond
(benchmarks/dvc_scale.py times both layouts side by side: 4.7 s vs 5.2 s, medians of 5).
A stamp whose files did not change comes out with the same bytes and is left as it is, so
only the jobs of the rules whose files changed rerun. The stamps are cached like every
output, so `dvc pull` restores them and a fresh clone has nothing to rerun. A rule whose
jobs declare different code files is refused. Snakemake is unchanged: its rules keep the
files as inputs. The one visible difference: after a code edit, `dvc status` and `dvc
repro --dry` name the `code` stage, not the jobs (DVC's dry run does not look past a stage
that would run); `dvc repro` then reruns it and exactly the jobs whose stamp changed, as
before.

Params stamps. DVC reads a stage's declared params by parsing params.yaml again (ruamel's
round-trip loader) for every stage, and finds each key by walking the whole parsed file
(dpath.get): at the papers' scale (513 job stages declaring 2,835 keys) that was most of
a 35 s `dvc status` with nothing to do, and it grows with stages x keys x file size. So
each job stage depends instead on the stamp of the set of keys it declares
(judgebias.workflow.paramstamp: their values as JSON, named by a hash of the keys, shared
by the jobs reading the same keys, rewritten only when a value changes), and one stage,
`params`, writes every stamp (`judgebias plumbing params-stamp`) and declares the top-level params
sections the keys lie in: `dvc status` parses params.yaml once, walks it for a handful of
keys, and checks ~100 stamps through DVC's state database like any file (one stamp per
key instead of per set checked 2,300 more files and was ~15% slower; benchmarks/
dvc_scale.py times the layouts side by side). A job still reruns exactly when one of its
keys' values changed. What is seen differently, as with the code stages: after a params
edit `dvc status` and `dvc repro --dry` name the `params` stage and the section that
changed (`dvc params diff` the key and values), not the jobs reading it; `dvc repro`
reruns it and then exactly those jobs (`dvc repro --single-item params` then `dvc repro
--dry` lists them). The stamps are cached like the code stamps. Coarser DVC stages (one
per rule) would also cut the parses, but DVC would rerun every job of a rule for one
model's edit.

Folders. A data step declares every file its importer reads, each image included
(judgebias.data.paths.input_files): Snakemake only stat()s its inputs, but thousands of
deps per stage would make dvc.yaml and dvc.lock as long, and `dvc status` would look each
one up. So a stage's deps that are exactly every file under a folder become that folder,
one dep: DVC hashes a directory dep once and then checks it through its state database
(keyed by each file's inode, mtime and size), so an untouched folder is not read again.
The rule is derived, never a list of folders: a folder is written in place of its files
when every non-hidden file under it, at any depth, is a dep of the stage; no job writes
into it or holds it inside an output (only files no job writes are collapsed, so DVC
still links every stage to the stage writing its inputs); and it holds no link (DVC
might hash a linked file or folder otherwise than Snakemake reads it, so a dataset of
links keeps its files as deps). The highest such folder is written, but not one that
holds nothing more than the folder below it (a dataset alone in `/data` stays
`/data/vlrb`), and never a folder for one file. Hidden files (``.DS_Store``) are no
dataset's files and are not declared, but DVC hashes them with the folder: editing one
reruns the data step under DVC only, to the same outputs. A file added to a collapsed
folder reruns the step in both doors (Snakemake: the step's set of inputs changed).

It uses Snakemake's workflow object (`_prepare_dag` / `_build_dag` / `dag.jobs`), the
same calls behind `snakemake --dag`; snakemake is pinned to 9.x in pyproject.toml.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from judgebias.commands import invocation
from judgebias.config import ConfigError
from judgebias.io.artifacts import write_text
from judgebias.io.yamlread import load_yaml
from judgebias.workflow.dvcviews import METRIC_FLAG, PLOT_FLAG
from judgebias.workflow.paramstamp import PARAMS_DIR, SEPARATOR, stamp_path

CODE_STAGE = "code"  # the stage writing every rule's code stamp (module docstring)
CODE_DIR = ".judgebias/code"  # where the stamps are
PARAMS_STAGE = "params"  # the stage writing every params key's stamp (module docstring)
HEADER = ("# GENERATED by `judgebias export-dvc` from the Snakefile -- do not edit by hand.\n"
          "# Regenerate after changing the panel or the rules; a test checks it is current.\n")


@contextmanager
def _workflow(snakefile: Path) -> Iterator[Any]:
    from snakemake.api import SnakemakeApi
    from snakemake.settings.enums import Quietness
    from snakemake.settings.types import DAGSettings, OutputSettings, ResourceSettings

    with SnakemakeApi(OutputSettings(quiet={Quietness.ALL})) as api:
        workflow_api = api.workflow(resource_settings=ResourceSettings(cores=1),
                                    snakefile=snakefile.absolute(),
                                    workdir=snakefile.absolute().parent)
        dag_api = workflow_api.dag(DAGSettings(forceall=True))
        workflow = dag_api.workflow_api._workflow
        workflow._prepare_dag(forceall=True, ignore_incomplete=True, lock_warn_only=True,
                              nolock=True)
        workflow._build_dag()
        yield workflow


def _stage_name(job: Any) -> str:
    """`rule__wildcard__values` in the rule's output-pattern order (DVC forbids '@')."""
    return "__".join([job.rule.name, *dict(job.wildcards_dict).values()])


def _command(job: Any) -> str:
    """The job's shell command with runs of blanks collapsed to one space.

    An empty optional argument (``{params.texts}``) leaves two spaces, and DVC writes
    dvc.lock folded at its line width: a fold at a double space loses one on reading,
    so `dvc status` calls the stage's command changed right after `dvc commit` (seen
    with longer model names, where the fold lands there). Collapsing is only safe
    without quoting, which our rules never use; a quoted command is refused.
    """
    command = job.shellcmd.strip()
    if any(mark in command for mark in "'\"\\"):
        raise ValueError(f"rule {job.rule.name}: quoted shell command {command!r}; "
                         "pass values as separate arguments")
    return " ".join(command.split())


def _stage(job: Any, stamp: str | None, folders: SourceFolders | None = None
           ) -> dict[str, Any]:
    """A job's stage: its inputs less its code files, which its rule's `stamp` stands for,
    with every folder whose files are all inputs written as the folder (`folders`)."""
    outs, metrics, plots = [], [], []
    for output in job.output:
        path = str(output)
        if METRIC_FLAG in output.flags:
            metrics.append({path: {"cache": True}})  # see the module docstring
        elif path.endswith(".png"):
            plots.append({path: {"cache": True}})
        else:  # a curve's CSV too: its plot is top-level (_curves)
            outs.append(path)
    deps = [*(Counter(map(str, job.input)) - Counter(_code(job))).elements()]
    if folders is not None:
        deps = folders.collapse(deps)
    if stamp:
        deps.append(stamp)
    stage: dict[str, Any] = {"cmd": _command(job), "deps": sorted(deps)}
    keys = getattr(job.params, "dvc_params", None)
    if keys:
        stage["params"] = list(keys)
    for name, value in (("outs", outs), ("metrics", metrics), ("plots", plots)):
        if value:
            stage[name] = value
    return stage


class SourceFolders:
    """Which of a stage's deps may be written as a folder (module docstring, "Folders").

    `root` is the project folder (relative paths are relative to it) and `outputs` every
    output of every job of the DAG. What a folder holds is walked once per export and
    stage and remembered per folder."""

    def __init__(self, root: Path, outputs: Iterable[str]) -> None:
        self.root = str(root.absolute())
        self.outputs = {self._absolute(path) for path in outputs}
        self.holding = {folder for path in self.outputs for folder in _parents(path)}

    def _absolute(self, path: str) -> str:
        return os.path.normpath(os.path.join(self.root, path))

    def _written(self, path: str) -> bool:
        """Whether a job writes `path`, or a folder output holds it."""
        return path in self.outputs or any(p in self.outputs for p in _parents(path))

    def collapse(self, deps: list[str]) -> list[str]:
        """`deps` (as the job lists them) with each collapsible folder in place of its
        files, sorted, each once."""
        named = {self._absolute(dep): dep for dep in deps}
        sources = {path for path in named if not self._written(path)}
        counted: dict[str, int | None] = {}
        listed = set()
        for path, dep in named.items():
            top, files = None, 1
            if path in sources:
                for folder in _parents(path):
                    count = self._files(folder, sources, counted)
                    if count is None:
                        break
                    if count > files:  # the folder adds files to the one below it
                        top, files = folder, count
            listed.add(dep if top is None else top if os.path.isabs(dep)
                       else os.path.relpath(top, self.root))
        return sorted(listed)

    def _files(self, folder: str, sources: set[str], counted: dict[str, int | None]
               ) -> int | None:
        """How many files lie under `folder` if it may be written in their place (every
        non-hidden file under it a source dep, no output in or around it, no link in
        it), else None."""
        if folder in counted:
            return counted[folder]
        counted[folder] = None  # until proven otherwise (and if the walk fails)
        if folder in self.holding or self._written(folder) or os.path.islink(folder):
            return None
        total = 0
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    if entry.name.startswith("."):
                        continue
                    if entry.is_symlink():
                        return None
                    if entry.is_dir(follow_symlinks=False):
                        below = self._files(entry.path, sources, counted)
                        if below is None:
                            return None
                        total += below
                    elif entry.path in sources:
                        total += 1
                    else:
                        return None
        except OSError:
            return None
        counted[folder] = total
        return total


def _parents(path: str) -> Iterator[str]:
    """The folders holding absolute `path`, nearest first, the file system's root left
    out (it is never a dataset's folder)."""
    folder = os.path.dirname(path)
    while os.path.dirname(folder) != folder:
        yield folder
        folder = os.path.dirname(folder)


def _code(job: Any) -> list[str]:
    """The project source files a job's step runs (its rule's `code=step_code(...)` input)."""
    return sorted(map(str, job.input.get("code") or []))


def _stamp_path(rule: str) -> str:
    return f"{CODE_DIR}/{rule}.json"


def _code_stage(jobs: list[Any]) -> dict[str, dict[str, Any]]:
    """The stage writing, per rule with code inputs, the stamp of exactly those files.

    Every job of a rule runs the same step, so the same code; a rule whose jobs differ
    is refused rather than stamped with one job's files.
    """
    code: dict[str, tuple[str, list[str]]] = {}
    for job in jobs:
        files = _code(job)
        if not files:
            continue
        first, seen = code.setdefault(job.rule.name, (_stage_name(job), files))
        if files != seen:
            raise ValueError(f"rule {job.rule.name}: jobs {first} and {_stage_name(job)} "
                             "declare different code files; one code stamp per rule "
                             "needs the same files for every job")
    if not code:
        return {}
    rules = sorted(code)
    return {CODE_STAGE: {
        "cmd": " ".join([invocation("code-stamp"),
                         *(word for rule in rules
                           for word in ("--out", _stamp_path(rule), *code[rule][1]))]),
        "deps": sorted({file for _, files in code.values() for file in files}),
        "outs": [{_stamp_path(rule): {"cache": True}} for rule in rules]}}


def dvc_stages(snakefile: Path = Path("Snakefile")) -> dict[str, Any]:
    """Every job of the Snakemake DAG as a DVC stage, and the stages writing the code and
    params stamps (module docstring), in a stable order."""
    cwd = os.getcwd()
    try:
        with _workflow(snakefile) as workflow:
            jobs = [j for j in workflow.dag.jobs if j.shellcmd]
            folders = SourceFolders(snakefile.absolute().parent,
                                    (str(path) for j in workflow.dag.jobs for path in j.output))
            stages = {_stage_name(j): _stage(j, _stamp_path(j.rule.name) if _code(j) else None,
                                             folders)
                      for j in jobs}
            if CODE_STAGE in stages:
                raise ValueError(f"a job stage is named {CODE_STAGE!r}, the code stamps' "
                                 "stage")
            stages |= _code_stage(jobs)
            curves = _curves(jobs)
    finally:
        os.chdir(cwd)
    check_params_declared(stages, snakefile.absolute().parent / "params.yaml")
    pipeline: dict[str, Any] = {"stages": dict(sorted(_stamp_params(stages).items()))}
    if curves:
        pipeline["plots"] = curves
    return pipeline


def _curves(jobs: list[Any]) -> list[dict[str, Any]]:
    """dvc.yaml's top-level ``plots:``: each output a rule marks as a curve
    (judgebias.workflow.dvcviews.Curve), its path the plot's id, with its x, y (a list of
    columns: one line each), template and titles, by path."""
    return [{str(output): dict(output.flags[PLOT_FLAG])}
            for output in sorted((o for job in jobs for o in job.output
                                  if PLOT_FLAG in o.flags), key=str)]


def _stamp_params(stages: dict[str, Any]) -> dict[str, Any]:
    """Each job's declared params keys replaced by the stamp of that set of keys, and the
    `params` stage writing every stamp (module docstring)."""
    if PARAMS_STAGE in stages:
        raise ValueError(f"a job stage is named {PARAMS_STAGE!r}, the params stamps' stage")
    sets: dict[str, list[str]] = {}  # stamp -> its keys
    for stage in stages.values():
        declared = sorted(set(stage.pop("params", [])))
        if declared:
            stamp = stamp_path(declared)
            sets[stamp] = declared
            stage["deps"] = sorted({*stage["deps"], stamp})
    if not sets:
        return stages
    stamps = sorted(sets)
    stages[PARAMS_STAGE] = {
        "cmd": " ".join([invocation("params-stamp"), "--out", PARAMS_DIR,
                         *(SEPARATOR.join(sets[stamp]) for stamp in stamps)]),
        "params": sorted({key.split(".")[0] for keys in sets.values() for key in keys}),
        "outs": [{stamp: {"cache": True}} for stamp in stamps]}
    return stages


def check_params_declared(stages: dict[str, Any], params_file: Path) -> None:
    """Every top-level params key a stage declares must be written in `params_file`.

    DVC reads the params stage's params (the top-level blocks holding every declared key,
    :func:`_stamp_params`) from the file itself, not from our schema's defaults: a block
    the schema fills in but the file lacks makes `dvc commit`, `dvc status` and `dvc repro`
    fail ("missing params"), long after the export. So the export refuses it here, naming
    the block and a stage that declares a key of it. A key inside a block the file has may
    be left to its default: DVC sees the whole block change, the stamps (which read the
    filled params) say which jobs that changes.
    """
    params = load_yaml(params_file.read_text()) or {}
    missing: dict[str, str] = {}
    for name, stage in stages.items():
        for key in stage.get("params", []):
            top = key.split(".")[0]
            if top not in params:
                missing.setdefault(top, name)
    if missing:
        lines = "\n".join(f"  {key} (declared by stage {stage})"
                          for key, stage in sorted(missing.items()))
        raise ConfigError(f"{params_file}: DVC stages declare params keys the file does "
                          f"not set (write them out, e.g. with their schema default):\n"
                          f"{lines}")


def render_dvc_yaml(snakefile: Path = Path("Snakefile")) -> str:
    return HEADER + yaml.safe_dump(dvc_stages(snakefile), sort_keys=False, width=100)


def export_dvc_yaml(out: Path, snakefile: Path = Path("Snakefile")) -> None:
    write_text(render_dvc_yaml(snakefile), out)
