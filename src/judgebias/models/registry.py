"""Building the backend for a panel model from params.yaml.

A job builds only what it needs: the backend of the model it runs, and for the `sim`
backend the part of the simulated world that the model's planted traits refer to (the
models and families it prefers), which are exactly the params the job declares.
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


def sim_world(config: Mapping[str, Any], key: str) -> list[str]:
    """The panel models whose style the simulated `key` must recognise: itself, the models
    it has a planted preference for, and the members of the families it prefers."""
    prefs = config["models"][key]["sim"].get("preferences", {})
    world = [key, *prefs.get("models", {})]
    for family in prefs.get("families", {}):
        world += [k for k, m in config["models"].items()
                  if m["family"] == family and m["backend"] == "sim"]
    return list(dict.fromkeys(world))


def world_params(config: Mapping[str, Any], key: str) -> list[str]:
    """Dotted params.yaml keys that determine model `key`'s answers."""
    model = config["models"][key]
    if model["backend"] != "sim":
        return [f"models.{key}"]
    keys = []
    for other in sim_world(config, key):
        keys += [f"models.{other}", f"families.{config['models'][other]['family']}"]
    return [*dict.fromkeys(keys), "seed"]


def build_backend(config: Mapping[str, Any], key: str) -> tuple[Backend, str]:
    """The backend answering for panel model `key`, and its version string for the journal."""
    model = config["models"][key]
    if model["backend"] == "sim":
        from judgebias.models.sim import SIM_VERSION, SimBackend, SimModel

        world = {}
        for other in sim_world(config, key):
            spec = config["models"][other]
            world[spec["model_id"]] = SimModel.from_params(other, spec["family"],
                                                            sim_traits(config, other))
        return SimBackend(world, seed=config["seed"]), SIM_VERSION
    raise NotImplementedError(
        f"models.{key}.backend: backend {model['backend']!r} is not available in this "
        "version of judgebias; use 'sim'")
