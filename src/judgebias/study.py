"""What a study plug-in declares, and how the core finds the studies a params file runs.

A study is a package under judgebias.studies, named by one line of the registry
(judgebias.studies.STUDIES), whose ``__init__`` defines ``STUDY = Study(...)``. Besides its
name, title, package, rules file (``rules``, relative to the project root) and params
block (``view``: the typed view its params module declares the block with,
judgebias.paramsblock, validated as the top-level key named after the study; a study runs
exactly when its block is there), it fills roles,
each a hook at a conventional place in its package (``ROLES``, below). The standard roles:

- ``validate`` (params:validate): its cross-reference and file checks, params -> list of
  error lines,
- ``needs`` (params:needs): what each role needs from its judges, params -> list of
  `judgebias.abilities.Need`, checked against every model's abilities before any call,
- ``plan`` (plan:planned_calls): the model calls it will make, params -> list of
  PlannedCalls, keyed or estimated, and NotCounted lines, for `judgebias plan`,
- ``power`` (plan:power_sizes): how its powered card measures grow with its params,
  params -> {card measure: design size}, the units the measure's ``n`` is proportional
  to: images, pairs, items (`judgebias plan --power`, judgebias.stats.power),
- ``report`` (report:report_section): its report section, (params, results folder, named
  data files) -> report Section,
- ``report_inputs`` (tables:report_inputs): the files that section reads, params ->
  ReportInputs, which the report rule declares (workflow/rules/report.smk),
- ``card`` (card:rows): its rows of the judge card, (params, named files) -> card rows,
  the columns of judgebias.card.schema.CARD_ROWS,
- ``card_inputs`` (card:inputs): the named files those rows read, params -> {name: path},
  which the card rule declares (workflow/rules/card.smk),
- ``sim`` (sim:TASKS): the kinds of prompt the ``sim`` backend must answer for it, a list
  of judgebias.models.sim.SimTask; their traits are read from a simulated panel model's
  ``sim.<study name>`` block (``sim_traits``; philautia's tasks read the core traits
  instead, and it has no block).

The optional roles, which few studies fill:

- ``warnings`` (params:warnings): what runs but quietly falls back to defaults, params ->
  list of lines that ``judgebias validate`` prints (a simulated judge without its trait
  block),
- ``gpus`` (tables:gpu_need): which steps can compute on a GPU, (params, step name,
  wildcards) -> judgebias.models.gpu.GpuNeed, or None for a step that never does; the
  step's rule asks for ``.gpus`` as its ``gpu`` resource, and the ``judgebias plumbing
  step`` dispatch gives the job that many devices of its own before the step runs
  (judgebias.models.gpu.job_gpus),
- ``power_section`` (plan:power_section): its part of `judgebias plan --power` beyond its
  card measures, (params, the pilot's params, the pilot's folder,
  judgebias.stats.power.PowerSettings) -> judgebias.plan.PowerSection or None, printed
  after the card's table (the leaderboard: the human labels an interval width needs),
- ``cli`` (cli:register): extra commands, a function given ``add(name, function, help)``,
- ``sim_images`` (imagegen:served_image): the pictures ``serve-sim`` draws for the OpenAI
  images API, (prompt, width in px, seed) -> PNG bytes.

Its rules' steps are the functions of its ``steps`` module (judgebias.workflow.step_dispatch),
found by name, not declared. The fitted estimators it writes as artifacts are declared in
``saved`` ("module:Class" in its package): `saved_classes` gathers them, the allowlist
without which `judgebias.load` reads no saved file (judgebias.io.saved).

A declaration states only where a study departs from the table: the standard roles it
``lacks``, the optional ones it ``has``, and the ``targets`` of roles it fills elsewhere
in its package. Which roles a study fills is declared, not found by importing its modules:
declaring a study imports nothing, the rules files test ``if study.card`` and name
``study.report``'s module as a code dependency while every ``snakemake`` call parses
them (which must not import a report's or a statistics library's code), and a misspelt
hook is an error when it is loaded rather than a role silently missing. Each role is an
attribute holding ``"module:name"`` (the module's full dotted name) or None, and ``load``
imports it only when it is used, so a study's steps import only what they use.
tests/core/test_structure.py checks every declaration against its package: each declared
hook loads, and no undeclared one is there.

A report section's results live in the study's results folder, ``results/<study name>``
(``Study.results``, which the report rule hands the section); its ``report_inputs`` names
those files and, by name, any outside it (a data summary).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

# role -> its conventional place in the study's package, "module:name" (module docstring)
STANDARD_ROLES = {
    "validate": "params:validate",
    "needs": "params:needs",
    "plan": "plan:planned_calls",
    "power": "plan:power_sizes",
    "report": "report:report_section",
    "report_inputs": "tables:report_inputs",
    "card": "card:rows",
    "card_inputs": "card:inputs",
    "sim": "sim:TASKS",
}
OPTIONAL_ROLES = {
    "warnings": "params:warnings",
    "gpus": "tables:gpu_need",
    "cli": "cli:register",
    "power_section": "plan:power_section",
    "sim_images": "imagegen:served_image",
}
ROLES = {**STANDARD_ROLES, **OPTIONAL_ROLES}
# A rule declares the files its hook reads: a study fills both roles of a pair or neither.
PAIRED_ROLES = (("report", "report_inputs"), ("card", "card_inputs"))


@dataclass(frozen=True)
class ReportInputs:
    """The files a study's report section reads (its ``report_inputs`` hook), all of
    which the report rule declares: those in its results folder, and named files outside
    it (a data summary, an instruction pool) that `judgebias report --data
    STUDY.NAME=PATH` hands the section by name, so no section reads a path constant."""

    results: list[str]
    data: dict[str, str] = field(default_factory=dict)

    def files(self) -> list[str]:
        return [*self.results, *self.data.values()]


@dataclass(frozen=True)
class Study:
    """A study plug-in's declaration (see the module docstring): its departures from the
    role table (``lacks``, ``has``, ``targets``: role -> "module:name" in its package),
    from which each role's attribute is resolved."""

    name: str
    title: str
    package: str
    rules: str
    view: str  # its typed view in <package>.params, the declaration of its params block
    lacks: tuple[str, ...] = ()
    has: tuple[str, ...] = ()
    targets: Mapping[str, str] = field(default_factory=dict, hash=False)
    sim_traits: bool = True
    requires: tuple[str, ...] = ()
    # Its judges are named by its input tables, not by the panel (the recorded study: no
    # panel model is its; the card takes its rows' judges as the tables name them).
    judges_in_data: bool = False
    # The fitted estimators it saves (judgebias.io.saved), "module:Class" in its package:
    # the allowlist of classes `judgebias.load` builds from a file (`saved_classes`).
    saved: tuple[str, ...] = ()
    # Each role's hook, "module:name" with the module's full name, or None where the study
    # does not fill the role: resolved by __post_init__, never given.
    validate: str | None = field(init=False, default=None)
    needs: str | None = field(init=False, default=None)
    plan: str | None = field(init=False, default=None)
    power: str | None = field(init=False, default=None)
    report: str | None = field(init=False, default=None)
    report_inputs: str | None = field(init=False, default=None)
    card: str | None = field(init=False, default=None)
    card_inputs: str | None = field(init=False, default=None)
    sim: str | None = field(init=False, default=None)
    warnings: str | None = field(init=False, default=None)
    gpus: str | None = field(init=False, default=None)
    cli: str | None = field(init=False, default=None)
    power_section: str | None = field(init=False, default=None)
    sim_images: str | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        problems = [f"{r!r} is not a role" for r in
                    sorted({*self.lacks, *self.has, *self.targets} - ROLES.keys())]
        problems += [f"{r!r} is a standard role: it needs no `has`" for r in self.has
                     if r in STANDARD_ROLES]
        problems += [f"{r!r} is an optional role: it needs no `lacks`" for r in self.lacks
                     if r in OPTIONAL_ROLES]
        problems += [f"{r!r} both lacked and given a target" for r in self.lacks
                     if r in self.targets]
        filled = ({r for r in STANDARD_ROLES if r not in self.lacks} | set(self.has)
                  | set(self.targets))
        problems += [f"{a!r} and {b!r} go together" for a, b in PAIRED_ROLES
                     if (a in filled) != (b in filled)]
        problems += [f"saved {c!r} is not 'module:Class'" for c in self.saved
                     if not all(c.partition(":")[::2]) or c.count(":") != 1]
        if problems:
            raise ValueError(f"study {self.name!r}: " + "; ".join(problems))
        for role in filled:
            object.__setattr__(self, role,
                               f"{self.package}.{self.targets.get(role, ROLES[role])}")

    @property
    def results(self) -> str:
        """The folder of its results, which its report section reads."""
        return f"results/{self.name}"

    def load(self, attribute: str) -> Any:
        """What a role's ``"module:name"`` names (None where the study does not fill the
        role): a function, or for ``sim`` the study's list of sim tasks."""
        target = getattr(self, attribute)
        if target is None:
            return None
        module, _, name = target.partition(":")
        return getattr(importlib.import_module(module), name)

    def view_class(self) -> type:
        """Its typed view, ``<package>.params:<view>``, the declaration of its block."""
        return getattr(importlib.import_module(f"{self.package}.params"), self.view)

    def schema_fragment(self) -> dict[str, Any]:
        """Its block's JSON Schema, from its view (judgebias.paramsblock.block_schema)."""
        from judgebias.paramsblock import block_schema

        return block_schema(self.view_class())


