"""Text-to-image backends of FRAME's benchmark construction (seed 004 §4.1: DALL-E 3 "with
a default setting"), behind one small interface: ``generate(prompt, seed) -> PNG bytes``.

* ``offline``: the offline renderer (judgebias.studies.frame.scene), the default; it also
  knows what it drew and where the objects are (:meth:`OfflineRenderer.scene`), so the
  true alignment and the object boxes are known.
* ``openai``: the OpenAI images API (``client.images.generate(model, prompt, size,
  quality, response_format="b64_json", n=1)``) of api.openai.com or any OpenAI-compatible
  server (``base_url``; ``judgebias serve-sim`` answers it with the offline renderer). The
  key is read from the environment variable ``api_key_env`` only, and never logged or
  written anywhere. The API takes no seed: set B (Fig. 3) is a second, separately cached
  generation of the same prompt. ``send_seed: true`` sends the seed anyway (as an extra
  ``seed`` field, which serve-sim honours; api.openai.com would reject it).
* ``diffusers``: a local diffusers pipeline, seeded with a ``torch.Generator``; an
  optional extra: ``pip install 'judgebias[diffusers]'``. ``device: auto`` (the default)
  is the GPU the job was given, or the CPU where torch sees none, and the job's log says
  which (models.gpu.device_line). A ``model`` that is a local folder is read from there
  only, never looked up on the model hub.

A paid image is never paid twice: :func:`cached_generate` looks the image up in an on-disk
cache (default ``.judgebias/images/``) keyed by the sha256 of (backend, model, size,
quality, prompt, seed) before any call, and writes every new image there atomically
(after checking that it decodes) before the next one is asked for. A killed job resumes
where it stopped; a rerun makes no call. For diffusers the key holds what changes the
picture (issue 39): the pipeline's files by their content (sha256 over the model folder,
each file's digest remembered by its identity: judgebias.io.filedigest; a hub id's
snapshot folder likewise), steps, guidance, the versions of diffusers, torch and
transformers, and the torch device type, as CPU and CUDA draw different noise from one
seed (a job given a GPU draws its own pictures rather than reusing the CPU's, so
deleting the cache changes no image). Bad configuration (an unknown backend or option, a
missing key variable, diffusers not installed) is an error before any call.

Role: a helper of data.py (stage 3: the images of sets A and B).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from PIL import Image, UnidentifiedImageError

from judgebias.io.artifacts import write_bytes
from judgebias.models.gpu import device_line, torch_device
from judgebias.models.journal import TooManyFailures

BACKENDS = ("offline", "openai", "diffusers")
DEFAULT_CACHE_DIR = ".judgebias/images"
MEMO = "file-sha256"  # the model files' digests, in the cache folder (judgebias.io.filedigest)
_WHERE = "frame.dataset.synthetic.images"

log = logging.getLogger(__name__)


class ImageRefused(RuntimeError):
    """The backend refused this one prompt for good (the OpenAI API's 400, e.g. a content
    policy rejection): the item is left out with a status, the job goes on."""


class TextToImage(Protocol):
    name: str

    def describe(self) -> dict[str, Any]:
        """What, besides prompt and seed, determines the image (part of the cache key)."""
        ...

    def generate(self, prompt: str, seed: int) -> bytes: ...


def _png(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


class OfflineRenderer:
    """The offline renderer (judgebias.studies.frame.scene.render) as a text-to-image model."""

    name = "offline"

    def __init__(self, size: int = 256, error_rate: float = 0.1) -> None:
        self.size, self.error_rate = int(size), float(error_rate)

    def describe(self) -> dict[str, Any]:
        return {"backend": self.name, "size": self.size, "error_rate": self.error_rate}

    def scene(self, prompt: str, seed: int) -> Any:
        """The rendered scene: ``image``, ``domain``, ``drawn`` (slot -> value drawn) and
        ``boxes`` (object boxes in image pixels)."""
        from judgebias.studies.frame.scene import render

        return render(prompt, size=self.size, seed=seed, error_rate=self.error_rate)

    def generate(self, prompt: str, seed: int) -> bytes:
        return _png(self.scene(prompt, seed).image)


def served_image(prompt: str, size: int, seed: int) -> bytes:
    """What ``serve-sim`` answers an images request with (``Study.sim_images``): the
    offline renderer's picture of the prompt, `size` px wide."""
    return OfflineRenderer(size).generate(prompt, seed)


