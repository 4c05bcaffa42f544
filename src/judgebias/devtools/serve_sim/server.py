"""The server: :class:`SimServer` (the panel on loopback, its lifecycle and its answer to
each route) and the ``judgebias serve-sim`` command (:func:`run_from_args`).

Only loopback addresses are served: this project never exposes a port to a network.
The pictures of the images route are drawn by the study that declares a ``sim_images``
hook (judgebias.study; FRAME's offline renderer); with none, the route answers 404.
"""

from __future__ import annotations

import argparse
import dataclasses
import ipaddress
import json
import os
import signal
import socket
import threading
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from judgebias.devtools.serve_sim.anthropic_batch import AnthropicBatches
from judgebias.devtools.serve_sim.anthropic_wire import (
    anthropic_error,
    anthropic_message,
    cache_marks,
    parse_anthropic,
    user_parts,
)
from judgebias.devtools.serve_sim.errors import BadRequest, ServeSimError
from judgebias.devtools.serve_sim.faults import BatchFaults, FaultDrawer, Faults
from judgebias.devtools.serve_sim.gemini_batch import GeminiBatches
from judgebias.devtools.serve_sim.gemini_wire import (
    GEMINI_NO_LOGPROBS,
    gemini_error,
    gemini_response,
    parse_gemini,
)
from judgebias.devtools.serve_sim.handler import SimHTTPServer
from judgebias.devtools.serve_sim.hidden import ServedModels, within
from judgebias.devtools.serve_sim.openai_batch import ANSWERED, OpenAIBatches
from judgebias.devtools.serve_sim.openai_wire import (
    OPENAI_NO_LOGPROBS,
    images_response,
    openai_completion,
    openai_error,
    parse_images,
    parse_openai,
)
from judgebias.devtools.serve_sim.panel import no_compute_answer, sim_panel
from judgebias.devtools.serve_sim.prefix_cache import (
    DEFAULT_CAPACITY,
    DEFAULT_TTL_S,
    GEMINI_MIN,
    OPENAI_MIN,
    PrefixCache,
    prompt_of,
)
from judgebias.devtools.serve_sim.quotas import RequestQuota
from judgebias.devtools.serve_sim.stats import ServerStats
from judgebias.devtools.serve_sim.wire import Reply, json_body
from judgebias.models.base import ChatRequest, ChatResponse
from judgebias.models.journal import request_key
from judgebias.models.sim import SIM_VERSION
from judgebias.study import Study, active, registered

NO_FAULTS = Faults()


def _long(answer: ChatResponse, least: int) -> bool:
    """Whether the answer's prompt is long enough to be cached (a shorter one is neither
    read nor kept: its units are not even hashed)."""
    return int(answer.usage.get("prompt_tokens", 0)) >= least


def check_loopback(host: str) -> str:
    """The address to bind for ``host``; a non-loopback host raises :class:`ServeSimError`."""
    if host == "localhost":
        return "127.0.0.1"
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        address = None
    if address is None or not address.is_loopback:
        raise ServeSimError(
            f"serve-sim: refusing to listen on {host!r}: this project only serves on "
            "loopback (127.0.0.0/8, ::1 or localhost)")
    return str(address)


def image_study(params: Mapping[str, Any]) -> Study | None:
    """The study whose ``sim_images`` hook draws the images route's pictures: the first
    that declares one among those `params` runs, else among all registered; None if no
    study declares one."""
    for studies in (active(params), registered().values()):
        for study in studies:
            if study.sim_images is not None:
                return study
    return None


