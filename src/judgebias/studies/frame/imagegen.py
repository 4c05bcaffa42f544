"""Text-to-image backends of FRAME's benchmark construction (seed 004 §4.1: DALL-E 3 "with
a default setting"), behind one small interface: ``generate(prompt, seed) -> PNG bytes``.

* ``offline``: the offline renderer (judgebias.studies.frame.scene), the default; it also
  knows what it drew and where the objects are, so true alignment and boxes are known.
* ``openai``: the OpenAI images API (``client.images.generate``, ``response_format:
  b64_json``) of any OpenAI-compatible server; the key comes from the environment
  variable ``api_key_env`` only.
* ``diffusers``: a local diffusers pipeline on a GPU (the image rule asks for
  ``images.gpus``); an optional extra: ``pip install 'judgebias[diffusers]'``.

A paid image is never paid twice: every generated image is cached on disk under a key of
(backend, model, size, quality, prompt, seed) before the next one is asked for, so a
killed job resumes where it stopped and a rerun makes no call.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from judgebias.artifacts import write_bytes


class TextToImage(Protocol):
    name: str

    def describe(self) -> dict[str, Any]: ...

    def generate(self, prompt: str, seed: int) -> bytes: ...


class OfflineRenderer:
    name = "offline"

    def __init__(self, size: int = 256, error_rate: float = 0.1) -> None:
        self.size, self.error_rate = size, error_rate

    def describe(self) -> dict[str, Any]:
        return {"backend": self.name, "size": self.size, "error_rate": self.error_rate}

    def scene(self, prompt: str, seed: int) -> Any:
        from judgebias.studies.frame.scene import render

        return render(prompt, size=self.size, seed=seed, error_rate=self.error_rate)

    def generate(self, prompt: str, seed: int) -> bytes:
        buffer = io.BytesIO()
        self.scene(prompt, seed).image.save(buffer, format="PNG")
        return buffer.getvalue()


class OpenAIImages:
    name = "openai"

    def __init__(self, model: str = "dall-e-3", size: str = "1024x1024",
                 quality: str = "standard", base_url: str | None = None,
                 api_key_env: str = "OPENAI_API_KEY") -> None:
        key = os.environ.get(api_key_env)
        if not key:
            raise ValueError(f"frame.dataset.synthetic.images.options.api_key_env: the "
                             f"environment variable {api_key_env} is not set")
        from openai import OpenAI

        self.model, self.size, self.quality = model, size, quality
        self.client = OpenAI(api_key=key, base_url=base_url)

    def describe(self) -> dict[str, Any]:
        return {"backend": self.name, "model": self.model, "size": self.size,
                "quality": self.quality}

    def generate(self, prompt: str, seed: int) -> bytes:
        # The images API has no seed: set B is a second, separately cached generation.
        answer = self.client.images.generate(model=self.model, prompt=prompt, size=self.size,
                                             quality=self.quality,
                                             response_format="b64_json", n=1)
        return base64.b64decode(answer.data[0].b64_json)


class DiffusersPipeline:
    name = "diffusers"

    def __init__(self, model: str, steps: int = 30, guidance: float = 7.5,
                 device: str = "cuda") -> None:
        try:
            import torch
            from diffusers import AutoPipelineForText2Image
        except ImportError as exc:
            raise ValueError("frame.dataset.synthetic.images.backend: diffusers is not "
                             "installed; pip install 'judgebias[diffusers]'") from exc
        self.model, self.steps, self.guidance, self.device = model, steps, guidance, device
        self.torch = torch
        self.pipeline = AutoPipelineForText2Image.from_pretrained(model).to(device)

    def describe(self) -> dict[str, Any]:
        return {"backend": self.name, "model": self.model, "steps": self.steps,
                "guidance": self.guidance}

    def generate(self, prompt: str, seed: int) -> bytes:
        generator = self.torch.Generator(self.device).manual_seed(seed)
        image = self.pipeline(prompt, num_inference_steps=self.steps,
                              guidance_scale=self.guidance, generator=generator).images[0]
        buffer = io.BytesIO()
        image.save(buffer, format="PNG")
        return buffer.getvalue()


def backend(block: Mapping[str, Any]) -> TextToImage:
    """The backend an ``images`` params block names."""
    options = dict(block.get("options") or {})
    if block["backend"] == "offline":
        return OfflineRenderer(block["size"], block["error_rate"])
    if block["backend"] == "openai":
        return OpenAIImages(**options)
    return DiffusersPipeline(**options)


def cached_generate(generator: TextToImage, cache_dir: Path, prompt: str, seed: int) -> bytes:
    """The image of (prompt, seed), generated once and then read from the cache."""
    key = hashlib.sha256(json.dumps([generator.describe(), prompt, seed],
                                    sort_keys=True).encode("utf-8")).hexdigest()
    path = cache_dir / key[:2] / f"{key}.png"
    if path.exists():
        return path.read_bytes()
    data = generator.generate(prompt, seed)
    write_bytes(data, path)
    return data
