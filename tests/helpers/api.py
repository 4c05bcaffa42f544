"""The panel over HTTP: a serve-sim that records what it answered, and params whose
models are answered by a client backend (a test key in an environment variable)."""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anthropic
import openai
from google import genai
from google.genai import types

from judgebias.devtools.serve_sim.server import SimServer
from judgebias.models.base import ChatRequest, ChatResponse

KEY_ENV = "JUDGEBIAS_TEST_API_KEY"
KEY = "test-key-0123456789"
MODELS = ["lumen-large", "corvid-pro"]


class RecordingServer(SimServer):
    """serve-sim that remembers every request it answered (to prove nothing is re-paid)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.answered: list[ChatRequest] = []
        self._record_lock = threading.Lock()

    def answer(self, request: ChatRequest) -> ChatResponse:
        with self._record_lock:
            self.answered.append(request)
        return super().answer(request)


def api_params(params: dict, backend: str, url: str, models=MODELS) -> dict:
    """The same panel, but answered over HTTP by `backend` clients."""
    params = copy.deepcopy(params)
    for key in models:
        model = params["panel"][key]
        model.pop("sim")
        model.update(backend=backend, api_key_env=KEY_ENV,
                     base_url=f"{url}/v1" if backend == "openai" else url)
    return params


@contextmanager
def sim_server(config: dict[str, Any], **options: Any) -> Iterator[SimServer]:
    """serve-sim on loopback with the test key, `options` as SimServer takes them."""
    with SimServer(config, api_key=KEY, **options) as server:
        yield server


def openai_client(server: SimServer) -> openai.OpenAI:
    """The openai SDK against `server`, its own retries off (a test counts every call)."""
    return openai.OpenAI(base_url=server.url + "/v1", api_key=KEY, max_retries=0)


def anthropic_client(server: SimServer) -> anthropic.Anthropic:
    """The anthropic SDK against `server`, its own retries off (a test counts every call)."""
    return anthropic.Anthropic(base_url=server.url, api_key=KEY, max_retries=0)


def gemini_client(server: SimServer) -> genai.Client:
    """The google-genai SDK (synchronous) against `server`, its own retries off (a test
    counts every call)."""
    return genai.Client(api_key=KEY, http_options=types.HttpOptions(
        base_url=server.url, retry_options=types.HttpRetryOptions(attempts=1)))
