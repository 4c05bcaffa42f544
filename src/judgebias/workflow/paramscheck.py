"""Whether each step read only the params keys its rule declares (issue 42 item 5).

A run with ``$JUDGEBIAS_RECORD_PARAMS`` set leaves one record per step job of what it
read (judgebias.workflow.paramsread says what counts as a read, and why). :func:`check`
matches each record with its job in the Snakemake DAG and the params keys the job's rule
declares under ``params: dvc_params=`` (Snakemake's rerun trigger and DVC's params
stamp), and names every read no declared key covers: a key a step reads undeclared can
change its answer, and neither front door would rerun it.

A read is covered (:func:`uncovered`) when it lies at or below a declared key (a declared
block covers everything in it) or below a run setting (``x-run-setting`` in the schema:
budgets, prices, endpoints, ``journal_dir``; judgebias.config.answer_keys leaves them out
of every declaration because they cannot change an answer). A block read whole is covered
when every key in it is; a key set is covered when every key of the block has a declared
key at or below it (the declaration then names each of them, and a rule listing a
block's keys is derived from that block: one more key changes the declaration and reruns
the job), and an empty block's key set only by a declared ancestor. Whether a block holds
a key, or anything, is covered by a declared key at, above or within it (the key's going
away then changes the declaration too); the truth of a block the step then looked inside
is a guard (``block.get("by_judge") or {}``), and what it read inside is judged on its
own. A key looked up and absent is not judged (paramsread: ``absent``).

The declared keys come from Snakemake's DAG of the project, as `judgebias export-dvc`
reads it (judgebias.workflow.dvc_export), so they are exactly what both front doors see.
Runs the check needs: every job of the DAG run with recording on (a fresh run, or
``snakemake --forceall``), since a job that did not run left no record; a run of what
changed is checked with ``every_step=False``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from judgebias.config import is_run_setting
from judgebias.workflow.paramsread import KINDS, Read, key_path, value_at


def _at_or_below(path: str, key: str) -> bool:
    return path == key or path.startswith(key + ".")


def uncovered(reads: Iterable[Read], declared: Iterable[str],
              params: Mapping[str, Any]) -> list[Read]:
    """The reads of `reads` that no key of `declared` covers in `params` (module
    docstring)."""
    declared = list(declared)

    def covered(path: str) -> bool:
        parts = path.split(".") if path else []
        return (any(_at_or_below(path, key) for key in declared)
                or any(is_run_setting(".".join(parts[:i])) for i in range(1, len(parts) + 1)))

    def declared_within(path: str) -> bool:  # a declared key at, above or below `path`
        return covered(path) or any(_at_or_below(key, path) for key in declared)

    def value_covered(path: str, value: Any) -> bool:
        if covered(path):
            return True
        if not isinstance(value, Mapping) or not value:
            return False
        return all(value_covered(key_path(path, k), v) for k, v in value.items())

    def keys_covered(path: str, value: Any) -> bool:
        if covered(path):
            return True
        return bool(value) and all(declared_within(key_path(path, k)) for k in value)

    made = sorted(set(reads))

    def looked_inside(path: str) -> bool:
        return any(_at_or_below(other, path) and other != path for _, other in made)

    found: list[Read] = []
    for kind, path in made:
        if kind == "absent" or covered(path) or (kind == "empty" and looked_inside(path)):
            continue
        value = value_at(params, path)
        ok = (value_covered(path, value) if kind == "value" else
              keys_covered(path, value) if kind == "keys" else declared_within(path))
        if not ok:
            found.append((kind, path))
    return found


@dataclasses.dataclass(frozen=True)
class Job:
    """A job of the Snakemake DAG as the check sees it: its rule, outputs, the params keys
    its rule declares for it (``dvc_params``) and the step it runs (None: no step)."""

    rule: str
    outputs: tuple[str, ...]
    declared: tuple[str, ...]
    step: str | None


STEP_COMMAND = re.compile(r"\bstep (\S+)")  # judgebias ... step STUDY.STEP (common.smk)


def dag_jobs(snakefile: Path) -> list[Job]:
    """Every job of `snakefile`'s DAG for its params (as with --forceall), as
    judgebias.workflow.dvc_export reads it for dvc.yaml."""
    from judgebias.workflow.dvc_export import _workflow

    cwd = os.getcwd()
    try:
        os.chdir(snakefile.absolute().parent)  # where its jobs run and find params.yaml
        with _workflow(snakefile) as workflow:
            jobs = []
            for job in workflow.dag.jobs:
                step = STEP_COMMAND.search(job.shellcmd or "")
                jobs.append(Job(job.rule.name, tuple(map(str, job.output)),
                                tuple(getattr(job.params, "dvc_params", None) or ()),
                                step.group(1) if step else None))
    finally:
        os.chdir(cwd)
    return jobs


@dataclasses.dataclass(frozen=True)
class Problem:
    """One finding of :func:`check`: `read` of the job writing `output` (its first) is
    declared by no key of its `rule`; with no `read`, what `message` says."""

    rule: str
    output: str
    read: Read | None
    message: str

    def __str__(self) -> str:
        return f"rule {self.rule} ({self.output}): {self.message}"


def check(snakefile: Path, records: Path, params: Mapping[str, Any], *,
          every_step: bool = True) -> list[Problem]:
    """Every problem of the records in folder `records` of a run of `snakefile`'s DAG on
    `params` (the validated params the jobs read): a read its job's rule does not
    declare; a record no job of the DAG matches; with `every_step`, a job running a step
    that left no record (a fresh run or --forceall runs them all; a run of what changed,
    only some)."""
    jobs = dag_jobs(snakefile)
    by_output = {path: job for job in jobs for path in job.outputs}
    problems, recorded = [], set()
    for file in sorted(records.glob("*.json")):
        record = json.loads(file.read_text())
        matched = {by_output.get(path) for path in record["outputs"]}
        job = matched.pop() if len(matched) == 1 else None
        if job is None or job.step != record["step"]:
            problems.append(Problem("?", record["outputs"][0], None,
                                    f"{file.name}: step {record['step']} is no job of "
                                    "the DAG"))
            continue
        recorded.add(job)
        reads = [(kind, path) for kind in KINDS for path in record[kind]]
        for kind, path in uncovered(reads, job.declared, params):
            what = {"keys": "the keys of ", "present": "whether there is ",
                    "empty": "whether there is anything in "}.get(kind, "")
            problems.append(Problem(job.rule, job.outputs[0], (kind, path),
                                    f"step {job.step} reads {what}"
                                    f"{path or 'the whole params'}, undeclared"))
    problems += [Problem(job.rule, job.outputs[0], None,
                         f"step {job.step} left no record of its reads")
                 for job in jobs if every_step and job.step and job not in recorded]
    return problems
