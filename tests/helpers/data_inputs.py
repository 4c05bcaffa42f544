"""A dataset edit reruns its study through both front doors (issue 39 item 1).

Each study's data step declares every file its importer reads, the annotation files and
the images (the study's ``data`` module lists them; judgebias.workflow.dvc_export turns a
folder listed whole into one DVC dep). The study tests build a small project on a dataset
in its published format, run it with Snakemake, record it for DVC
(:func:`recorded_project`), then rewrite one file of the dataset and check what each door
plans and what `dvc repro` runs (:func:`assert_edits_rerun`): DVC reruns a stage when a
dep's content changed, so the data table must change with any file it was built from,
an image's bytes included (each study's table stores the SHA-256 of every image it names,
judgebias.io.filedigest.file_sha256); a table that named the images by path alone came out
byte for byte the same after a replaced image, and DVC ran nothing after the data stage.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import yaml
from PIL import Image

from helpers.project import BIN, make_project, planned_jobs, run


def recorded_project(project: Path, params: dict) -> Path:
    """`params` as a project in the folder `project`, built by Snakemake, with its
    dvc.yaml exported, committed to git (as a user's clone is) and the run recorded in
    dvc.lock (`judgebias dvc-record`): neither door has anything left to do."""
    project.mkdir(parents=True, exist_ok=True)
    make_project(project, params)
    run([str(BIN / "snakemake"), "--cores", "2", "--quiet"], project)
    run([str(BIN / "judgebias"), "export-dvc"], project)
    run(["git", "init", "-q"], project)
    run(["git", "add", "-A"], project)
    run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "clone"],
        project)
    run([str(BIN / "judgebias"), "dvc-record"], project)
    assert not planned_jobs(project) and not dvc_changed(project)
    return project


def data_deps(project: Path, stage: str) -> set[str]:
    """The deps of `stage` in the project's dvc.yaml other than its code and params
    stamps and the outputs of other stages: the dataset files it declares, each folder
    declared whole as one dep (judgebias.workflow.dvc_export)."""
    stages = yaml.safe_load((project / "dvc.yaml").read_text())["stages"]
    written = {next(iter(out)) if isinstance(out, dict) else out
               for other in stages.values() for kind in ("outs", "metrics", "plots")
               for out in other.get(kind, [])}
    return {dep for dep in stages[stage]["deps"]
            if not dep.startswith(".judgebias/") and dep not in written}


def dvc_changed(project: Path) -> dict[str, Any]:
    """What `dvc status` says changed, by stage (deps, params or outs)."""
    return json.loads(run([str(BIN / "dvc"), "status", "--json"], project).stdout)


def _stages(project: Path) -> dict[str, Any]:
    return yaml.safe_load((project / "dvc.yaml").read_text())["stages"]


def _outs(stage: dict[str, Any]) -> list[str]:
    return [next(iter(out)) if isinstance(out, dict) else out
            for kind in ("outs", "metrics", "plots") for out in stage.get(kind, [])]


def readers(project: Path, outs: Iterable[str]) -> set[str]:
    """The stages of the project's dvc.yaml that depend on one of `outs` (a file, or one
    inside a folder)."""
    outs = list(outs)
    return {name for name, stage in _stages(project).items() if any(
        dep == out or dep.startswith(f"{out}/") for dep in stage.get("deps", [])
        for out in outs)}


def downstream_stages(project: Path, stage: str) -> set[str]:
    """`stage` and every stage that depends on it, directly or through others."""
    stages = _stages(project)
    found, todo = {stage}, [stage]
    while todo:
        for reader in readers(project, _outs(stages[todo.pop()])) - found:
            found.add(reader)
            todo.append(reader)
    return found


def locked_outs(project: Path, stage: str) -> dict[str, str]:
    """The content hash dvc.lock records for each output of `stage`."""
    lock = yaml.safe_load((project / "dvc.lock").read_text())["stages"][stage]
    return {out["path"]: out["md5"] for out in lock.get("outs", [])}


def dvc_repro(project: Path) -> set[str]:
    """The stages `judgebias dvc repro` (DVC's front door: `dvc repro`, then Snakemake's
    records brought up to date) ran."""
    said = run([str(BIN / "judgebias"), "dvc", "repro"], project)
    return set(re.findall(r"Running stage '([^']+)'", said.stdout + said.stderr))


def assert_edits_rerun(project: Path, edits: Iterable[tuple[Path, Callable[[bytes], bytes]]],
                       rule: str, stage: str) -> None:
    """Rewrite each `path` of `edits` in turn (its bytes through its `edit`, which must
    change what the data stage writes: a row the table keeps, an image it names), each on
    top of the edits before it: after each, Snakemake plans exactly the jobs of `rule` and
    every job downstream of them (what ``--forcerun RULE`` plans), `dvc status` names the
    stage `stage` alone (it does not look past a changed stage), and `dvc repro` runs
    `stage`, which writes new content to at least one output, and every stage reading
    such an output (a judge's, an embedding's, an analysis's), and none but those
    downstream of it: the results after the data are not kept stale. `judgebias dvc
    repro` fails unless it leaves both doors nothing to do (judgebias.workflow.dvcsync.
    record_snakemake), so each edit starts from a current project. The old bytes and
    modification times of every file are then put back, `dvc repro` brings the old
    outputs back, and neither door has anything to do: an untouched dataset plans
    nothing. One `dvc repro` puts all the files back (one per file reran the same stages
    again and again: 20-30 s of a test each)."""
    kept: list[tuple[Path, bytes, os.stat_result]] = []
    try:
        for path, edit in edits:
            before, stat = path.read_bytes(), path.stat()
            after = edit(before)
            assert after != before
            kept.append((path, before, stat))
            _assert_edit_reruns(project, path, after, rule, stage)
    finally:
        for path, before, stat in reversed(kept):
            path.write_bytes(before)
            os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        if kept:
            dvc_repro(project)
    assert not planned_jobs(project), [path for path, _, _ in kept]
    assert not (changed := dvc_changed(project)), ([path for path, _, _ in kept], changed)


def _assert_edit_reruns(project: Path, path: Path, after: bytes, rule: str,
                        stage: str) -> None:
    """`path` rewritten as `after`: what each door plans and runs (assert_edits_rerun)."""
    downstream = planned_jobs(project, "--forcerun", rule)
    assert any(name == rule for name, _ in downstream), downstream
    after_stage, locked = downstream_stages(project, stage), locked_outs(project, stage)
    path.write_bytes(after)
    planned = planned_jobs(project)
    assert planned == downstream, (path, sorted(planned), sorted(downstream))
    changed = dvc_changed(project)
    assert set(changed) == {stage}, (path, changed)
    ran = dvc_repro(project)
    rewritten = {out for out, md5 in locked_outs(project, stage).items()
                 if locked.get(out) != md5}
    rerun = readers(project, rewritten)
    assert rewritten and rerun, (path, sorted(ran), "the data stage wrote the same")
    assert {stage} | rerun <= ran <= after_stage, (path, sorted(ran), sorted(rerun))


def replace_text(old: str, new: str) -> Callable[[bytes], bytes]:
    """An edit replacing the first `old` in a UTF-8 file by `new` (one row's value)."""
    def edit(data: bytes) -> bytes:
        text = data.decode("utf-8")
        assert old in text, old
        return text.replace(old, new, 1).encode("utf-8")
    return edit


def edit_json(change: Callable[[Any], None]) -> Callable[[bytes], bytes]:
    """An edit of a JSON file: `change` alters the parsed value in place."""
    def edit(data: bytes) -> bytes:
        value = json.loads(data)
        change(value)
        return json.dumps(value).encode("utf-8")
    return edit


def edit_csv(row: int, column: str, value: str) -> Callable[[bytes], bytes]:
    """An edit of a CSV file: `column` of data row `row` (from 0) set to `value`."""
    def edit(data: bytes) -> bytes:
        records = list(csv.DictReader(io.StringIO(data.decode("utf-8"))))
        assert records[row][column] != value
        records[row][column] = value
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=list(records[0]))
        writer.writeheader()
        writer.writerows(records)
        return out.getvalue().encode("utf-8")
    return edit


def repaint(data: bytes) -> bytes:
    """An edit of an image file: the same picture, colours inverted, in its own format."""
    with Image.open(io.BytesIO(data)) as image:
        kind = image.format
        inverted = Image.eval(image.convert("RGB"), lambda value: 255 - value)
    out = io.BytesIO()
    inverted.save(out, format=kind)
    return out.getvalue()
