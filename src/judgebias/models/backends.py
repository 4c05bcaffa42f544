"""The backend registry: everything the core knows about a backend, in one entry.

A backend is one module (its Backend class, judgebias.models.base.Backend) plus one
entry: a :class:`BackendSpec`. The params schema (which backends a panel entry may name,
the fields each adds, its ``backends.<name>`` client settings), the config checks,
:func:`judgebias.models.registry.build_backend` and ``backend_version``, the prices of
`judgebias plan`, the rules' resources (its concurrency slot, GPUs) all read the spec,
so no other module names a backend (docs/adding-a-backend.md).

The backends judgebias ships are the :data:`BUILTIN` table. Any other is found through
the entry-point group ``judgebias.backends`` (one line in its distribution's metadata:
``name = module:SPEC``), so every process that reads params.yaml (Snakemake, each job,
DVC's stages) finds it without an edit here, as inspect_ai finds its model providers.
A spec names its code as ``"module:attribute"`` strings, imported only when used: reading
the registry imports no SDK, and a job imports only its own backend (vLLM and torch stay
out of the jobs of every other backend). This module imports nothing heavy itself.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from judgebias.models import reasoning  # light: the reasoning models' settings and rules

GROUP = "judgebias.backends"  # the entry-point group of backends shipped elsewhere
SLOT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")  # a Snakemake resource name

# (panel key, panel entry, validated params) -> error lines, each naming its key
Check = Callable[[str, Mapping[str, Any], Mapping[str, Any]], list[str]]


@dataclass(frozen=True)
class Abilities:
    """What a backend's models can do by default (issue 41 item 6 lets a panel model
    state its own; nothing reads these yet, so the built-ins' values are defaults that
    the providers document, not measurements)."""

    answer_logprobs: bool = False  # top-k log-probs of the answer tokens
    images_per_request: int | None = None  # None: no limit the backend knows of
    system_prompt: bool = True
    temperature: bool = True  # samples at temperature > 0
    n_samples: bool = False  # several samples of one request in one call


@dataclass(frozen=True)
class BatchApi:
    """A provider's batch API: the judgebias.models.batch.BatchProvider class that the
    backend's ``_batch_provider`` builds, and its price as a share of the online one."""

    provider: str  # "module:Class"
    price: float


@dataclass(frozen=True)
class PromptCaching:
    """How a provider caches prompt prefixes and bills what it reads and writes (issue
    45), as `judgebias plan` estimates it (judgebias.plan): prices as shares of the input
    price (``pricing.cached_input_per_mtok`` and ``cache_write_per_mtok`` state a model's
    own), the shortest prefix cached (``pricing.cache_min_tokens``), the step cached
    counts come in, and whether only a prefix the request marks is cached (Anthropic's
    ``cache_control``; the others cache by themselves)."""

    read: float  # an input token read from the cache, as a share of the input price
    write: float = 1.0  # one written to it (marked caching only: the others bill input)
    min_tokens: int = 1024
    step: int = 1
    marked: bool = False


@dataclass(frozen=True)
class BackendSpec:
    """One backend's registry entry.

    ``backend`` is called as ``(run, model, role)`` (the run's
    judgebias.models.context.RunContext, the PanelModel, the role) and returns the
    Backend: the class itself, or a function that builds it. Its ``name`` attribute must be the
    spec's name, which journal keys carry. ``version`` names a string, or a function of
    the panel model returning one: part of every journal key, so it must change exactly
    when the answers can. ``fields`` are the JSON-Schema properties a panel entry of this
    backend may carry (``required``: those it must), none with a top-level ``default``
    (a default would be filled into every panel entry). ``settings`` is the schema of its
    ``backends.<name>`` block (client settings: run settings, no job declares them).
    ``concurrency`` is the Snakemake resource an online job of it holds one unit of (the
    profiles cap it per run); ``gpus``: its jobs take ``resources.gpus`` GPUs.
    ``batch``: its provider's batch API and price; ``caching``: how its provider caches
    prompt prefixes and prices them (:class:`PromptCaching`; `plan`'s estimate). ``check``
    adds the cross-field rules the schema cannot state.
    """

    name: str
    backend: str
    version: str
    fields: Mapping[str, Any] = field(default_factory=dict)
    required: tuple[str, ...] = ()
    settings: Mapping[str, Any] | None = None
    concurrency: str | None = None
    gpus: bool = False
    batch: BatchApi | None = None
    caching: PromptCaching | None = None  # None: plan estimates no prompt caching
    check: Check | None = None
    abilities: Abilities = field(default_factory=Abilities)
    # "module:function" (abilities, panel entry) -> abilities: what one model's own
    # settings change (a reasoning effort that refuses log-probs); judgebias.abilities
    model_abilities: str | None = None

    @property
    def online(self) -> bool:
        """Whether its jobs call a provider over the network (they hold a slot)."""
        return self.concurrency is not None


