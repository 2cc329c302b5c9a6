"""`continuum api` with two worker processes, as served (real processes, real sockets): kept-
alive clients are spread over both workers, a worker that dies is replaced while the API
keeps answering, and the workers stop when their parent is gone."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from continuum.processes import spawn, stop
from tests.support.net import free_port
from tests.support.wait import wait_for

CLIENTS = 16


def _workers(server: psutil.Process) -> list[psutil.Process]:
    found = []
    for child in server.children():
        try:
            if "spawn_main" in " ".join(child.cmdline()):
                found.append(child)
        except psutil.Error:  # gone, or dead and not yet reaped by its parent
            continue
    return found


def _listening(worker: psutil.Process, port: int) -> bool:
    return any(c.status == psutil.CONN_LISTEN and c.laddr.port == port
               for c in worker.net_connections("tcp"))  # fmt: skip


def _connections(worker: psutil.Process, port: int) -> int:
    return sum(1 for c in worker.net_connections("tcp")
               if c.status == psutil.CONN_ESTABLISHED and c.laddr.port == port)  # fmt: skip


def _serving(
    server: psutil.Process, port: int, count: int = 2, interval: float = 0.2
) -> list[psutil.Process]:
    """Wait until `count` workers of `server` listen on `port`; returns them."""
    found: list[psutil.Process] = []

    def ready() -> bool:
        found[:] = [w for w in _workers(server) if _listening(w, port)]
        return len(found) == count

    wait_for(ready, timeout=90, interval=interval)
    return found


@pytest.fixture
def api(db: Any, tmp_path: Path) -> Any:
    port = free_port()
    continuum = str(Path(sys.executable).parent / "continuum")
    proc = spawn([continuum, "api", "--port", str(port), "--workers", "2"], tmp_path / "api.log")
    try:
        yield psutil.Process(proc.pid), port
    finally:
        stop(proc, timeout=20)


def test_kept_alive_clients_are_spread_over_both_workers_then_evened(api: Any) -> None:
    """With one shared socket the first worker to wake accepted all 16 connections and the
    other idled; each worker now has a socket of its own and the kernel spreads them (all 16
    on one worker by chance: 1 in 32,768). The draw may still be uneven (13/3 was seen): the
    crowded worker closes connections after their responses until each holds 8."""
    server, port = api
    workers = _serving(server, port)
    clients = [httpx.Client(base_url=f"http://127.0.0.1:{port}") for _ in range(CLIENTS)]
    try:
        for client in clients:
            assert client.get("/openapi.json").status_code == 200
        held = [_connections(worker, port) for worker in workers]
        assert min(held) >= 1, held  # (a few may be closed already, to even them)

        def even() -> bool:
            for client in clients:  # a closed connection is opened again, and drawn again
                assert client.get("/openapi.json").status_code == 200
            return [_connections(worker, port) for worker in workers] == [CLIENTS // 2] * 2

        wait_for(even, timeout=30, interval=0.05)
    finally:
        for client in clients:
            client.close()


def test_a_dead_worker_is_replaced_and_workers_outlive_no_parent(api: Any) -> None:
    server, port = api
    first, second = _serving(server, port)
    os.kill(first.pid, signal.SIGKILL)
    first.wait(timeout=15)  # a connection the kernel queued on it as it died is reset
    # Meanwhile every new connection is served: the dead worker's socket left the group.
    for _ in range(CLIENTS):
        assert httpx.get(f"http://127.0.0.1:{port}/openapi.json", timeout=10).status_code == 200
    workers = _serving(server, port)
    assert second in workers and first.pid not in {w.pid for w in workers}

    # Killed the moment it listens, before its server serves: replaced all the same (the
    # parent once took that for a worker that could not start, and stopped the API).
    os.kill(second.pid, signal.SIGKILL)
    second.wait(timeout=15)
    newest = next(w for w in _serving(server, port, interval=0.005) if w not in workers)
    os.kill(newest.pid, signal.SIGKILL)
    workers = _serving(server, port)
    assert httpx.get(f"http://127.0.0.1:{port}/openapi.json", timeout=10).status_code == 200

    os.kill(server.pid, signal.SIGKILL)  # the parent alone: its workers stop on their own
    _, alive = psutil.wait_procs(workers, timeout=15)
    assert not alive, [w.pid for w in alive]


def test_workers_that_cannot_start_stop_the_command_with_their_exit_code(db: Any) -> None:
    """An app that does not import fails in every worker alike: the parent stops instead of
    replacing workers forever, and says so by the workers' exit code. (Any other death, even
    between listening and serving, is replaced: the test above.)"""
    from continuum.api.serving import BOOT_FAILED, Workers

    options = {"app": "continuum.api.no_such_module:app", "host": "127.0.0.1",
               "port": free_port(), "log_config": None}  # fmt: skip
    workers = Workers(options, 2)
    guard = threading.Timer(60, workers._stopping.set)  # were they replaced forever
    guard.start()
    try:
        started = time.monotonic()
        assert workers.run() == BOOT_FAILED
        assert time.monotonic() - started < 60
    finally:
        guard.cancel()
