"""How `continuum api` serves the app: one uvicorn server per worker process, each listening
on a socket of its own, and the parent process that keeps them running.

uvicorn's own multi-worker mode shares one listening socket among its workers, and each
worker's event loop accepts every connection pending when it wakes: a burst of clients lands
on whichever worker woke first and, kept alive, stays there. Measured with `continuum api`'s
two workers and 16 clients of `GET /v1/context` (2-core machine, idle): one worker held all
16 connections while the other spent 0.03 s of CPU in 10 s; 53-59 req/s, 1.4 of 2 cores
busy. Here every worker binds a socket of its own to the same address with `SO_REUSEPORT`,
and the kernel spreads new connections across them by a hash of their addresses (as nginx's
`reuseport` does): 69-78 req/s, both cores busy. The hash balances connections, not their
load: a client that keeps its connection stays with its worker.

A worker that dies is replaced (its socket left the kernel's group when it closed, so no
connection waits for it). A worker that exits before its server started cannot serve (the
app does not import, say): then every worker stops and the command fails with that worker's
exit code. A worker whose parent is gone stops too, so no orphan
keeps taking a share of a port a new `continuum api` binds.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import socket
import threading
import time
from dataclasses import dataclass, field
from multiprocessing.process import BaseProcess
from typing import Any

from continuum.config import ConfigError

log = logging.getLogger("uvicorn.error")

APP = "continuum.api.asgi:app"
STOP_GRACE_S = 10.0  # how long stopping workers may finish their requests
POLL_S = 0.5


def listening_socket(host: str, port: int, *, shared: bool = False) -> socket.socket:
    """A TCP socket bound to `host:port` with TCP_NODELAY, which every connection accepted
    from it inherits (uvicorn's own socket lacks it: a response sent in two writes then
    waited 40 ms for the client's delayed ACK on a kept-alive connection). `shared`: with
    SO_REUSEPORT, so each worker process binds one of its own to the same address."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if shared:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((host, port))
    except BaseException:
        sock.close()
        raise
    return sock


def _config(options: dict[str, Any]) -> Any:
    import uvicorn

    return uvicorn.Config(APP, **options)


def _serve(sock: socket.socket, options: dict[str, Any], started: Any = None) -> None:
    """Run a uvicorn server on `sock`; `started` (an Event) is set once it serves."""
    import uvicorn

    server = uvicorn.Server(_config(options))
    if started is not None:
        threading.Thread(target=_report_started, args=(server, started), daemon=True).start()
    server.run(sockets=[sock])


def _report_started(server: Any, started: Any) -> None:
    while not server.started:
        time.sleep(0.05)
    started.set()


def _stop_when_orphaned(parent: int) -> None:
    """In a worker: SIGTERM itself (uvicorn's graceful stop) once `parent` is gone."""
    while os.getppid() == parent:
        time.sleep(POLL_S)
    os.kill(os.getpid(), signal.SIGTERM)


def _worker(options: dict[str, Any], parent: int, started: Any) -> None:
    """A worker process: its own socket on the shared address, its own server."""
    threading.Thread(target=_stop_when_orphaned, args=(parent,), daemon=True).start()
    _serve(listening_socket(options["host"], options["port"], shared=True), options, started)


@dataclass(frozen=True)
class _Worker:
    process: BaseProcess
    started: Any  # a multiprocessing Event: its server serves


@dataclass
class Workers:
    """`count` worker processes serving `options` (uvicorn.Config's keywords), kept at that
    number until SIGTERM or SIGINT."""

    options: dict[str, Any]
    count: int
    _running: list[_Worker] = field(default_factory=list)
    _stopping: threading.Event = field(default_factory=threading.Event)

    def _start(self) -> _Worker:
        context = multiprocessing.get_context("spawn")
        started = context.Event()
        process = context.Process(
            target=_worker, args=(self.options, os.getpid(), started), name="continuum-api-worker"
        )
        process.start()
        return _Worker(process, started)

    def run(self) -> int:
        """Serve until told to stop; 0, or the exit code of a worker that could not start."""
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: self._stopping.set())
        self._running = [self._start() for _ in range(self.count)]
        code = 0
        while not self._stopping.wait(POLL_S):
            code = self._replace_ended()
            if code:
                break
        self._stop()
        return code

    def _replace_ended(self) -> int:
        for index, worker in enumerate(self._running):
            process = worker.process
            if process.is_alive():
                continue
            code = process.exitcode or 0
            if not worker.started.is_set():
                log.error("API worker %s exited %s while starting; stopping.", process.pid, code)
                return code or 1
            log.warning("API worker %s exited %s; starting another.", process.pid, code)
            self._running[index] = self._start()
        return 0

    def _stop(self) -> None:
        for worker in self._running:
            if worker.process.is_alive():
                worker.process.terminate()
        deadline = time.monotonic() + STOP_GRACE_S
        for worker in self._running:
            process = worker.process
            process.join(max(0.0, deadline - time.monotonic()))
            if process.is_alive():
                process.kill()
                process.join()


def serve(host: str, port: int, workers: int, log_config: dict[str, Any]) -> int:
    """Serve the API on `host:port` with `workers` processes (one: in this process)."""
    options = {"host": host, "port": port, "log_config": log_config}
    # With workers, held and never listening: the address is checked (and port 0 resolved)
    # here, once, and stays ours while workers come and go.
    try:
        sock = listening_socket(host, port, shared=workers > 1)
    except OSError as exc:
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}; choose "
                          "another --port, or stop what holds it") from exc  # fmt: skip
    with sock:
        options["port"] = sock.getsockname()[1]
        _config(options)  # uvicorn's logging, in this process too
        log.info("Continuum API on http://%s:%s, %s worker process(es) (Ctrl+C to quit)",
                 host, options["port"], workers)  # fmt: skip
        if workers == 1:
            _serve(sock, options)
            return 0
        return Workers(options, workers).run()
