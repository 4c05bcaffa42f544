"""One command runs every study step: the rule names its files once, the step receives them.

A Snakemake rule is the single place a step's inputs, outputs and wildcards are declared,
by name. ``judgebias step STUDY.STEP`` receives them as ``--in NAME PATH...``,
``--out NAME PATH...`` and ``--wildcard NAME VALUE`` (workflow/rules/common.smk writes
them from the rule, so no rule spells a flag) and calls the function ``STEP`` of the
study's ``steps`` module with one keyword argument per name::

    rule pomms:                                    # workflow/rules/pomms.smk
        input: judgements=..., scores=...
        output: metrics=...
        shell: step("pomms.fit")

    def fit(params: Mapping[str, Any], *, judgements: list[Path], scores: Path,
            metrics: Path) -> None: ...           # judgebias/studies/pomms/steps.py

A parameter's annotation says how many paths it takes: ``Path`` exactly one,
``list[Path]`` any number (none when the rule's expansion is empty); ``str`` takes a
wildcard's value. A parameter annotated with a class that has a ``from_params``
constructor receives what that constructor resolves from the validated params: a study's
typed view of its own block (checked once), or the run context a model job calls its
judges with (judgebias.models.context.RunContext). A parameter named ``params`` and
annotated otherwise receives the validated params mapping.
A name the rule gives that the step does not take, or one the step needs that the rule
does not give, is an error before the step runs: the two can never silently disagree.

The study is found through the registry by name (judgebias.study), so the core imports
no study; the step's code dependencies are its function's imports
(judgebias.workflow.codedeps.step_target_files).

A step that can compute on a GPU (the study's ``gpus`` declaration says which, and how
many devices its rule asks for) runs inside judgebias.models.gpu.job_gpus: the job holds
devices of its own, and ``CUDA_VISIBLE_DEVICES`` names exactly them before the step
imports torch (issue 39: no two jobs share a device behind Snakemake's back).

With ``$JUDGEBIAS_RECORD_PARAMS`` set to a folder, the step receives its params through a
recording mapping (judgebias.workflow.paramsread) and its job writes there which keys it
read, so that a check can hold them against the keys its rule declares: a key read but not
declared would change the step's answer without either front door rerunning it. The
typed views it is handed or builds (its module's) and the panel models the judging core
resolves (PanelModel) read, field by field, what the step uses of them. Which GPUs a job
holds is read from the plain params: it is the job's resources, like the rule's ``gpu``
resource, not its answer.
"""

from __future__ import annotations

import importlib
import inspect
import os
import typing
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judgebias.workflow.paramsread import RECORD_ENV

if TYPE_CHECKING:
    from judgebias.models.gpu import GpuNeed

STEPS_MODULE = "steps"  # every study's steps live in <study package>.steps
FLAGS = {"inputs": "--in", "outputs": "--out", "wildcards": "--wildcard"}
_NO_SHELL_QUOTING = set(" '\"\\$`;&|<>()*?[]{}#~\t\n")


class StepError(ValueError):
    """A step and its rule disagree (a missing, unknown or ill-counted name)."""


def step_function(target: str) -> Callable[..., Any]:
    """The function ``STUDY.STEP`` names: ``STEP`` in the registered study's steps module."""
    from judgebias.study import registered

    study_name, _, step = target.partition(".")
    studies = registered()
    if study_name not in studies or not step:
        raise StepError(f"step {target!r}: expected STUDY.STEP with STUDY one of "
                        f"{', '.join(studies)}")
    module = importlib.import_module(f"{studies[study_name].package}.{STEPS_MODULE}")
    function = getattr(module, step, None)
    if not callable(function):
        raise StepError(f"step {target!r}: {module.__name__} has no function {step!r}")
    return function


def command_arguments(inputs: Mapping[str, Any], outputs: Mapping[str, Any],
                      wildcards: Mapping[str, str]) -> str:
    """The ``--in`` / ``--out`` / ``--wildcard`` arguments for a rule's named files.

    A value is one path or a list of paths (Snakemake's ``expand``); an empty list is
    left out (the step's ``list[Path]`` parameter then receives none). Paths are never
    quoted (dvc.yaml commands are refused with quotes), so one that would need quoting
    is an error here rather than a broken command later.
    """
    parts: list[str] = []
    for flag, named in ((FLAGS["inputs"], inputs), (FLAGS["outputs"], outputs),
                        (FLAGS["wildcards"], wildcards)):
        for name, value in named.items():
            values = [value] if isinstance(value, str | Path) else list(value)
            if not values:
                continue
            for text in map(str, values):
                if not text or _NO_SHELL_QUOTING & set(text):
                    raise StepError(f"{flag} {name}: {text!r} is empty or needs shell "
                                    "quoting; use a path of plain characters")
            parts.append(" ".join([flag, name, *map(str, values)]))
    return " ".join(parts)


