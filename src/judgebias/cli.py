"""The `judgebias` command: one sub-command per pipeline step (docs/design.md principle 3).

Thin by design: the core commands live here, and each registered study adds its own steps
(judgebias.study). Every Snakemake rule and DVC stage runs one of these sub-commands.
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

from judgebias.artifacts import ArtifactError
from judgebias.config import (
    PARAMS_ENV,
    ConfigError,
    DataNotDownloaded,
    load_config,
    missing_secrets,
    params_path,
    params_warnings,
)
from judgebias.models.api import PermanentError
from judgebias.models.gpu import ENV as GPUS_ENV  # the dispatch layer names a job's GPUs
from judgebias.models.journal import BudgetExceeded, TooManyFailures

log = logging.getLogger("judgebias")


def _cmd_validate(args: argparse.Namespace) -> None:
    """Exit 0 when the params are valid and everything they name is there; 2 otherwise,
    with every problem named: a broken config, then (DataNotDownloaded) each file not
    downloaded yet and each unset API-key variable. ``--no-data`` leaves out the files'
    presence only (a config whose datasets are placeholders, configs/)."""
    from judgebias.study import active

    try:
        config, not_downloaded = load_config(args.params, data=not args.no_data), None
    except DataNotDownloaded as exc:
        config, not_downloaded = load_config(args.params, data=False), exc
    errors = missing_secrets(config, config["panel"])
    if not_downloaded is not None:
        unset = "\nAPI keys not set either:\n  " + "\n  ".join(errors) if errors else ""
        raise DataNotDownloaded(f"{not_downloaded}{unset}")
    if errors:
        raise ConfigError(f"{args.params}: " + "; ".join(errors))
    _log_warnings(args.params, config)
    studies = ", ".join(s.name for s in active(config)) or "none"
    data = " (the presence of the files it names was not checked: --no-data)" \
        if args.no_data else ""
    print(f"{args.params}: valid ({len(config['panel'])} panel models; studies: {studies})"
          + data)


def _log_warnings(params: str, config: dict[str, Any] | None = None) -> None:
    """validate's warnings (config.params_warnings), one line each. Every front door says
    them (issue 39): `judgebias validate`, a Snakemake run (workflow/rules/common.smk)
    and `dvc repro`, whose params stage runs params-stamp whenever params.yaml changed.
    A config that does not validate is left to the jobs, which name its errors."""
    if config is None:
        try:
            config = load_config(params, data=False)
        except ConfigError:
            return
    for line in params_warnings(config):
        log.warning("%s: %s", params, line)


def _cmd_step(args: argparse.Namespace) -> None:
    from judgebias.steps import run_step

    if GPUS_ENV in os.environ:  # a GPU job (Slurm sets it from the job's GPU request)
        # which of them the job holds, judgebias.models.gpu.job_gpus logs ("GPUs given")
        log.info("GPUs visible to this job: %s=%s", GPUS_ENV, os.environ[GPUS_ENV])
    run_step(args.step, load_config(args.params), args.inputs, args.outputs, args.wildcards)


def _cmd_new_study(args: argparse.Namespace) -> None:
    from judgebias.devtools.new_study import new_study

    for path in new_study(Path.cwd(), args.name):
        print(f"wrote {path.relative_to(Path.cwd())}")
    print(f"next: add a `{args.name}:` block to params.yaml, then `judgebias validate`, "
          "`snakemake -n` and `judgebias export-dvc` (docs/adding-a-study.md)")


def _cmd_report(args: argparse.Namespace) -> None:
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


def _cmd_card_build(args: argparse.Namespace) -> None:
    from judgebias.card.build import write_card

    write_card(load_config(args.params), _named_files(args.inputs, "card-build --in"),
               Path(args.table), Path(args.metrics))


def _cmd_card(args: argparse.Namespace) -> None:
    from judgebias.card.cli import show_card

    print(show_card(load_config(args.params), args), end="")


def _cmd_plan(args: argparse.Namespace) -> None:
    from judgebias.plan import plan_calls, plan_json, plan_text
    from judgebias.probe import probe_lines, probe_summaries

    if args.power:
        _power(args)
        return
    config = load_config(args.params, data=False)  # counts absent data by size
    plan = plan_calls(config)
    probes = probe_summaries(config, [p.model for p in plan.models])
    print(json.dumps({**plan_json(plan), "probes": probes}, indent=1, default=str)
          if args.json else "\n".join([plan_text(plan), *probe_lines(probes)]))
    over = [p.model for p in plan.models if p.budget_left is not None
            and p.needed > p.budget_left]
    if over:
        raise ConfigError(f"over budget (max_requests): {', '.join(over)}")


def _cmd_probe(args: argparse.Namespace) -> None:
    """The abilities' measure needs no data and must run where validate refuses a study's
    judge for want of one (a table too pessimistic is what it corrects)."""
    from judgebias.probe import probe_model, probe_text

    config = load_config(args.params, data=False, needs=False)
    print(probe_text(config, probe_model(config, args.model)))


def _power(args: argparse.Namespace) -> None:
    from judgebias.power import PowerSettings, power_plan, power_text

    settings = PowerSettings(alpha=args.alpha, power=args.power_level,
                             targets=_targets(args.target))
    table = power_plan(load_config(args.params, data=False), Path(args.pilot), settings)
    print(table.to_json(orient="records", indent=1) if args.json
          else power_text(table, settings))


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


def _cmd_serve_sim(args: argparse.Namespace) -> None:
    from judgebias.devtools.serve_sim.server import run_from_args

    code = run_from_args(load_config(args.params), args)
    if code:
        raise SystemExit(code)


def _cmd_export_dvc(args: argparse.Namespace) -> None:
    from judgebias.workflow.dvc_export import export_dvc_yaml

    load_config(args.params)
    export_dvc_yaml(Path(args.out), Path(args.snakefile))
    print(f"wrote {args.out}")


def _cmd_code_stamp(args: argparse.Namespace) -> None:
    from judgebias.workflow.codestamp import stamps_of, write_stamps

    write_stamps(stamps_of(args.out))


def _cmd_params_stamp(args: argparse.Namespace) -> None:
    from judgebias.workflow.paramstamp import SEPARATOR, write_param_stamps

    write_param_stamps([keys.split(SEPARATOR) for keys in args.sets], Path(args.params),
                       args.out)
    _log_warnings(args.params)  # DVC's front door (issue 39)


def _cmd_dvc_record(args: argparse.Namespace) -> None:
    from judgebias.workflow.dvcsync import record

    print(record(snakefile=Path(args.snakefile)))


def _cmd_snakemake_record(args: argparse.Namespace) -> None:
    from judgebias.workflow.dvcsync import record_snakemake

    _print_recorded(record_snakemake(snakefile=Path(args.snakefile)))


def _cmd_dvc(args: argparse.Namespace) -> None:
    from judgebias.workflow.dvcsync import run_dvc

    dvc_args = args.dvc_args[1:] if args.dvc_args[:1] == ["--"] else args.dvc_args
    rules = run_dvc([*args.leading, *dvc_args], snakefile=Path(args.snakefile))
    if rules is not None:
        _print_recorded(rules)


def _print_recorded(rules: list[str]) -> None:
    print("Snakemake's records are up to date"
          + (f" (brought up to date: {', '.join(rules)})" if rules else "")
          + "; snakemake has nothing to do.")


def build_parser() -> argparse.ArgumentParser:
    """The core commands, then every registered study's steps (judgebias.study)."""
    from judgebias.study import registered

    parser = argparse.ArgumentParser(prog="judgebias", description=__doc__.splitlines()[0])
    parser.add_argument("--params", default=params_path(),
                        help=f"params file (default: ${PARAMS_ENV}, else params.yaml; "
                             "now %(default)s)")
    parser.add_argument("-v", "--verbose", action="store_true")
    parser.add_argument("--log", help="also write the log to this file (rules pass {log})")
    sub = parser.add_subparsers(dest="command", required=True)

    def add(name: str, func, help_: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_)
        p.set_defaults(func=func)
        return p

    p = add("validate", _cmd_validate,
            "validate params.yaml (and every path it names) and exit")
    p.add_argument("--no-data", action="store_true",
                   help="check everything but whether the files it names exist yet "
                   "(datasets not downloaded; validate without it lists each one)")
    p = add("step", _cmd_step, "run a study step (STUDY.STEP) with a rule's named files")
    p.add_argument("step", metavar="STUDY.STEP")
    for flag, dest, what in (("--in", "inputs", "an input"), ("--out", "outputs", "an output"),
                             ("--wildcard", "wildcards", "a wildcard")):
        p.add_argument(flag, dest=dest, nargs="+", action="append", default=[],
                       metavar=("NAME", "VALUE"), help=f"{what}'s name and value(s)")
    p = add("new-study", _cmd_new_study,
            "start a study: copy the template study under NAME and register it")
    p.add_argument("name")
    p = add("report", _cmd_report, "write the self-contained HTML report")
    p.add_argument("--out", required=True)
    p.add_argument("--results", nargs="+", default=[], metavar="STUDY=DIR",
                   help="each active study's results folder")
    p.add_argument("--data", nargs="*", default=[], metavar="STUDY.NAME=PATH",
                   help="the named files outside its results folder a section reads")
    p.add_argument("--card", help="the judge card (results/judges.parquet), shown first")
    p = add("card-build", _cmd_card_build,
            "gather every study's judge-card rows into results/judges.parquet and .json")
    p.add_argument("--table", required=True)
    p.add_argument("--metrics", required=True)
    p.add_argument("--in", dest="inputs", nargs="*", default=[], metavar="STUDY.NAME=PATH",
                   help="each study's named card inputs")
    p = add("card", _cmd_card, "print one judge's card (or compare two runs)")
    p.add_argument("model", nargs="?", help="a panel model (every judge if omitted)")
    p.add_argument("--results", default="results",
                   help="the results folder holding judges.parquet (default: %(default)s)")
    p.add_argument("--json", action="store_true", help="print JSON, not text")
    p.add_argument("--compare", nargs=2, metavar=("RUN_A", "RUN_B"),
                   help="two results folders or git revisions (read through DVC): the "
                   "change of each measure from A to B, with an interval")
    p = add("plan", _cmd_plan, "calls each model still needs (and tokens/cost where priced)")
    p.add_argument("--json", action="store_true",
                   help="print the plan as JSON (model rows, study rows, notes)")
    p.add_argument("--power", action="store_true",
                   help="instead: the minimum detectable effect of each headline measure at "
                   "the configured sizes, from a pilot run's card (judgebias.power)")
    p.add_argument("--pilot", default=".", metavar="DIR",
                   help="--power: the pilot run's folder, with params.yaml and "
                   "results/judges.parquet (default: this project)")
    p.add_argument("--alpha", type=float, default=0.05, help="--power: the test's level")
    p.add_argument("--power-level", type=float, default=0.8, metavar="P",
                   help="--power: the power wanted (default %(default)s)")
    p.add_argument("--target", nargs="*", default=[], metavar="MEASURE=EFFECT",
                   help="--power: the size each target effect needs (in the measure's unit)")
    p = add("probe", _cmd_probe,
            "one cheap call per ability to a panel model; records what its provider did "
            "(log-probs, system prompt, temperature, images), which validate then uses")
    p.add_argument("model", help="a panel model (its key in the params file)")
    p = add("serve-sim", _cmd_serve_sim,
            "serve the simulated panel as an OpenAI/Gemini-compatible API on loopback")
    from judgebias.devtools.serve_sim.args import add_arguments

    add_arguments(p)
    p = add("export-dvc", _cmd_export_dvc, "regenerate dvc.yaml from the Snakemake DAG")
    p.add_argument("--out", default="dvc.yaml")
    p.add_argument("--snakefile", default="Snakefile")
    p = add("code-stamp", _cmd_code_stamp,
            "write the sha256 of each file as JSON (DVC's code stage's stamps)")
    p.add_argument("--out", required=True, action="append", nargs="+",
                   metavar=("STAMP", "FILE"),
                   help="a stamp and the files it hashes; repeated, one per stamp")
    p = add("params-stamp", _cmd_params_stamp,
            "write the values of each set of params keys as JSON (DVC's params stage)")
    p.add_argument("--out", required=True, help="the folder of the stamps")
    p.add_argument("sets", nargs="+", metavar="KEY,KEY...",
                   help="a set of dotted params keys, comma-separated; one stamp each")
    p = add("dvc-record", _cmd_dvc_record,
            "record the outputs Snakemake built in dvc.lock without running (dvc commit)")
    p.add_argument("--snakefile", default="Snakefile")
    p = add("snakemake-record", _cmd_snakemake_record,
            "record the outputs `dvc repro` built in Snakemake's metadata without running "
            "(snakemake --touch, only where dvc status is clean)")
    p.add_argument("--snakefile", default="Snakefile")
    p = add("dvc", _cmd_dvc,
            "any dvc command (`judgebias dvc exp run -S philautia.ddof=1`), then, after one "
            "that puts outputs in the workspace (repro, pull, checkout, exp run, exp apply), "
            "snakemake-record: the DVC front door, leaving snakemake nothing to do")
    p.set_defaults(leading=[])
    p = add("dvc-repro", _cmd_dvc, "`judgebias dvc repro ...`")
    p.set_defaults(leading=["repro"])
    for p in (sub.choices["dvc"], sub.choices["dvc-repro"]):
        p.add_argument("--snakefile", default="Snakefile")
        p.add_argument("dvc_args", nargs=argparse.REMAINDER,
                       help="passed on to dvc, after `--` where they start with a dash "
                       "(`judgebias dvc -- repro -q report`)")
    for study in registered().values():
        if study.cli:
            study.load("cli")(add)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
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
        args.func(args)
    except (ConfigError, ArtifactError) as exc:
        log.error("%s", exc)
        return 2
    except (PermanentError, BudgetExceeded, TooManyFailures) as exc:
        log.error("stopped: %s", exc)
        return 3
    except Exception:
        # A bug, not bad input: the traceback goes to the job's log file too (a rule's
        # `log:` was left empty before, and Snakemake's own output is easily lost).
        log.exception("judgebias %s failed unexpectedly", args.command)
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
