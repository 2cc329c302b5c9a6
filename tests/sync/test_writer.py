"""The bulk writer against real Postgres: a new session's batch COPYed straight into
`messages`, and every way that can meet rows already there falling back to the
conflict-safe path without losing or doubling a row."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import select, text

from continuum.store.engine import session_scope
from continuum.store.models import Message
from continuum.sync.writer import InsertedMessage, SessionFacts, insert_messages, message_rows
from continuum.transcripts import TranscriptMessage

T0 = datetime(2026, 2, 26, 22, 0, tzinfo=UTC)
FACTS = SessionFacts(namespace="default", session_id="s1", source="openclaw")


def rows(*ids: str) -> list[tuple[Any, ...]]:
    messages = [
        TranscriptMessage(
            message_id=message_id,
            parent_id=None,
            role="user",
            content=f"message {message_id}",
            created_at=T0 + timedelta(minutes=int(message_id[1:])),
        )
        for message_id in ids
    ]
    return message_rows(FACTS, messages, {})


def stored_ids() -> list[str]:
    with session_scope() as db:
        return list(db.scalars(select(Message.message_id).order_by(Message.message_id)))


def inserted_ids(inserted: list[InsertedMessage]) -> list[str]:
    return [message.message_id for message in inserted]


def test_a_new_sessions_batch_is_stored_whole_and_returned_in_key_order(db: Any) -> None:
    with session_scope() as session:
        inserted = insert_messages(session, rows("m3", "m1", "m2"))
    assert inserted == [
        InsertedMessage("s1", f"m{i}", T0 + timedelta(minutes=i)) for i in (1, 2, 3)
    ]
    assert stored_ids() == ["m1", "m2", "m3"]


def test_a_batch_meeting_stored_rows_adds_only_the_missing_ones(db: Any) -> None:
    with session_scope() as session:
        insert_messages(session, rows("m1", "m2"))
    with session_scope() as session:
        assert inserted_ids(insert_messages(session, rows("m2", "m3"))) == ["m3"]
    assert stored_ids() == ["m1", "m2", "m3"]


def test_an_id_repeated_in_a_new_sessions_batch_is_stored_once_and_the_batch_goes_on(
    db: Any,
) -> None:
    with session_scope() as session:
        assert inserted_ids(insert_messages(session, rows("m1", "m2", "m1"))) == ["m1", "m2"]
        session.execute(text("SELECT 1"))  # the transaction is still usable
    assert stored_ids() == ["m1", "m2"]


def _waiting_on_a_lock() -> bool:
    with session_scope() as db:
        waiting = db.scalar(
            text(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                " AND wait_event_type = 'Lock'"
            )
        )
    return bool(waiting)


def test_two_writers_of_the_same_new_session_store_each_message_once(db: Any) -> None:
    """Both see a session without rows; the second waits on the first's uncommitted rows,
    meets them once it commits, and adds only its own."""
    second: dict[str, Any] = {}

    def write_second() -> None:
        try:
            with session_scope() as session:
                second["inserted"] = insert_messages(session, rows("m1", "m2", "m3"))
        except BaseException as exc:
            second["error"] = exc

    with session_scope() as first:
        assert inserted_ids(insert_messages(first, rows("m1", "m2"))) == ["m1", "m2"]
        thread = threading.Thread(target=write_second)
        thread.start()
        deadline = time.monotonic() + 10
        while not _waiting_on_a_lock():
            assert time.monotonic() < deadline, "the second writer never waited"
            time.sleep(0.02)
    thread.join(10)
    assert "error" not in second
    assert inserted_ids(second["inserted"]) == ["m3"]
    assert stored_ids() == ["m1", "m2", "m3"]
