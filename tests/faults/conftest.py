"""Fault-injection fixtures: real worker processes (prefork) that tests can kill."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from continuum.contract.queues import ALL_QUEUES, EMBED
from continuum.dev import embedding_writes
from continuum.processes import child_env, group_argv, spawn, stop
from tests.support.worker_processes import FAULT_QUEUE


@pytest.fixture(autouse=True)
def _empty_broker(servers: dict[str, str]) -> None:
    """Each scenario starts with no task message queued, held or ledgered, and with a broker
    no worker has watched yet: the `db` fixture empties the app's Redis database, not the
    broker's, where a batch an earlier test left (the default suite's, or a scenario that
    timed out), a restart an earlier scenario's workers recorded but never recovered, or
    kombu's restore mutex held by a worker killed mid-sweep would otherwise reach this one's
    workers. Kombu's exchange bindings stay."""
    from kombu.transport.redis import Channel

    from continuum.contract import ledger
    from continuum.pipeline.redelivery import BROKER_STATE
    from continuum.redis_client import get_broker_redis

    broker = get_broker_redis()
    queues = [
        name for queue in (*ALL_QUEUES, FAULT_QUEUE) for name in broker.scan_iter(f"{queue}*")
    ]
    broker.delete(*queues, "unacked", "unacked_index", Channel.unacked_mutex_key, BROKER_STATE,
                  ledger.ENTRIES, ledger.INDEX)  # fmt: skip


@pytest.fixture
def embeddings(request: pytest.FixtureRequest, servers: Any, settings_env: Any) -> Iterator[bool]:
    """Whether this scenario runs with the real embedding model (parametrize it indirectly
    with True; default off: no model loading to skew timings). Worker processes inherit the
    environment. On, every committed write of a vector is recorded (`embedding_writes`)."""
    on = bool(getattr(request, "param", False))
    settings_env(embedding_provider="local" if on else "none")
    if not on:
        yield False
        return
    embedding_writes.install()
    yield True
    embedding_writes.uninstall()  # after the workers stop: `start_worker` depends on this


@pytest.fixture
def spawned(tmp_path: Path) -> Iterator[Callable[[list[str], str], subprocess.Popen[bytes]]]:
    """Spawn worker processes (log in `tmp_path`); all are stopped after the test. Their
    temporary files go to `tmp_path` too: a prefork worker's shared-memory arena (billiard's
    `pymp-*` directory) outlives a worker SIGKILLed on purpose."""
    started: list[subprocess.Popen[bytes]] = []

    def run(argv: list[str], name: str) -> subprocess.Popen[bytes]:
        env = {**child_env(), "TMPDIR": str(tmp_path)}
        proc = spawn(argv, tmp_path / f"{name}.log", env)
        started.append(proc)
        return proc

    yield run
    for proc in started:
        stop(proc, timeout=20)
    for log in tmp_path.glob("*.log"):
        sys.stderr.write(f"--- {log.name} (tail) ---\n{log.read_text()[-3000:]}\n")


@pytest.fixture
def start_worker(
    servers: Any, embeddings: bool, spawned: Callable[[list[str], str], subprocess.Popen[bytes]]
) -> Callable[..., subprocess.Popen[bytes]]:
    """Start `celery -A workers worker` processes on every queue (but `embed` when embeddings
    are on: `start_embed_worker` runs that group)."""
    queues = [queue for queue in (*ALL_QUEUES, FAULT_QUEUE) if not (embeddings and queue == EMBED)]

    def start(name: str = "w1", concurrency: int = 2) -> subprocess.Popen[bytes]:
        argv = [sys.executable, "-m", "celery", "-A", "workers", "worker",
                "-Q", ",".join(queues), "-P", "prefork",
                "-c", str(concurrency), "-n", f"{name}@%h", "--include", "tests.support.tasks",
                "--loglevel", "INFO", "--without-gossip", "--without-mingle"]  # fmt: skip
        return spawned(argv, name)

    return start


@pytest.fixture
def start_embed_worker(
    servers: Any, embeddings: bool, spawned: Callable[[list[str], str], subprocess.Popen[bytes]]
) -> Callable[[str], subprocess.Popen[bytes]]:
    """Start the `embed` worker group as `continuum worker` (no -Q) starts it: the same
    command line, its queue and fixed concurrency."""

    def start(name: str = "embed") -> subprocess.Popen[bytes]:
        assert embeddings, "with embeddings off an embed worker has nothing to do"
        return spawned(group_argv("embed", hostname=f"{name}@%h"), name)

    return start
