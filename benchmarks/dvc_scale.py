"""Benchmark: Snakemake's and DVC's bookkeeping on the papers' full DAG with nothing to do.

    .venv/bin/python benchmarks/dvc_scale.py [--models 12] [--images 4500] [--repeat 3]
        [--keep DIR] [--no-baselines]

What a researcher waits for before anything runs, once every output exists: ``snakemake
-n`` (is anything out of date?), a no-op ``snakemake --cores 2`` (the same, then "Nothing
to be done"), ``dvc status`` (every stage's deps and outs against dvc.lock), and, once,
``judgebias dvc-record`` (``dvc commit`` of every stage: hashes every output).

The project is :func:`dag_scale.scale_params` (the papers' configuration) in a fresh git
+ DVC repository. Its data steps run for real (the rules with directory outputs and
what they need: philautia's images, Pomms' judgement datasets, MMB's, BIRCH's, FRAME's
images and every manipulation's renders), so directory outputs hold the real number of
files. Every other output -- model answers that would take days of simulated calls,
and the analyses reading them -- is a placeholder file: an unchanged output is checked
by existence, mtime, size and inode (Snakemake) and by DVC's state database (mtime,
size, inode -> hash), never by reading its bytes, so the no-op timings do not depend on
them; only ``dvc-record``'s one-off hashing does. FRAME's combined renders (they need
the analyst's real scores) are a placeholder directory of one file per item.
``snakemake --touch`` then orders the mtimes as a real run would.

Before and after, side by side (issue 24: ``dvc status`` in at most 10 s here). The
project's dvc.yaml is this checkout's export: job stages depend on the stamps of their
params keys, written by one ``params`` stage, and on their rule's code stamp, written by
one ``code`` stage (judgebias.workflow.dvc_export). The baselines are the same DAG laid
out as before, each the export's inverse: one code stage per rule, ``code__<rule>``
(:func:`per_rule_code`), and, before that, also every job stage declaring its keys as DVC
params with no ``params`` stage (:func:`per_stage_params`). Each is recorded in a
repository of its own over hard links to the same files (same inodes and times, its own
dvc.lock and state database), and the ``dvc status`` runs alternate with each other and
with the Snakemake ones, so all see the same machine load. With ``--keep DIR`` the
projects stay in ``DIR/stamps``, ``DIR/per_rule_code`` and ``DIR/per_stage_params``.

Prints Markdown: medians of ``--repeat`` runs. CI smoke run (tests/core/test_benchmarks.py):
``--models 6 --images 10 --repeat 1 --small --no-baselines`` (this checkout's layout
only: recording the two old layouts took most of the smoke run's time).
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import yaml
from dag_scale import BIN, project, scale_params

from judgebias.config import with_defaults
from judgebias.workflow.codestamp import stamps_of
from judgebias.workflow.dvc_export import CODE_STAGE, HEADER, PARAMS_STAGE
from judgebias.workflow.dvcsync import record, stage_args
from judgebias.workflow.paramstamp import SEPARATOR, stamp_path

AFTER = "one code stage, params stamps (this checkout)"
DATA_RULES = ("dataset", "judgements", "mmb_data", "birch_data", "frame_render")
UP_TO_DATE = "Data and pipelines are up to date."


def run(cmd: list[str], cwd: Path) -> tuple[float, str]:
    """(seconds, stdout + stderr) of a command that must succeed."""
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    start = time.perf_counter()
    result = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{result.stdout}{result.stderr}")
    return elapsed, result.stdout + result.stderr


def shrink(params: dict) -> dict:
    """Smoke-run sizes: every study's steps, few items, four philautia models, two FRAME
    and BIRCH judges, two settings of each FRAME grid."""
    params["philautia"]["models"] = params["philautia"]["models"][:4]
    for study in ("frame", "birch"):
        params[study]["models"] = params[study]["models"][:2]
    params["frame"]["dataset"]["synthetic"]["n_per_domain"] = 2
    params["frame"]["manipulations"] = {name: grid[:2] for name, grid
                                        in params["frame"]["manipulations"].items()}
    params["birch"]["datasets"]["synthetic"]["n_pairs"] = 40
    return params


def declared_outputs(folder: Path) -> list[str]:
    """Every out, metric and plot of dvc.yaml (the export of the Snakefile's outputs)."""
    paths = []
    for stage in yaml.safe_load((folder / "dvc.yaml").read_text())["stages"].values():
        for key in ("outs", "metrics", "plots"):
            for entry in stage.get(key, []):
                paths.append(entry if isinstance(entry, str) else next(iter(entry)))
    return paths


def placeholders(folder: Path, n_items: int) -> int:
    """A placeholder for every declared output the data steps did not build."""
    made = 0
    for path in map(folder.joinpath, declared_outputs(folder)):
        if path.exists():
            continue
        if path.suffix:  # a file
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"placeholder {path.name}\n")
        else:  # a directory output (FRAME's combined renders): one file per item
            path.mkdir(parents=True)
            for item in range(n_items):
                (path / f"{item:05d}.png").write_text(f"placeholder {item}\n")
        made += 1
    return made