def load(target: str) -> Any:
    """What a ``"module:attribute"`` string names (the module imported on first use)."""
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


# --- the built-in backends -------------------------------------------------------------

def _own_endpoint_key(key: str, model: Mapping[str, Any], params: Mapping[str, Any]
                      ) -> list[str]:
    """An OpenAI-compatible model needs a key for the provider's own endpoint; a local
    server (``base_url``) often needs none."""
    return [] if "base_url" in model else _key_required(key, model, params)


def _key_required(key: str, model: Mapping[str, Any], params: Mapping[str, Any]
                  ) -> list[str]:
    if "api_key_env" in model:
        return []
    return [f"panel.{key}.api_key_env: required for the provider's own endpoint (name the "
            "environment variable holding the key)"]


def _sim_references(key: str, model: Mapping[str, Any], params: Mapping[str, Any]
                    ) -> list[str]:
    """A simulated model's family must state the opener its captions share, and its
    planted preferences must name models and families that exist."""
    panel, families = params["panel"], params["families"]
    errors = []
    if "sim" not in families.get(model["family"], {}):
        errors.append(f"families.{model['family']}.sim: simulated model {key!r} needs "
                      "its family's sim.opener")
    prefs = model["sim"].get("preferences", {})
    errors += [f"panel.{key}.sim.preferences.models.{other}: model {other!r} is not "
               "defined under panel" for other in prefs.get("models", {}) if other not in panel]
    errors += [f"panel.{key}.sim.preferences.families.{family}: family {family!r} is not "
               "defined under families"
               for family in prefs.get("families", {}) if family not in families]
    return errors


def _unit(description: str) -> dict[str, Any]:
    return {"type": "number", "minimum": 0, "maximum": 1, "description": description}


def _weights(whose: str) -> dict[str, Any]:
    return {"type": "object", "description": f"Planted liking of other {whose}: "
            f"{whose[:-1]} -> score bonus in [-1, 1] (0-1 units, negative disfavours).",
            "additionalProperties": {"type": "number", "minimum": -1, "maximum": 1,
                                     "description": "The score bonus (0-1 units)."}}


SIM_FIELDS: Mapping[str, Any] = {"sim": {
    "type": "object",
    "additionalProperties": {"type": "object", "description": "A block of traits a study "
                             "plants (e.g. mmb:, frame:, birch:), checked by that study."},
    "description": "Planted traits of a simulated model (see judgebias.models.sim). Any "
                   "other key is a block of traits a study plants (e.g. `mmb:`), checked "
                   "by that study.",
    "required": ["caption_quality", "signature", "leniency", "spread", "self_preference",
                 "noise"],
    "properties": {
        "caption_quality": _unit("How accurate its captions are (0 worst, 1 best)."),
        "signature": {"type": "string", "minLength": 1,
                      "description": "The model's own word, in every caption it writes "
                                     "(what evaluators recognise as its style)."},
        "leniency": _unit("Its mean score (0-1 units) for a caption of accuracy 0.5 "
                          "with no style it is biased about."),
        "spread": {"type": "number", "minimum": 0, "maximum": 2,
                   "description": "Slope of its mean score in caption accuracy (0-1 "
                                  "score units per unit of accuracy; 0 flat)."},
        "self_preference": {"type": "number", "minimum": -1, "maximum": 1,
                            "description": "Score bonus (0-1 units) for captions carrying "
                                           "its own signature (0 none, < 0 self-critical)."},
        "preferences": {"type": "object", "additionalProperties": False,
                        "description": "Planted liking of other models or families' "
                                       "captions (issue 40).",
                        "properties": {"models": _weights("models"),
                                       "families": _weights("families")}},
        "noise": _unit("Its per-answer inconsistency (0-1 units): the sd of its opinion "
                       "around its systematic judgement, and of the score token."),
        "tokenizer": {"enum": ["whole", "digits"], "default": "whole",
                      "description": "How it spells a score: one token (whole) or one "
                                     "digit per token (digits), as real tokenizers do."},
    },
}}
# The HTTP backends' endpoint and key: where a call goes, never what is answered.
API_FIELDS: Mapping[str, Any] = {
    "base_url": {"type": "string", "x-run-setting": True,
                 "description": "openai/gemini endpoint (e.g. http://127.0.0.1:8000/v1 for "
                                "`vllm serve`); default is the provider's."},
    "api_key_env": {"type": "string", "x-run-setting": True,
                    "pattern": "^[A-Za-z_][A-Za-z0-9_]*$",
                    "description": "Name of the environment variable holding the API key. "
                                   "Keys never go in this file."},
}
API_SETTINGS: Mapping[str, Any] = {"$ref": "#/$defs/api_limits"}  # judgebias.models.limits
HALF_PRICE = 0.5  # specs/batch.md: OpenAI Batch API and Gemini batch mode, "50 % off online"
# (and Anthropic's Message Batches: "50% of standard API prices", its batch-processing guide)
_REGISTRY = "judgebias.models.registry"  # the built-ins' builders