class OpenAIImages:
    """The OpenAI images API (DALL-E 3 in the paper) through the openai SDK."""

    name = "openai"

    def __init__(self, model: str = "dall-e-3", size: str = "1024x1024",
                 quality: str = "standard", base_url: str | None = None,
                 api_key_env: str = "OPENAI_API_KEY", *, send_seed: bool = False,
                 timeout_s: float = 120.0, max_retries: int = 4) -> None:
        key = os.environ.get(api_key_env)
        if not key:
            raise ValueError(f"{_WHERE}.options.api_key_env: the environment variable "
                             f"{api_key_env} is not set (the OpenAI images API needs a key)")
        from openai import OpenAI

        self.model, self.size, self.quality = model, size, quality
        self.send_seed = bool(send_seed)
        self.client = OpenAI(api_key=key, base_url=base_url, timeout=timeout_s,
                             max_retries=max_retries)

    def describe(self) -> dict[str, Any]:
        return {"backend": self.name, "model": self.model, "size": self.size,
                "quality": self.quality}

    def generate(self, prompt: str, seed: int) -> bytes:
        import openai

        kwargs: dict[str, Any] = {"model": self.model, "prompt": prompt, "size": self.size,
                                  "quality": self.quality, "n": 1}
        if not self.model.startswith("gpt-image"):  # gpt-image-* always answer base64
            kwargs["response_format"] = "b64_json"
        if self.send_seed:
            kwargs["extra_body"] = {"seed": int(seed)}
        try:
            answer = self.client.images.generate(**kwargs)
        except openai.BadRequestError as exc:
            raise ImageRefused(f"{self.model} refused the prompt: {exc.message}") from exc
        except (openai.APIConnectionError, openai.InternalServerError,
                openai.RateLimitError) as exc:
            # An outage: a failed job, never an answer. The images made so far are cached,
            # so running the job again asks only for the rest.
            raise TooManyFailures(f"{_WHERE}: {self.model} failed after the SDK's retries "
                                  f"({type(exc).__name__}: {exc}); nothing was written: run "
                                  "again to retry (the images made so far are cached)") from exc
        data = (answer.data or [None])[0]
        if data is None or not data.b64_json:
            raise RuntimeError(f"{self.model}: the images API answered without b64_json")
        try:
            return base64.b64decode(data.b64_json, validate=True)
        except binascii.Error as exc:
            raise RuntimeError(f"{self.model}: the images API answered bad base64") from exc


class DiffusersPipeline:
    """A local diffusers text-to-image pipeline (any ``AutoPipelineForText2Image`` model)."""

    name = "diffusers"

    def __init__(self, model: str, steps: int = 30, guidance: float = 7.5,
                 device: str = "auto", memo: Path | None = None) -> None:
        try:
            import torch
            from diffusers import AutoPipelineForText2Image
        except ImportError as exc:
            raise ValueError(f"{_WHERE}.backend: diffusers is not installed ({exc.name} is "
                             "missing); pip install 'judgebias[diffusers]'") from exc
        self.model, self.steps, self.guidance = model, int(steps), float(guidance)
        self.device = torch_device(device)
        log.info("%s: %s", model, device_line(self.device))
        self.torch = torch
        # A local folder is the whole model: no hub lookup, so an offline job cannot stall
        # on one (hub ids are fetched or read from the hub's cache as usual).
        local = Path(model).is_dir()
        self.pipeline = AutoPipelineForText2Image.from_pretrained(
            model, local_files_only=local).to(self.device)
        # A progress bar per image would fill the job's log; the step logs its own counts.
        self.pipeline.set_progress_bar_config(disable=True)
        self.weights = _model_digest(model, memo)
        self.libraries = {name: _version(name) for name in ("diffusers", "torch",
                                                            "transformers")}

    def describe(self) -> dict[str, Any]:
        # The weights by content (the model's id only where its files cannot be found),
        # and the device type: CPU and CUDA draw different noise from one seed.
        weights = {"weights": self.weights} if self.weights else {"model": self.model}
        return {"backend": self.name, **weights, "steps": self.steps,
                "guidance": self.guidance, "libraries": self.libraries,
                "device": str(self.device).split(":", 1)[0]}

    def generate(self, prompt: str, seed: int) -> bytes:
        generator = self.torch.Generator(self.device).manual_seed(int(seed))
        image = self.pipeline(prompt, num_inference_steps=self.steps,
                              guidance_scale=self.guidance, generator=generator).images[0]
        return _png(image)


