"""What a study plug-in declares, and how the core finds the studies a params file runs.

A study is a package under judgebias.studies, named by one line of the registry
(judgebias.studies.STUDIES), whose ``__init__`` defines ``STUDY = Study(...)``. It owns:

- its params block (``schema``: a JSON-Schema fragment file in the package, validated as
  the top-level key named after the study; a study runs exactly when its block is there),
- its cross-reference and file checks (``validate``: params -> list of error lines),
- what each role needs from its judges (``needs``: params -> list of
  `judgebias.abilities.Need`; checked against every model's abilities before any call),
- what runs but quietly falls back to defaults (``warnings``: params -> list of lines that
  ``judgebias validate`` prints, e.g. a simulated judge without its trait block),
- its Snakemake rules file (``rules``, relative to the project root),
- its rules' steps: the functions of its ``steps`` module (judgebias.steps),
- which of them can compute on a GPU (``gpus``: (params, step name, wildcards) ->
  judgebias.models.gpu.GpuNeed, or None for a step that never does; the step's rule asks
  for ``.gpus`` as its ``gpu`` resource, and the ``judgebias step`` dispatch gives the
  job that many devices of its own before the step runs, judgebias.models.gpu.job_gpus),
- extra commands, if any (``cli``: a function given ``add(name, function, help)``),
- the model calls it will make (``plan``: params -> list of PlannedCalls, keyed or
  estimated, and NotCounted lines, for `judgebias plan`),
- how its powered card measures grow with its params (``power``: params -> {card measure:
  design size}, the units the measure's ``n`` is proportional to: images, pairs, items;
  `judgebias plan --power`, judgebias.power),
- its report section (``report``: (params, results folder, named data files) -> report
  Section; the files it reads are its ``tables.report_inputs``, a ReportInputs),
- its rows of the judge card (``card``: (params, named files) -> card rows, the columns of
  judgebias.card.schema.CARD_ROWS; ``card_inputs``: params -> the named files it reads,
  which the card rule declares), conventionally its ``card`` module,
- the kinds of prompt the ``sim`` backend must answer for it, if no other study's tasks
  cover them (``sim``: a list of judgebias.models.sim.SimTask); their traits are read from
  a simulated panel model's ``sim.<study name>`` block (``sim_traits``; philautia's tasks
  read the core traits instead, and it has no block),
- the pictures ``serve-sim`` draws for the OpenAI images API, if the study generates
  images over HTTP (``sim_images``: (prompt, width in px, seed) -> PNG bytes).

The callables are named as ``"module:function"`` strings and imported only when used, so
declaring a study costs nothing, and its steps import only what they use.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any


@dataclass(frozen=True)
class ReportInputs:
    """The files a study's report section reads (its ``tables.report_inputs``), all of
    which the report rule declares: those in its results folder, and named files outside
    it (a data summary, an instruction pool) that `judgebias report --data
    STUDY.NAME=PATH` hands the section by name, so no section reads a path constant."""

    results: list[str]
    data: dict[str, str] = field(default_factory=dict)

    def files(self) -> list[str]:
        return [*self.results, *self.data.values()]


@dataclass(frozen=True)
class Study:
    """A study plug-in's declaration (see the module docstring)."""

    name: str
    title: str
    package: str
    rules: str
    cli: str | None = None
    gpus: str | None = None
    schema: str = "schema.yaml"
    validate: str | None = None
    warnings: str | None = None
    plan: str | None = None
    power: str | None = None
    report: str | None = None
    card: str | None = None
    card_inputs: str | None = None
    sim: str | None = None
    sim_traits: bool = True
    sim_images: str | None = None
    requires: tuple[str, ...] = field(default_factory=tuple)
    needs: str | None = None  # "module:function": params -> [judgebias.abilities.Need]

    def load(self, attribute: str) -> Any:
        """What a ``"module:name"`` attribute names (None if not declared): a function,
        or for ``sim`` the study's list of sim tasks."""
        target = getattr(self, attribute)
        if target is None:
            return None
        module, _, name = target.partition(":")
        return getattr(importlib.import_module(module), name)

    def schema_fragment(self) -> dict[str, Any]:
        text = resources.files(self.package).joinpath(self.schema).read_text()
        from judgebias.config import load_yaml

        return load_yaml(text)


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
    it builds on (Pomms uses philautia's), else the whole panel."""
    if params[name].get("models"):
        return list(params[name]["models"])
    for parent in registered()[name].requires:
        return study_models(params, parent)
    return list(params["panel"])


def simulated_models(params: Mapping[str, Any], models: list[str]) -> set[str]:
    """The models among `models` that are simulated (reports flag them)."""
    return {k for k in models if params["panel"][k]["backend"] == "sim"}