# Prompt caching's default prices (issue 45; a panel entry's pricing.cached_input_per_mtok
# states its model's own). Where a provider's share differs by model, the default is the
# largest share among the models the papers' panels and today's judges use, so `plan`'s
# saving is never overstated by it:
# * OpenAI (developers.openai.com/api/docs/pricing; the prompt-caching guide): cached input
#   is half the input price on gpt-4o (2.50 -> 1.25 USD/MTok; the papers' panels), a
#   quarter on gpt-4.1, a tenth on the GPT-5 family ("discounted up to 95%" on later
#   models); caching from 1,024 prompt tokens, hits in 128-token steps; writes billed as
#   input before GPT-5.6 (1.25x from GPT-5.6 on: not estimated, set the price you pay).
# * Gemini (ai.google.dev/gemini-api/docs/caching and /pricing; Vertex AI's context-cache
#   overview): implicit-cache hits were priced at a quarter of the input price when 2.5
#   launched them (2.5 Pro: 0.31 of 1.25 USD/MTok, "75% discount", as Gemini 2.0's still
#   are) and at a tenth on the 2026 pricing page (0.125; Vertex: "90% discount" on 2.5 and
#   3); the minimum prefix is 2,048 tokens for 2.5 Flash and Pro in the 2026 table (it
#   read 1,024 Flash / 4,096 Pro before; 4,096 for 3.x); writes are billed "at the
#   standard input token price".
# * Anthropic (platform.claude.com/docs/en/build-with-claude/prompt-caching): "5m cache
#   writes 1.25x base input", "cache hits & refreshes 0.1x", for every Claude model; the
#   minimum is 1,024 tokens (Sonnet 4.5 and before, Opus 4/4.1), 2,048 (Haiku 3/3.5), 4,096
#   (Opus 4.5/4.6, Haiku 4.5); only marked prefixes (judgebias.models.anthropic_wire).
# vllm (a local engine: nothing billed), sim and external: not estimated.
OPENAI_CACHING = PromptCaching(read=0.5, min_tokens=1024, step=128)
GEMINI_CACHING = PromptCaching(read=0.25, min_tokens=2048)
ANTHROPIC_CACHING = PromptCaching(read=0.1, write=1.25, min_tokens=1024, marked=True)


def _openai_rules(key: str, model: Mapping[str, Any], params: Mapping[str, Any]
                  ) -> list[str]:
    """A key as :func:`_own_endpoint_key` says; a reasoning model's sampling as it takes."""
    return _own_endpoint_key(key, model, params) + reasoning.openai_checks(key, model)


def openai_abilities(abilities: Abilities, entry: Mapping[str, Any]) -> Abilities:
    """A reasoning model gives no log-probs unless it takes sampling parameters at its
    effort (it still samples, at its default temperature 1; judgebias.models.reasoning)."""
    found = reasoning.Reasoning.of(entry)
    if found is None or found.sampling:
        return abilities
    return dataclasses.replace(abilities, answer_logprobs=False)


def _gemini_rules(key: str, model: Mapping[str, Any], params: Mapping[str, Any]
                  ) -> list[str]:
    """A key; one of a thinking budget and a level."""
    return _key_required(key, model, params) + reasoning.gemini_checks(key, model)

