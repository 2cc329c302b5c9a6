"""How `continuum api` serves the app: one uvicorn server per worker process, each listening
on a socket of its own, and the parent process that keeps them running.

uvicorn's own multi-worker mode shares one listening socket among its workers, and each
worker's event loop accepts every connection pending when it wakes: a burst of clients lands
on whichever worker woke first and, kept alive, stays there. Measured with `continuum api`'s
two workers and 16 clients of `GET /v1/context` (2-core machine, idle): one worker held all
16 connections while the other spent 0.03 s of CPU in 10 s; 53-59 req/s, 1.4 of 2 cores
busy. Here every worker binds a socket of its own to the same address with `SO_REUSEPORT`,
and the kernel spreads new connections across them by a hash of their addresses (as nginx's
`reuseport` does): 69-78 req/s, both cores busy.

The hash is a draw: 16 connections over two workers came 13/3 in one run, and a client keeps
its worker while it keeps its connection, so the clients of the crowded worker waited ~1.7×
longer. So the workers share their counts of open connections (`Balance`), and a worker
holding more than its fair share (the total over the workers, rounded up) closes one
kept-alive connection after its response (`Connection: close`, `RebalanceConnections`), at
most every `SHED_EVERY_S`; the client reconnects and the kernel draws again, until the
counts are even.

A worker that dies is replaced (its socket left the kernel's group when it closed, so no
connection waits for it), however early: a worker killed between listening and serving is
replaced like any other. A worker whose server could not start (the app does not import,
its startup fails) says so by its exit code (`BOOT_FAILED`, as gunicorn's workers do): then
every worker stops and the command fails with that code, since another would fail the same
way. A worker whose parent is gone stops too, so no orphan keeps taking a share of a port a
new `continuum api` binds.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import multiprocessing
import os
import signal
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from multiprocessing.process import BaseProcess
from typing import Any

from continuum.config import ConfigError

log = logging.getLogger("uvicorn.error")

APP = "continuum.api.asgi:app"
STOP_GRACE_S = 10.0  # how long stopping workers may finish their requests
POLL_S = 0.5  # how often the parent looks at its workers
COUNT_EVERY_S = 0.1  # how often a worker publishes its number of open connections
SHED_EVERY_S = 0.2  # a worker above its share closes at most one connection this often
SETTLE_POLL_S = 0.05  # how often a starting server is asked whether it listens yet
BOOT_FAILED = 3  # a worker's exit code: its server could not start


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
    """uvicorn's Config of `options` (its keywords, the app's import string `app` among them)."""
    import uvicorn

    return uvicorn.Config(**options)


def _settle(server: Any) -> None:
    """Once `server` listens: the query embedder and its ONNX graph loaded (or the first
    search would wait for them), then every object alive moved out of the cyclic garbage
    collector's sight (`gc.freeze`). Those are some 590,000 objects (the model, the modules) that each full
    collection walked with the process's interpreter lock held: under 16 clients of
    `GET /v1/context`, 360-980 ms a collection, about every 12 s per worker. After the server
    listens, not before: loading the model first kept a restarted API from answering
    anything (events included) for 9-10 s instead of 3-4. What requests hold at that moment
    is frozen too: once per process, never collected if it becomes garbage."""
    from continuum.inference.embedding import warm_query_embedding

    while not server.started:
        time.sleep(SETTLE_POLL_S)
    warm_query_embedding()
    gc.collect()
    gc.freeze()


def _run(server: Any, sock: socket.socket) -> None:
    """Serve on `sock` until stopped, settling (`_settle`) on a thread of its own."""
    threading.Thread(target=_settle, args=(server,), name="api-settle", daemon=True).start()
    server.run(sockets=[sock])


@dataclass
class Balance:
    """This worker's view of the open connections of every worker (`counts`, shared memory
    of the parent's, one slot each; this worker's is `index`)."""

    counts: Any  # a multiprocessing Array of ints
    index: int
    server: Any  # this worker's uvicorn.Server
    _shed_at: float = 0.0

    def publish(self) -> None:
        self.counts[self.index] = len(self.server.server_state.connections)

    def shed(self) -> bool:
        """Whether to close the connection of the request now starting (this worker holds
        more than its share, and closed none in the last SHED_EVERY_S)."""
        counts = list(self.counts)
        share = -(-sum(counts) // len(counts))
        now = time.monotonic()
        if counts[self.index] <= share or now - self._shed_at < SHED_EVERY_S:
            return False
        self._shed_at = now
        self.counts[self.index] -= 1  # until the next count, so as not to shed twice
        return True


_balance: Balance | None = None  # set in a worker process of several


def shed_connection() -> bool:
    """Whether this worker should close the connection of the request now starting."""
    return _balance is not None and _balance.shed()


class RebalanceConnections:
    """ASGI middleware: `Connection: close` on the response of a request whose worker holds
    more than its share of the connections (see the module's docstring)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not shed_connection():
            await self.app(scope, receive, send)
            return

        async def closing(message: Any) -> None:
            if message["type"] == "http.response.start":
                headers = [*message.get("headers", []), (b"connection", b"close")]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, closing)


