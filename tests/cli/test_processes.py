"""`continuum worker|flower`: a bad configuration is refused before Celery starts, a worker
that mixes ingestion with LLM work warns as it starts; Flower runs bound to loopback with
its credentials out of its command line."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from continuum.cli.processes import app
from continuum.contract.queues import ALL_QUEUES, EVENTS, EXTRACT
from continuum.processes import (
    WORKER_GROUPS,
    child_env,
    flower_argv,
    flower_env,
    shared_ingest_warning,
    spawn,
    stop,
    worker_argv,
)
from tests.support.net import answers, free_port
from tests.support.wait import wait_for

runner = CliRunner()


def test_flower_refuses_to_run_without_auth(servers: Any, settings_env: Any) -> None:
    settings_env(flower_password=None)
    result = runner.invoke(app, ["flower"])
    assert result.exit_code == 2 and "CONTINUUM_FLOWER_PASSWORD" in result.stderr


def test_worker_refuses_unknown_queues() -> None:
    result = runner.invoke(app, ["worker", "-Q", "events,bogus"])
    assert result.exit_code == 2 and "unknown queue(s) bogus" in result.stderr


def test_a_worker_on_events_and_the_llm_queue_warns_as_it_starts(
    servers: dict[str, str], tmp_path: Path
) -> None:
    """One pool for ingestion and LLM calls lets a failing, hanging LLM hold back events
    (minutes): `continuum worker -Q events,extract,...` says so in its log."""
    assert shared_ingest_warning(list(ALL_QUEUES))
    assert all(shared_ingest_warning(list(queues)) is None for _, queues, _ in WORKER_GROUPS)
    # A broker database no other worker uses: this one must not take the suite's messages.
    env = {**child_env(), "CONTINUUM_BROKER_URL": servers["broker_url"].rsplit("/", 1)[0] + "/4"}
    log = tmp_path / "worker.log"
    argv = worker_argv([EVENTS, EXTRACT], concurrency=1, pool="solo", hostname="mixed@%h")
    worker = spawn(argv, log, env=env)
    try:
        wait_for(lambda: "with one pool" in log.read_text(), timeout=60, interval=0.2)
    finally:
        stop(worker, timeout=10)
    assert "`events` and `extract`" in log.read_text()


def test_flower_refuses_a_password_it_would_split(servers: Any, settings_env: Any) -> None:
    settings_env(flower_password="secret,more")
    result = runner.invoke(app, ["flower"])
    assert result.exit_code == 2 and "comma" in result.stderr


def test_flower_listens_on_loopback_with_its_credentials_out_of_argv(
    servers: Any, settings_env: Any, tmp_path: Path
) -> None:
    """The password never appears in the process's command line, basic auth is on, and the
    server is bound to 127.0.0.1 (not reachable on another local address)."""
    import httpx

    settings_env(flower_password="s3cret-pass")
    port = free_port()
    flower = spawn(flower_argv(port), tmp_path / "flower.log", env=flower_env())
    try:
        url = f"http://127.0.0.1:{port}/"
        wait_for(lambda: answers(url), timeout=60)
        assert httpx.get(url).status_code == 401
        assert httpx.get(url, auth=("admin", "s3cret-pass")).status_code == 200
        cmdline = Path(f"/proc/{flower.pid}/cmdline").read_bytes()
        assert b"s3cret" not in cmdline and b"--address=127.0.0.1" in cmdline
        other = outward_address()
        if other:  # a non-loopback address of this host, if it has one
            with pytest.raises(httpx.ConnectError):
                httpx.get(f"http://{other}:{port}/", timeout=2)
    finally:
        stop(flower)


def outward_address() -> str | None:
    """An address of this host other than loopback (None when it has only loopback)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # TEST-NET-1: nothing is sent
        except OSError:
            return None
        address = str(probe.getsockname()[0])
    return None if address.startswith("127.") else address