# Claude: judgebias.models.anthropic_wire says why each rule holds (anthropic 2.17.0).
LEGACY_ANTHROPIC_API = "2023-06-01"  # the API version that still takes sampling parameters
ANTHROPIC_FIELDS: Mapping[str, Any] = {**API_FIELDS, "thinking": {
    "type": "object", "additionalProperties": False,
    "properties": {"type": {"enum": ["enabled", "adaptive", "disabled"],
                            "description": "enabled (a token budget), adaptive (Claude "
                                           "decides) or disabled; default enabled."},
                   "budget_tokens": {"type": "integer", "minimum": 1024,
                                     "description": "Thinking tokens allowed (type "
                                                    "enabled), below sampling.max_tokens."}},
    "description": "Claude's thinking: {budget_tokens: N} (type enabled, manual: N >= 1024 "
                   "and below sampling.max_tokens, which it counts toward), {type: adaptive} "
                   "or {type: disabled}; absent: the model's default. Billed as output."},
    "anthropic_version": {
        "enum": ["2026-10-21", LEGACY_ANTHROPIC_API],
        "description": "The Messages API version; default the SDK's (2026-10-21: no "
                       "temperature or top_p at all). 2023-06-01 (models before Claude 4.7) "
                       "sends a temperature or top_p other than 1.0."}}


def _anthropic_rules(key: str, model: Mapping[str, Any], params: Mapping[str, Any]
                     ) -> list[str]:
    """A key as for openai; sampling the API version takes (with thinking on: no
    temperature, top_p in [0.95, 1]); a thinking budget below max_tokens."""
    where, sampling = f"panel.{key}", model.get("sampling", {})
    thinking, legacy = model.get("thinking"), model.get("anthropic_version") == \
        LEGACY_ANTHROPIC_API
    thinks = thinking is not None and thinking.get("type", "enabled") != "disabled"
    errors = _own_endpoint_key(key, model, params)
    for name in ("temperature", "top_p"):
        value = sampling.get(name, 1.0)
        if value != 1.0 and not legacy:
            errors.append(f"{where}.sampling.{name}: Claude's Messages API (2026-10-21, the "
                          f"anthropic SDK's) refuses sampling parameters at any value: leave "
                          f"it 1.0 (Claude's default), or set {where}.anthropic_version: "
                          f"'{LEGACY_ANTHROPIC_API}' (models before Claude 4.7)")
        elif value != 1.0 and thinks and (name == "temperature" or value < 0.95):
            errors.append(f"{where}.sampling.{name}: with thinking on, Claude takes no "
                          f"temperature and a top_p only in [0.95, 1] (got {value})")
    if thinking is not None:
        kind, budget = thinking.get("type", "enabled"), thinking.get("budget_tokens")
        most = sampling.get("max_tokens", 512)
        if kind == "enabled" and budget is None:
            errors.append(f"{where}.thinking.budget_tokens: required for thinking type "
                          "enabled")
        elif kind != "enabled" and budget is not None:
            errors.append(f"{where}.thinking.budget_tokens: only for thinking type enabled "
                          f"(type is {kind!r})")
        elif budget is not None and budget >= most:
            errors.append(f"{where}.thinking.budget_tokens: {budget} must be below "
                          f"{where}.sampling.max_tokens ({most}): thinking counts toward it")
    return errors


# vLLM: judgebias.models.vllm_settings says why each setting exists and how it is keyed.
def _adapter(serves: str) -> dict[str, Any]:
    return {"type": "string", "minLength": 1,
            "description": f"The LoRA adapter for {serves}: a folder of the model's "
                           "repository or a local path."}


VLLM_FIELDS: Mapping[str, Any] = {
    "engine": {"type": "object", "description": "vllm engine arguments "
               "(max_model_len, dtype, gpu_memory_utilization, ...)."},
    "lora": {
        "type": "object", "additionalProperties": False, "minProperties": 1,
        "properties": {"image": _adapter("requests with an image"),
                       "text": _adapter("text-only requests")},
        "description": "LoRA adapters by the requests they serve: image (any image in the "
                       "request; Phi-4-multimodal: vision-lora), text (text only). A folder "
                       "of the model's repository, or a path starting with /, ./, ../ or "
                       "~. Part of the journal key (its files' digest where local)."},
    "chat_template": {
        "type": "string", "minLength": 1,
        "description": "A Jinja chat template replacing the model's own, or the path of a "
                       "file holding one; part of the journal key."},
}