def _annotation_kind(hint: Any) -> str:
    """'path', 'paths' or 'text' for a step parameter's annotation (optional ones by the
    type they hold: the parameter's default applies when the rule gives none)."""
    arguments = typing.get_args(hint)
    if type(None) in arguments and len(arguments) == 2:
        hint = next(a for a in arguments if a is not type(None))
    if hint is Path:
        return "path"
    if hint is str:
        return "text"
    origin = typing.get_origin(hint)
    if origin in (list, Sequence, typing.Sequence) and typing.get_args(hint) == (Path,):
        return "paths"
    raise StepError(f"annotation {hint!r} is not Path, list[Path] or str")


def bind(function: Callable[..., Any], files: Mapping[str, Sequence[str]],
         wildcards: Mapping[str, str], params: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword arguments `function` is called with, from the rule's named files and
    wildcards. A wildcard the step does not take is left out (it only shaped a path); a
    file it does not take is an error, as is a name it needs and is not given."""
    where = f"{function.__module__}.{function.__name__}"
    hints = typing.get_type_hints(function)
    signature = inspect.signature(function)
    unknown = sorted(set(files) - set(signature.parameters))
    if unknown:
        raise StepError(f"{where} takes no argument {', '.join(map(repr, unknown))} "
                        f"(it takes {', '.join(signature.parameters)})")
    given = {**{k: [v] for k, v in wildcards.items()}, **files}
    arguments: dict[str, Any] = {}
    for name, parameter in signature.parameters.items():
        from_params = getattr(hints.get(name), "from_params", None)
        if callable(from_params):  # a typed view, the run context
            arguments[name] = from_params(params)
            continue
        if name == "params":
            arguments[name] = params
            continue
        kind = _annotation_kind(hints.get(name))
        values = list(given.get(name, ()))
        if kind == "paths":
            arguments[name] = [Path(v) for v in values]
        elif len(values) == 1:
            arguments[name] = Path(values[0]) if kind == "path" else values[0]
        elif values or parameter.default is inspect.Parameter.empty:
            raise StepError(f"{where} takes one value for {name!r}; the rule gives "
                            f"{len(values)}")
    return arguments


def run_step(target: str, params: Mapping[str, Any], inputs: Sequence[Sequence[str]],
             outputs: Sequence[Sequence[str]], wildcards: Sequence[Sequence[str]]) -> None:
    """Call step `target` with the named values of ``--in``, ``--out`` and ``--wildcard``
    (each a list of ``[NAME, VALUE, ...]`` groups, as argparse collects them); with
    ``$JUDGEBIAS_RECORD_PARAMS`` set, the job writes there which params keys it read."""
    files: dict[str, list[str]] = {}
    for name, *values in [*inputs, *outputs]:
        if name in files:
            raise StepError(f"{target}: {name!r} is given twice (--in/--out)")
        files[name] = values
    named_wildcards = {}
    for name, *values in wildcards:
        if len(values) != 1:
            raise StepError(f"{target}: --wildcard {name} takes one value, not {values}")
        named_wildcards[name] = values[0]
    function = step_function(target)
    record = os.environ.get(RECORD_ENV)
    if not record:
        _call(target, function, bind(function, files, named_wildcards, params), params,
              named_wildcards)
        return
    from judgebias.models.panel import PanelModel
    from judgebias.workflow.paramsread import (
        Reads,
        RecordingParams,
        recording_views,
        views_of,
        write_record,
    )

    reads = Reads()
    with recording_views({*views_of(function.__globals__), PanelModel}):
        arguments = bind(function, files, named_wildcards, RecordingParams(params, reads))
        _call(target, function, arguments, params, named_wildcards)
    write_record(Path(record), target, [path for _, *paths in outputs for path in paths],
                 named_wildcards, reads)


def _call(target: str, function: Callable[..., Any], arguments: Mapping[str, Any],
          params: Mapping[str, Any], wildcards: Mapping[str, str]) -> None:
    """Run the step, inside the GPUs it takes (step_gpus) where it takes any."""
    need = step_gpus(target, params, wildcards)
    if need is None:
        function(**arguments)
        return
    from judgebias.models.gpu import job_gpus

    with job_gpus(need, params["journal_dir"]):
        function(**arguments)


def step_gpus(target: str, params: Mapping[str, Any],
              wildcards: Mapping[str, str]) -> GpuNeed | None:
    """The GPUs step ``STUDY.STEP`` takes with these wildcards (the study's ``gpus``
    declaration, the one its rule's ``gpu`` resource reads); None for a step that never
    computes on a GPU (a model job's vllm engine takes its own, judgebias.judging.tasks)."""
    from judgebias.study import registered

    study_name, _, step = target.partition(".")
    declared = registered()[study_name].load("gpus")
    return None if declared is None else declared(params, step, wildcards)
