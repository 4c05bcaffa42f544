"""Loading and validating `params.yaml` (docs/design.md principle 2: one config).

Validation happens before any job runs: the Snakefile, `dvc repro` stages and every CLI
step call :func:`load_config`, so a typo or a dangling reference stops the run with a
message naming the key, before a single model call is paid for.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from judgebias.io.yamlread import DuplicateKeyError, key_text, load_yaml
from judgebias.paramsblock import RUN_SETTING


class ConfigError(ValueError):
    """params.yaml is invalid; the message names the file and the offending key."""


class DataNotDownloaded(ConfigError):
    """Every check of params.yaml passed except that files it names do not exist yet: the
    datasets (or weights) of a config written before they were downloaded, such as the
    papers' panels in ``configs/``. The message lists each one (MissingPath)."""


class MissingPath(str):
    """One error line: a params key names a file or folder that does not exist.

    A ``str`` (every study's ``validate`` returns its errors as lines) that also keeps the
    key, the path and what belongs there, so :func:`validate_params` can tell data not
    downloaded yet from a broken config: ``judgebias validate`` explains the former and
    ``validate --no-data`` / ``judgebias plan`` set it aside.
    """

    key: str
    path: str
    what: str

    def __new__(cls, key: str, path: str, kind: str, what: str = "") -> MissingPath:
        line = f"{key}: {kind} {path} does not exist"
        self = super().__new__(cls, f"{line} -- {what}" if what else line)
        self.key, self.path, self.what = key, path, what
        return self


@cache
def params_schema() -> dict[str, Any]:
    """The core schema (with the API client settings their view declares,
    judgebias.models.limits.ApiLimits) plus each registered study's block (an optional
    top-level key, declared by its view: judgebias.paramsblock) and each registered
    backend's part (:func:`_add_backends`)."""
    from judgebias.models.entry import Pricing, Resources
    from judgebias.models.limits import ApiLimits
    from judgebias.paramsblock import block_schema
    from judgebias.study import registered

    text = resources.files("judgebias.workflow").joinpath("params.schema.yaml").read_text()
    schema = load_yaml(text)
    # The parts declared once by their views (judgebias.paramsblock), which the file's
    # stubs name: a stub keeps only what the view cannot say (pricing is a run setting).
    schema["$defs"]["api_limits"] = block_schema(ApiLimits)
    model = schema["$defs"]["model"]["properties"]
    model["pricing"].update(block_schema(Pricing))
    model["resources"].update(block_schema(Resources))
    for name, study in registered().items():
        fragment = study.schema_fragment()
        for key, definition in fragment.pop("$defs", {}).items():
            if key in schema["$defs"]:
                raise RuntimeError(f"study {name}: schema definition {key!r} already exists")
            schema["$defs"][key] = definition
        schema["properties"][name] = fragment
    _add_backends(schema)
    return schema


def _add_backends(schema: dict[str, Any]) -> None:
    """The backend registry's part of the schema (judgebias.models.backends): the names
    a panel entry's ``backend`` may take, the fields each backend adds to a panel entry
    (which of them a backend may use is checked in :func:`_model_errors`), and each
    one's ``backends.<name>`` client settings. The core schema file names no backend."""
    from judgebias.models.backends import registered_backends, schema_errors

    clashes = schema_errors(schema)
    if clashes:
        raise RuntimeError("backend registry: " + "; ".join(clashes))
    model, settings = schema["$defs"]["model"], schema["properties"]["backends"]
    model["properties"]["backend"]["enum"] = list(registered_backends())
    for spec in registered_backends().values():
        model["properties"].update(spec.fields)
        if spec.settings is not None:
            settings["properties"][spec.name] = spec.settings


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
                messages.append(f"{key_text([*path, key])}: unknown key{hint}")
            continue
        if error.validator == "uniqueItems":
            messages += _repeated_items(path, error.instance)
            continue
        if "propertyNames" in error.schema_path and isinstance(error.instance, str):
            messages.append(f"{key_text(path)}: the name {error.instance!r} does not match "
                            f"{error.schema.get('pattern', '')!r}{_NAME_HINT}")
            continue
        messages.append(f"{key_text(path)}: {error.message}")
    return messages


# Why a name the user gives (a panel model, a family, a dataset) holds no dot: the rules
# and DVC address every params key by its dotted path (``panel.<key>.sampling``).
_NAME_HINT = (" (letters, digits, - and _: the rules and DVC address a key by its dotted "
              "path, so a dot inside a name would split it; write gpt-4-1 for gpt-4.1)")


