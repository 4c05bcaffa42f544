"""What a study needs from a judge, what each panel model can give, checked before any call.

Issue 41 item 6. A mismatch between a study and a judge used to be found by the job that
failed (a reasoning model refusing log-probs at its first call), or worse by a study that
quietly fell back (philautia's expected score silently turned into the parsed one for a
judge without log-probs). Here each study declares, per role, what its requests need
(`Need`: the answer token's log-probs, images in one request, a system prompt, sampling
at a temperature above 0, several samples of one request); each panel model's abilities
are its backend's defaults (the registry's `Abilities`, judgebias.models.backends), then
what the backend makes of the model's own settings (``BackendSpec.model_abilities``),
then what `judgebias probe` saw the provider do (judgebias.probe_record), then the
user's ``panel.<key>.abilities``; and `unmet_needs` lists every (study, role,
model) whose need is not met, naming all three, what is missing and the fallback the user
can choose. `judgebias.config.validate_params` calls it, so `judgebias validate`, `plan`,
every Snakemake run and every job refuse such a configuration before paying.

A study declares ``needs="<module>:needs"`` on its `judgebias.study.Study`: a function of
the validated params returning its `Need` list (only what its settings really need:
philautia needs log-probs only with ``score: expected``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from judgebias.models.backends import Abilities, backend_spec, load
from judgebias.probe_record import probed


@dataclass(frozen=True)
class Need:
    """What one role of a study needs from each of its models.

    ``fallback``: what the user can change instead (a setting of the study, or leaving
    the model out of the role), said when the need is not met."""

    study: str
    role: str
    models: Sequence[str]
    fallback: str
    answer_logprobs: bool = False
    images_per_request: int = 0
    system_prompt: bool = False
    temperature: bool = False
    n_samples: bool = False
    why: Mapping[str, str] = dataclasses.field(default_factory=dict)  # need -> reason


def model_abilities(params: Mapping[str, Any], key: str) -> Abilities:
    """Panel model `key`'s abilities: its backend's defaults, what its own settings
    change (the backend's ``model_abilities``), what `judgebias probe` found its provider
    do (a record made for its present settings: judgebias.probe_record), then
    ``panel.<key>.abilities``, the user's word, last."""
    entry = params["panel"][key]
    spec = backend_spec(entry["backend"])
    abilities = spec.abilities
    if spec.model_abilities is not None:
        abilities = load(spec.model_abilities)(abilities, entry)
    abilities = probed(params, key, abilities)
    return dataclasses.replace(abilities, **entry.get("abilities", {}))


_WORDS = {"answer_logprobs": "the answer token's log-probs",
          "system_prompt": "a system prompt",
          "temperature": "sampling at a temperature above 0",
          "n_samples": "several samples of one request"}


def missing(need: Need, abilities: Abilities) -> list[str]:
    """What `abilities` lacks of `need`, in words."""
    lacks = [_WORDS[name] for name in _WORDS
             if getattr(need, name) and not getattr(abilities, name)]
    limit = abilities.images_per_request
    if limit is not None and need.images_per_request > limit:
        lacks.append(f"{need.images_per_request} images in one request (it takes {limit})")
    return lacks


def study_needs(params: Mapping[str, Any]) -> list[Need]:
    """Every active study's declared needs."""
    from judgebias.study import gathered

    return gathered(params, "needs")


def unmet_needs(params: Mapping[str, Any]) -> list[str]:
    """One error line per (study, role, model) whose need the model cannot meet."""
    errors = []
    for need in study_needs(params):
        for key in need.models:
            if key not in params["panel"]:
                continue  # the study's own reference check names it
            lacks = missing(need, model_abilities(params, key))
            if not lacks:
                continue
            backend = params["panel"][key]["backend"]
            reasons = "; ".join(need.why[k] for k in need.why if _WORDS.get(k) in lacks)
            errors.append(
                f"{need.study} ({need.role}): panel.{key} cannot give "
                f"{' and '.join(lacks)}{f' ({reasons})' if reasons else ''}, as far as its "
                f"{backend} backend's defaults, its settings and any `judgebias probe "
                f"{key}` record say; instead: {need.fallback} (or state "
                f"panel.{key}.abilities if the provider does offer it)")
    return errors