def _vllm_rules(key: str, model: Mapping[str, Any], params: Mapping[str, Any]
                ) -> list[str]:
    """Adapters and template files exist, LoRA settings cover the adapters, an explicit
    image limit covers the studies' largest request (judgebias.models.vllm_settings)."""
    from judgebias.models.vllm_settings import check

    return check(key, model, params)


BUILTIN: dict[str, BackendSpec] = {spec.name: spec for spec in (
    BackendSpec("sim", backend=f"{_REGISTRY}:build_sim",
                version="judgebias.models.sim:SIM_VERSION", fields=SIM_FIELDS,
                required=("sim",), check=_sim_references,
                abilities=Abilities(answer_logprobs=True)),
    BackendSpec("openai", backend=f"{_REGISTRY}:build_openai",
                version="judgebias.models.openai_wire:journal_version",
                fields={**API_FIELDS, **reasoning.REASONING_FIELDS}, settings=API_SETTINGS,
                concurrency="api_openai",
                batch=BatchApi("judgebias.models.openai_batch:OpenAIBatches", HALF_PRICE),
                caching=OPENAI_CACHING, check=_openai_rules,
                abilities=Abilities(answer_logprobs=True, n_samples=True),
                model_abilities="judgebias.models.backends:openai_abilities"),
    BackendSpec("gemini", backend=f"{_REGISTRY}:build_gemini",
                version="judgebias.models.gemini_wire:journal_version",
                fields={**API_FIELDS, **reasoning.THINKING_FIELDS}, settings=API_SETTINGS,
                concurrency="api_gemini",
                batch=BatchApi("judgebias.models.gemini_batch:GeminiBatches", HALF_PRICE),
                caching=GEMINI_CACHING, check=_gemini_rules,
                abilities=Abilities(answer_logprobs=True, n_samples=True)),
    BackendSpec("vllm", backend=f"{_REGISTRY}:build_vllm",
                version=f"{_REGISTRY}:vllm_version", gpus=True, fields=VLLM_FIELDS,
                check=_vllm_rules,
                abilities=Abilities(answer_logprobs=True, n_samples=True)),
    BackendSpec("anthropic", backend=f"{_REGISTRY}:build_anthropic",
                version="judgebias.models.anthropic_wire:journal_version",
                fields=ANTHROPIC_FIELDS, settings=API_SETTINGS, concurrency="api_anthropic",
                batch=BatchApi("judgebias.models.anthropic_batch:AnthropicBatches",
                               HALF_PRICE),
                caching=ANTHROPIC_CACHING, check=_anthropic_rules,
                # no log-probs; 100 images a request (600 past 200k context); a system
                # prompt; it samples, at its default temperature 1
                abilities=Abilities(answer_logprobs=False, images_per_request=100)),
    # answered elsewhere, its answers imported (judgebias.models.external, issue 44): what
    # the model gives is the user's to state (panel.<m>.abilities); by default no
    # log-probs, one sample per request
    BackendSpec("external", backend=f"{_REGISTRY}:build_external",
                version="judgebias.models.external:PROTOCOL_VERSION",
                abilities=Abilities(answer_logprobs=False)),
)}


# --- finding the registered backends -----------------------------------------------------

@cache
def registered_backends() -> dict[str, BackendSpec]:
    """Every backend: the built-ins in table order, then those of the entry-point group
    in the order importlib.metadata lists them. Each plugin entry is checked here, so a
    broken one fails every command that reads params, naming its distribution."""
    backends = dict(BUILTIN)
    for entry in _entry_points():
        spec = entry.load()
        where = f"entry point {entry.name} = {entry.value} ({GROUP})"
        if not isinstance(spec, BackendSpec):
            raise RuntimeError(f"{where}: names a {type(spec).__name__}, not a BackendSpec")
        if spec.name != entry.name:
            raise RuntimeError(f"{where}: its spec is named {spec.name!r}")
        if spec.name in backends:
            raise RuntimeError(f"{where}: backend {spec.name!r} is already registered")
        backends[spec.name] = _checked(spec, where)
    return backends


def _checked(spec: BackendSpec, where: str) -> BackendSpec:
    """The rules every entry must keep for the rest of the core to hold (module
    docstring and BackendSpec's)."""
    if spec.concurrency is not None and not SLOT.match(spec.concurrency):
        raise RuntimeError(f"{where}: concurrency {spec.concurrency!r} is not a resource name")
    defaulted = sorted(f for f, schema in spec.fields.items() if "default" in schema)
    if defaulted:
        raise RuntimeError(f"{where}: fields {defaulted} have a default, which would be "
                           "filled into every panel entry; let the backend default instead")
    unknown = sorted(set(spec.required) - set(spec.fields))
    if unknown:
        raise RuntimeError(f"{where}: required fields {unknown} are not among its fields")
    return spec


