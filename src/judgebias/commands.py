"""The `judgebias` commands, each declared once, in one table (docs/design.md principle 3).

Why a table: three readers need to know the commands, and none may reach into another.
The CLI builds its parser from it (judgebias.cli); the workflow derives the code a rule's
command runs from the function its row names, read from source (judgebias.workflow.
codedeps); DVC's bookkeeping reads a stage's command with the same parser (judgebias.
workflow.dvcsync). A row names the function that implements its command as a
``"module:function"`` string, imported only when the command runs, so reading the table
imports nothing (argparse included) and the workflow never imports the CLI.

Two kinds of command. The user's, which `judgebias --help` lists. Plumbing, which only the
pipeline runs (its rules and DVC stages: `judgebias --log LOG plumbing step STUDY.STEP
...`), under the one group `judgebias plumbing`, which `judgebias plumbing --help` lists: a
user reading the help should not have to tell a rule's entry point from a command meant
for them. A study may add commands of its own (judgebias.study, ``cli``); they are the
user's.

Adding a command is one row of COMMANDS (its name, help, options, and whether it is
plumbing) and the function it names, which receives the parsed arguments.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse

PROG = "judgebias"
PLUMBING = "plumbing"  # the group of the commands only the pipeline runs
CLI = "judgebias.cli"  # where the commands' functions live: thin, each calls the library


@dataclass(frozen=True)
class Arg:
    """One option or positional argument of a command: `add_argument`'s arguments."""

    flags: tuple[str, ...]
    options: Mapping[str, Any] = field(default_factory=dict)


def arg(*flags: str, **options: Any) -> Arg:
    """An `Arg` written as the `add_argument` call it stands for."""
    return Arg(flags, options)


@dataclass(frozen=True)
class Command:
    """One command: its name, the ``"module:function"`` that runs it (given the parsed
    arguments), a one-line help, its arguments (`Arg`s, or the ``"module:function"`` that
    adds them to its parser, for a module that owns its options), and whether it is
    plumbing."""

    name: str
    run: str
    help: str
    args: tuple[Arg, ...] | str = ()
    plumbing: bool = False

    def load(self) -> Callable[[argparse.Namespace], None]:
        """The function that runs the command, imported now."""
        return _load(self.run)


def _load(target: str) -> Any:
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


_DVC_ARGS = (arg("--snakefile", default="Snakefile"),
             arg("dvc_args", nargs="...",  # argparse.REMAINDER
                 help="passed on to dvc, after `--` where they start with a dash "
                      "(`judgebias dvc -- repro -q report`)"))

