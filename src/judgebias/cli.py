"""The `judgebias` command's functions, one per command, and its entry point (docs/design.md
principle 3).

Thin by design: each function reads its parsed arguments, loads the params and calls the
library. Which commands exist, their options and help, and which are plumbing (run only
by the pipeline) are declared once, in the command table (judgebias.commands), which names
each function here; each registered study may add commands of its own (judgebias.study).
Every Snakemake rule and DVC stage runs one of these commands.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from judgebias.config import (
    ConfigError,
    DataNotDownloaded,
    load_config,
    missing_secrets,
    params_warnings,
)
from judgebias.io.artifacts import ArtifactError
from judgebias.models.api import PermanentError
from judgebias.models.external import AwaitingAnswers
from judgebias.models.gpu import ENV as GPUS_ENV  # the dispatch layer names a job's GPUs
from judgebias.models.journal import BudgetExceeded, TooManyFailures

log = logging.getLogger("judgebias")


def validate(args: argparse.Namespace) -> None:
    """Exit 0 when the params are valid and everything they name is there; 2 otherwise,
    with every problem named: broken params, then (DataNotDownloaded) each file not
    downloaded yet and each unset API-key variable. ``--no-data`` leaves out the files'
    presence only (a params file whose datasets are placeholders, configs/)."""
    from judgebias.study import active

    try:
        params, not_downloaded = load_config(args.params, data=not args.no_data), None
    except DataNotDownloaded as exc:
        params, not_downloaded = load_config(args.params, data=False), exc
    errors = missing_secrets(params, params["panel"])
    if not_downloaded is not None:
        unset = "\nAPI keys not set either:\n  " + "\n  ".join(errors) if errors else ""
        raise DataNotDownloaded(f"{not_downloaded}{unset}")
    if errors:
        raise ConfigError(f"{args.params}: " + "; ".join(errors))
    _log_warnings(args.params, params)
    studies = ", ".join(s.name for s in active(params)) or "none"
    data = " (the presence of the files it names was not checked: --no-data)" \
        if args.no_data else ""
    print(f"{args.params}: valid ({len(params['panel'])} panel models; studies: {studies})"
          + data)


def _log_warnings(params_path: str, params: dict[str, Any] | None = None) -> None:
    """validate's warnings (config.params_warnings), one line each. Every front door says
    them (issue 39): `judgebias validate`, a Snakemake run (workflow/rules/common.smk)
    and `dvc repro`, whose params stage runs params-stamp whenever params.yaml changed.
    Params that do not validate are left to the jobs, which name their errors."""
    if params is None:
        try:
            params = load_config(params_path, data=False)
        except ConfigError:
            return
    for line in params_warnings(params):
        log.warning("%s: %s", params_path, line)


def step(args: argparse.Namespace) -> None:
    from judgebias.workflow.step_dispatch import run_step

    if GPUS_ENV in os.environ:  # a GPU job (Slurm sets it from the job's GPU request)
        # which of them the job holds, judgebias.models.gpu.job_gpus logs ("GPUs given")
        log.info("GPUs visible to this job: %s=%s", GPUS_ENV, os.environ[GPUS_ENV])
    run_step(args.step, load_config(args.params), args.inputs, args.outputs, args.wildcards)


def init(args: argparse.Namespace) -> None:
    from judgebias.project import init_project

    for line in init_project(Path(args.directory), args.config, git=not args.no_git,
                             dvc=not args.no_dvc):
        print(line)


def new_study(args: argparse.Namespace) -> None:
    from judgebias.devtools.new_study import new_study as copy_template

    for path in copy_template(Path.cwd(), args.name):
        print(f"wrote {path.relative_to(Path.cwd())}")
    print(f"next: add a `{args.name}:` block to params.yaml, then `judgebias validate`, "
          "`snakemake -n` and `judgebias export-dvc` (docs/adding-a-study.md)")


def report(args: argparse.Namespace) -> None:
    from judgebias.report.build import write_full_report

    results = dict(item.split("=", 1) for item in args.results)
    data = _named_files(args.data, "report --data")
    write_full_report(load_config(args.params), args.params, results, data, Path(args.out),
                      Path(args.card) if args.card else None)


def _named_files(items: Sequence[str], flag: str) -> dict[str, dict[str, str]]:
    """STUDY.NAME=PATH arguments as study -> name -> path."""
    named: dict[str, dict[str, str]] = {}
    for item in items:
        key, equals, path = item.partition("=")
        study, dot, name = key.partition(".")
        if not (equals and dot and study and name and path):
            raise ConfigError(f"{flag}: {item!r} is not STUDY.NAME=PATH")
        if name in named.get(study, {}):
            raise ConfigError(f"{flag}: {study}.{name} given twice")
        named.setdefault(study, {})[name] = path
    return named


def card_build(args: argparse.Namespace) -> None:
    from judgebias.card.build import write_card

    write_card(load_config(args.params), _named_files(args.inputs, "card-build --in"),
               Path(args.table), Path(args.metrics))


def card(args: argparse.Namespace) -> None:
    from judgebias.card.cli import show_card

    print(show_card(load_config(args.params), args), end="")


def plan(args: argparse.Namespace) -> None:
    from judgebias.plan import plan_calls, plan_json, plan_text
    from judgebias.probe import probe_lines, probe_summaries

    if args.power:
        _power(args)
        return
    params = load_config(args.params, data=False)  # counts absent data by size
    plan = plan_calls(params)
    probes = probe_summaries(params, [p.model for p in plan.models])
    print(json.dumps({**plan_json(plan), "probes": probes}, indent=1, default=str)
          if args.json else "\n".join([plan_text(plan), *probe_lines(probes)]))
    over = [p.model for p in plan.models if p.budget_left is not None
            and p.needed > p.budget_left]
    if over:
        raise ConfigError(f"over budget (max_requests): {', '.join(over)}")


def requests(args: argparse.Namespace) -> None:
    """`judgebias requests export FOLDER`: judgebias.exchange.export."""
    from judgebias.exchange.export import export_requests, export_text

    params = load_config(args.params, data=False)
    print(export_text(export_requests(params, Path(args.folder), fmt=args.fmt,
                                      images=args.images, models=args.model,
                                      studies=args.study, max_requests=args.max_requests,
                                      max_bytes=int(args.max_mb * 1024 * 1024))))


def answers(args: argparse.Namespace) -> None:
    """`judgebias answers import FILE ...`: judgebias.exchange.ingest."""
    from judgebias.exchange.ingest import import_answers, import_text

    params = load_config(args.params, data=False)
    print(import_text(import_answers(params, [Path(f) for f in args.files])))


def recorded(args: argparse.Namespace) -> None:
    """`judgebias recorded convert TOOL SOURCE OUT`: judgebias.recorded.convert."""
    from judgebias.recorded.convert import read_tool, tool_named
    from judgebias.recorded.tables import write_recorded

    options = dict(option.partition("=")[::2] for option in args.option)
    try:  # a bad row, option or tool: the message names it
        table = read_tool(args.tool, args.source, **options)
        rows = write_recorded(table, args.out, tool_named(args.tool).kind)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    skipped = table.attrs.get("skipped", [])
    print(f"{args.out}: {rows} judgements"
          + (f"; {len(skipped)} left out (failed in {args.tool}: never a number)"
             if skipped else ""))


def probe(args: argparse.Namespace) -> None:
    """The abilities' measure needs no data and must run where validate refuses a study's
    judge for want of one (a table too pessimistic is what it corrects)."""
    from judgebias.probe import probe_model, probe_text

    params = load_config(args.params, data=False, needs=False)
    print(probe_text(params, probe_model(params, args.model)))


def _power(args: argparse.Namespace) -> None:
    """The card's measures' MDEs, then each study's own section (the leaderboard's human
    labels for a target half-width, ``--label-width``; judgebias.plan.power_sections)."""
    from judgebias.plan import power_json, power_plan, power_report
    from judgebias.stats.power import PowerSettings

    halfwidth = args.label_width
    if halfwidth is not None and not (math.isfinite(halfwidth) and halfwidth > 0):
        raise ConfigError(f"--label-width {halfwidth}: expected a positive half-width in "
                          "the labels' unit (e.g. 0.05 on a 0-1 scale)")
    settings = PowerSettings(alpha=args.alpha, power=args.power_level,
                             targets=_targets(args.target), halfwidth=halfwidth)
    plan = power_plan(load_config(args.params, data=False), Path(args.pilot), settings)
    print(json.dumps(power_json(plan), indent=1) if args.json
          else power_report(plan, settings))


def _targets(items: Sequence[str]) -> dict[str, float]:
    """``--target MEASURE=EFFECT`` items as a mapping, a bad one a clear error."""
    targets = {}
    for item in items:
        measure, _, value = item.partition("=")
        try:
            effect = float(value)
        except ValueError:
            effect = math.nan
        if not measure or not math.isfinite(effect) or effect == 0:
            raise ConfigError(f"--target {item}: expected MEASURE=EFFECT, a non-zero "
                              "number in the measure's unit (e.g. self_preference=2)")
        targets[measure] = effect
    return targets


def serve_sim(args: argparse.Namespace) -> None:
    from judgebias.devtools.serve_sim.server import run_from_args

    code = run_from_args(load_config(args.params), args)
    if code:
        raise SystemExit(code)


def export_dvc(args: argparse.Namespace) -> None:
    from judgebias.workflow.dvc_export import export_dvc_yaml

    load_config(args.params)
    export_dvc_yaml(Path(args.out), Path(args.snakefile))
    print(f"wrote {args.out}")


def code_stamp(args: argparse.Namespace) -> None:
    from judgebias.workflow.codestamp import stamps_of, write_stamps

    write_stamps(stamps_of(args.out))


def params_stamp(args: argparse.Namespace) -> None:
    from judgebias.workflow.paramstamp import SEPARATOR, write_param_stamps

    write_param_stamps([keys.split(SEPARATOR) for keys in args.sets], Path(args.params),
                       args.out)
    _log_warnings(args.params)  # DVC's front door (issue 39)


def dvc_record(args: argparse.Namespace) -> None:
    from judgebias.workflow.dvcsync import record

    print(record(snakefile=Path(args.snakefile)))


def snakemake_record(args: argparse.Namespace) -> None:
    from judgebias.workflow.dvcsync import record_snakemake

    _print_recorded(record_snakemake(snakefile=Path(args.snakefile)))


def dvc(args: argparse.Namespace, leading: Sequence[str] = ()) -> None:
    from judgebias.workflow.dvcsync import run_dvc

    dvc_args = args.dvc_args[1:] if args.dvc_args[:1] == ["--"] else args.dvc_args
    rules = run_dvc([*leading, *dvc_args], snakefile=Path(args.snakefile))
    if rules is not None:
        _print_recorded(rules)


def dvc_repro(args: argparse.Namespace) -> None:
    dvc(args, leading=["repro"])


def _print_recorded(rules: list[str]) -> None:
    print("Snakemake's records are up to date"
          + (f" (brought up to date: {', '.join(rules)})" if rules else "")
          + "; snakemake has nothing to do.")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command `argv` names (sys.argv's by default); its exit status: 0, 2 for bad
    input (params, artifacts), 3 for a run stopped by a model's calls (budget, failures,
    answers not imported yet)."""
    # Imported here, not at the top: the table is read by every command, so it is part of
    # the dispatch layer, not of the code of the commands whose functions are above
    # (judgebias.workflow.codedeps derives that from each function's module).
    from judgebias.commands import parse_args

    args = parse_args(argv)
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if args.log:
        Path(args.log).parent.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(args.log, mode="w"))
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
                        handlers=handlers, force=True)
    for noisy in ("httpx", "httpx2", "httpcore", "openai", "google_genai", "urllib3"):
        logging.getLogger(noisy).setLevel(logging.WARNING)  # request lines add nothing
    try:
        args.entry.load()(args)
    except (ConfigError, ArtifactError) as exc:
        log.error("%s", exc)
        return 2
    except (PermanentError, BudgetExceeded, TooManyFailures, AwaitingAnswers) as exc:
        log.error("stopped: %s", exc)
        return 3
    except Exception:
        # A bug, not bad input: the traceback goes to the job's log file too (a rule's
        # `log:` was left empty before, and Snakemake's own output is easily lost).
        log.exception("judgebias %s failed unexpectedly", args.entry.name)
        raise
    finally:
        # Called in-process (tests, notebooks), leave logging as it was found.
        for handler in handlers:
            root.removeHandler(handler)
            handler.close()
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
