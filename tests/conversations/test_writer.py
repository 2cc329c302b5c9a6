"""The conversation writer against real Postgres: both doors (events, multi-row insert;
transcripts, COPY) store a message once, count only what they stored, keep a private tenant's
text out and seal an encrypted tenant's; a new session's COPY batch goes straight into
`messages`, and every way that can meet rows already there falls back to the conflict-safe
path without losing or doubling a row."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import select, text

from continuum.conversations.writer import (
    InsertedMessage,
    MessageRow,
    SessionFacts,
    SessionRaced,
    write,
)
from continuum.store.engine import session_scope
from continuum.store.models import Message, Session
from tests.support.message_rows import FACTS, T0, rows
from tests.support.wait import wait_for, waiting_on_a_lock


def insert_messages(db: Any, batch: list[MessageRow]) -> list[InsertedMessage]:
    """The transcript door: COPY, no session row."""
    return write(db, [], batch, copy=True)


def stored_ids() -> list[str]:
    with session_scope() as db:
        return list(db.scalars(select(Message.message_id).order_by(Message.message_id)))


def inserted_ids(inserted: list[InsertedMessage]) -> list[str]:
    return [message.message_id for message in inserted]


def test_a_new_sessions_batch_is_stored_whole_and_returned_in_key_order(db: Any) -> None:
    with session_scope() as session:
        inserted = insert_messages(session, rows("m3", "m1", "m2"))
    assert inserted == [
        InsertedMessage("default", "s1", f"m{i}", T0 + timedelta(minutes=i)) for i in (1, 2, 3)
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
    batch[2] = batch[2]._replace(content="a later line")
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


def count_and_contents(namespace: str = "default") -> tuple[int | None, list[str]]:
    """The session's message_count and the contents stored raw (sealed or not)."""
    with session_scope() as db:
        count = db.scalar(select(Session.message_count).where(Session.namespace == namespace))
        raw = db.execute(text("SELECT content FROM messages ORDER BY message_id")).scalars()
        return count, list(raw)


@pytest.mark.parametrize("copy", [False, True], ids=["events", "transcripts"])
def test_both_doors_count_only_the_messages_they_stored(db: Any, copy: bool) -> None:
    with session_scope() as session:
        write(session, [FACTS], rows("m1", "m2"), copy=copy)
    with session_scope() as session:
        inserted = write(session, [FACTS], rows("m2", "m3"), copy=copy)
    assert inserted_ids(inserted) == ["m3"]
    assert count_and_contents() == (3, ["message m1", "message m2", "message m3"])


@pytest.mark.parametrize("copy", [False, True], ids=["events", "transcripts"])
def test_a_private_tenants_text_is_never_written_by_either_door(
    db: Any, settings_env: Any, copy: bool
) -> None:
    settings_env(private_namespaces="default")
    with session_scope() as session:
        assert write(session, [FACTS], rows("m1", "m2"), copy=copy) == []
    assert count_and_contents() == (0, [])  # the session is known, its text is not


@pytest.mark.parametrize("copy", [False, True], ids=["events", "transcripts"])
def test_an_encrypted_tenants_text_is_sealed_by_either_door_and_read_back(
    db: Any, encrypted: str, copy: bool
) -> None:
    facts = SessionFacts(namespace=encrypted, session_id="s1", source="openclaw")
    details = {"mood": "calm harbour"}
    batch = [row._replace(namespace=encrypted, details=details) for row in rows("m1")]
    with session_scope() as session:
        write(session, [facts], batch, copy=copy)
    count, raw = count_and_contents(encrypted)
    assert count == 1 and raw[0].startswith("enc2:") and "message" not in raw[0]
    with session_scope() as session:  # the details are sealed whole, and open too
        stored = session.execute(text("SELECT details FROM messages")).scalar_one()
        assert set(stored) == {"sealed"} and "harbour" not in stored["sealed"]
        assert session.execute(select(Message.content, Message.details)).one() == (
            "message m1",
            details,
        )
