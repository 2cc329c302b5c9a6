"""The embedded servers a run starts are the ones it stops: `make test`, `make bench` and
`make eval` leave nothing running, and never stop servers someone else started."""

from __future__ import annotations

import shutil

import pytest

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