@cache
def registered() -> dict[str, Study]:
    """Every registered study, in registry order."""
    from judgebias.studies import STUDIES

    studies = {}
    for name, package in STUDIES.items():
        study = importlib.import_module(package).STUDY
        if study.name != name or study.package != package:
            raise RuntimeError(f"judgebias.studies.STUDIES[{name!r}] names {package}, whose "
                               f"STUDY is {study.name!r} in {study.package}")
        studies[name] = study
    return studies


def saved_classes() -> list[str]:
    """Every estimator class a registered study saves, "module:Class" with the module's
    full name: the only classes a saved file may name (judgebias.io.saved.load, declared
    rather than found, so that reading a file imports no module it chooses)."""
    return [f"{study.package}.{target}" for study in registered().values()
            for target in study.saved]


def active(params: Mapping[str, Any]) -> list[Study]:
    """The registered studies that `params` runs (those with a params block)."""
    return [s for name, s in registered().items() if params.get(name) is not None]


def gathered(params: Mapping[str, Any], attribute: str) -> list[Any]:
    """What every active study's ``attribute`` hook (a function of the params returning
    a list: ``warnings``, ``needs``) returns, concatenated in registry order."""
    out: list[Any] = []
    for study in active(params):
        hook = study.load(attribute)
        if hook is not None:
            out += hook(params)
    return out


def study_models(params: Mapping[str, Any], name: str) -> list[str]:
    """The panel models a study uses: its own `models:` subset, else those of the study
    it builds on (Pomms uses philautia's), else the whole panel; none for a study whose
    judges its input tables name (``Study.judges_in_data``)."""
    if registered()[name].judges_in_data:
        return []
    if params[name].get("models"):
        return list(params[name]["models"])
    for parent in registered()[name].requires:
        return study_models(params, parent)
    return list(params["panel"])


def simulated_models(params: Mapping[str, Any], models: list[str]) -> set[str]:
    """The models among `models` that are simulated (reports flag them)."""
    return {k for k in models if params["panel"][k]["backend"] == "sim"}


def answer_sources(params: Mapping[str, Any], models: list[str]) -> dict[str, str]:
    """Where each of `models`' answers come from, as the card and the report say it:
    ``simulated`` (backend sim), ``imported`` (backend external: answered outside
    judgebias, brought in by `judgebias answers import`) or ``called`` (judgebias called
    the model through its backend)."""
    named = {"sim": "simulated", "external": "imported"}
    return {k: named.get(params["panel"][k]["backend"], "called") for k in models}
