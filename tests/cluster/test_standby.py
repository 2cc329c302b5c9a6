"""Reads from a Postgres standby across hosts (`make test-cluster`): host `pg-standby`
streams the primary; the API host reads it (CONTINUUM_READ_DATABASE_URL); the primary is
stopped, then the standby promoted. Runs after tests/cluster/test_cluster.py (file order):
the promotion leaves the cluster with the standby as its primary."""

from __future__ import annotations

import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import psycopg
import pytest

from continuum.dev.cluster import (
    PG_PORT,
    WORKER_HOSTS,
    WORKER_SESSION,
    Cluster,
    ClusterPostgres,
)
from tests.support.cluster import (
    produced,
    show,
    start_producer,
    start_worker_hosts,
    stop_worker_hosts,
)
from tests.support.events import turn
from tests.support.stored_events import assert_exactly_once, decisions, figures
from tests.support.wait import wait_for

pytestmark = pytest.mark.cluster

API_PORT = 8000


def sql(postgres: ClusterPostgres, query: str, database: str = "continuum") -> Any:
    """The first column of the first row of `query` on one server, straight over the bridge."""
    url = postgres.url(database).replace("+psycopg", "")
    with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
        row = conn.execute(query).fetchone()
    return row[0] if row else None


def caught_up(primary: ClusterPostgres, standby: ClusterPostgres) -> bool:
    """Whether the standby has replayed everything the primary has written so far."""
    written = sql(primary, "SELECT pg_current_wal_lsn()::text")
    return bool(sql(standby, f"SELECT pg_last_wal_replay_lsn() >= '{written}'::pg_lsn"))


@pytest.fixture(scope="module")
def standby(cluster: Cluster) -> ClusterPostgres:
    return cluster.add_standby()


def test_the_standby_host_streams_the_primary(cluster: Cluster, standby: ClusterPostgres) -> None:
    """The harness itself: a streaming standby on its own host, read-only, that replays
    what the primary commits."""
    marker = f"cluster-probe-{uuid.uuid4()}"
    sql(cluster.postgres, f"INSERT INTO system_state (key, value) VALUES ('{marker}', '1')"
        " RETURNING key")  # fmt: skip
    wait_for(lambda: sql(standby, f"SELECT count(*) FROM system_state WHERE key = '{marker}'"),
             timeout=30, interval=0.2)  # fmt: skip
    assert sql(standby, "SELECT pg_is_in_recovery()") is True
    assert sql(cluster.postgres, "SELECT count(*) FROM pg_stat_replication") == 1


def following_url(cluster: Cluster, standby: ClusterPostgres) -> str:
    """Both servers in one URL, the writable one chosen (libpq's target_session_attrs): a
    process with it follows a promotion without a restart."""
    hosts = "&".join(f"host={server.host.address}:{PG_PORT}"
                     for server in (cluster.postgres, standby))  # fmt: skip
    return (f"postgresql+psycopg://postgres@/continuum?{hosts}&target_session_attrs=read-write"
            f"&options={quote(WORKER_SESSION)}")  # fmt: skip


