"""The bulk writer against real Postgres: a new session's batch COPYed straight into
`messages`, and every way that can meet rows already there falling back to the
conflict-safe path without losing or doubling a row."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import select, text

from continuum.store.engine import session_scope
from continuum.store.models import Message
from continuum.sync.writer import (
    COLUMNS,
    InsertedMessage,
    SessionFacts,
    SessionRaced,
    insert_messages,
    message_rows,
)
from continuum.transcripts import TranscriptMessage
from tests.support.wait import wait_for, waiting_on_a_lock

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
    batch = rows("m1", "m2", "m1")
    content = COLUMNS.index("content")
    batch[2] = (*batch[2][:content], "a later line", *batch[2][content + 1 :])
    with session_scope() as session:
        assert inserted_ids(insert_messages(session, batch)) == ["m1", "m2"]
        session.execute(text("SELECT 1"))  # the transaction is still usable
    assert stored_ids() == ["m1", "m2"]
    with session_scope() as session:  # the first line is the one kept
        kept = session.scalar(select(Message.content).where(Message.message_id == "m1"))
    assert kept == "message m1"


def test_two_writers_of_the_same_new_session_store_each_message_once(db: Any) -> None:
    """Both see a session without rows; the second waits on the first's uncommitted rows
    and, once they commit, loses its transaction (`SessionRaced`); run again, it meets them
    and adds only its own."""
    second: dict[str, Any] = {}

    def write_second() -> None:
        try:
            with session_scope() as session:
                insert_messages(session, rows("m1", "m2", "m3"))
        except BaseException as exc:
            second["error"] = exc

    with session_scope() as first:
        assert inserted_ids(insert_messages(first, rows("m1", "m2"))) == ["m1", "m2"]
        thread = threading.Thread(target=write_second)
        thread.start()
        wait_for(waiting_on_a_lock, timeout=10)
    thread.join(10)
    assert isinstance(second["error"], SessionRaced)
    assert stored_ids() == ["m1", "m2"]  # nothing of the lost transaction
    with session_scope() as session:
        assert inserted_ids(insert_messages(session, rows("m1", "m2", "m3"))) == ["m3"]
    assert stored_ids() == ["m1", "m2", "m3"]