def build(folder: Path) -> tuple[float, int]:
    """Data steps for real, placeholders for the rest, mtimes ordered, DVC recorded."""
    run(["git", "init", "-q"], folder)
    run([str(BIN / "dvc"), "init", "-q"], folder)
    run([str(BIN / "judgebias"), "export-dvc"], folder)
    run([str(BIN / "snakemake"), "--cores", "2", "--quiet", "--until", *DATA_RULES], folder)
    params = yaml.safe_load((folder / "params.yaml").read_text())
    made = placeholders(folder, 5 * params["frame"]["dataset"]["synthetic"]["n_per_domain"])
    run([str(BIN / "snakemake"), "--cores", "1", "--quiet", "--touch"], folder)
    recorded, text = run([str(BIN / "judgebias"), "dvc-record"], folder)
    if UP_TO_DATE not in text:
        raise SystemExit(f"dvc-record left changes:\n{text}")
    return recorded, made


def per_stage_params(stages: dict) -> dict:
    """The layout before params stamps: every job stage declares its keys as DVC params
    (after its deps, as the export wrote them) and there is no `params` stage."""
    sets = {stamp_path(keys.split(SEPARATOR)): keys.split(SEPARATOR)
            for keys in stages[PARAMS_STAGE]["cmd"].split()[4:]}
    before = {}
    for name, stage in stages.items():
        if name == PARAMS_STAGE:
            continue
        keys = [key for d in stage["deps"] for key in sets.get(d, [])]
        before[name] = {}
        for key, value in stage.items():
            before[name][key] = [d for d in value if d not in sets] if key == "deps" else value
            if key == "deps" and keys:
                before[name]["params"] = keys
    return before


def per_rule_code(stages: dict) -> dict:
    """The layout before one code stage: a stage ``code__<rule>`` per rule, writing its
    rule's stamp from the rule's files (one ``--out`` group of the ``code`` stage each)."""
    before = {name: stage for name, stage in stages.items() if name != CODE_STAGE}
    for stamp, files in stamps_of(stage_args(stages[CODE_STAGE]).out).items():
        before[f"{CODE_STAGE}__{Path(stamp).stem}"] = {
            "cmd": shlex.join(["judgebias", "plumbing", "code-stamp", "--out", stamp, *files]),
            "deps": files, "outs": [{stamp: {"cache": True}}]}
    return dict(sorted(before.items()))


def baseline(folder: Path, dest: Path, layout: Callable[[dict], dict]) -> float:
    """`folder`'s project with `layout`'s dvc.yaml in a fresh git + DVC
    repository at `dest`, its files hard links to `folder`'s (nothing below writes in
    place: DVC's `commit --no-relink` reads the workspace, our writes are atomic renames);
    recorded in dvc.lock. Returns the seconds recording took."""
    dest.mkdir()
    for entry in folder.iterdir():
        if entry.name in (".git", ".dvc", "dvc.lock", "dvc.yaml"):
            continue
        if entry.is_dir():
            shutil.copytree(entry, dest / entry.name, copy_function=os.link)
        else:
            os.link(entry, dest / entry.name)
    stages = yaml.safe_load((folder / "dvc.yaml").read_text())["stages"]
    (dest / "dvc.yaml").write_text(HEADER + yaml.safe_dump(
        {"stages": layout(stages)}, sort_keys=False, width=100))
    run(["git", "init", "-q"], dest)
    run([str(BIN / "dvc"), "init", "-q"], dest)
    start = time.perf_counter()
    text = record(dest, check_current=False)  # dvc.yaml is not the export, by design
    if UP_TO_DATE not in text:
        raise SystemExit(f"recording the baseline left changes:\n{text}")
    return time.perf_counter() - start


