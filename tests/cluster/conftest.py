"""The cluster the scenarios of `make test-cluster` run on (`continuum.dev.cluster`): built
once for the run, skipped with the reason where network namespaces are not permitted, torn
down (every namespace, link, process and data directory) when the run ends, failed or not.
Each scenario counts its own events (by id), so one that failed skews no other."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.paths import TEST_HOME

FAILED = pytest.StashKey[bool]()  # whether a scenario's test body failed


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.when == "call":
        item.stash[FAILED] = report.failed
    return report


@pytest.fixture(scope="session")
def cluster() -> Iterator[Any]:
    """The cluster up, and this process (the controller) configured for it: its reads of
    the database and the broker go over the bridge."""
    from continuum.dev.cluster import Cluster, unavailable

    why = unavailable()
    if why:
        pytest.skip(f"cluster scenarios need Linux network namespaces: {why}")
    from continuum.config import get_settings
    from continuum.store import migrate

    built = Cluster(TEST_HOME / "cluster")
    with pytest.MonkeyPatch.context() as patch:
        try:
            try:
                built.up()
            except Exception:
                print(built.tails())  # what Redis or Postgres said before it failed
                raise
            for name, value in built.env().items():
                patch.setenv(name, value)
            get_settings.cache_clear()
            migrate.upgrade(built.postgres.url())
            yield built
        finally:
            get_settings.cache_clear()
            built.down()


@pytest.fixture(autouse=True)
def _logs_of_a_failure(request: pytest.FixtureRequest, cluster: Any) -> Iterator[None]:
    """A scenario that failed prints the tail of every log of the cluster."""
    yield
    if request.node.stash.get(FAILED, False):
        print(cluster.tails())
