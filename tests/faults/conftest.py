"""Fault-injection fixtures: real worker processes (prefork) that tests can kill."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from continuum.cli.processes import spawn, stop
from continuum.contract.queues import ALL_QUEUES

FAULT_QUEUE = "faults"


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


def kill(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the worker and its pool children: no warm shutdown, nothing acked."""
    os.killpg(proc.pid, 9)
    proc.wait()