def size_kb(path: Path) -> str:
    return f"{path.stat().st_size / 1000:.0f} KB"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", type=int, default=12)
    parser.add_argument("--images", type=int, default=4500)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--small", action="store_true", help="a few items per dataset")
    parser.add_argument("--keep", type=Path, default=None)
    parser.add_argument("--no-baselines", action="store_true",
                        help="this checkout's layout only (the CI smoke run: the old "
                             "layouts' records took most of its time)")
    args = parser.parse_args()
    params = scale_params(args.models, args.images)
    if args.small:
        params = shrink(params)
    # The layout before params stamps (per_stage_params) had DVC read every key a stage
    # declares from the file itself, so the file states each default: all layouts read it.
    params = with_defaults(params)
    with tempfile.TemporaryDirectory() as tmp:
        folder = project((args.keep or Path(tmp)) / "stamps", params)
        start = time.perf_counter()
        recorded, made = build(folder)
        built = time.perf_counter() - start
        baselines = {
            "params per stage, a code stage per rule (before 0bc6305)":
                ("per_stage_params", lambda stages: per_stage_params(per_rule_code(stages))),
            "a code stage per rule (before)": ("per_rule_code", per_rule_code)}
        if args.no_baselines:
            baselines = {}
        layouts, recorded_s = {}, {}
        for layout, (name, transform) in baselines.items():
            layouts[layout] = folder.parent / name
            recorded_s[layout] = baseline(folder, layouts[layout], transform)
        layouts[AFTER], recorded_s[AFTER] = folder, recorded
        times: dict[str, list[float]] = {"snakemake -n": [], "snakemake --cores 2": [],
                                         **{f"dvc status, {k}": [] for k in layouts}}
        for _ in range(args.repeat):  # interleaved: all see the same machine load
            seconds, out = run([str(BIN / "snakemake"), "-n", "--cores", "1"], folder)
            assert "Nothing to be done" in out, out[-2000:]
            times["snakemake -n"].append(seconds)
            seconds, out = run([str(BIN / "snakemake"), "--cores", "2"], folder)
            assert "Nothing to be done" in out, out[-2000:]
            times["snakemake --cores 2"].append(seconds)
            for layout, where in layouts.items():
                seconds, out = run([str(BIN / "dvc"), "status"], where)
                assert UP_TO_DATE in out, out[-2000:]
                times[f"dvc status, {layout}"].append(seconds)
        facts = {layout: (len(yaml.safe_load((where / "dvc.yaml").read_text())["stages"]),
                          size_kb(where / "dvc.yaml"), size_kb(where / "dvc.lock"))
                 for layout, where in layouts.items()}
        n_files = sum(1 for p in (folder / "data").rglob("*") if p.is_file())
        n_files += sum(1 for p in (folder / "results").rglob("*") if p.is_file())
    print(f"{args.models} models, {args.images} images: {n_files} files under data/ and "
          f"results/ ({made} placeholder outputs); built in {built:.0f} s")
    print("\n| DVC layout | stages | dvc.yaml | dvc.lock | `judgebias dvc-record` (s) |\n"
          "|---|---|---|---|---|")
    for layout, (n_stages, yaml_size, lock_size) in facts.items():
        print(f"| {layout} | {n_stages} | {yaml_size} | {lock_size} | "
              f"{recorded_s[layout]:.1f} |")
    print("\n| nothing to do | median (s) | runs |\n|---|---|---|")
    for name, values in times.items():
        print(f"| `{name}` | {statistics.median(values):.2f} | "
              f"{', '.join(f'{v:.2f}' for v in values)} |")
    after = statistics.median(times[f"dvc status, {AFTER}"])
    for layout in baselines:
        ratio = statistics.median(times[f"dvc status, {layout}"]) / after
        print(f"| `dvc status` speed-up ({layout} / this checkout) | {ratio:.2f} | |")

if __name__ == "__main__":
    main()