def _repeated_items(path: list[Any], items: list[Any]) -> list[str]:
    """One line per repeat in a list whose schema says `uniqueItems` (panel keys, grid
    values, seeds...): a repeat would run or count the same thing twice and move every
    mean, test and correction computed over the list."""
    def same(a: Any, b: Any) -> bool:  # JSON equality: 1 == 1.0, but true is not 1
        return a == b and isinstance(a, bool) == isinstance(b, bool)

    lines = []
    for i, item in enumerate(items):
        positions = [j for j, other in enumerate(items) if same(other, item)]
        if positions[0] < i:
            times = "twice" if len(positions) == 2 else f"{len(positions)} times"
            lines.append(f"{key_text([*path, i])}: {item!r} is listed {times} (first at "
                         f"{key_text([*path, positions[0]])}); list each once")
    return lines


def with_defaults(params: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of `params` with every default of the schema filled in (not validated)."""
    return _fill_defaults(copy.deepcopy(dict(params)), params_schema(), params_schema())


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


def _reference_errors(params: Mapping[str, Any], needs: bool = True) -> list[str]:
    """Cross-references the schema cannot express (the core's; each study adds its own),
    and with `needs`, what each study needs of its judges (judgebias.abilities)."""
    from judgebias.study import active

    errors = []
    panel = params["panel"]
    for key, model in panel.items():
        errors += _model_errors(key, model, params)
    errors += _sim_style_errors(params)
    errors += _sim_block_errors(panel)
    errors += [f"max_failures.{key}: model {key!r} is not defined under panel"
               for key in params["max_failures"] if key not in panel]
    for study in active(params):
        missing = [name for name in study.requires if params.get(name) is None]
        if missing:
            errors.append(f"{study.name}: needs the {', '.join(missing)} study (a "
                          f"`{missing[0]}:` block), whose results it builds on")
            continue
        validate = study.load("validate")
        if validate is not None:
            errors += validate(params)
    if needs and not errors:  # what each study needs of its judges, once its keys are sound
        from judgebias.abilities import unmet_needs

        errors += unmet_needs(params)
    return errors


def _model_errors(key: str, model: Mapping[str, Any], params: Mapping[str, Any]) -> list[str]:
    """A panel entry's families, then its backend's rules (the registry's,
    judgebias.models.backends.model_errors: fields, batch mode, the backend's check)."""
    from judgebias.models.backends import model_errors

    families = params["families"]
    errors = []
    if model["family"] not in families:
        errors.append(f"panel.{key}.family: family {model['family']!r} is not defined "
                      "under families")
    for i, family in enumerate(model.get("also_in", [])):
        if family not in families:
            errors.append(f"panel.{key}.also_in[{i}]: family {family!r} is not defined "
                          "under families")
        elif family == model["family"]:
            errors.append(f"panel.{key}.also_in[{i}]: {family!r} is already the model's "
                          f"family (panel.{key}.family); list only further families")
    return errors + model_errors(key, model, params)


def _sim_style_errors(params: Mapping[str, Any]) -> list[str]:
    """The sim's documented rules for styles (judgebias.models.sim): a signature or opener
    uses no scene word, and no two simulated models share a signature (a judge could not
    tell their captions apart, so planted self-preference would leak to the other)."""
    from judgebias.data.scenes import scene_words

    errors: list[str] = []
    owners: dict[str, str] = {}
    styles = [(f"panel.{key}.sim.signature", model["sim"]["signature"], key)
              for key, model in params["panel"].items() if "sim" in model]
    styles += [(f"families.{name}.sim.opener", family["sim"]["opener"], None)
               for name, family in params["families"].items() if "sim" in family]
    for where, text, key in styles:
        clash = scene_words(text)
        if clash:
            errors.append(f"{where}: {text!r} uses scene words {clash}, which would change "
                          "what a caption claims")
        if key is None:
            continue
        signature = text.strip().lower()
        if signature in owners:
            errors.append(f"{where}: signature {text!r} is also panel.{owners[signature]}'s; "
                          "simulated models need distinct signatures")
        owners.setdefault(signature, key)
    return errors


def _sim_block_errors(panel: Mapping[str, Any]) -> list[str]:
    """A study's traits block under a simulated model's ``sim:`` must carry that study's
    name: a misspelt block (``sim.brich``) would be ignored, and the judge would silently
    run on the study's default traits."""
    from judgebias.study import registered

    core = set(params_schema()["$defs"]["model"]["properties"]["sim"]["properties"])
    blocks = sorted(name for name, study in registered().items()
                    if study.sim and study.sim_traits)
    return [f"panel.{key}.sim.{name}: unknown key (the core traits: {', '.join(sorted(core))}; "
            f"a study's trait block: {', '.join(blocks)})"
            for key, model in panel.items() for name in model.get("sim", {})
            if name not in core and name not in blocks]


def params_warnings(params: Mapping[str, Any]) -> list[str]:
    """What a validated config runs but quietly fills in or cannot act on (the sim's
    preferences for real models, then each active study's ``warnings``), for every
    front door to print (`judgebias validate`, a Snakemake run, DVC's params stage):
    nothing here stops a run."""
    from judgebias.study import gathered

    return _sim_preference_warnings(params) + gathered(params, "warnings")


def _sim_preference_warnings(params: Mapping[str, Any]) -> list[str]:
    """A simulated judge's planted preference for a real model (or a family without a
    simulated opener) is valid, but the sim recognises a model's captions only by its
    planted signature and a family's by its opener (judgebias.models.sim), so it can
    never act; the judge's world leaves such models out (registry.sim_world; issue 39)."""
    panel, families = params["panel"], params["families"]
    lines = []
    for key, model in panel.items():
        prefs = (model.get("sim") or {}).get("preferences", {})
        for other in prefs.get("models", {}):
            backend = panel[other]["backend"]
            if backend != "sim":
                lines.append(f"panel.{key}.sim.preferences.models.{other}: {other!r} is not "
                             f"simulated (backend {backend}), and a simulated judge "
                             "recognises another model's captions only by its planted "
                             "signature, so this preference changes no score")
        for family in prefs.get("families", {}):
            if "sim" not in families[family]:
                lines.append(f"panel.{key}.sim.preferences.families.{family}: family "
                             f"{family!r} has no simulated opener (families.{family}.sim), "
                             "the only way a simulated judge recognises a family's captions, "
                             "so this preference changes no score")
    return lines


def path_errors(where: str, path: str | None, *, directory: bool = False,
                what: str = "") -> list[str]:
    """An error line (a MissingPath) if a params path does not exist, checked before any
    paid call; `what` says what belongs there and where to get it (the published
    dataset), so the line tells a user of a placeholder path what to download."""
    if path is None:
        return []
    target = Path(path)
    ok = target.is_dir() if directory else target.is_file()
    if ok:
        return []
    return [MissingPath(where, path, "folder" if directory else "file", what)]


def validate_params(params: Any, source: str = "params.yaml", *,
                    data: bool = True, needs: bool = True) -> dict[str, Any]:
    """Validate a parsed params mapping and return it with schema defaults filled in.

    Raises ConfigError listing every problem, each prefixed by the dotted key path; if
    the only problems are files that do not exist (MissingPath), DataNotDownloaded, which
    explains each one. With ``data=False`` those are not problems: everything else is
    checked (`judgebias validate --no-data`; `judgebias plan`, which counts a dataset not
    downloaded yet from its declared size). With ``needs=False`` the studies' needs of their
    judges are not checked (`judgebias probe`, which measures what a judge can give: a
    table too pessimistic must not keep it from correcting it).
    """
    if not isinstance(params, dict):
        raise ConfigError(f"{source}: expected a mapping at the top level")
    errors = _schema_errors(params)
    if not errors:
        params = with_defaults(params)
        errors = _reference_errors(params, needs)
    missing: list[str] = [e for e in errors if isinstance(e, MissingPath)]
    broken = [e for e in errors if not isinstance(e, MissingPath)]
    if broken:
        shown = broken + missing if data else broken
        raise ConfigError(f"{source}: invalid configuration:\n  " + "\n  ".join(shown))
    if missing and data:
        raise DataNotDownloaded(
            f"{source}: valid, but {len(missing)} path(s) it names do not exist yet (not "
            "downloaded: each line names the key, the path, what belongs there and where "
            "to get it):\n  " + "\n  ".join(missing) + "\nDownload each to its path (or "
            f"point the key at your copy). `judgebias --params {source} validate --no-data` "
            "checks everything else; `judgebias plan` needs no data.")
    return params


PARAMS_ENV = "JUDGEBIAS_PARAMS"  # another params file than params.yaml (workflow/rules/common.smk)


def params_path() -> str:
    """The params file a command reads unless told otherwise: ``$JUDGEBIAS_PARAMS``, else
    ``params.yaml``. Snakemake sets it for its jobs (``--config params=FILE``) instead of
    naming the file in their commands, so a job's identity never includes where the file
    lies (issue 39)."""
    return os.environ.get(PARAMS_ENV) or "params.yaml"


def load_config(path: str | Path = "params.yaml", *, data: bool = True,
                needs: bool = True) -> dict[str, Any]:
    """Read and validate params.yaml (``data=False``: files it names need not exist yet;
    ``needs=False``: the studies' needs of their judges unchecked; see validate_params)."""
    path = Path(path)
    try:
        params = load_yaml(path.read_text())
    except FileNotFoundError as exc:
        raise ConfigError(f"{path}: file not found") from exc
    except DuplicateKeyError as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from exc
    return validate_params(params, str(path), data=data, needs=needs)


@contextmanager
def input_errors(key: str) -> Iterator[None]:
    """Turn a bad input file found by a step (missing, malformed, a CSV without its
    columns) into one ConfigError line naming the params key; the importers' own message
    already names the file and the row or key."""
    try:
        yield
    except FileNotFoundError as exc:
        raise ConfigError(f"{key}: file {exc.filename} does not exist") from exc
    except (ValueError, KeyError, OSError) as exc:
        raise ConfigError(f"{key}: {exc}") from exc


def missing_secrets(params: Mapping[str, Any], keys: Iterable[str]) -> list[str]:
    """Errors for panel models whose API-key environment variable is not set."""
    errors = []
    for key in keys:
        name = params["panel"][key].get("api_key_env")
        if name and not os.environ.get(name):
            errors.append(f"panel.{key}.api_key_env: environment variable {name} is not set")
    return errors


# Run settings: keys that change how a run goes (budgets, prices, client limits, where a
# file lies, how much memory a job asks for), never what is answered. The schema marks
# each with `x-run-setting: true` (RUN_SETTING: params.schema.yaml, or a view's
# `key(run_setting=True)`, judgebias.paramsblock); no job declares them, so changing
# one reruns nothing (issue 39). `max_failures` only decides whether a job with failed
# calls may write its output (with those rows marked "failed", counted by every
# analysis); the journal's keys hold no budget, price, endpoint or batch flag.


def _resolved(schema: Mapping[str, Any], node: Mapping[str, Any]) -> Mapping[str, Any]:
    """`node`, or the ``$defs`` entry its ``$ref`` names."""
    ref = node.get("$ref")
    return schema["$defs"][ref.rsplit("/", 1)[-1]] if ref else node


def _schema_node(schema: Mapping[str, Any], dotted: str) -> Mapping[str, Any] | None:
    """The schema of the value at `dotted` (None where the schema does not say)."""
    node: Mapping[str, Any] = schema
    for part in dotted.split("."):
        node = _resolved(schema, node)
        child = node.get("properties", {}).get(part, node.get("additionalProperties"))
        if not isinstance(child, Mapping):
            return None
        node = child
    return _resolved(schema, node)


def _holds_run_setting(schema: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    node = _resolved(schema, node)
    children = [*node.get("properties", {}).values(), node.get("additionalProperties")]
    return any(isinstance(c, Mapping) and (c.get(RUN_SETTING) or _holds_run_setting(schema, c))
               for c in children)


def is_run_setting(dotted: str) -> bool:
    """Whether the key at `dotted` (``panel.<m>.pricing``, ``backends``) is a run setting."""
    node = _schema_node(params_schema(), dotted)
    return bool(node and node.get(RUN_SETTING))


def answer_keys(params: Mapping[str, Any], keys: Iterable[str]) -> list[str]:
    """The keys a job declares for `keys`: each block that holds run settings (a panel
    model's block, ``panel``) replaced by its other keys present in `params`, recursively.
    A key that names a run setting itself stays: the rule says it reads it for its answer
    (BIRCH's cost table prices its tokens with ``panel.<m>.pricing``)."""
    schema = params_schema()

    def expand(key: str, named: bool) -> list[str]:
        node = _schema_node(schema, key)
        if node is None:
            return [key]
        if node.get(RUN_SETTING):
            return [key] if named else []
        value = get_key(params, key)
        if not (isinstance(value, Mapping) and _holds_run_setting(schema, node)):
            return [key]
        return [k for child in value for k in expand(f"{key}.{child}", named=False)]

    return list(dict.fromkeys(k for key in keys for k in expand(key, named=True)))


def result_keys(params: Mapping[str, Any]) -> list[str]:
    """The keys that can change a result: every top-level key but run settings, with
    the run settings inside blocks left out (:func:`answer_keys`)."""
    return answer_keys(params, [k for k, v in params_schema()["properties"].items()
                                if k in params and not v.get(RUN_SETTING)])


def get_key(params: Mapping[str, Any], dotted: str) -> Any:
    """The value at a dotted key path such as ``panel.lumen-large``."""
    node: Any = params
    for part in dotted.split("."):
        node = node[part]
    return node


def fingerprint(value: Any) -> str:
    """Stable short hash of a JSON-able value (used in provenance)."""
    blob = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]
