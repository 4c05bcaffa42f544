"""Loading and validating `params.yaml` (DESIGN.md principle 2: one config).

Validation happens before any job runs: the Snakefile, `dvc repro` stages and every CLI
step call :func:`load_config`, so a typo or a dangling reference stops the run with a
message naming the key, before a single model call is paid for.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Iterable, Mapping
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from judgebias.prompts import available_prompts, uses_references


class ConfigError(ValueError):
    """params.yaml is invalid; the message names the file and the offending key."""


@cache
def params_schema() -> dict[str, Any]:
    text = resources.files("judgebias.workflow").joinpath("params.schema.yaml").read_text()
    return yaml.safe_load(text)


def _key_path(parts: Iterable[Any]) -> str:
    return ".".join(str(p) for p in parts) or "<top level>"


def _schema_errors(params: Mapping[str, Any]) -> list[str]:
    validator = jsonschema.Draft202012Validator(params_schema())
    messages = []
    for error in sorted(validator.iter_errors(params), key=lambda e: list(e.absolute_path)):
        path = list(error.absolute_path)
        if error.validator == "additionalProperties":
            allowed = sorted(error.schema.get("properties", {}))
            extra = sorted(set(error.instance) - set(allowed))
            for key in extra:
                hint = f" (allowed: {', '.join(allowed)})" if allowed else ""
                messages.append(f"{_key_path([*path, key])}: unknown key{hint}")
            continue
        messages.append(f"{_key_path(path)}: {error.message}")
    return messages


def _fill_defaults(instance: Any, schema: Mapping[str, Any], root: Mapping[str, Any]) -> Any:
    """Insert the schema's `default` values so every consumer sees one complete config."""
    if "$ref" in schema:
        ref = schema["$ref"].removeprefix("#/").split("/")
        target: Mapping[str, Any] = root
        for part in ref:
            target = target[part]
        return _fill_defaults(instance, target, root)
    if not isinstance(instance, dict):
        return instance
    for key, sub in schema.get("properties", {}).items():
        if key not in instance and "default" in sub:
            instance[key] = copy.deepcopy(sub["default"])
        if key in instance:
            instance[key] = _fill_defaults(instance[key], sub, root)
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        for key in instance:
            if key not in schema.get("properties", {}):
                instance[key] = _fill_defaults(instance[key], extra, root)
    return instance


def _reference_errors(params: Mapping[str, Any]) -> list[str]:
    """Cross-references the schema cannot express."""
    errors = []
    models, families = params["models"], params["families"]
    prompts = available_prompts()
    dataset = params["dataset"]
    if dataset["name"] not in dataset:
        errors.append(f"dataset.{dataset['name']}: dataset.name is {dataset['name']!r} "
                      "but that block is missing")
    if params["prompts"]["caption"] not in prompts:
        errors.append(f"prompts.caption: unknown prompt id {params['prompts']['caption']!r} "
                      f"(available: {', '.join(sorted(prompts))})")
    for key, model in models.items():
        if model["family"] not in families:
            errors.append(f"models.{key}.family: family {model['family']!r} is not defined "
                          "under families")
        if (model["backend"] == "sim") != ("sim" in model):
            errors.append(f"models.{key}.sim: required exactly when backend is 'sim' "
                          f"(backend is {model['backend']!r})")
        if "engine" in model and model["backend"] != "vllm":
            errors.append(f"models.{key}.engine: engine arguments are for the vllm backend "
                          f"(backend is {model['backend']!r})")
        if model["backend"] in ("sim", "vllm"):
            for field in ("base_url", "api_key_env"):
                if field in model:
                    errors.append(f"models.{key}.{field}: only for the openai and gemini "
                                  f"backends (backend is {model['backend']!r})")
        elif ((model["backend"] == "gemini" or "base_url" not in model)
              and "api_key_env" not in model):
            errors.append(f"models.{key}.api_key_env: required for the provider's own "
                              "endpoint (name the environment variable holding the key)")
        if model["backend"] == "sim" and "sim" not in families.get(model["family"], {}):
            errors.append(f"families.{model['family']}.sim: simulated model {key!r} needs "
                          "its family's sim.opener")
        prefs = model.get("sim", {}).get("preferences", {})
        for other in prefs.get("models", {}):
            if other not in models:
                errors.append(f"models.{key}.sim.preferences.models.{other}: model "
                              f"{other!r} is not defined under models")
        for family in prefs.get("families", {}):
            if family not in families:
                errors.append(f"models.{key}.sim.preferences.families.{family}: family "
                              f"{family!r} is not defined under families")
    study = params["philautia"]
    for i, key in enumerate(study["models"]):
        if key not in models:
            errors.append(f"philautia.models[{i}]: model {key!r} is referenced but not "
                          f"defined under models (defined: {', '.join(models)})")
    for name, setting in study["settings"].items():
        if setting["prompt"] not in prompts:
            errors.append(f"philautia.settings.{name}.prompt: unknown prompt id "
                          f"{setting['prompt']!r} (available: {', '.join(sorted(prompts))})")
        elif uses_references(setting["prompt"]) != setting["references"]:
            errors.append(f"philautia.settings.{name}.references: is {setting['references']} "
                          f"but prompt {setting['prompt']!r} "
                          f"{'takes' if setting['references'] else 'has no'} references")
    errors += _pomms_errors(params)
    return errors


