"""FRAME's text-to-image backends: the OpenAI images API for real over HTTP (serve-sim on
loopback answers it with the offline renderer), the on-disk cache that never pays twice,
and the clear errors before any call."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from judgebias.config import validate_params
from judgebias.devtools.serve_sim import SimServer
from judgebias.studies.frame import imagegen

KEY = "sk-frame-images-test"
PROMPT = "Generate an image of two cats napping in a meadow."


def test_openai_images_over_http_and_the_cache(params, tmp_path, monkeypatch):
    monkeypatch.setenv("FRAME_IMAGES_KEY", KEY)
    with SimServer(validate_params(params), api_key=KEY) as server:
        generator = imagegen.backend({"backend": "openai", "options": {
            "model": "dall-e-3", "size": "1024x1024", "base_url": f"{server.url}/v1",
            "api_key_env": "FRAME_IMAGES_KEY"}})
        first = imagegen.cached_generate(generator, tmp_path, PROMPT, seed=1)
        assert Image.open(io.BytesIO(first)).size == (256, 256)  # serve-sim caps the size
        calls = server.stats["requests"]
        assert calls == 1
        again = imagegen.cached_generate(generator, tmp_path, PROMPT, seed=1)
        assert again == first and server.stats["requests"] == calls  # from the cache
        imagegen.cached_generate(generator, tmp_path, PROMPT, seed=2)  # set B: a new call
        assert server.stats["requests"] == calls + 1


def test_a_missing_key_is_an_error_before_any_call(monkeypatch):
    monkeypatch.delenv("FRAME_IMAGES_KEY", raising=False)
    with pytest.raises(ValueError, match="environment variable FRAME_IMAGES_KEY is not set"):
        imagegen.backend({"backend": "openai", "options": {"api_key_env": "FRAME_IMAGES_KEY"}})


def test_diffusers_missing_names_the_extra():
    pytest.importorskip("torch")
    try:
        import diffusers  # noqa: F401
    except ImportError:
        with pytest.raises(ValueError, match=r"pip install 'judgebias\[diffusers\]'"):
            imagegen.backend({"backend": "diffusers", "options": {"model": "tiny"}})
    else:
        pytest.skip("diffusers is installed")
