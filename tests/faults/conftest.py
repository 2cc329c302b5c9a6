"""Fault-injection fixtures: real worker processes (prefork) that tests can kill."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from continuum.contract.queues import ALL_QUEUES
from continuum.processes import spawn, stop
from tests.support.worker_processes import FAULT_QUEUE


@pytest.fixture(autouse=True)
def _empty_broker(servers: dict[str, str]) -> None:
    """Each scenario starts with no task message queued, held or ledgered: the `db` fixture
    empties the app's Redis database, not the broker's, where a batch an earlier test left
    (the default suite's, or a scenario that timed out) would otherwise reach this one's
    workers. Kombu's exchange bindings stay."""
    from continuum.contract import ledger
    from continuum.redis_client import get_broker_redis

    broker = get_broker_redis()
    queues = [
        name for queue in (*ALL_QUEUES, FAULT_QUEUE) for name in broker.scan_iter(f"{queue}*")
    ]
    broker.delete(*queues, "unacked", "unacked_index", ledger.ENTRIES, ledger.INDEX)


@pytest.fixture
def start_worker(servers: Any, tmp_path: Path) -> Iterator[Callable[..., subprocess.Popen[bytes]]]:
    """Start `celery -A workers worker` processes; all are stopped after the test."""
    started: list[subprocess.Popen[bytes]] = []

    def start(name: str = "w1", concurrency: int = 2) -> subprocess.Popen[bytes]:
        argv = [sys.executable, "-m", "celery", "-A", "workers", "worker",
                "-Q", ",".join((*ALL_QUEUES, FAULT_QUEUE)), "-P", "prefork",
                "-c", str(concurrency), "-n", f"{name}@%h", "--include", "tests.support.tasks",
                "--loglevel", "INFO", "--without-gossip", "--without-mingle"]  # fmt: skip
        proc = spawn(argv, tmp_path / f"{name}.log")
        started.append(proc)
        return proc

    yield start
    for proc in started:
        stop(proc, timeout=20)
    for log in tmp_path.glob("*.log"):
        sys.stderr.write(f"--- {log.name} (tail) ---\n{log.read_text()[-3000:]}\n")