class SimServer:
    """The simulated panel served over HTTP on loopback (OpenAI, Gemini and Anthropic APIs).

    Start with :meth:`start` (or ``with SimServer(params) as server:``), point a client
    at :attr:`url`, read :attr:`stats`. Each HTTP request runs in its own thread; the sim
    itself is guarded by a lock (its perception cache is not thread-safe), while latency
    and stalls are slept outside it, so concurrent requests overlap.
    """

    def __init__(self, params: Mapping[str, Any], *, host: str = "127.0.0.1", port: int = 0,
                 api_key: str | None = None, latency_s: float = 0.0, no_compute: bool = False,
                 faults: Faults = NO_FAULTS, no_logprobs_models: frozenset[str] = frozenset(),
                 quota: RequestQuota | None = None, seed: int = 0,
                 down_models: frozenset[str] = frozenset(),
                 batch_completion_s: float = 0.0, batch_faults: BatchFaults | None = None,
                 batch_state_dir: Path | None = None,
                 client_params: Mapping[str, Any] | None = None,
                 fresh_samples: bool = False, cache_ttl_s: float = DEFAULT_TTL_S,
                 cache_tokens: int = DEFAULT_CAPACITY) -> None:
        self.host = check_loopback(host)
        if not 0 <= int(port) <= 65535:
            raise ServeSimError(f"serve-sim: bad port {port}")
        if latency_s < 0:
            raise ServeSimError("serve-sim: latency must be >= 0")
        self.port = int(port)
        self.api_key = api_key or None
        self.latency_s = float(latency_s)
        self.no_compute = bool(no_compute)
        self.faults = faults
        self.no_logprobs_models = frozenset(no_logprobs_models)
        # What the clients' panel says of each model id (reasoning, thinking, log-probs:
        # serve_sim.hidden); `params`'s own panel where no client params are given.
        # Reassign to serve another panel (a test's, which names this server's url).
        self.served = ServedModels.from_params(params if client_params is None
                                               else client_params)
        # Model ids whose endpoint is down (503); reassign to switch an outage on or off.
        self.down_models = frozenset(down_models)
        # Claude takes no seed and samples anew on every call; with fresh_samples the k-th
        # answer to one Messages request draws with seed k (k = 0 first), so repeated
        # identical requests (MMB's sampled verdicts) differ as the provider's would.
        # Off by default: a resumed batch answered twice then answers alike.
        self.fresh_samples = bool(fresh_samples)
        self._answered: Counter[str] = Counter()
        # The prompt prefixes each API has seen, per model: the cached tokens each answer
        # reports (serve_sim.prefix_cache); reassign or clear() between a test's phases.
        try:
            self.prefix_cache = PrefixCache(cache_ttl_s, cache_tokens)
        except ValueError as exc:
            raise ServeSimError(f"serve-sim: {exc}") from exc
        self.backend = sim_panel(params)
        self.model_ids = tuple(self.backend.models)
        self.image_study = image_study(params)
        self.stats_ = ServerStats()
        self.drawer = FaultDrawer(faults, seed)
        self.quota = quota
        self.batches = OpenAIBatches(self.handle_openai,
                                     lambda model: self.stats_.record(model, ANSWERED),
                                     completion_s=batch_completion_s, faults=batch_faults,
                                     seed=seed, state_dir=batch_state_dir)
        self.gemini_batches = GeminiBatches(self.handle_gemini,
                                            lambda model: self.stats_.record(model, ANSWERED),
                                            self.model_ids, completion_s=batch_completion_s,
                                            faults=batch_faults, seed=seed,
                                            state_dir=batch_state_dir)
        self.anthropic_batches = AnthropicBatches(
            self.handle_anthropic, lambda model: self.stats_.record(model, ANSWERED),
            completion_s=batch_completion_s, faults=batch_faults, seed=seed,
            state_dir=batch_state_dir)
        self._sim_lock = threading.Lock()
        self._httpd: SimHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ----------------------------------------------------------------------

    def start(self) -> SimServer:
        """Bind and serve in a background daemon thread; returns self."""
        if self._httpd is not None:
            return self
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        self._httpd = SimHTTPServer((self.host, self.port), self, family)
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever,
                                        kwargs={"poll_interval": 0.1},
                                        name="serve-sim", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop accepting, close the listening socket and every open connection."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        httpd.shutdown()
        httpd.server_close()
        httpd.close_connections()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> SimServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """``http://HOST:PORT`` (the bound port once started)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def stats(self) -> dict[str, Any]:
        """A snapshot of the counters (see :meth:`ServerStats.snapshot`)."""
        return self.stats_.snapshot()

    def reset_stats(self) -> None:
        self.stats_.reset()

    # -- answering ----------------------------------------------------------------------

    def answer(self, request: ChatRequest) -> ChatResponse:
        """What the panel answers to ``request`` (the fixed text in no-compute mode)."""
        if self.no_compute:
            return no_compute_answer(request)
        with self._sim_lock:
            return self.backend.answer(request)

    def model_list(self, api: str) -> dict[str, Any]:
        if api == "openai":
            return {"object": "list", "data": [
                {"id": m, "object": "model", "created": 0, "owned_by": "judgebias-sim"}
                for m in self.model_ids]}
        return {"models": [
            {"name": f"models/{m}", "version": SIM_VERSION, "displayName": m,
             "supportedGenerationMethods": ["generateContent"]} for m in self.model_ids]}

    def refuses_logprobs(self, model: str) -> bool:
        """Whether `model` refuses log-prob requests (``--no-logprobs-models``, or its
        clients' panel entry says it gives none)."""
        return model in self.no_logprobs_models or model in self.served.no_logprobs

    def answer_within(self, request: ChatRequest, hidden: int | None
                      ) -> tuple[ChatResponse, int | None]:
        """The answer within what `hidden` tokens (a reasoning or thinking model's,
        serve_sim.hidden) left of the output limit, and the hidden tokens spent: with
        nothing left, the answer is cut off with no text (its prompt still counted)."""
        if hidden is None:
            return self.answer(request), None
        fits = within(request, hidden)
        if fits is not None:
            return self.answer(fits), hidden
        one = dataclasses.replace(request.sampling, max_tokens=1)
        prompt = self.answer(dataclasses.replace(request, sampling=one)).usage.get(
            "prompt_tokens", 0)
        return ChatResponse(text="", usage={"prompt_tokens": prompt, "completion_tokens": 0,
                                            "total_tokens": prompt},
                            finish_reason="length"), request.sampling.max_tokens

    def handle_openai(self, raw: bytes) -> Reply:
        try:
            body = json_body(raw)
            request, logprobs = parse_openai(body)
        except BadRequest as exc:
            return Reply(400, openai_error(400, str(exc)))
        if request.model not in self.backend.models:
            return Reply(404, openai_error(
                404, f"The model `{request.model}` does not exist or you do not have access "
                "to it.", "model_not_found"), request.model)
        refused = self.served.openai_refusal(body)
        if refused is not None:
            message, param, code = refused
            return Reply(400, openai_error(400, message, code, param), request.model)
        if logprobs and self.refuses_logprobs(request.model):
            return Reply(400, openai_error(400, OPENAI_NO_LOGPROBS, param="logprobs"),
                         request.model)
        answer, hidden = self.answer_within(request, self.served.reasoning_tokens(body,
                                                                                  request))
        if not answer.ok:
            return Reply(400, openai_error(400, answer.error), request.model)
        cached = self.prefix_cache.openai(request.model, prompt_of(
            request.system, request.parts())) if _long(answer, OPENAI_MIN) else 0
        return Reply(200, openai_completion(request, answer, logprobs, hidden, cached),
                     request.model)

    def handle_anthropic(self, raw: bytes, version: str | None) -> Reply:
        """A Messages answer (serve_sim.anthropic_wire), under API version `version`;
        the blocks it marks with ``cache_control`` read and write the prompt cache."""
        try:
            body = json_body(raw)
            request, thinking = parse_anthropic(body, version)
        except BadRequest as exc:
            return Reply(400, anthropic_error(400, str(exc)))
        if request.model not in self.backend.models:
            return Reply(404, anthropic_error(404, f"model: {request.model}"), request.model)
        if self.fresh_samples:
            request = self._afresh(request)
        answer = self.answer(request)
        if not answer.ok:
            return Reply(400, anthropic_error(400, answer.error), request.model)
        marks = cache_marks(body)
        cache = self.prefix_cache.anthropic(
            request.model, prompt_of(request.system, user_parts(body)), marks) \
            if marks else (0, 0)
        return Reply(200, anthropic_message(request, answer, thinking, cache), request.model)

    def _afresh(self, request: ChatRequest) -> ChatRequest:
        """`request` with the seed of its next fresh sample (``fresh_samples``)."""
        key = request_key(request, "anthropic")
        with self._sim_lock:
            drawn = self._answered[key]
            self._answered[key] += 1
        return dataclasses.replace(request, sampling=dataclasses.replace(request.sampling,
                                                                         seed=drawn))

    def handle_images(self, raw: bytes) -> Reply:
        """An OpenAI images answer: the PNG the image study's ``sim_images`` hook draws of
        the prompt (judgebias.devtools.serve_sim.openai_wire for the request's fields)."""
        draw = self.image_study.load("sim_images") if self.image_study else None
        if draw is None:
            return Reply(404, openai_error(404, "serve-sim serves no images: no registered "
                                           "study declares a sim_images hook"))
        body: Any = None
        try:
            body = json_body(raw)
            prompt, width, seed = parse_images(body)
            png = draw(prompt, width, seed)
        except (BadRequest, KeyError, TypeError, ValueError, AttributeError) as exc:
            return Reply(400, openai_error(400, f"bad images request: {exc}"),
                         body.get("model") if isinstance(body, dict) else None)
        return Reply(200, images_response(png), body.get("model"))

    def handle_gemini(self, model: str, raw: bytes) -> Reply:
        model = model.removeprefix("models/")
        try:
            body = json_body(raw)
            request, logprobs = parse_gemini(model, body)
            thoughts = self.served.thoughts(body, request)
        except BadRequest as exc:
            return Reply(400, gemini_error(400, str(exc)), model or None)
        if model not in self.backend.models:
            return Reply(404, gemini_error(
                404, f"models/{model} is not found for API version v1beta, or is not "
                "supported for generateContent."), model)
        if logprobs and self.refuses_logprobs(model):
            return Reply(400, gemini_error(400, GEMINI_NO_LOGPROBS), model)
        answer, thoughts = self.answer_within(request, thoughts)
        if not answer.ok:
            return Reply(400, gemini_error(400, answer.error), model)
        cached = self.prefix_cache.gemini(model, prompt_of(
            request.system, request.parts())) if _long(answer, GEMINI_MIN) else 0
        return Reply(200, gemini_response(request, answer, logprobs, thoughts, cached), model)


# ---------------------------------------------------------------------------------- CLI
# The options live in .args (cheap to import: every `judgebias` command builds its
# parser, and only `serve-sim` needs this module's sim imports).


def server_from_args(params: Mapping[str, Any], args: argparse.Namespace) -> SimServer:
    """A (not yet started) :class:`SimServer` configured from the CLI options."""
    api_key = None
    if args.api_key_env:
        api_key = os.environ.get(args.api_key_env)
        if not api_key:
            raise ServeSimError(f"serve-sim: environment variable {args.api_key_env} "
                                "(--api-key-env) is not set or empty")
    faults = Faults(rate_429=args.rate_429, retry_after_s=args.retry_after,
                    rate_500=args.rate_500, rate_stall=args.rate_stall, stall_s=args.stall_s,
                    rate_drop=args.rate_drop, rate_garbled=args.rate_garbled)
    no_logprobs = frozenset(m.strip() for m in args.no_logprobs_models.split(",") if m.strip())
    down = frozenset(m.strip() for m in args.down_models.split(",") if m.strip())
    quota = (RequestQuota(args.requests_per_minute, args.burst)
             if args.requests_per_minute is not None else None)
    return SimServer(params, host=args.host, port=args.port, api_key=api_key,
                     latency_s=args.latency, no_compute=args.no_compute, faults=faults,
                     no_logprobs_models=no_logprobs, quota=quota, seed=args.fault_seed,
                     down_models=down, batch_completion_s=args.batch_completion,
                     fresh_samples=args.fresh_samples,
                     batch_faults=BatchFaults(
                         fail_share=args.batch_fail_share,
                         expire_share=args.batch_expire_share,
                         missing_rows=args.batch_missing_rows,
                         duplicate_rows=args.batch_duplicate_rows,
                         foreign_rows=args.batch_foreign_rows),
                     batch_state_dir=Path(args.batch_state_dir) if args.batch_state_dir
                     else None, client_params=_client_params(args.client_params),
                     cache_ttl_s=args.cache_ttl, cache_tokens=args.cache_tokens)


def _client_params(path: str | None) -> Mapping[str, Any] | None:
    """The clients' params file (``--client-params``) as YAML: only its panel entries'
    model settings are read (serve_sim.hidden), so it need not validate here."""
    if path is None:
        return None
    import yaml

    try:
        return yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ServeSimError(f"serve-sim: --client-params {path}: {exc}") from exc


def run_from_args(params: Mapping[str, Any], args: argparse.Namespace) -> int:
    """Serve until SIGINT/SIGTERM; print the listening line first and the stats last."""
    server = server_from_args(params, args)
    done = threading.Event()
    previous: dict[signal.Signals, Any] = {}
    in_main = threading.current_thread() is threading.main_thread()
    if in_main:
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.signal(sig, lambda *_: done.set())
    try:
        server.start()
        print(f"serve-sim listening on {server.url}", flush=True)
        try:
            while not done.wait(0.5):
                pass
        except KeyboardInterrupt:
            pass
    finally:
        server.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    print("serve-sim stats " + json.dumps(server.stats, sort_keys=True), flush=True)
    return 0