def _pomms_errors(params: Mapping[str, Any]) -> list[str]:
    pomms = params.get("pomms")
    if pomms is None:
        return []
    errors = []
    if pomms["setting"] not in params["philautia"]["settings"]:
        errors.append(f"pomms.setting: {pomms['setting']!r} is not a philautia setting "
                      f"(defined: {', '.join(params['philautia']['settings'])})")
    if pomms["train_dataset"] not in pomms["datasets"]:
        errors.append(f"pomms.train_dataset: {pomms['train_dataset']!r} is not defined under "
                      "pomms.datasets")
    for name, spec in pomms["datasets"].items():
        needed = ["n_items"] if spec["format"] == "synthetic" else ["path"]
        errors += [f"pomms.datasets.{name}.{key}: required for format {spec['format']!r}"
                   for key in needed if key not in spec]
    return errors


def validate_params(params: Any, source: str = "params.yaml") -> dict[str, Any]:
    """Validate a parsed params mapping and return it with schema defaults filled in.

    Raises ConfigError listing every problem, each prefixed by the dotted key path.
    """
    if not isinstance(params, dict):
        raise ConfigError(f"{source}: expected a mapping at the top level")
    errors = _schema_errors(params)
    if not errors:
        params = _fill_defaults(copy.deepcopy(params), params_schema(), params_schema())
        errors = _reference_errors(params)
    if errors:
        raise ConfigError(f"{source}: invalid configuration:\n  " + "\n  ".join(errors))
    return params


def load_config(path: str | Path = "params.yaml") -> dict[str, Any]:
    """Read and validate params.yaml."""
    path = Path(path)
    try:
        params = yaml.safe_load(path.read_text())
    except FileNotFoundError as exc:
        raise ConfigError(f"{path}: file not found") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from exc
    return validate_params(params, str(path))


def missing_secrets(params: Mapping[str, Any], keys: Iterable[str]) -> list[str]:
    """Errors for panel models whose API-key environment variable is not set."""
    import os

    errors = []
    for key in keys:
        name = params["models"][key].get("api_key_env")
        if name and not os.environ.get(name):
            errors.append(f"models.{key}.api_key_env: environment variable {name} is not set")
    return errors


# Top-level keys that change how calls are made, never what is answered.
CLIENT_ONLY_KEYS = frozenset({"backends"})


def result_keys(params: Mapping[str, Any]) -> list[str]:
    """Top-level keys that can change a result (everything but client settings)."""
    return [k for k in params_schema()["properties"]
            if k in params and k not in CLIENT_ONLY_KEYS]


def get_key(params: Mapping[str, Any], dotted: str) -> Any:
    """The value at a dotted key path such as ``models.lumen-large``."""
    node: Any = params
    for part in dotted.split("."):
        node = node[part]
    return node


def fingerprint(value: Any) -> str:
    """Stable short hash of a JSON-able value (used in provenance)."""
    blob = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]
