"""The soak (`make soak`, bench/soak.py): its checks fail on what they look for, and a short
run with faults passes them all."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest

from bench.common import console
from bench.soak import (
    GrowingHome,
    Recorder,
    SoakOptions,
    SoakResult,
    namespaces,
    run_soak,
    tables,
    verify,
)
from continuum.dev import embedding_writes
from tests.support.paths import TEST_HOME


def test_the_checks_fail_on_a_lost_event_a_lost_line_and_a_leak(db: Any, tmp_path: Any) -> None:
    tenants, synced = namespaces("t0")
    spaces = [*tenants, *synced.values()]
    recorder = Recorder()
    recorder.accepted[str(uuid.uuid4())] = ("soak-a", time.time())  # accepted, never stored
    recorder.leak("search in soak-a returned a row holding basilxt0")
    home = GrowingHome(tmp_path, {}, "t0")
    home.written[("soak", "never-synced")] = "openclaw"
    embedding_writes.install()
    try:
        checks = {check.name: check for check in verify(recorder, home, tenants, spaces)}
    finally:
        embedding_writes.uninstall()
    failed = {name for name, check in checks.items() if not check.ok}
    assert failed == {"accepted events lost", "transcript lines lost", "leaks"}
    assert (checks["accepted events lost"].value, checks["transcript lines lost"].value) == (1, 1)
    options = SoakOptions(minutes=1, seed=0)
    assert not SoakResult(options, list(checks.values()), [], [], []).ok  # exit status 1


@pytest.mark.slow
def test_a_two_minute_soak_with_faults_keeps_every_promise(servers: Any, db: Any) -> None:
    """Two faults (seed 3: a worker group SIGKILLed, then Redis restarted) under traffic from
    every door; every check passes but RSS growth, which two minutes cannot judge (a process
    is still warming up)."""
    result = run_soak(servers, TEST_HOME, SoakOptions(minutes=2, seed=3, quiet=True))
    for table in tables(result):
        console.print(table)
    failed = [c for c in result.checks if not c.ok and not c.name.startswith("Continuum")]
    assert not failed, failed
    assert len({fault.kind for fault in result.faults}) == 2, result.faults
    assert all(not fault.detail.endswith("failed") for fault in result.faults)
    assert [row["minute"] for row in result.minutes] == [1, 2]
    for row in result.minutes:  # every kind of call ran, each minute
        assert all(
            row[call] is not None for call in ("emit", "POST events", "search", "context", "sync")
        )
    processes = {row["process"]: row for row in result.rss}
    assert set(processes) == {"worker ingest", "worker embed", "worker background", "beat",
                              "api", "redis (server)", "postgres (server)"}  # fmt: skip
    assert all(row["start_mib"] > 0 and row["end_mib"] > 0 for row in processes.values())
    assert result.totals["events accepted"] > 0 and result.totals["transcript lines"] > 0