COMMANDS: tuple[Command, ...] = (
    Command("validate", f"{CLI}:validate",
            "validate params.yaml (and every path it names) and exit",
            (arg("--no-data", action="store_true",
                 help="check everything but whether the files it names exist yet "
                      "(datasets not downloaded; validate without it lists each one)"),)),
    Command("init", f"{CLI}:init",
            "make a project folder for your own audit, running the installed workflow",
            (arg("directory", help="the new project's folder (absent or empty)"),
             arg("--config", metavar="NAME",
                 help="start from an example panel of configs/ (birch, mmb, ...) "
                      "instead of the default params.yaml"),
             arg("--no-git", action="store_true", help="do not initialise git"),
             arg("--no-dvc", action="store_true",
                 help="do not initialise DVC (nor derive dvc.yaml)"))),
    Command("new-study", f"{CLI}:new_study",
            "start a study: copy the template study under NAME and register it",
            (arg("name"),)),
    Command("report", f"{CLI}:report", "write the self-contained HTML report",
            (arg("--out", required=True),
             arg("--results", nargs="+", default=[], metavar="STUDY=DIR",
                 help="each active study's results folder"),
             arg("--data", nargs="*", default=[], metavar="STUDY.NAME=PATH",
                 help="the named files outside its results folder a section reads"),
             arg("--card", help="the judge card (results/judges.parquet), shown first"))),
    Command("card", f"{CLI}:card", "print one judge's card (or compare two runs)",
            (arg("model", nargs="?", help="a panel model (every judge if omitted)"),
             arg("--results", default="results",
                 help="the results folder holding judges.parquet (default: %(default)s)"),
             arg("--json", action="store_true", help="print JSON, not text"),
             arg("--compare", nargs=2, metavar=("RUN_A", "RUN_B"),
                 help="two results folders or git revisions (read through DVC): the "
                      "change of each measure from A to B, with an interval"))),
    Command("plan", f"{CLI}:plan", "calls each model still needs (and tokens/cost where priced)",
            (arg("--json", action="store_true",
                 help="print the plan as JSON (model rows, study rows, notes)"),
             arg("--power", action="store_true",
                 help="instead: the minimum detectable effect of each headline measure at "
                      "the configured sizes, from a pilot run's card (judgebias.stats.power)"),
             arg("--pilot", default=".", metavar="DIR",
                 help="--power: the pilot run's folder, with params.yaml and "
                      "results/judges.parquet (default: this project)"),
             arg("--alpha", type=float, default=0.05, help="--power: the test's level"),
             arg("--power-level", type=float, default=0.8, metavar="P",
                 help="--power: the power wanted (default %(default)s)"),
             arg("--target", nargs="*", default=[], metavar="MEASURE=EFFECT",
                 help="--power: the size each target effect needs (in the measure's "
                      "unit)"),
             arg("--label-width", type=float, metavar="W",
                 help="--power: the leaderboard's human labels for PPI++ intervals of "
                      "+-W (half-width, in the labels' unit; default: what detects the "
                      "mean gap between neighbouring systems under the baseline at "
                      "--alpha and --power-level)"))),
    Command("requests", f"{CLI}:requests",
            "write the requests still unanswered, to answer them elsewhere (then `judgebias "
            "answers import`)",
            (arg("action", choices=["export"]),
             arg("folder", help="where to write <model>.jsonl per model and manifest.json"),
             arg("--format", dest="fmt", choices=["openai", "plain"], default="openai",
                 help="openai: the Batch API's input lines; plain: prompt parts, images "
                      "and sampling (default: %(default)s)"),
             arg("--images", choices=["inline", "files"], default="inline",
                 help="images as data URLs in each line, or as files under FOLDER/images "
                      "(default: %(default)s)"),
             arg("--model", action="append", default=[], metavar="MODEL",
                 help="a panel model whose requests to write (repeatable; default: every "
                      "model with backend external)"),
             arg("--study", action="append", default=[], metavar="STUDY",
                 help="only this study's requests (repeatable; default: every active one)"),
             arg("--max-requests", type=int, default=50_000, metavar="N",
                 help="at most N requests a file (default: %(default)s, OpenAI's limit)"),
             arg("--max-mb", type=float, default=190.0, metavar="MB",
                 help="at most MB megabytes a file (default: %(default)s; OpenAI's limit "
                      "is 200)"))),
    Command("answers", f"{CLI}:answers",
            "journal answers written elsewhere under their requests' keys (OpenAI batch "
            "output or plain lines)",
            (arg("action", choices=["import"]),
             arg("files", nargs="+", help="JSONL files of answers"))),
    Command("recorded", f"{CLI}:recorded",
            "convert another tool's judge log (lmms-eval, VLMEvalKit, inspect_ai) into a "
            "recorded-judgements table",
            (arg("action", choices=["convert"]),
             arg("tool", help="lmms-eval, vlmevalkit or inspect_ai"),
             arg("source", help="the tool's log or prediction file"),
             arg("out", help="the table to write (.parquet, .csv or .jsonl)"),
             arg("--option", action="append", default=[], metavar="KEY=VALUE",
                 help="an adapter option (repeatable), e.g. judge=gpt-4o"))),
    Command("probe", f"{CLI}:probe",
            "one cheap call per ability to a panel model; records what its provider did "
            "(log-probs, system prompt, temperature, images), which validate then uses",
            (arg("model", help="a panel model (its key in the params file)"),)),
    Command("serve-sim", f"{CLI}:serve_sim",
            "serve the simulated panel as an OpenAI/Gemini-compatible API on loopback",
            "judgebias.devtools.serve_sim.args:add_arguments"),
    Command("export-dvc", f"{CLI}:export_dvc", "regenerate dvc.yaml from the Snakemake DAG",
            (arg("--out", default="dvc.yaml"), arg("--snakefile", default="Snakefile"))),
    Command("dvc", f"{CLI}:dvc",
            "any dvc command (`judgebias dvc exp run -S philautia.ddof=1`), then, after one "
            "that puts outputs in the workspace (repro, pull, checkout, exp run, exp "
            "apply), snakemake-record: the DVC front door, leaving snakemake nothing to do",
            _DVC_ARGS),
    Command("dvc-repro", f"{CLI}:dvc_repro", "`judgebias dvc repro ...`", _DVC_ARGS),
    # The records of the two front doors are the user's: the step after a run of the
    # other door, before `git commit dvc.lock` / `dvc push` (docs/running.md).
    Command("dvc-record", f"{CLI}:dvc_record",
            "record the outputs Snakemake built in dvc.lock without running (dvc commit)",
            (arg("--snakefile", default="Snakefile"),)),
    Command("snakemake-record", f"{CLI}:snakemake_record",
            "record the outputs `dvc repro` built in Snakemake's metadata without running "
            "(snakemake --touch, only where dvc status is clean)",
            (arg("--snakefile", default="Snakefile"),)),
    Command("step", f"{CLI}:step", "run a study step (STUDY.STEP) with a rule's named files",
            (arg("step", metavar="STUDY.STEP"),
             *(arg(flag, dest=dest, nargs="+", action="append", default=[],
                   metavar=("NAME", "VALUE"), help=f"{what}'s name and value(s)")
               for flag, dest, what in (("--in", "inputs", "an input"),
                                        ("--out", "outputs", "an output"),
                                        ("--wildcard", "wildcards", "a wildcard")))),
            plumbing=True),
    Command("card-build", f"{CLI}:card_build",
            "gather every study's judge-card rows into results/judges.parquet and the "
            "headline metrics (results/card/)",
            (arg("--table", required=True), arg("--metrics", required=True),
             arg("--in", dest="inputs", nargs="*", default=[], metavar="STUDY.NAME=PATH",
                 help="each study's named card inputs")),
            plumbing=True),
    Command("code-stamp", f"{CLI}:code_stamp",
            "write the sha256 of each file as JSON (DVC's code stage's stamps)",
            (arg("--out", required=True, action="append", nargs="+",
                 metavar=("STAMP", "FILE"),
                 help="a stamp and the files it hashes; repeated, one per stamp"),),
            plumbing=True),
    Command("params-stamp", f"{CLI}:params_stamp",
            "write the values of each set of params keys as JSON (DVC's params stage)",
            (arg("--out", required=True, help="the folder of the stamps"),
             arg("sets", nargs="+", metavar="KEY,KEY...",
                 help="a set of dotted params keys, comma-separated; one stamp each")),
            plumbing=True),
)


