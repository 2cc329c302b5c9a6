"""Reads from a standby (CONTINUUM_READ_DATABASE_URL), against a real primary and its
streaming standby on loopback (`continuum.dev.pg_standby`): the read plane reads the
standby; a namespace's reads go to the primary while the standby lacks its last write
(read-your-writes), other namespaces' stay on the standby; a standby that does not answer
costs nothing but a warning; workers follow a promotion through a multi-host URL."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError, OperationalError

from continuum.api import create_app
from continuum.dev.pg_standby import PgStandby
from continuum.pipeline.ingest import ingest_batch
from continuum.recall.context import context
from continuum.recall.namespace_queries import recent_messages
from continuum.recall.search import search
from continuum.security.tokens import create_token
from continuum.store import migrate, reads
from continuum.store.engine import session_scope, statements_run
from continuum.store.reads import read_scope
from tests.support.events import turn
from tests.support.paths import TEST_HOME
from tests.support.wait import wait_for


@pytest.fixture(scope="module")
def pair(servers: dict[str, str]) -> Iterator[PgStandby]:
    """A primary and its standby for the module, the schema migrated on the primary."""
    with PgStandby(TEST_HOME / "pg-standby").serving() as pg:
        migrate.upgrade(pg.url("primary"))
        pg.wait_replayed()
        yield pg


@pytest.fixture
def standby(pair: PgStandby, settings_env: Any, request: pytest.FixtureRequest) -> PgStandby:
    """The app on the pair: writes to the primary, the read plane on the standby; the
    primary's tables and Redis emptied (the `db` fixture, on the pair's URL)."""
    settings_env(database_url=pair.url("primary"), read_database_url=pair.url("standby"))
    request.getfixturevalue("db")
    pair.wait_replayed()
    return pair


def served_by(namespace: str) -> str:
    """Which server a read of `namespace` goes to now."""
    with read_scope(namespace) as db:
        return "standby" if db.scalar(text("SELECT pg_is_in_recovery()")) else "primary"


def api_get(api: TestClient, token: str, path: str) -> Any:
    response = api.get(path, headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 200, (path, response.text)
    return response.json()


def test_the_read_plane_reads_the_standby(standby: PgStandby) -> None:
    ingest_batch([turn("The boiler pressure drops every night.", message_id="m1")])
    token, _ = create_token(["pearl"])
    standby.wait_replayed()
    with (
        statements_run(standby.url("standby")) as on_standby,
        statements_run(standby.url("primary")) as on_primary,
        TestClient(create_app()) as api,
    ):
        assert [hit.source_message_ids for hit in search("pearl", "boiler pressure")] == [["m1"]]
        assert "boiler" in context("pearl", "the boiler", 400, user_id="jason").block
        assert [m.message_id for m in recent_messages("pearl")] == ["m1"]
        assert api_get(api, token, "/v1/search?q=boiler")["items"]
        assert "boiler" in api_get(api, token, "/v1/context?seed_text=boiler")["block"]
        assert api_get(api, token, "/v1/messages")["items"]
    assert served_by("pearl") == served_by("opal") == "standby"
    assert any("messages" in sent.sql for sent in on_standby)
    # The primary only authenticated the token and logged the recalls.
    assert not [s for s in on_primary if "messages" in s.sql or "memories" in s.sql]
    assert any("INSERT INTO memory_log" in sent.sql for sent in on_primary)


def test_a_write_is_read_back_at_once_while_the_standby_lags(standby: PgStandby) -> None:
    ingest_batch([turn("Opal's heating works.", namespace="opal", message_id="o1")])
    standby.wait_replayed()
    standby.pause_replay()  # from here on the standby applies nothing: a lag, on purpose
    try:
        ingest_batch([turn("The plumber comes on Tuesday at nine.", message_id="m1")])
        assert standby.sql("standby", "SELECT count(*) FROM messages") == 1  # opal's only
        assert served_by("pearl") == "primary"
        assert [hit.source_message_ids for hit in search("pearl", "plumber")] == [["m1"]]
        assert "plumber" in context("pearl", "when does the plumber come?", 400).block
        # Another namespace's reads meanwhile: the standby has all of its writes.
        assert served_by("opal") == "standby"
        assert [m.message_id for m in recent_messages("opal")] == ["o1"]
        assert served_by("nobody-wrote-here") == "standby"
    finally:
        standby.resume_replay()
    standby.wait_replayed()
    assert served_by("pearl") == "standby"


def test_a_turn_a_worker_stored_is_searched_at_once(
    standby: PgStandby, worker: Any, client: Any
) -> None:
    """The worker that committed the turn recorded its namespace's token: the search right
    after goes to the primary, though the standby has not replayed the turn."""
    standby.pause_replay()
    try:
        event_id = client.emit(turn("Remember the gate code is 4471.", message_id="g1"))

        def landed() -> bool:
            with session_scope() as db:
                found = db.scalar(
                    text("SELECT count(*) FROM processed_events WHERE event_id = :id"),
                    {"id": event_id},
                )
            return bool(found)

        wait_for(landed, timeout=30)
        assert [hit.source_message_ids for hit in search("pearl", "gate code")][:1] == [["g1"]]
        assert standby.sql("standby", "SELECT count(*) FROM messages") == 0
    finally:
        standby.resume_replay()


def test_reads_fall_back_to_the_primary_while_the_standby_is_down(
    standby: PgStandby, caplog: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reads, "STANDBY_RETRY_S", 0.5)
    caplog.set_level(logging.WARNING, logger="continuum.store.reads")
    ingest_batch([turn("The boiler pressure drops every night.", message_id="m1")])
    token, _ = create_token(["pearl"])
    standby.wait_replayed()
    assert served_by("pearl") == "standby"  # a pooled connection to it, which dies now
    standby.stop("standby")
    try:
        with TestClient(create_app()) as api:
            assert api_get(api, token, "/v1/search?q=boiler")["items"]
            assert "boiler" in api_get(api, token, "/v1/context?seed_text=boiler")["block"]
        assert [hit.source_message_ids for hit in search("pearl", "boiler")] == [["m1"]]
        assert served_by("pearl") == "primary"
    finally:
        standby.start("standby")
    warnings = [r.getMessage() for r in caplog.records if r.name == "continuum.store.reads"]
    assert any(
        "read standby (CONTINUUM_READ_DATABASE_URL) does not answer: reads go to the primary"
        in line
        for line in warnings
    ), warnings
    wait_for(lambda: served_by("pearl") == "standby", timeout=20)
    assert "the read standby answers again" in caplog.text


def test_the_read_plane_answers_from_the_standby_while_the_primary_is_down(
    standby: PgStandby, caplog: Any
) -> None:
    """Search, context and sync problems keep answering: the token is checked on the
    standby, the recall log is lost (a warning), the namespace read there although it may
    lack a last write."""
    caplog.set_level(logging.WARNING)
    ingest_batch([turn("Let's go with Hoffmann Landscaping for the garden.", message_id="m1")])
    token, _ = create_token(["pearl"])
    standby.wait_replayed()
    standby.stop("primary")
    try:
        with TestClient(create_app()) as api:
            assert api_get(api, token, "/v1/search?q=Hoffmann")["items"]
            assert "Hoffmann" in api_get(api, token, "/v1/context?seed_text=garden")["block"]
            assert api_get(api, token, "/v1/sync/problems")["items"] == []
    finally:
        standby.start("primary")
    assert "not logged" in caplog.text  # the recall log: the primary did not answer


def test_a_write_on_the_standby_is_a_transient_fault(standby: PgStandby) -> None:
    """A writer that reached a standby (a failover under way, or a URL without
    target_session_attrs): its task is retried, not dead-lettered."""
    from workers.base import is_transient

    with pytest.raises(DBAPIError) as refused, session_scope(standby.url("standby")) as db:
        db.execute(text("INSERT INTO processed_events (namespace, event_id) "
                        "VALUES ('pearl', gen_random_uuid())"))  # fmt: skip
    assert "read-only transaction" in str(refused.value)
    assert is_transient(refused.value)


def test_an_api_write_that_reached_the_standby_is_a_503(
    standby: PgStandby, settings_env: Any
) -> None:
    """The API answers a fault the workers would retry (`continuum.store.faults`) with 503
    and Retry-After: here a write that reached the standby (it was a 500)."""
    token, _ = create_token(["pearl"])
    with TestClient(create_app()) as api:
        api_get(api, token, "/v1/me")  # the token checked, and remembered
        settings_env(database_url=standby.url("standby"))
        refused = api.post("/v1/tasks", json={"title": "Call the plumber"},
                           headers={"Authorization": f"Bearer {token}"})  # fmt: skip
    assert refused.status_code == 503 and refused.headers["Retry-After"] == "5"
    assert "database does not answer" in refused.text


@pytest.mark.slow
def test_workers_follow_a_promotion_through_a_multi_host_url(
    servers: dict[str, str],
    settings_env: Any,
    worker: Any,
    client: Any,
    request: pytest.FixtureRequest,
    caplog: Any,
) -> None:
    """Writers name both servers (`target_session_attrs=read-write`), readers too
    (`prefer-standby`). The primary stops: writes fail as transient faults (the standby
    refuses them) and the worker's task retries; once the standby is promoted, its next
    attempt writes there. Nothing is lost."""
    with PgStandby(TEST_HOME / "pg-promote").serving() as pg:
        migrate.upgrade(pg.url("primary"))
        settings_env(
            database_url=pg.multi_host_url("read-write"),
            read_database_url=pg.multi_host_url("prefer-standby"),
        )
        request.getfixturevalue("db")

        def landed(event_id: str) -> bool:
            with session_scope() as db:
                found = db.scalar(
                    text("SELECT count(*) FROM processed_events WHERE event_id = :id"),
                    {"id": event_id},
                )
            return bool(found)

        first = client.emit(turn("The electrician came on Monday.", message_id="e1"))
        wait_for(lambda: landed(first), timeout=30)
        pg.stop("primary")
        stopped = time.monotonic()
        with pytest.raises(OperationalError) as refused:
            landed(first)  # the pooled connection is gone; the standby refuses to be written
        from workers.base import is_transient

        assert is_transient(refused.value)
        caplog.set_level(logging.WARNING, logger="workers.base")
        second = client.emit(turn("The electrician comes back on Friday.", message_id="e2"))
        wait_for(lambda: "transient fault" in caplog.text, timeout=30)  # the task will retry
        assert served_by("pearl") == "standby"  # reads go on meanwhile
        assert [h.source_message_ids for h in search("pearl", "electrician Monday")][:1] == [["e1"]]
        stopped_s = time.monotonic() - stopped
        pg.promote("standby")
        promoted = time.monotonic()
        wait_for(lambda: landed(second), timeout=60)
        print(
            f"\nprimary stopped {stopped_s:.1f}s before the promotion; the worker's write "
            f"landed on the promoted standby {time.monotonic() - promoted:.1f}s after it"
        )
        assert served_by("pearl") == "primary"  # the promoted standby: it has every write
        assert {m.message_id for m in recent_messages("pearl")} == {"e1", "e2"}
