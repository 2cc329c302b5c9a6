"""The embedded servers a run starts are the ones it stops: `make test`, `make bench` and
`make eval` leave nothing running, and never stop servers someone else started."""

from __future__ import annotations

import shutil
import time
import uuid

import pytest
import redis

from continuum.dev.embedded import SERVER_NAMES, EmbeddedServers
from tests.support.paths import TEST_HOME

pytestmark = pytest.mark.slow  # three server starts, one a fresh initdb


def test_a_run_stops_what_it_started_and_leaves_what_it_found() -> None:
    # beside the run's own home: Postgres runs as a user of its own, who cannot enter the
    # root-only temporary directories pytest makes
    home = TEST_HOME.with_name(TEST_HOME.name + "-embedded")
    servers = EmbeddedServers(home)
    try:
        with servers.stopped_after():
            servers.up()
            assert servers.running() == SERVER_NAMES
        assert servers.running() == frozenset()  # started inside: stopped

        servers.up()  # someone else's, running before the run
        with servers.stopped_after():
            servers.up()  # the run finds them (idempotent)
        assert servers.running() == SERVER_NAMES  # left to their owner
    finally:
        servers.down()
        shutil.rmtree(home, ignore_errors=True)


@pytest.mark.parametrize("kill", [False, True], ids=["shutdown", "sigkill"])
def test_redis_restarts_in_place_at_once_with_every_write_it_answered(
    servers: dict[str, str], kill: bool
) -> None:
    """A clean restart and a SIGKILL (no last write) both come back with what Redis
    acknowledged (its AOF), on the same port, at once (with redis-py's default retries,
    SHUTDOWN was sent again to the server that had just gone, for seconds)."""
    embedded = EmbeddedServers(TEST_HOME)
    client = redis.Redis.from_url(servers["redis_url"])
    key = f"restart-probe:{uuid.uuid4()}"
    client.set(key, "kept")
    pid = embedded.redis_pid()
    started = time.monotonic()
    embedded.restart_redis(down_s=0, kill=kill)
    took_s = time.monotonic() - started
    assert embedded.redis_pid() not in (None, pid)
    assert client.get(key) == b"kept"
    client.delete(key)
    assert took_s < 5