def _version(module: str) -> str:
    """A library's version as its module states it ("not installed" where it is not)."""
    import importlib

    try:
        return str(importlib.import_module(module).__version__)
    except ImportError:
        return "not installed"


def _model_digest(model: str, memo: Path | None) -> str | None:
    """sha256 of a diffusers model's files: a local folder's, or the hub's cached snapshot
    of a hub id (which from_pretrained has just fetched); None if neither is found."""
    from judgebias.io.filedigest import tree_sha256

    folder = Path(model)
    if not folder.is_dir():
        try:
            from huggingface_hub import snapshot_download

            folder = Path(snapshot_download(model, local_files_only=True))
        except Exception as exc:  # any failure: keyed by the id instead
            log.warning("%s: the model's files were not found (%s); its generated images "
                        "are cached by its id, not its content", model, exc)
            return None
    return tree_sha256(folder, memo)


_OPTIONS = {"openai": ("model", "size", "quality", "base_url", "api_key_env", "send_seed",
                       "timeout_s", "max_retries"),
            "diffusers": ("model", "steps", "guidance", "device")}


def backend(block: Mapping[str, Any]) -> TextToImage:
    """The backend an ``images`` params block names (``backend``; offline: ``size``,
    ``error_rate``; others: ``options``), checked before anything is called."""
    name = block.get("backend", "offline")
    if name not in BACKENDS:
        raise ValueError(f"{_WHERE}.backend: unknown text-to-image backend {name!r}; "
                         f"one of {', '.join(BACKENDS)}")
    if name == "offline":
        return OfflineRenderer(block.get("size", 256), block.get("error_rate", 0.1))
    options = dict(block.get("options") or {})
    unknown = sorted(set(options) - set(_OPTIONS[name]))
    if unknown:
        raise ValueError(f"{_WHERE}.options: {unknown} are not options of the {name} "
                         f"backend ({', '.join(_OPTIONS[name])})")
    if name == "openai":
        return OpenAIImages(**options)
    if "model" not in options:
        raise ValueError(f"{_WHERE}.options.model: the diffusers backend needs a model")
    memo = Path(block.get("cache_dir") or DEFAULT_CACHE_DIR) / MEMO
    return DiffusersPipeline(**options, memo=memo)


def cache_key(generator: TextToImage, prompt: str, seed: int) -> str:
    """sha256 of (backend description, prompt, seed): the image's name in the cache."""
    blob = json.dumps([generator.describe(), prompt, int(seed)], sort_keys=True)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def cache_path(generator: TextToImage, cache_dir: str | Path, prompt: str, seed: int) -> Path:
    key = cache_key(generator, prompt, seed)
    return Path(cache_dir) / key[:2] / f"{key}.png"


def _check_image(data: bytes, generator: TextToImage) -> None:
    try:
        with Image.open(io.BytesIO(data)) as image:
            image.verify()
    except (UnidentifiedImageError, OSError, SyntaxError) as exc:
        raise RuntimeError(f"{generator.name}: the generated image does not decode") from exc


def cached_generate(generator: TextToImage, cache_dir: str | Path, prompt: str,
                    seed: int) -> bytes:
    """The image of (prompt, seed): from the cache if there, else generated once, checked,
    and cached atomically before it is returned."""
    path = cache_path(generator, cache_dir, prompt, seed)
    if path.is_file():
        return path.read_bytes()
    data = generator.generate(prompt, seed)
    _check_image(data, generator)
    write_bytes(data, path)
    return data
