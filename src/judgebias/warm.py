"""Warm starts: pipeline jobs forked from a process that has already imported pandas.

Every Snakemake or DVC job is one ``judgebias`` process, and most of its start-up is
importing numpy, pandas, pyarrow and scipy (about 1 s of a 1.3 s start on a quiet core,
several seconds on a loaded one; ``benchmarks/job_startup.py``), paid again by each of a
run's hundreds of jobs. ``judgebias-warm -- COMMAND...`` imports those libraries once,
runs COMMAND (``snakemake ...``, ``judgebias dvc-repro``) and, while it runs, serves its
jobs: a job's ``judgebias`` (:func:`launch`, the console script) connects to the socket
named by ``JUDGEBIAS_WARM_SOCKET`` and hands over its arguments, working directory,
environment and standard streams; the server forks a child that takes them on and runs
:func:`judgebias.cli.main` exactly as the job's own process would, and the job exits
with the child's exit status. This is the forkserver pattern (``multiprocessing``'s
``forkserver``, Gradle's daemon) limited to one command's lifetime.

What keeps a forked job the same as a fresh one:

* only third-party libraries are preloaded (:data:`PRELOAD`), never judgebias's own
  modules other than this one, so a job always runs the code on disk, which is what
  the rules declare as its code inputs;
* the child takes the job's environment, working directory and streams before it
  imports judgebias, and sets the thread counts the job's environment gives the BLAS and
  OpenMP runtimes (Snakemake sets ``OMP_NUM_THREADS`` & co. per job; those runtimes read
  them only when loaded). No other preloaded library reads at import an environment
  variable that a job sets;
* a job whose interpreter, prefix or ``sys.path`` differ from the server's (another
  virtualenv, such as the vLLM test environment) is refused, and so is a process that
  is not a descendant of COMMAND (a Slurm job on a node, which must run under its own
  allocation, or any other process that inherited the variable): a refused job, like one
  that finds no server, starts the ordinary way;
* the child watches its job's connection: when the job's process dies (Snakemake
  cancels it, kill -9), the child is sent SIGTERM, as the job's own process would have
  been; a child that dies without an exit status makes its job fail.

Nothing is shared between jobs: each child is a fresh fork of the server, which runs no
job code itself. The socket lives in a private temporary folder (mode 0700) removed when
COMMAND ends.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import selectors
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

SOCKET_ENV = "JUDGEBIAS_WARM_SOCKET"
# What a job imports before its own work, in the order a job imports it: ~1 s per job.
PRELOAD = ("numpy", "pyarrow", "pyarrow.parquet", "pandas", "yaml", "jsonschema",
           "pydantic", "pydantic.dataclasses", "PIL.Image", "scipy.stats", "sklearn.base",
           "threadpoolctl")
# Where the BLAS and OpenMP runtimes loaded with numpy, scipy and scikit-learn read their
# thread counts, in the order they read them. They read them once, when loaded: a cold
# job's count is what Snakemake set for it (`threads`, 1 by default), so a warm child sets
# the same count on the runtimes its server loaded (a different count can change the
# last bits of a BLAS reduction, and would oversubscribe the cores Snakemake allots).
THREAD_VARIABLES = {"blas": ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS"),
                    "openmp": ("OMP_NUM_THREADS",)}
_HEADER = struct.Struct("!I")
_STREAMS = 3  # stdin, stdout, stderr


def _send(conn: socket.socket, message: dict[str, Any], fds: Sequence[int] = ()) -> None:
    body = json.dumps(message).encode("utf-8")
    if fds:
        socket.send_fds(conn, [_HEADER.pack(len(body)) + body], list(fds))
    else:
        conn.sendall(_HEADER.pack(len(body)) + body)


def _recv_exact(conn: socket.socket, size: int) -> bytes | None:
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def _recv(conn: socket.socket, with_fds: bool = False
          ) -> tuple[dict[str, Any] | None, list[int]]:
    """One message (None if the peer closed first) and the descriptors sent with it."""
    fds: list[int] = []
    if with_fds:
        head, fds, _, _ = socket.recv_fds(conn, _HEADER.size, _STREAMS)
        if len(head) < _HEADER.size:
            rest = _recv_exact(conn, _HEADER.size - len(head))
            head = head + rest if rest is not None else b""
    else:
        head = _recv_exact(conn, _HEADER.size) or b""
    if len(head) < _HEADER.size:
        return None, fds
    body = _recv_exact(conn, _HEADER.unpack(head)[0])
    return (json.loads(body) if body is not None else None), fds


def _interpreter() -> dict[str, Any]:
    """What must match between a job and the server for a fork to run the same code."""
    return {"executable": sys.executable, "prefix": sys.prefix, "path": sys.path[1:]}


# --- the job's side ------------------------------------------------------------------


def launch() -> None:
    """The ``judgebias`` console script: through the warm server when one serves this
    process, else (no server, or refused) the ordinary in-process CLI."""
    code = _forward(sys.argv[1:]) if os.environ.get(SOCKET_ENV) else None
    if code is None:
        from judgebias.cli import main as cli_main

        code = cli_main()
    sys.exit(code)


def _forward(argv: list[str]) -> int | None:
    """Run `argv` in a fork of the server; its exit status, or None where the server
    cannot be reached or refuses (the caller then runs it itself). Once the server has
    accepted, the job is never run a second time here: a lost child is a failure."""
    try:
        request = {"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ),
                   **_interpreter()}
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(os.environ[SOCKET_ENV])
    except OSError:
        return None
    with conn:
        try:
            _send(conn, request, range(_STREAMS))
            answer, _ = _recv(conn)
        except OSError:
            return None
        if answer is None or "refused" in answer:  # no child was forked, or it did nothing
            return None
        done: dict[str, Any] | None = answer  # a child that failed before it started
        if "exit" not in answer:
            try:
                done, _ = _recv(conn)
            except OSError:
                done = None
    if done is None or "exit" not in done:
        print("judgebias: the warm start server's child ended without an exit status "
              "(killed?); the job failed", file=sys.stderr)
        return 1
    return int(done["exit"])


# --- the server's side ---------------------------------------------------------------


def _ancestors(pid: int) -> list[int]:
    """`pid`'s parent, grandparent, ... from /proc (empty where there is no /proc)."""
    chain = []
    while pid > 1:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            break
        pid = int(stat.rsplit(")", 1)[1].split()[1])  # the field after the name: ppid
        chain.append(pid)
    return chain


