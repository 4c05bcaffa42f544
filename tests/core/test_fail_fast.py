"""A dead endpoint fails fast (issue 41, item 8).

A wrong base_url (nothing listening, a host name that does not resolve), a bad key
(401), no permission (403) or an unknown model (404) used to be retried like a 503 --
8 retries of 1-60 s back-off per request, about two hours for a job of 294 requests --
or stopped with a message that did not say where the request went. Each now stops the
job within seconds with one error naming the panel model, its base_url and the
provider's (or the operating system's) own words, never the key; nothing is journaled
as an answer. Every case goes through the real SDKs over HTTP on loopback, with the
default ApiLimits (no back-off shrunk). A refused connection *after* the endpoint has
answered is an outage, still retried (the rule in judgebias.models.api); 429 and 5xx
keep their back-off (tests/core/test_backends.py: test_faults_are_survived_and_counted,
test_retry_after_is_honoured, test_a_quota_storm_costs_time_never_a_request;
tests/core/test_outage.py: a 503 outage fails its jobs only after the retries).
"""

from __future__ import annotations

import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from helpers.api import KEY, KEY_ENV, api_params
from helpers.project import BIN, make_project, run, study_params
from test_backends import caption_images, images_table

from judgebias.config import validate_params
from judgebias.devtools.serve_sim.gemini_wire import MESSAGES as GEMINI_MESSAGES
from judgebias.devtools.serve_sim.openai_wire import MESSAGES as OPENAI_MESSAGES
from judgebias.devtools.serve_sim.openai_wire import openai_error
from judgebias.devtools.serve_sim.server import SimServer
from judgebias.devtools.serve_sim.wire import Reply
from judgebias.models.api import PermanentError
from judgebias.models.journal import Journal, journal_path
from judgebias.models.limits import ApiLimits
from judgebias.models.openai_backend import OpenAIBackend
from judgebias.studies.philautia.tables import captions_path

DEAD = "lumen-large"
LABEL = f"panel.{DEAD}"
FAST_S = 10.0  # "within seconds", with the default back-off (1-60 s, 8 retries)
WRONG_KEY = "sk-wrong-key-5e1d0c7b"
# The 403 words echo the key, as Gemini's "Consumer 'api_key:...' has been suspended"
# does: the message must mask it.
FORBIDDEN = {"openai": "Project does not have access to model `{model}` (key {key}).",
             "gemini": "Permission denied: Consumer 'api_key:{key}' has been suspended."}