def _entry_points() -> list[Any]:
    """The group's entry points. importlib.metadata costs a job about 50 ms to import
    (it is not otherwise loaded), so it is asked only if some distribution's
    ``entry_points.txt`` on the path names the group, or a path entry is an archive,
    which only importlib.metadata reads."""
    if not _group_may_be_declared():
        return []
    from importlib.metadata import entry_points

    return list(entry_points(group=GROUP))


def _group_may_be_declared() -> bool:
    header = f"[{GROUP}]"
    for entry in sys.path:
        folder = entry or "."
        if not os.path.isdir(folder):
            if os.path.isfile(folder):
                return True
            continue
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            if not name.endswith((".dist-info", ".egg-info")):
                continue
            try:
                with open(os.path.join(folder, name, "entry_points.txt"),
                          encoding="utf-8") as text:
                    if header in text.read():
                        return True
            except OSError:  # no entry points, or a single-file .egg-info
                continue
    return False


def backend_spec(name: str) -> BackendSpec:
    """The entry of backend `name` (KeyError naming the registered ones if none)."""
    if name in BUILTIN:  # without looking for plugins: the common case, and the cheapest
        return BUILTIN[name]
    backends = registered_backends()
    if name not in backends:
        raise KeyError(f"no backend {name!r} (registered: {', '.join(backends)})")
    return backends[name]


def concurrency_slots() -> list[str]:
    """Every backend's concurrency resource, once each, in registry order."""
    return list(dict.fromkeys(s.concurrency for s in registered_backends().values()
                              if s.concurrency is not None))


# --- what the core checks with it ----------------------------------------------------------

def _names(names: list[str], quoted: bool = False) -> str:
    shown = [repr(n) if quoted else n for n in names]
    joiner = " or " if quoted else " and "
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + joiner + shown[-1]


def model_errors(key: str, model: Mapping[str, Any], params: Mapping[str, Any]) -> list[str]:
    """The backend rules of panel entry `key` the merged schema cannot state: a field of
    one backend given to another (or missing where required), batch mode without a batch
    API, and the backend's own ``check``."""
    backends = registered_backends()
    name = model["backend"]
    spec = backends[name]
    owners: dict[str, list[BackendSpec]] = {}
    for other in backends.values():
        for field_name in other.fields:
            owners.setdefault(field_name, []).append(other)
    errors = []
    for field_name, specs in owners.items():
        names = [s.name for s in specs]
        exactly = (f"required exactly when backend is {_names(names, quoted=True)}"
                   if all(field_name in s.required for s in specs) else None)
        if field_name in model and spec not in specs:
            rule = exactly or f"only for the {_names(names)} backend{'s' * (len(names) > 1)}"
        elif field_name not in model and field_name in spec.required:
            rule = exactly or f"required when backend is {name!r}"
        else:
            continue
        errors.append(f"panel.{key}.{field_name}: {rule} (backend is {name!r})")
    if model.get("batch") and spec.batch is None:
        batching = [s.name for s in backends.values() if s.batch is not None]
        errors.append(f"panel.{key}.batch: batch mode is for the {_names(batching)} "
                      f"backends (backend is {name!r})")
    if spec.check is not None and all(f in model for f in spec.required):
        errors += spec.check(key, model, params)
    return errors


def schema_errors(schema: Mapping[str, Any]) -> list[str]:
    """Where the registry's fields would clash with the core schema of a panel entry:
    fields are the registry's, so none may be a core field, and a field two backends
    declare (openai's and gemini's ``base_url``) must mean the same for both."""
    core = schema["$defs"]["model"]["properties"]
    seen: dict[str, BackendSpec] = {}
    errors = []
    for spec in registered_backends().values():
        for field_name, definition in spec.fields.items():
            if field_name in core:
                errors.append(f"backend {spec.name}: field {field_name!r} is a core field "
                              "of every panel entry")
            elif field_name in seen and seen[field_name].fields[field_name] != definition:
                errors.append(f"backend {spec.name}: field {field_name!r} differs from "
                              f"backend {seen[field_name].name}'s")
            seen.setdefault(field_name, spec)
    return errors
