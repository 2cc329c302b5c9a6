"""Engine handling: a stored row never breaks a tenant's reads; raw statements (`fetch`) run
in the caller's transaction, alike whether or not something listens to the engine."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text
from sqlalchemy.exc import OperationalError, ProgrammingError

from continuum.api import create_app
from continuum.recall.namespace_queries import list_sessions, recent_messages
from continuum.recall.search import search
from continuum.security.tokens import create_token
from continuum.store.engine import fetch, get_engine, session_scope, statements_run


@pytest.mark.parametrize(
    ("stored", "read_as"),
    [
        ("10000-01-01 00:59:59+00", datetime.max.replace(tzinfo=UTC)),
        ("0001-12-31 23:00:00+00 BC", datetime.min.replace(tzinfo=UTC)),
    ],
)
def test_a_time_python_cannot_hold_does_not_poison_reads(
    db: Any, stored: str, read_as: datetime
) -> None:
    """Such rows came in through events before times were checked (year 10000 in UTC from
    '9999-12-31T23:59:59-01:00', BC from '0001-01-01T00:00:00+01:00')."""
    with session_scope() as conn:
        conn.execute(
            text(
                "INSERT INTO sessions (namespace, session_id, channel, started_at, "
                "last_activity_at) VALUES ('pearl', 's1', 'voice', CAST(:at AS timestamptz), "
                "CAST(:at AS timestamptz))"
            ),
            {"at": stored},
        )
        conn.execute(
            text(
                "INSERT INTO messages (namespace, session_id, message_id, role, content, "
                "channel, created_at) VALUES ('pearl', 's1', 'm1', 'user', "
                "'The boiler pressure is low.', 'voice', CAST(:at AS timestamptz))"
            ),
            {"at": stored},
        )
    assert [m.created_at for m in recent_messages("pearl")] == [read_as]
    assert [s.started_at for s in list_sessions("pearl")] == [read_as]
    assert [hit.source_message_ids for hit in search("pearl", "boiler pressure")] == [["m1"]]
    token, _ = create_token(["pearl"])
    with TestClient(create_app()) as api:
        headers = {"Authorization": f"Bearer {token}"}
        for path in ("/v1/messages", "/v1/sessions", "/v1/search?q=boiler"):
            response = api.get(path, headers=headers)
            assert response.status_code == 200, (path, response.text)


def _listened() -> bool:
    """Whether something listens to the engine's statements (then `fetch` takes
    SQLAlchemy's path, not psycopg's)."""
    return bool(get_engine().dispatch.before_cursor_execute)


def test_a_raw_statement_runs_in_the_callers_transaction_alike_when_observed(db: Any) -> None:
    """`fetch` runs on the session's own connection (it sees the transaction's uncommitted
    row); with a listener on the engine (`statements_run`, tracing) it goes through
    SQLAlchemy, which then sees it, and gives the same rows."""
    sql = (
        "SELECT session_id, started_at, '100%' AS share FROM sessions "
        "WHERE namespace = :ns AND session_id = ANY(:ids) ORDER BY session_id"
    )
    params = {"ns": "pearl", "ids": ["s1", "s2"]}
    assert not _listened(), "nothing may listen: the first read is psycopg's own"
    with session_scope() as conn:
        conn.execute(
            text(
                "INSERT INTO sessions (namespace, session_id, channel, started_at, "
                "last_activity_at) VALUES ('pearl', 's1', 'voice', now(), now())"
            )
        )
        alone = fetch(conn, sql, params)
        with statements_run() as sent:
            observed = fetch(conn, sql, params)
        conn.rollback()
    assert [(row.session_id, row.share) for row in alone] == [("s1", "100%")]
    assert [tuple(row) for row in observed] == [tuple(row) for row in alone]
    assert [statement for statement, _ in sent] == [
        sql.replace(":ns", "%(ns)s").replace(":ids", "%(ids)s").replace("%'", "%%'")
    ]


def test_a_raw_statements_errors_are_sqlalchemys_and_a_lost_connection_leaves_the_pool(
    db: Any,
) -> None:
    """What the API's 503, the standby fallback and the workers' retries key on: an error
    of `fetch` is SQLAlchemy's, as it would be through SQLAlchemy; a connection Postgres
    dropped is invalidated, so the next transaction gets a live one."""
    assert not _listened(), "nothing may listen: the reads are psycopg's own"
    with pytest.raises(ProgrammingError), session_scope() as conn:
        fetch(conn, "SELECT no_such_column FROM sessions", {})
    with pytest.raises(OperationalError) as lost, session_scope() as conn:
        (me,) = fetch(conn, "SELECT pg_backend_pid() AS pid", {})
        with session_scope() as other:
            other.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": me.pid})
        fetch(conn, "SELECT 1 AS one", {})
    assert lost.value.connection_invalidated
    with session_scope() as conn:
        assert [row.one for row in fetch(conn, "SELECT 1 AS one", {})] == [1]
