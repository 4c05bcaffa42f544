"""A panel model of params.yaml, resolved once into a typed, read-only record.

params.yaml defines every model once under ``panel:`` (docs/design.md principle 2). A job
resolves the one it runs into a :class:`PanelModel` when it starts
(:meth:`PanelModel.from_params`); the registry, the runner and the judging core then read
typed fields instead of indexing ``params["panel"][key]`` again. The params must be
validated (judgebias.config.validate_params): the schema's defaults are filled in, so
every field below has its value, and nothing here checks again.

The mappings the backends consume as they are (``engine``, the ``sim`` traits) are kept
as the validated dicts: journal keys and version strings fingerprint them, so they must
stay exactly what params.yaml states. Treat them as read-only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from judgebias.models.backends import backend_spec
from judgebias.models.base import Sampling
from judgebias.models.entry import Pricing, Resources

BackendName = str  # a registered backend (judgebias.models.backends), checked by the schema


@dataclass(frozen=True)
class PanelModel:
    """One validated ``panel.<key>`` entry (see params.schema.yaml, ``$defs/model``)."""

    key: str
    backend: BackendName
    model_id: str
    revision: str
    family: str
    sampling: Sampling
    also_in: tuple[str, ...] = ()
    base_url: str | None = None
    api_key_env: str | None = None
    engine: Mapping[str, Any] = field(default_factory=dict)
    pricing: Pricing | None = None
    max_requests: int | None = None
    batch: bool = False  # answered through the provider's batch API (the registry's `batch`)
    resources: Resources = field(default_factory=Resources)
    sim: Mapping[str, Any] | None = None  # planted traits; present exactly for `sim`
    # The fields its backend adds to a panel entry (the registry's `fields`), as stated:
    # how a backend from another package reads its own settings.
    fields: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_params(cls, params: Mapping[str, Any], key: str) -> PanelModel:
        """Panel model `key` of the validated `params` (KeyError if it is not defined)."""
        entry = params["panel"][key]
        pricing = entry.get("pricing")
        return cls(
            key=key, backend=entry["backend"], model_id=entry["model_id"],
            revision=entry["revision"], family=entry["family"],
            sampling=Sampling(**entry["sampling"]), also_in=tuple(entry.get("also_in", ())),
            base_url=entry.get("base_url"), api_key_env=entry.get("api_key_env"),
            engine=entry.get("engine", {}), pricing=None if pricing is None else Pricing(**pricing),
            max_requests=entry.get("max_requests"), batch=bool(entry.get("batch", False)),
            resources=Resources(**entry.get("resources", {})), sim=entry.get("sim"),
            fields={k: entry[k] for k in backend_spec(entry["backend"]).fields if k in entry})

    @property
    def label(self) -> str:
        """How messages name the model: ``panel.<key> (<backend> <model id>)``."""
        return f"panel.{self.key} ({self.backend} {self.model_id})"

    @property
    def gpus(self) -> int:
        """The GPUs a job of this model takes (only a backend whose registry entry says
        ``gpus`` runs on them: vllm)."""
        return self.resources.gpus if backend_spec(self.backend).gpus else 0

    @property
    def engine_args(self) -> dict[str, Any]:
        """The vLLM engine's arguments: the params ``engine`` block, with the model split
        over the job's GPUs (``tensor_parallel_size``: ``resources.gpus``) unless the block
        sets it. vLLM's own default is 1, which would load the model on one of the GPUs
        the job was given and leave the others idle."""
        args = dict(self.engine)
        if self.gpus > 1:
            args.setdefault("tensor_parallel_size", self.gpus)
        return args

    def sim_traits(self, opener: str) -> dict[str, Any]:
        """The traits a simulated model is built from (judgebias.models.sim.SimModel),
        with its family's shared `opener` and its own signature folded into ``style``."""
        if self.sim is None:
            raise ValueError(f"{self.label}: not a simulated model (no sim traits)")
        traits = {k: v for k, v in self.sim.items() if k != "signature"}
        traits["style"] = {"opener": opener, "signature": self.sim["signature"]}
        return traits

    @property
    def preferences(self) -> Mapping[str, Mapping[str, float]]:
        """A simulated judge's planted preferences (``models`` and ``families``)."""
        return (self.sim or {}).get("preferences", {})


def panel_models(params: Mapping[str, Any]) -> dict[str, PanelModel]:
    """Every panel model of the validated `params`, in params order."""
    return {key: PanelModel.from_params(params, key) for key in params["panel"]}