@contextmanager
def dead_port() -> Iterator[int]:
    """A loopback port bound but not listening: every connection to it is refused, and
    no other process can take it meanwhile."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


class ForbiddingServer(SimServer):
    """serve-sim that admits the key, then answers every generation request with a 403
    in the provider's documented format (OpenAI's ``error`` object; Google's
    ``PERMISSION_DENIED`` status)."""

    def handle_openai(self, raw: bytes) -> Reply:
        message = FORBIDDEN["openai"].format(model=f"sim/{DEAD}", key=self.api_key)
        return Reply(403, openai_error(403, message, "model_not_found"))

    def handle_gemini(self, model: str, raw: bytes) -> Reply:
        return Reply(403, {"error": {"code": 403, "status": "PERMISSION_DENIED",
                                     "message": FORBIDDEN["gemini"].format(key=self.api_key)}})


@dataclass(frozen=True)
class Case:
    """One way an endpoint cannot answer: the server it needs (a context manager giving
    its URL), the key the job sends, the model id asked, and the words the error must
    quote for each backend."""

    server: Callable[[dict[str, Any]], AbstractContextManager[str]]
    words: dict[str, str]
    key: str = KEY
    model_id: str | None = None


@contextmanager
def refusing(_: dict[str, Any]) -> Iterator[str]:
    with dead_port() as port:
        yield f"http://127.0.0.1:{port}"


@contextmanager
def serving(cls: type[SimServer], config: dict[str, Any]) -> Iterator[str]:
    with cls(config, api_key=KEY) as server:
        yield server.url


def sim(config: dict[str, Any]) -> AbstractContextManager[str]:
    return serving(SimServer, config)


def forbidding(config: dict[str, Any]) -> AbstractContextManager[str]:
    return serving(ForbiddingServer, config)


CASES = {
    "connection refused": Case(refusing, {"openai": "connection refused",
                                          "gemini": "connection refused"}),
    "name does not resolve": Case(lambda _: nullcontext("http://judgebias-dead.invalid"),
                                  {"openai": "host name does not resolve",
                                   "gemini": "host name does not resolve"}),
    "401 bad key": Case(sim, {"openai": OPENAI_MESSAGES[401],
                              "gemini": GEMINI_MESSAGES[401]}, key=WRONG_KEY),
    "403 no permission": Case(forbidding, {
        "openai": FORBIDDEN["openai"].format(model=f"sim/{DEAD}", key="***"),
        "gemini": FORBIDDEN["gemini"].format(key="***")}),
    "404 unknown model": Case(sim, {
        "openai": "The model `sim/does-not-exist` does not exist",
        "gemini": "models/sim/does-not-exist is not found"}, model_id="sim/does-not-exist"),
}


@pytest.fixture(scope="module")
def images(tmp_path_factory) -> str:
    return images_table(tmp_path_factory.mktemp("images"), 6, 3)


def job_config(params: dict, tmp_path: Path, backend: str, url: str,
               model_id: str | None = None, batch: bool = False) -> dict[str, Any]:
    """The default params, DEAD answered by `backend` at `url`, default ApiLimits."""
    params = api_params(params, backend, url, [DEAD])
    params["panel"][DEAD]["batch"] = batch
    if model_id:
        params["panel"][DEAD]["model_id"] = model_id
    params["journal_dir"] = str(tmp_path / "journal")
    return validate_params(params)


def stopped_job(config: dict[str, Any], images: str) -> tuple[str, float]:
    """The caption job of DEAD, which must stop: (its error, seconds it took)."""
    start = time.monotonic()
    with pytest.raises(PermanentError) as stopped:
        caption_images(config, DEAD, images)
    return str(stopped.value), time.monotonic() - start


def answers_journaled(config: dict[str, Any]) -> int:
    model = config["panel"][DEAD]
    path = journal_path(config["journal_dir"], model["backend"], model["model_id"])
    if not path.exists():
        return 0
    with Journal(path) as journal:
        return journal.count()


@pytest.mark.parametrize("backend", ["openai", "gemini"])
@pytest.mark.parametrize("case", list(CASES))
def test_a_dead_endpoint_stops_the_job_within_seconds(case, backend, params, tmp_path,
                                                      images, monkeypatch):
    fault = CASES[case]
    monkeypatch.setenv(KEY_ENV, fault.key)
    config = validate_params(params)
    with fault.server(config) as url:
        config = job_config(params, tmp_path, backend, url, fault.model_id)
        message, elapsed = stopped_job(config, images)
    assert elapsed < FAST_S, f"{case}: took {elapsed:.1f} s"
    assert message.count("\n") == 0 and message.startswith(f"{LABEL} (")
    assert config["panel"][DEAD]["base_url"] in message  # where the requests went
    assert fault.words[backend] in message, message
    assert KEY not in message and WRONG_KEY not in message
    assert answers_journaled(config) == 0


@pytest.mark.parametrize("backend", [pytest.param("openai", marks=pytest.mark.slow),
                                     "gemini"])  # openai: ~35 s of the SDK's retries
def test_the_batch_path_stops_on_a_dead_endpoint_with_the_same_line(
        backend, params, tmp_path, images, monkeypatch):
    """Submitting a batch to a dead endpoint: the same one line, not a traceback. (The
    openai batch client keeps the SDK's own retries, max_retries of them with 0.5-8 s
    back-off, so it is not fast: see OpenAIBackend._batch_provider.)"""
    monkeypatch.setenv(KEY_ENV, KEY)
    with dead_port() as port:
        config = job_config(params, tmp_path, backend, f"http://127.0.0.1:{port}",
                            batch=True)
        message, elapsed = stopped_job(config, images)
    assert message.startswith(f"{LABEL} (") and "connection refused" in message
    assert config["panel"][DEAD]["base_url"] in message and KEY not in message
    assert answers_journaled(config) == 0
    if backend == "gemini":  # google-genai's own retries are off (attempts=1)
        assert elapsed < FAST_S


def test_a_refused_connection_after_an_answer_is_an_outage_and_retried(params, requests):
    """The endpoint answered, then its server restarts: the refused connections are
    retried with back-off (counted as `unreachable`) until it is back."""
    config = validate_params(params)
    with SimServer(config, api_key=KEY, no_compute=True) as server:
        port = server.port
        backend = OpenAIBackend(requests[0].model, LABEL, ApiLimits(
            backoff_initial_s=0.2, backoff_max_s=0.4, max_retries=30),
            base_url=f"{server.url}/v1", api_key=KEY)
        assert backend.complete(requests[:1])[0].ok
    restarted = SimServer(config, port=port, api_key=KEY, no_compute=True)
    timer = threading.Timer(1.0, restarted.start)
    timer.start()
    try:
        answers = backend.complete(requests[1:3])
    finally:
        timer.join()
        restarted.stop()
    assert all(answer.ok for answer in answers)
    assert backend.retry_counts["unreachable"] >= 2


def _log_seconds(log: str) -> float:
    """Seconds between the first and the last timestamped line of a job log."""
    stamps = [datetime.strptime(m, "%Y-%m-%d %H:%M:%S,%f")
              for m in re.findall(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) ", log, re.M)]
    return (stamps[-1] - stamps[0]).total_seconds()


@pytest.mark.slow  # a Snakemake run of the dataset and one caption job (~15 s)
def test_a_pipeline_job_against_a_dead_port_fails_within_seconds(default_params, tmp_path,
                                                                 monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    params = study_params(default_params, "philautia", small=True)
    with dead_port() as port:
        url = f"http://127.0.0.1:{port}"
        project = make_project(tmp_path, api_params(params, "openai", url, [DEAD]))
        done = run([str(BIN / "snakemake"), "--cores", "1", captions_path(DEAD)], project,
                   check=False)
    assert done.returncode != 0
    log = (project / f"logs/caption/{DEAD}.log").read_text()
    stops = [line for line in log.splitlines() if "stopped:" in line]
    assert len(stops) == 1, log
    assert f"stopped: {LABEL} (openai sim/{DEAD}): cannot reach base_url {url}/v1: " \
           "connection refused" in stops[0]
    assert "Traceback" not in log and KEY not in log
    assert _log_seconds(log) < FAST_S, log
    assert not (project / captions_path(DEAD)).exists()