def command(name: str) -> Command:
    """The row of command `name` (KeyError for a name the table lacks)."""
    for row in COMMANDS:
        if row.name == name:
            return row
    raise KeyError(f"no judgebias command {name!r}")


def invocation(name: str) -> str:
    """How a rule or stage spells command `name`: ``judgebias [plumbing] NAME``."""
    return " ".join([PROG, *[PLUMBING] * command(name).plumbing, name])


def build_parser() -> argparse.ArgumentParser:
    """The `judgebias` parser: the global options, the user's commands, every registered
    study's own commands (judgebias.study, ``cli``), then the `plumbing` group. Each
    command's parser carries its row as the default ``entry``."""
    import argparse

    from judgebias.config import PARAMS_ENV, params_path
    from judgebias.study import registered

    parser = argparse.ArgumentParser(
        prog=PROG, description="One command per task of the judge-bias pipeline "
        "(docs/design.md); the commands the pipeline itself runs are under "
        f"`{PROG} {PLUMBING}`.")
    parser.add_argument("--params", default=params_path(),
                        help=f"params file (default: ${PARAMS_ENV}, else params.yaml; "
                             "now %(default)s)")
    parser.add_argument("-v", "--verbose", action="store_true")
    parser.add_argument("--log", help="also write the log to this file (rules pass {log})")
    user = parser.add_subparsers(dest="command", required=True)
    for row in COMMANDS:
        if not row.plumbing:
            _add(user, row)

    def add(name: str, function: Callable[[argparse.Namespace], None],
            help_: str) -> argparse.ArgumentParser:
        """A study's command (its ``cli`` is given this), as a row of its own."""
        return _add(user, Command(name, f"{function.__module__}:{function.__qualname__}",
                                  help_))

    for study in registered().values():
        if study.cli:
            study.load("cli")(add)
    plumbing = user.add_parser(
        PLUMBING, help="the commands the pipeline's rules and DVC stages run "
        f"(`{PROG} {PLUMBING} --help`)",
        description="Commands the pipeline runs, not typed by hand: each rule's step, "
        "the judge card, and the stamps of DVC's code and params stages.")
    inner = plumbing.add_subparsers(dest="command", required=True)
    for row in COMMANDS:
        if row.plumbing:
            _add(inner, row)
    return parser


def _add(subparsers: Any, row: Command) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(row.name, help=row.help, description=row.help)
    parser.set_defaults(entry=row)
    if isinstance(row.args, str):
        _load(row.args)(parser)
    else:
        for argument in row.args:
            parser.add_argument(*argument.flags, **argument.options)
    return parser


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """`argv` (a `judgebias` command line less the program's name) as the CLI reads it;
    the command's row is its ``entry``."""
    return build_parser().parse_args(argv)