def refusal(request: dict[str, Any], peer_pid: int, command_pid: int) -> str | None:
    """Why the server will not run this job (None: it will)."""
    ours = _interpreter()
    for key, value in ours.items():
        if request.get(key) != value:
            return f"another interpreter ({key} differs)"
    if command_pid != peer_pid and command_pid not in _ancestors(peer_pid):
        return "not a job of the served command"
    return None


def _peer_pid(conn: socket.socket) -> int:
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return int(struct.unpack("3i", creds)[0])


def _adopt_thread_counts(env: dict[str, str]) -> None:
    """Give the loaded BLAS and OpenMP runtimes the thread counts the job's environment
    would have given them at load (:data:`THREAD_VARIABLES`; unset: one per CPU)."""
    from threadpoolctl import threadpool_limits

    for api, names in THREAD_VARIABLES.items():
        counts = [int(env[name]) for name in names if env.get(name, "").strip().isdigit()]
        threadpool_limits(limits=next((c for c in counts if c > 0), os.cpu_count() or 1),
                          user_api=api)


def _child(conn: socket.socket, listener: socket.socket, request: dict[str, Any],
           fds: list[int]) -> None:
    """In the forked child: become the job, run it, report its exit status. Never
    returns."""
    code = 1
    try:
        listener.close()
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        tempfile.tempdir = None  # TMPDIR is the job's
        _adopt_thread_counts(request["env"])
        sys.argv = ["judgebias", *request["argv"]]
        _send(conn, {"started": os.getpid()})

        def watch() -> None:  # the job's process died: stop as it would have
            if not conn.recv(1):
                os.kill(os.getpid(), signal.SIGTERM)

        threading.Thread(target=watch, daemon=True).start()
        from judgebias.cli import main as cli_main

        try:
            code = cli_main(request["argv"])
        except SystemExit as exc:  # argparse's errors and --help, as sys.exit reports them
            if exc.code is None or isinstance(exc.code, int):
                code = exc.code or 0
            else:
                print(exc.code, file=sys.stderr)
                code = 1
    except BaseException:  # reported as the job's own crash would be
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        try:
            _shut_down()
            _send(conn, {"exit": code})
        finally:
            os._exit(code)


