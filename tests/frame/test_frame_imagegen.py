"""FRAME's text-to-image backends: the OpenAI images API for real over HTTP (serve-sim on
loopback answers it with the offline renderer), the on-disk cache that never pays twice
(looked up before any call; a failed call caches nothing), and the clear errors before
any call."""

from __future__ import annotations

import io
import sys

import numpy as np
import pytest
from PIL import Image

from judgebias.config import validate_params
from judgebias.devtools.serve_sim.faults import Faults
from judgebias.devtools.serve_sim.server import SimServer
from judgebias.models.journal import TooManyFailures
from judgebias.studies.frame import imagegen

KEY = "sk-frame-images-test"
PROMPT = "Generate an image of two cats napping in a meadow."


def _openai(server, **options):
    return imagegen.backend({"backend": "openai", "options": {
        "model": "dall-e-3", "size": "1024x1024", "base_url": f"{server.url}/v1",
        "api_key_env": "FRAME_IMAGES_KEY", **options}})


def test_openai_images_over_http_and_the_cache(params, tmp_path, monkeypatch):
    monkeypatch.setenv("FRAME_IMAGES_KEY", KEY)
    with SimServer(validate_params(params), api_key=KEY) as server:
        generator = _openai(server)
        first = imagegen.cached_generate(generator, tmp_path, PROMPT, seed=1)
        assert Image.open(io.BytesIO(first)).size == (256, 256)  # serve-sim caps the size
        assert server.stats["requests"] == 1
        assert imagegen.cache_path(generator, tmp_path, PROMPT, 1).read_bytes() == first
        again = imagegen.cached_generate(generator, tmp_path, PROMPT, seed=1)
        assert again == first and server.stats["requests"] == 1  # from the cache, no HTTP
        fresh = _openai(server)  # a new job (new client) finds the cache too
        assert imagegen.cached_generate(fresh, tmp_path, PROMPT, seed=1) == first
        assert server.stats["requests"] == 1
        imagegen.cached_generate(generator, tmp_path, PROMPT, seed=2)  # set B: a new call
        assert server.stats["requests"] == 2
        other = _openai(server, quality="hd")  # another setting is another image
        imagegen.cached_generate(other, tmp_path, PROMPT, seed=1)
        assert server.stats["requests"] == 3


def test_send_seed_makes_set_b_another_picture(params, tmp_path, monkeypatch):
    monkeypatch.setenv("FRAME_IMAGES_KEY", KEY)
    with SimServer(validate_params(params), api_key=KEY) as server:
        generator = _openai(server, send_seed=True)
        a, b = (np.asarray(Image.open(io.BytesIO(
            imagegen.cached_generate(generator, tmp_path, PROMPT, seed=s)))) for s in (1, 2))
        assert not np.array_equal(a, b)


def test_a_missing_key_is_an_error_before_any_call(params, monkeypatch):
    monkeypatch.delenv("FRAME_IMAGES_KEY", raising=False)
    with SimServer(validate_params(params), api_key=KEY) as server:
        with pytest.raises(ValueError, match="environment variable FRAME_IMAGES_KEY is not set"):
            _openai(server)
        assert server.stats["requests"] == 0
    monkeypatch.setenv("FRAME_IMAGES_KEY", KEY)
    with pytest.raises(ValueError, match="unknown text-to-image backend 'dalle'"):
        imagegen.backend({"backend": "dalle"})
    with pytest.raises(ValueError, match=r"\['colour'\] are not options of the openai"):
        imagegen.backend({"backend": "openai", "options": {"api_key_env": "FRAME_IMAGES_KEY",
                                                           "colour": "red"}})


def test_a_failed_call_caches_nothing_and_a_refusal_is_its_own_error(
        params, tmp_path, monkeypatch):
    monkeypatch.setenv("FRAME_IMAGES_KEY", KEY)
    params = validate_params(params)
    with SimServer(params, api_key=KEY, faults=Faults(rate_500=1.0)) as server:
        with pytest.raises(TooManyFailures, match=r"InternalServerError.*run again to retry"):
            imagegen.cached_generate(_openai(server, max_retries=0), tmp_path, PROMPT, 1)
        assert server.stats["requests"] == 1
    with SimServer(params, api_key=KEY, down_models=frozenset({"dall-e-3"})) as server:
        with pytest.raises(TooManyFailures, match="dall-e-3 failed"):  # an outage
            imagegen.cached_generate(_openai(server, max_retries=1), tmp_path, PROMPT, 1)
        assert server.stats["outcomes"]["down"] == 2
    assert not any(tmp_path.rglob("*.png"))  # nothing cached: the rerun asks again
    with SimServer(params, api_key=KEY) as server:
        with pytest.raises(imagegen.ImageRefused, match="refused the prompt"):
            imagegen.cached_generate(_openai(server, max_retries=0), tmp_path, " ", 1)
        assert server.stats["requests"] == 1
    assert not any(tmp_path.rglob("*.png"))


def test_offline_renderer_generates_and_knows_what_it_drew(tmp_path):
    generator = imagegen.backend({"backend": "offline", "size": 128, "error_rate": 0.0})
    data = imagegen.cached_generate(generator, tmp_path, PROMPT, seed=3)
    assert Image.open(io.BytesIO(data)).size == (128, 128)
    scene = generator.scene(PROMPT, 3)
    assert scene.domain == "animal" and scene.drawn["object"] == "Cat"
    assert scene.drawn["number"] == "two" and len(scene.boxes) >= 1
    assert np.array_equal(np.asarray(scene.image), np.asarray(Image.open(io.BytesIO(data))))


def test_diffusers_missing_names_the_extra(monkeypatch):
    # diffusers is a test dependency, so its absence is simulated: a None entry in
    # sys.modules makes `from diffusers import ...` raise ImportError (name "diffusers")
    monkeypatch.setitem(sys.modules, "diffusers", None)
    with pytest.raises(ValueError, match=r"\(diffusers is missing\); pip install "
                                         r"'judgebias\[diffusers\]'"):
        imagegen.backend({"backend": "diffusers", "options": {"model": "tiny"}})
    with pytest.raises(ValueError, match="diffusers backend needs a model"):
        imagegen.backend({"backend": "diffusers", "options": {}})
