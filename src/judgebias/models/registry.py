"""Building the backend for a panel model from params.yaml.

A job builds only what it needs: the backend of the model it runs, and for the `sim`
backend the part of the simulated world that the model's planted traits refer to in its
role (as a judge: the models and family styles it prefers), which are exactly the params
the job declares, so adding a model to the panel does not rerun other models' jobs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from judgebias.models.base import Backend, Sampling


def sampling_for(model: Mapping[str, Any]) -> Sampling:
    return Sampling(**model["sampling"])


def sim_traits(config: Mapping[str, Any], key: str) -> dict[str, Any]:
    """A simulated model's traits with its family's shared opener folded into `style`."""
    model = config["models"][key]
    traits = {k: v for k, v in model["sim"].items() if k != "signature"}
    opener = config["families"][model["family"]]["sim"]["opener"]
    traits["style"] = {"opener": opener, "signature": model["sim"]["signature"]}
    return traits


def sim_world(config: Mapping[str, Any], key: str, role: str) -> tuple[list[str], list[str]]:
    """The simulated world panel model `key` needs in `role` ("generator"/"evaluator"):
    the models whose traits it uses (itself, and as a judge the models it has a planted
    preference for) and the families whose style it must recognise."""
    own = config["models"][key]
    if role == "generator":
        return [key], [own["family"]]
    prefs = own["sim"].get("preferences", {})
    models = list(dict.fromkeys([key, *prefs.get("models", {})]))
    families = [config["models"][m]["family"] for m in models]
    return models, list(dict.fromkeys([*families, *prefs.get("families", {})]))


def world_params(config: Mapping[str, Any], key: str, role: str) -> list[str]:
    """Dotted params.yaml keys that determine model `key`'s answers in `role`."""
    if config["models"][key]["backend"] != "sim":
        return [f"models.{key}"]
    models, families = sim_world(config, key, role)
    return [*(f"models.{m}" for m in models), *(f"families.{f}" for f in families), "seed"]


def build_backend(config: Mapping[str, Any], key: str, role: str) -> tuple[Backend, str]:
    """The backend answering for panel model `key` in `role`, and its version string."""
    model = config["models"][key]
    if model["backend"] == "sim":
        from judgebias.models.sim import SIM_VERSION, SimBackend, SimModel

        models, families = sim_world(config, key, role)
        world = {config["models"][m]["model_id"]: SimModel.from_params(
            m, config["models"][m]["family"], sim_traits(config, m)) for m in models}
        openers = {f: config["families"][f]["sim"]["opener"] for f in families}
        return SimBackend(world, seed=config["seed"], family_openers=openers), SIM_VERSION
    raise NotImplementedError(
        f"models.{key}.backend: backend {model['backend']!r} is not available in this "
        "version of judgebias; use 'sim'")