def _shut_down() -> None:
    """What the interpreter does when a process ends, before the job is reported done:
    threading's exit hooks and the job's non-daemon threads, its exit handlers, the
    streams flushed. joblib shuts its worker processes down there; without it they
    outlived the job by their 5-minute idle timeout, holding its streams. The child then
    leaves with os._exit, never unwinding into the server's code."""
    import atexit

    # The interpreter's own order: threading's exit hooks (concurrent.futures and joblib
    # stop their pool managers there; joining their threads first waits forever), then
    # the non-daemon threads, then atexit.
    threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # closed by the job: nothing to flush
            stream.flush()


def serve(command: Sequence[str]) -> int:
    """Run `command` with a warm start server for its jobs; its exit status."""
    for name in PRELOAD:
        importlib.import_module(name)
    folder = tempfile.mkdtemp(prefix="judgebias-warm-")  # mode 0700: this user only
    path = os.path.join(folder, "socket")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    children: set[int] = set()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
        process = subprocess.Popen(list(command), env={**os.environ, SOCKET_ENV: path})
        # Ctrl-C reaches the whole foreground group: COMMAND handles it; the server waits
        # for COMMAND, and a SIGTERM sent to the server is passed on to it.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, lambda *_: process.terminate())
        selector = selectors.DefaultSelector()
        selector.register(listener, selectors.EVENT_READ)
        while process.poll() is None:
            for _ in selector.select(timeout=0.2):
                conn, _ = listener.accept()
                pid = _accept(conn, listener, process.pid)
                if pid:
                    children.add(pid)
            children = {pid for pid in children if os.waitpid(pid, os.WNOHANG)[0] == 0}
        return process.returncode
    finally:
        listener.close()
        Path(path).unlink(missing_ok=True)
        os.rmdir(folder)


def _accept(conn: socket.socket, listener: socket.socket, command_pid: int) -> int | None:
    """Read one job's request and fork its child; the child's pid (None if refused)."""
    with conn:
        fds: list[int] = []
        try:
            conn.settimeout(30)  # a job that connects and sends nothing cannot stall the server
            request, fds = _recv(conn, with_fds=True)
            conn.settimeout(None)
            why = ("an incomplete request" if request is None or len(fds) != _STREAMS
                   else refusal(request, _peer_pid(conn), command_pid))
            if why:
                _send(conn, {"refused": why})
        except OSError as exc:
            why = f"the connection failed: {exc}"
        if why or request is None:
            for fd in fds:
                os.close(fd)
            return None
        pid = os.fork()
        if pid == 0:
            _child(conn, listener, request, fds)
        for fd in fds:
            os.close(fd)
        return pid


def main(argv: Sequence[str] | None = None) -> int:
    """``judgebias-warm [--] COMMAND...``."""
    command = list(sys.argv[1:] if argv is None else argv)
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        print("usage: judgebias-warm [--] COMMAND [ARG...]  (e.g. judgebias-warm -- "
              "snakemake --cores 2)", file=sys.stderr)
        return 2
    return serve(command)