def _watch(parent: int, balance: Balance) -> None:
    """A worker's one housekeeping thread, every COUNT_EVERY_S: publish its open connections;
    SIGTERM itself (uvicorn's graceful stop) once `parent` is gone."""
    while os.getppid() == parent:
        balance.publish()
        time.sleep(COUNT_EVERY_S)
    os.kill(os.getpid(), signal.SIGTERM)


def _worker(options: dict[str, Any], parent: int, counts: Any, index: int) -> None:
    """A worker process: its own socket on the shared address, its own server, its share of
    the connections watched (`Balance`); exits BOOT_FAILED if its server could not start."""
    global _balance
    import uvicorn

    sock = listening_socket(options["host"], options["port"], shared=True)
    server = uvicorn.Server(_config(options))
    _balance = Balance(counts, index, server)
    threading.Thread(target=_watch, args=(parent, _balance), daemon=True).start()
    with contextlib.suppress(SystemExit):  # uvicorn's, once it logged why the app did not load
        _run(server, sock)
    if not server.started:
        sys.exit(BOOT_FAILED)


@dataclass
class Workers:
    """`count` worker processes serving `options` (uvicorn.Config's keywords), kept at that
    number until SIGTERM or SIGINT."""

    options: dict[str, Any]
    count: int
    _running: list[BaseProcess] = field(default_factory=list)
    _stopping: threading.Event = field(default_factory=threading.Event)
    _context: Any = field(default_factory=lambda: multiprocessing.get_context("spawn"))
    _counts: Any = None

    def _start(self, index: int) -> BaseProcess:
        self._counts[index] = 0
        process = self._context.Process(
            target=_worker,
            args=(self.options, os.getpid(), self._counts, index),
            name=f"continuum-api-worker-{index}",
        )
        process.start()
        return process

    def run(self) -> int:
        """Serve until told to stop; 0, or the exit code of a worker that could not start."""
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: self._stopping.set())
        self._counts = self._context.Array("i", self.count)
        self._running = [self._start(index) for index in range(self.count)]
        code = 0
        while not self._stopping.wait(POLL_S):
            code = self._replace_ended()
            if code:
                break
        self._stop()
        return code

    def _replace_ended(self) -> int:
        for index, process in enumerate(self._running):
            if process.is_alive():
                continue
            code = process.exitcode
            if code == BOOT_FAILED:
                log.error("API worker %s could not start (see above); stopping.", process.pid)
                return code
            log.warning("API worker %s exited %s; starting another.", process.pid, code)
            self._running[index] = self._start(index)
        return 0

    def _stop(self) -> None:
        for process in self._running:
            if process.is_alive():
                process.terminate()
        deadline = time.monotonic() + STOP_GRACE_S
        for process in self._running:
            process.join(max(0.0, deadline - time.monotonic()))
            if process.is_alive():
                process.kill()
                process.join()


def serve(host: str, port: int, workers: int, log_config: dict[str, Any]) -> int:
    """Serve the API on `host:port` with `workers` processes (one: in this process)."""
    options = {"app": APP, "host": host, "port": port, "log_config": log_config}
    # With workers, held and never listening: the address is checked (and port 0 resolved)
    # here, once, and stays ours while workers come and go.
    try:
        sock = listening_socket(host, port, shared=workers > 1)
    except OSError as exc:
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}; choose "
                          "another --port, or stop what holds it") from exc  # fmt: skip
    with sock:
        options["port"] = sock.getsockname()[1]
        config = _config(options)  # uvicorn's logging, in this process too
        log.info("Continuum API on http://%s:%s, %s worker process(es) (Ctrl+C to quit)",
                 host, options["port"], workers)  # fmt: skip
        if workers == 1:
            import uvicorn

            _run(uvicorn.Server(config), sock)
            return 0
        return Workers(options, workers).run()