@pytest.fixture(scope="module")
def reading_standby(
    cluster: Cluster, standby: ClusterPostgres
) -> Iterator[tuple[str, dict[str, str]]]:
    """The worker hosts (following a promotion) and the API host reading the standby; yields
    the API's base URL and the headers of a token for the tenant `pearl`."""
    from continuum.security.tokens import create_token

    token, _ = create_token(["pearl"])
    wait_for(lambda: caught_up(cluster.postgres, standby), timeout=30, interval=0.2)
    following = following_url(cluster, standby)
    # Workers write to the primary, but record what they wrote for the API's read-your-writes
    # only when they know of the standby: the setting goes on every process (README).
    start_worker_hosts(cluster, WORKER_HOSTS, database_url=following,
                       read_database_url=standby.url())  # fmt: skip
    api = cluster.hosts["api"].address
    continuum = str(Path(sys.executable).parent / "continuum")
    cluster.start("api", [continuum, "api", "--host", api, "--port", str(API_PORT),
                          "--workers", "1"], "api",
                  database_url=following, read_database_url=standby.url())  # fmt: skip
    base = f"http://{api}:{API_PORT}"
    wait_for(lambda: _answers(f"{base}/metrics"), timeout=60, interval=0.2)
    yield base, {"Authorization": f"Bearer {token}"}
    cluster.stop("api", "api")
    stop_worker_hosts(cluster, WORKER_HOSTS)


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def test_a_turn_accepted_then_searched_through_the_standby_api_is_found(
    cluster: Cluster, standby: ClusterPostgres, reading_standby: tuple[str, dict[str, str]]
) -> None:
    """The standby's replay paused (it lags as far as it likes): the caller that wrote a turn
    finds it at once through the API that reads the standby."""
    base, headers = reading_standby
    word = f"marigold{uuid.uuid4().hex[:8]}"
    event = turn(f"Plant the {word} beside the trellis.", message_id=word, session_id="ryw")
    sql(standby, "SELECT pg_wal_replay_pause()")
    try:
        answer = httpx.post(f"{base}/v1/events", json=event, headers=headers, timeout=10)
        assert answer.status_code == 202, answer.text
        wait_for(lambda: figures([event])["processed"] == 1, timeout=60, interval=0.1)
        assert sql(standby, f"SELECT count(*) FROM messages WHERE message_id = '{word}'") == 0
        hits = httpx.get(f"{base}/v1/search", params={"q": word}, headers=headers, timeout=10)
    finally:
        sql(standby, "SELECT pg_wal_replay_resume()")
    assert hits.status_code == 200, hits.text
    assert word in hits.text
    print(f"\nfound {word} through the standby's API with the standby's replay paused")


def test_the_primary_stopped_search_and_context_answer_from_the_standby(
    cluster: Cluster, standby: ClusterPostgres, reading_standby: tuple[str, dict[str, str]]
) -> None:
    base, headers = reading_standby
    events = decisions(200, "standby")
    start_producer(cluster, events, "standby")
    produced(cluster, "standby")
    assert_exactly_once(events)
    wait_for(lambda: caught_up(cluster.postgres, standby), timeout=30, interval=0.2)
    cluster.postgres.stop()
    stopped = time.time()
    search = httpx.get(f"{base}/v1/search", params={"q": "supplier standby7"}, headers=headers,
                       timeout=30)  # fmt: skip
    context = httpx.get(f"{base}/v1/context", params={"seed_text": "garden fence supplier"},
                        headers=headers, timeout=30)  # fmt: skip
    answered_s = time.time() - stopped
    show("the primary stopped: the API reads the standby",
         ["call", "status", "answered within s"],
         [["search", search.status_code, answered_s], ["context", context.status_code,
                                                       answered_s]])  # fmt: skip
    assert search.status_code == 200 and "standby7" in search.text, search.text
    assert context.status_code == 200 and "supplier" in context.json()["block"], context.text


def test_after_the_standby_is_promoted_workers_write_again_and_lose_nothing(
    cluster: Cluster,
    standby: ClusterPostgres,
    reading_standby: tuple[str, dict[str, str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Events sent while no Postgres takes writes wait in the broker (workers retry); once the
    standby is promoted the workers, on the URL naming both servers, write to it: every
    event stored exactly once."""
    from continuum.config import get_settings

    cluster.postgres.stop()  # the previous scenario stopped it already, unless run alone
    monkeypatch.setenv("CONTINUUM_DATABASE_URL", following_url(cluster, standby))
    get_settings.cache_clear()
    events = decisions(500, "promoted")
    start_producer(cluster, events, "promoted")
    time.sleep(5)  # events accepted, their batches failing and retrying meanwhile
    promoted_at = time.time()
    standby.promote()
    produced(cluster, "promoted")
    found = assert_exactly_once(events)
    print(f"promoted; every event stored {time.time() - promoted_at:.1f}s after: {found}")
    get_settings.cache_clear()
