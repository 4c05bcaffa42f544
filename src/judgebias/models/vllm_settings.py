"""The vllm backend's panel settings beyond ``engine``: LoRA adapters per modality, a chat
template override, and the per-prompt image limit its studies need.

Why these live here, apart from :mod:`judgebias.models.vllm_backend`: the registry's
config check and journal version (:mod:`judgebias.models.backends`,
:func:`judgebias.models.registry.vllm_version`) read them in every process that reads
params.yaml, which must not import vLLM or torch; the backend reads the same functions
when it builds the engine, so what is checked, keyed and sent is one thing.

**LoRA adapters** (``panel.<key>.lora``: modality -> adapter). Some models answer through
an adapter on top of their base weights: Phi-4-multimodal's vision path in vLLM is the
LoRA adapter in its repository's ``vision-lora`` folder, and without it the model answers
images from its base language weights (issue 41 item 5). A request with at least one
image is sent with the ``image`` adapter, a text-only one with the ``text`` adapter, each
only where the entry names one (Phi-4-multimodal's text-only requests use no adapter: its
speech adapter is for audio, which no study sends). An adapter is a folder in PEFT's
format (``adapter_config.json``, ``adapter_model.safetensors``), named as

* an absolute path, or one starting with ``./``, ``../`` or ``~``: a folder on this
  machine (relative to the working directory, the project root);
* anything else: a folder of the model's own repository (``vision-lora``): inside
  ``model_id`` where that is a local folder, else in the hub repository ``model_id`` at
  ``revision``, downloaded by the job with the model.

**Journal version.** The adapters and the template change every answer, so they are part
of the version string (:func:`version_suffix`); a model with neither keeps its version
byte for byte. An adapter folder on this machine is keyed by the digest of its files
(another adapter at the same path never reuses old answers); a hub repository's folder by
its name, its content being pinned as the base weights are, by ``model_id`` and
``revision`` in every request key (pin ``revision`` to a commit to pin both). A folder
not on this machine (``judgebias plan`` run elsewhere) is keyed as absent, which matches
no answer; a job never gets that far, as validation refuses the missing folder first.

**Image limit.** vLLM reserves memory for ``limit_mm_per_prompt`` images per prompt and
rejects a request with more. :func:`images_per_prompt` takes the largest number of images
any request of the model's studies sends, from the studies' declared needs
(:mod:`judgebias.abilities`: MMB's judges and FRAME's analysis judge send two, every
other role one or none), so no study is named here; an explicit
``engine.limit_mm_per_prompt`` wins where larger, and a smaller one is a config error.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from judgebias.config import fingerprint, path_errors

MODALITIES = ("image", "text")  # which adapter a request takes: with images, or text only
ADAPTER_CONFIG = "adapter_config.json"
ADAPTER_WHAT = ("a LoRA adapter folder in PEFT's format (adapter_config.json, "
                "adapter_model.safetensors)")
# vllm.config.lora.MaxLoRARanks in vLLM 0.32 (max_lora_rank takes only these); the
# backend reads the installed vLLM's own list where it has one.
LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)
ABSENT = "absent"


# --- LoRA adapters ---------------------------------------------------------------------

@dataclass(frozen=True)
class Adapter:
    """One configured adapter: where ``panel.<key>.lora.<modality>`` points.

    ``folder``: the folder on this machine (None for a folder of a hub repository);
    ``subfolder``: the folder's name inside the model's hub repository (None otherwise).
    """

    modality: str
    ref: str
    folder: Path | None
    subfolder: str | None

    @property
    def where(self) -> str:
        return f"lora.{self.modality}"


def is_local_path(ref: str) -> bool:
    """Whether an adapter reference names a folder on this machine, not in the model."""
    return os.path.isabs(ref) or ref.startswith(("./", "../", "~"))


def model_is_local(model_id: str) -> bool:
    """Whether ``model_id`` is a folder on this machine (as vLLM decides: it exists)."""
    return os.path.isdir(os.path.expanduser(model_id))


def adapter(model_id: str, modality: str, ref: str) -> Adapter:
    """Where adapter `ref` of `modality` lies for model `model_id` (module docstring)."""
    if is_local_path(ref):
        return Adapter(modality, ref, Path(os.path.expanduser(ref)), None)
    if model_is_local(model_id):
        return Adapter(modality, ref, Path(os.path.expanduser(model_id)) / ref, None)
    return Adapter(modality, ref, None, ref.strip("/"))


def adapters(model_id: str, lora: Mapping[str, str] | None) -> dict[str, Adapter]:
    """Every configured adapter by modality, in :data:`MODALITIES` order."""
    lora = lora or {}
    return {m: adapter(model_id, m, lora[m]) for m in MODALITIES if m in lora}


def request_modality(n_images: int) -> str:
    """The adapter a request takes: ``image`` with any image, else ``text``."""
    return "image" if n_images else "text"


def adapter_rank(folder: Path) -> int:
    """The largest LoRA rank of an adapter: ``r``, or a larger one in ``rank_pattern``
    (PEFT's per-module ranks, which vLLM's ``max_lora_rank`` must cover too)."""
    config = json.loads((folder / ADAPTER_CONFIG).read_text(encoding="utf-8"))
    ranks = [int(config["r"]), *(int(r) for r in (config.get("rank_pattern") or {}).values())]
    return max(ranks)


def lora_rank_option(rank: int, allowed: tuple[int, ...] = LORA_RANKS) -> int:
    """The smallest ``max_lora_rank`` vLLM accepts that covers `rank` (a rank above every
    allowed value is returned as it is, for vLLM to refuse in its own words)."""
    return next((r for r in sorted(allowed) if r >= rank), rank)


def _stat_signature(folder: Path) -> tuple[tuple[str, int, int, int, int], ...]:
    rows = []
    for root, dirs, files in os.walk(folder, followlinks=True):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(f for f in files if not f.startswith(".")):
            stat = (Path(root) / name).stat()
            rows.append(((Path(root) / name).relative_to(folder).as_posix(), stat.st_size,
                         stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino))
    return tuple(rows)


@cache
def _tree_digest(folder: str, signature: tuple[tuple[str, int, int, int, int], ...]) -> str:
    from judgebias.io.filedigest import tree_sha256

    return tree_sha256(folder)


def adapter_identity(item: Adapter) -> str:
    """What keys an adapter's answers: its files' digest where the folder is on this
    machine, else its folder's name in the model's hub repository (module docstring).
    Remembered per process while no file of the folder changes (a job asks twice)."""
    if item.folder is None:
        return f"hub:{item.subfolder}"
    if not (item.folder / ADAPTER_CONFIG).is_file():
        return f"{ABSENT}:{item.folder}"
    folder = item.folder.resolve()
    return "sha256:" + _tree_digest(str(folder), _stat_signature(folder))


# --- the chat template -----------------------------------------------------------------

def is_inline_template(value: str) -> bool:
    """A ``chat_template`` holding Jinja itself, not the path of a file holding it."""
    return "{{" in value or "{%" in value


def chat_template_text(value: str | None) -> str | None:
    """The template a ``chat_template`` setting names (its text, or its file's); None
    when unset. FileNotFoundError for a missing file (validation reports it first)."""
    if value is None:
        return None
    if is_inline_template(value):
        return value
    return Path(os.path.expanduser(value)).read_text(encoding="utf-8")


def template_identity(value: str) -> str:
    try:
        text = chat_template_text(value)
    except OSError:
        return ABSENT
    return hashlib.sha256((text or "").encode("utf-8")).hexdigest()[:16]


# --- the journal version ---------------------------------------------------------------

def version_suffix(model_id: str, fields: Mapping[str, Any]) -> str:
    """What the adapters and the chat template add to the vllm version string ("" when
    the entry sets neither, so existing versions stay byte for byte the same)."""
    parts = []
    configured = adapters(model_id, fields.get("lora"))
    if configured:
        parts.append("lora-" + fingerprint({m: adapter_identity(a)
                                            for m, a in configured.items()}))
    if fields.get("chat_template") is not None:
        parts.append("template-" + template_identity(fields["chat_template"]))
    return "".join(f"+{part}" for part in parts)


# --- the image limit -------------------------------------------------------------------

def images_needed(params: Mapping[str, Any], key: str) -> int:
    """The most images one request of panel model `key`'s studies sends (0 if none),
    from every active study's declared needs (judgebias.abilities)."""
    from judgebias.abilities import study_needs

    return max((need.images_per_request for need in study_needs(params)
                if key in need.models), default=0)


def images_per_prompt(params: Mapping[str, Any], key: str) -> int:
    """The engine's image limit for model `key`: :func:`images_needed`, at least 1.

    At least one, as a vision model's engine then profiles its vision path anyway (a
    limit of 0 saves little) and a role that sends an image without its study declaring
    it is still answered, not refused; a text-only model ignores the limit."""
    return max(images_needed(params, key), 1)


def explicit_image_limit(engine: Mapping[str, Any]) -> int | None:
    """``engine.limit_mm_per_prompt.image`` as a count (vLLM takes ``{"image": n}`` or
    ``{"image": {"count": n, ...}}``); None where unset. ValueError if malformed."""
    limits = engine.get("limit_mm_per_prompt")
    if limits is None:
        return None
    if not isinstance(limits, Mapping):
        raise ValueError("must be a mapping of modality to count, e.g. {image: 2}")
    value = limits.get("image")
    if value is None:
        return None
    if isinstance(value, Mapping):
        value = value.get("count")
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError("image: must be a count (an integer >= 0, or {count: n, ...})")
    return value


def with_image_limit(engine_args: Mapping[str, Any], needed: int) -> dict[str, Any]:
    """The engine args with ``limit_mm_per_prompt.image`` set to `needed` unless the
    params state it (an explicit one wins; :func:`check` refuses one below need)."""
    args = dict(engine_args)
    if explicit_image_limit(args) is None:
        args["limit_mm_per_prompt"] = {**(args.get("limit_mm_per_prompt") or {}),
                                       "image": needed}
    return args


# --- the registry's config check -------------------------------------------------------

def check(key: str, entry: Mapping[str, Any], params: Mapping[str, Any]) -> list[str]:
    """The vllm entry's rules the schema cannot state (the registry's ``check``): each
    adapter folder and template file exists here, LoRA is not switched off under
    adapters, an explicit ``max_lora_rank`` covers each readable adapter's rank, and an
    explicit image limit covers the largest request of the model's studies."""
    where, engine = f"panel.{key}", entry.get("engine") or {}
    errors: list[str] = []
    configured = adapters(entry["model_id"], entry.get("lora"))
    for item in configured.values():
        if not item.ref.strip() or (item.subfolder is not None
                                    and ".." in Path(item.subfolder).parts):
            errors.append(f"{where}.{item.where}: {item.ref!r} names no adapter folder (a "
                          "folder of the model's repository, or a path starting with /, "
                          "./, ../ or ~)")
        elif item.folder is not None:
            errors += path_errors(f"{where}.{item.where}",
                                  str(item.folder / ADAPTER_CONFIG), what=ADAPTER_WHAT)
    if configured and engine.get("enable_lora") is False:
        errors.append(f"{where}.engine.enable_lora: false, but {where}.lora names adapters "
                      "(leave it out: the backend turns LoRA on for them)")
    rank = engine.get("max_lora_rank")
    for item in configured.values():
        if rank is None or item.folder is None or not (item.folder / ADAPTER_CONFIG).is_file():
            continue
        try:
            needed = adapter_rank(item.folder)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            errors.append(f"{where}.{item.where}: cannot read the rank r of "
                          f"{item.folder / ADAPTER_CONFIG}: {exc!r}")
            continue
        if isinstance(rank, int) and rank < needed:
            errors.append(f"{where}.engine.max_lora_rank: {rank} is below the rank {needed} "
                          f"of the {item.modality} adapter ({item.ref}); leave it out to "
                          "take the adapters' own")
    template = entry.get("chat_template")
    if template is not None and not is_inline_template(template):
        errors += path_errors(f"{where}.chat_template", os.path.expanduser(template),
                              what="a Jinja chat template (or give the template itself)")
    return errors + _image_limit_errors(key, engine, params)


def _image_limit_errors(key: str, engine: Mapping[str, Any], params: Mapping[str, Any]
                        ) -> list[str]:
    where = f"panel.{key}.engine.limit_mm_per_prompt"
    try:
        explicit = explicit_image_limit(engine)
    except ValueError as exc:
        return [f"{where}: {exc}"]
    if explicit is None:
        return []
    try:
        needs = [n for n in _study_needs(params) if key in n.models]
    except Exception:  # a study not sound yet: see _study_needs
        return []
    most = max(needs, key=lambda n: n.images_per_request, default=None)
    if most is None or explicit >= most.images_per_request:
        return []
    return [f"{where}.image: {explicit}, but {most.study} ({most.role}) sends "
            f"{most.images_per_request} images in one request to it; raise it, or leave it "
            "out to take the largest request of the model's studies"]


def _study_needs(params: Mapping[str, Any]) -> list[Any]:
    """The studies' needs, read before the studies' own checks run (the registry's
    checks come first): a study whose block is unsound may raise here, and is then left
    to its own check, which names the problem; judgebias.abilities.unmet_needs calls
    the same functions once every study is sound, so no error is hidden."""
    from judgebias.abilities import study_needs

    return study_needs(params)
