"""What a model job reads of params.yaml, typed: the run context.

A model job (a study's ``jobs`` function, through judgebias.judging.tasks) needs a few
things of the run besides its study's own keys: where the journal lies, the global seed,
the panel models it calls (typed, :class:`~judgebias.models.panel.PanelModel`), the
families a simulated model's captions are recognised by, how many failed calls a job may
accept, and each API backend's client settings. :class:`RunContext` gives exactly those,
typed, so no job indexes the params mapping, and a backend's builder
(judgebias.models.backends) receives the context, not the file.

Each value is resolved from the validated params when it is first asked for, and only
then: a job reads the keys of the models it calls and nothing of the others', which keeps
"each step reads only the keys its rule declares" checkable
(judgebias.workflow.paramsread records the reads through the mapping the context wraps).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judgebias.models.limits import ApiLimits
from judgebias.models.panel import PanelModel

if TYPE_CHECKING:
    from judgebias.abilities import Abilities


class RunContext:
    """The run's settings a model job reads, typed, from validated `params`.

    Parameters
    ----------
    params : Mapping
        The validated params (judgebias.config.load_config): the schema's defaults are
        filled in, so every value below is there.
    """

    def __init__(self, params: Mapping[str, Any]) -> None:
        self._params = params
        self._models: dict[str, PanelModel] = {}

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> RunContext:
        """The context of `params` (the constructor a step's typed argument is built
        with, judgebias.workflow.step_dispatch)."""
        return cls(params)

    @cached_property
    def journal_dir(self) -> Path:
        """Where model calls are journaled (``journal_dir``)."""
        return Path(self._params["journal_dir"])

    @cached_property
    def seed(self) -> int:
        """The global seed (``seed``): the simulated world's."""
        return int(self._params["seed"])

    def model(self, key: str) -> PanelModel:
        """Panel model `key` (``panel.<key>``), resolved once; KeyError if undefined."""
        if key not in self._models:
            self._models[key] = PanelModel.from_params(self._params, key)
        return self._models[key]

    def is_panel_model(self, key: str) -> bool:
        """Whether `key` is defined under ``panel``."""
        return key in self._params["panel"]

    def opener(self, family: str) -> str:
        """The phrase every caption of simulated family `family` opens with
        (``families.<family>.sim.opener``)."""
        return str(self._params["families"][family]["sim"]["opener"])

    def is_simulated_family(self, family: str) -> bool:
        """Whether family `family` has simulated traits (``families.<family>.sim``)."""
        return "sim" in self._params["families"][family]

    def accepted_failures(self, key: str) -> float:
        """The share of a job's calls to model `key` that may fail (``max_failures``;
        0 for a model not listed)."""
        return float(self._params["max_failures"].get(key, 0.0))

    def limits(self, backend: str) -> ApiLimits:
        """API backend `backend`'s client settings (``backends.<backend>``)."""
        return ApiLimits(**self._params.get("backends", {}).get(backend, {}))

    def abilities(self, key: str) -> Abilities:
        """What model `key` can do (judgebias.abilities.model_abilities)."""
        from judgebias.abilities import model_abilities

        return model_abilities(self._params, key)

    def images_per_prompt(self, key: str) -> int:
        """The most images one request of the studies that run model `key` carries
        (judgebias.models.vllm_settings.images_per_prompt: a vLLM engine's image limit)."""
        from judgebias.models.vllm_settings import images_per_prompt

        return images_per_prompt(self._params, key)
