"""The HTTP layer: routes each request to the server's answer, and in between checks the
key, the outage, the quota and the fault draw, in that order.

A fault draws once per generation request after the authentication check; ``latency_s``
is slept by every generation request that is not failed fast by a 429/500 fault, each in
its own thread. An outage of one model's endpoint (``SimServer.down_models``) answers
every generation request for those model ids with 503 (Anthropic's overload: 529),
counted as ``down``.

The API key is compared in constant time and never logged or echoed; the standard
library's per-request log line (which would include a ``?key=`` query) is switched off.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import logging
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from judgebias.devtools.serve_sim.anthropic_wire import MESSAGES as ANTHROPIC_MESSAGES
from judgebias.devtools.serve_sim.anthropic_wire import OVERLOADED, anthropic_error
from judgebias.devtools.serve_sim.gemini_wire import MESSAGES as GEMINI_MESSAGES
from judgebias.devtools.serve_sim.gemini_wire import gemini_error, gemini_route
from judgebias.devtools.serve_sim.openai_wire import MESSAGES as OPENAI_MESSAGES
from judgebias.devtools.serve_sim.openai_wire import openai_error
from judgebias.devtools.serve_sim.wire import Reply, retry_after_headers

if TYPE_CHECKING:
    from judgebias.devtools.serve_sim.server import SimServer

log = logging.getLogger("judgebias.serve_sim")

MAX_BODY_BYTES = 64 * 1024 * 1024
_MESSAGES = {"openai": OPENAI_MESSAGES, "gemini": GEMINI_MESSAGES,
             "anthropic": ANTHROPIC_MESSAGES}


class _Handler(BaseHTTPRequestHandler):
    """One thread per connection; keep-alive; every reply has a Content-Length."""

    protocol_version = "HTTP/1.1"
    server_version = "judgebias-serve-sim"
    sys_version = ""
    wbufsize = 64 * 1024  # headers and body leave in one send (no Nagle/delayed-ACK stall)
    server: SimHTTPServer

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server.track(self.connection, True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.track(self.connection, False)

    def log_message(self, format: str, *args: Any) -> None:
        """Silenced: the default line holds the request path, which may carry ``?key=``."""

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    # -- routing ------------------------------------------------------------------------

    def _dispatch(self, method: str) -> None:
        sim = self.server.sim
        parts = urlsplit(self.path)
        path = parts.path
        # a body is read wherever one is announced (google-genai may send "{}" with a GET
        # or DELETE): left unread, it would be taken for the next request on the connection
        body = (self._read_body() if method == "POST" or self.headers.get("Content-Length")
                else b"")
        if body is None:
            return
        gemini_like = path.startswith(("/v1beta/", "/v1alpha/")) or ":generate" in path
        api = "gemini" if gemini_like else "openai"
        if path == "/v1/chat/completions" and method == "POST":
            api, route = "openai", "chat"
        elif path == "/v1/images/generations" and method == "POST":
            api, route = "openai", "images"
        elif path == "/v1/models" and method == "GET":
            api, route = "openai", "models"
        elif path == "/v1/messages" and method == "POST":
            api, route = "anthropic", "messages"
        elif sim.anthropic_batches.owns(path):
            api, route = "anthropic", "batch"
        elif gemini_route(path, method) is not None:
            api, route = "gemini", "generate" if method == "POST" else "models"
        elif sim.gemini_batches.owns(method, path, bool(
                self.headers.get("x-goog-api-key") or "key" in parse_qs(parts.query))):
            api, route = "gemini", "batch"
        elif path.startswith(("/v1/files", "/v1/batches")):
            api, route = "openai", "batch"
        else:
            self._send(api, Reply(404, self._error(api, 404, f"No route for {method} "
                                                   f"{path}", "unknown_url")), "404")
            return
        upload = (api, route) == ("gemini", "batch") and sim.gemini_batches.upload_session(
            parts.query)  # an upload URL is its own credential (google-genai sends no key)
        if not upload and not self._authorised(api, parts.query):
            message = _MESSAGES[api][401]
            self._send(api, Reply(401, self._error(api, 401, message)), "401")
            return
        if route == "models":
            self._send(api, Reply(200, sim.model_list(api)), "ok")
            return
        if route == "batch":  # bookkeeping routes: no model answers here, no faults
            found = (sim.batches.route(method, path, parts.query, body,
                                       self.headers.get("Content-Type", ""))
                     if api == "openai" else
                     sim.anthropic_batches.route(method, path, parts.query, body,
                                                 self.headers)
                     if api == "anthropic" else
                     sim.gemini_batches.route(method, path, parts.query, body, self.headers))
            self._send(api, found or Reply(404, self._error(
                api, 404, f"No route for {method} {path}", "unknown_url")),
                "files" if found is not None and found.status == 200 else
                str(found.status) if found is not None else "404")
            return
        if sim.down_models and (down := self._peek_model(api, path, body)) in sim.down_models:
            status = OVERLOADED if api == "anthropic" else 503  # Anthropic's overload: 529
            self._send(api, Reply(status, self._error(api, status, _MESSAGES[api][status]),
                                  down), "down")
            return
        wait = sim.quota.take() if sim.quota is not None else None
        if wait is not None:
            reply = Reply(429, self._error(api, 429, _MESSAGES[api][429]),
                          headers=retry_after_headers(wait))
            reply.model = self._peek_model(api, path, body)
            self._send(api, reply, "rate_limited")
            return
        fault = sim.drawer.draw()
        if fault in ("429", "500"):
            status = int(fault)
            reply = Reply(status, self._error(api, status, _MESSAGES[api][status]),
                          headers=retry_after_headers(sim.faults.retry_after_s)
                          if status == 429 else ())
            reply.model = self._peek_model(api, path, body)
            self._send(api, reply, fault)
            return
        if sim.latency_s > 0:
            time.sleep(sim.latency_s)
        if fault == "drop":
            sim.stats_.record(self._peek_model(api, path, body), "drop")
            self._drop()
            return
        if fault == "stall":
            time.sleep(sim.faults.stall_s)
        if route == "chat":
            reply = sim.handle_openai(body)
        elif route == "images":
            reply = sim.handle_images(body)
        elif route == "messages":
            reply = sim.handle_anthropic(body, self.headers.get("anthropic-version"))
        else:
            reply = sim.handle_gemini(gemini_route(path, method) or "", body)
        outcome = fault or ("ok" if reply.status == 200 else str(reply.status))
        if fault == "garbled" and reply.status != 200:
            outcome = str(reply.status)
        self._send(api, reply, outcome, garble=fault == "garbled" and reply.status == 200)

    def _peek_model(self, api: str, path: str, body: bytes) -> str | None:
        """The model id a failed-fast request was for (for the per-model counts)."""
        if api == "gemini":
            return gemini_route(path, "POST")
        try:
            model = json.loads(body).get("model")
        except (ValueError, AttributeError):
            return None
        return model if isinstance(model, str) else None

    def _authorised(self, api: str, query: str) -> bool:
        key = self.server.sim.api_key
        if key is None:
            return True
        if api in ("openai", "anthropic"):  # Anthropic: x-api-key first, as the API reads
            header = self.headers.get("Authorization", "")
            given = header[7:] if header[:7].lower() == "bearer " else ""
            if api == "anthropic" and self.headers.get("x-api-key"):
                given = self.headers.get("x-api-key", "")
        else:
            given = self.headers.get("x-goog-api-key") or ""
            if not given:
                given = (parse_qs(query).get("key") or [""])[0]
        return hmac.compare_digest(given.encode(), key.encode())

    @staticmethod
    def _error(api: str, status: int, message: str, code: str | None = None
               ) -> dict[str, Any]:
        if api == "openai":
            return openai_error(status, message, code)
        if api == "anthropic":
            return anthropic_error(status, message)
        return gemini_error(status, message)

    # -- I/O ------------------------------------------------------------------------------

    def _read_body(self) -> bytes | None:
        """The request body, or None after answering an unreadable one (and closing)."""
        length = self.headers.get("Content-Length")
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked" or length is None:
            self.close_connection = True
            self._send("openai", Reply(400, openai_error(
                400, "a Content-Length request body is required")), "400")
            return None
        try:
            size = int(length)
        except ValueError:
            size = -1
        if not 0 <= size <= MAX_BODY_BYTES:
            self.close_connection = True
            self._send("openai", Reply(400, openai_error(
                400, "request body too large or bad Content-Length")), "400")
            return None
        return self.rfile.read(size)

    def _drop(self) -> None:
        """Close the connection without a byte of response."""
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    def _send(self, api: str, reply: Reply, outcome: str, *, garble: bool = False) -> None:
        self.server.sim.stats_.record(reply.model, outcome)
        data = (reply.raw if reply.raw is not None
                else json.dumps(reply.body, separators=(",", ":")).encode())
        if garble:  # a 200 whose JSON stops halfway: what a torn proxy response looks like
            data = data[: max(1, len(data) // 2)]
        self.send_response(reply.status)
        self.send_header("Content-Type", reply.content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in reply.headers:
            self.send_header(name, value)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)


class SimHTTPServer(ThreadingHTTPServer):
    """ThreadingHTTPServer with daemon threads, a deep accept backlog (a 64-connection
    client pool connects at once) and a registry of open connections so that ``stop``
    can close idle keep-alive connections instead of leaving their threads blocked."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 1024

    def __init__(self, address: tuple[str, int], sim: SimServer, family: int) -> None:
        self.address_family = family
        self.sim = sim
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()
        super().__init__(address, _Handler)

    def track(self, conn: socket.socket, opened: bool) -> None:
        with self._open_lock:
            if opened:
                self._open.add(conn)
            else:
                self._open.discard(conn)

    def close_connections(self) -> None:
        with self._open_lock:
            conns = list(self._open)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away (timeout, reset) is normal here; anything else is
        logged by type only, never with request contents (which may hold the key)."""
        exc = sys.exc_info()[1]
        if isinstance(exc, OSError):
            return
        log.warning("serve-sim: error while handling a request: %s", type(exc).__name__)
