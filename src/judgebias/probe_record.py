"""What `judgebias probe` found a panel model's provider do, kept beside the journal.

A record is ``<journal_dir>/probes/<panel key>.json`` (judgebias.probe writes it): per
ability, whether the provider accepted the request, refused it (in its own words) or what
came back, and the abilities measured. `judgebias validate` (through
judgebias.abilities.model_abilities) takes those over the backend's table, so a wrong
table is found by a handful of calls, not by the first of a hundred thousand.

A record holds the fingerprint of the settings it was made for: the model's
answer-relevant keys (judgebias.config.answer_keys: backend, model id, revision, sampling,
the backend's own fields such as a thinking budget; not run settings such as base_url,
pricing or ``abilities``). What a provider does depends on them (a reasoning setting that
refuses log-probs, a temperature a model refuses), so a record made for other settings
is not used, and `judgebias plan` says it is stale.

Why a module of its own, this small: every params check reads it, so it is in the code
of every rule (judgebias.workflow.codedeps) and imports nothing that check does not
already; the code that sends the probes (judgebias.probe, with the backends) stays out
of every rule's code.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from judgebias.config import ConfigError, answer_keys, fingerprint, get_key
from judgebias.io.atomicfile import atomic_path
from judgebias.models.backends import Abilities

PROBE_DIR = "probes"  # under journal_dir: the records, and the probes' own journal
# The abilities a probe measures (n_samples needs a request no backend here expresses).
MEASURED = ("answer_logprobs", "system_prompt", "temperature", "images_per_request")


def record_path(params: Mapping[str, Any], key: str) -> Path:
    """Where panel model `key`'s probe record lies."""
    return Path(params["journal_dir"]) / PROBE_DIR / f"{key}.json"


def settings_fingerprint(params: Mapping[str, Any], key: str) -> str:
    """The fingerprint of `key`'s answer-relevant settings (module docstring)."""
    keys = answer_keys(params, [f"panel.{key}"])
    return fingerprint({name: get_key(params, name) for name in keys})


def read_record(params: Mapping[str, Any], key: str) -> dict[str, Any] | None:
    """`key`'s probe record, whatever settings it was made for (None if there is none);
    a file that is not one is a ConfigError naming it (a record is written atomically,
    so only a hand edit breaks one)."""
    path = record_path(params, key)
    try:
        record = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: not a probe record ({exc}); delete it or run "
                          f"`judgebias probe {key}` again") from exc
    if not (isinstance(record, dict) and isinstance(record.get("abilities"), dict)):
        raise ConfigError(f"{path}: not a probe record (no abilities); delete it or run "
                          f"`judgebias probe {key}` again")
    return record


def current_record(params: Mapping[str, Any], key: str) -> dict[str, Any] | None:
    """`key`'s probe record if it was made for the model's present settings."""
    record = read_record(params, key)
    if record is None or record.get("settings") != settings_fingerprint(params, key):
        return None
    return record


def probed(params: Mapping[str, Any], key: str, abilities: Abilities) -> Abilities:
    """`abilities` with what the probe of `key` measured, where a current record exists.

    Images: a refusal sets the limit (the most accepted); two accepted images only show
    the limit is at least two, so they raise a lower limit and leave an unknown one."""
    record = current_record(params, key)
    if record is None:
        return abilities
    changes = {name: value for name, value in record["abilities"].items()
               if name in MEASURED}
    accepted = int(record.get("images_accepted", 0))
    limit = abilities.images_per_request
    if "images_per_request" not in changes and limit is not None and accepted > limit:
        changes["images_per_request"] = accepted
    return dataclasses.replace(abilities, **changes)


def write_record(params: Mapping[str, Any], key: str, record: Mapping[str, Any]) -> Path:
    """Write `key`'s record atomically (a reader sees the old one or the new one)."""
    path = record_path(params, key)
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    return path
