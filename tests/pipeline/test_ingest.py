"""The events stage against real Postgres: idempotent, scoped, dead-letters bad input."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import func, select, text

from continuum.ephemeral.handoff import consume_handoff, peek_handoff
from continuum.ephemeral.keys import key
from continuum.pipeline.ingest import ingest_batch
from continuum.recall.namespace_queries import (
    day_messages,
    list_sessions,
    recent_messages,
    search_messages,
)
from continuum.redis_client import get_redis
from continuum.store.engine import session_scope
from continuum.store.models import DeadLetter, Message, Session
from tests.support.events import T0, now_at, session_end, turn


def count(model: Any, **where: Any) -> int:
    with session_scope() as db:
        stmt = select(func.count()).select_from(model).filter_by(**where)
        return int(db.scalar(stmt) or 0)


def test_turns_are_persisted_and_searchable_at_once(db: Any) -> None:
    result = ingest_batch(
        [
            turn("Let's go with Hoffmann Landscaping for the garden.", message_id="m1"),
            turn("Good choice, starting December 2nd.", role="assistant", message_id="m2", at=5),
        ]
    )
    assert (result.processed, result.messages_inserted, result.invalid) == (2, 2, 0)
    hits = search_messages("pearl", "landscaping garden")
    assert [hit.message_id for hit in hits] == ["m1"]
    assert hits[0].created_at == T0  # event time, never ingest time
    session = list_sessions("pearl")[0]
    assert (session.message_count, session.channel, session.status) == (2, "voice", "active")


def test_same_event_twice_is_one_row(db: Any) -> None:
    event = turn("I prefer short emails.", message_id="m1")
    ingest_batch([event])
    again = ingest_batch([event, event])
    assert (again.duplicates, again.messages_inserted) == (2, 0)
    assert count(Message) == 1
    assert list_sessions("pearl")[0].message_count == 1


def test_same_message_under_new_event_ids_is_one_row(db: Any) -> None:
    # A runtime that resends a turn after a timeout generates a fresh event id.
    ingest_batch([turn("Volume at 75%, please.", message_id="m7")])
    result = ingest_batch([turn("Volume at 75%, please.", message_id="m7")])
    assert (result.processed, result.messages_inserted) == (1, 0)
    assert count(Message) == 1
    assert list_sessions("pearl")[0].message_count == 1


def test_invalid_events_are_dead_lettered_and_the_rest_lands(db: Any) -> None:
    good = turn("My daughter Emma lives in Lyon.", message_id="good")
    result = ingest_batch([good, {"kind": "turn", "namespace": "pearl"}, "garbage", 17])
    assert (result.processed, result.invalid) == (1, 3)
    assert count(Message) == 1
    with session_scope() as session:
        letters = list(session.scalars(select(DeadLetter).order_by(DeadLetter.id)))
    assert [letter.reason for letter in letters] == ["invalid_event"] * 3
    assert "session_id" in (letters[0].error or "") and letters[0].namespace == "pearl"
    assert letters[1].payload == "'garbage'"


def test_a_payload_that_is_not_a_list_is_dead_lettered_whole(db: Any) -> None:
    result = ingest_batch("not a batch")  # type: ignore[arg-type]
    assert (result.received, result.processed, result.invalid) == (1, 0, 1)
    assert count(DeadLetter, reason="invalid_batch") == 1


def test_session_end_marks_the_session_ended(db: Any) -> None:
    ingest_batch([turn("hello there, let's plan the garden", message_id="m1")])
    ingest_batch([session_end(at=90)])
    session = list_sessions("pearl")[0]
    assert session.status == "ended"
    assert session.end_reason == "client_disconnected"
    assert (session.ended_at - session.started_at).total_seconds() == 90


def test_a_session_ended_and_spoken_in_again_ends_no_earlier_than_its_last_turn(db: Any) -> None:
    """The end and a turn delivered after it, in one batch or two: still ended, with its
    first reason, never before its last activity; the late turn counts."""
    ingest_batch([turn("hello there", message_id="m1"), session_end(at=90)])
    late = turn("one more thing about the garden", message_id="m2", at=120)
    ingest_batch([late, {**session_end(at=60), "reason": "timeout"}])
    session = list_sessions("pearl")[0]
    assert (session.status, session.end_reason) == ("ended", "client_disconnected")
    assert session.ended_at == session.last_activity_at == T0 + timedelta(seconds=120)
    assert session.message_count == 2


def test_out_of_order_delivery_keeps_event_time_order(db: Any) -> None:
    ingest_batch([turn("second thing we said", message_id="b", at=10)])
    ingest_batch([turn("first thing we said", message_id="a", at=0)])
    assert [hit.message_id for hit in recent_messages("pearl")] == ["a", "b"]
    session = list_sessions("pearl")[0]
    assert session.started_at == T0
    assert (session.last_activity_at - T0).total_seconds() == 10


def test_every_query_is_scoped_to_its_tenant(db: Any) -> None:
    # Same session and message ids in two tenants: two rows, never mixed.
    ingest_batch([turn("The launch code word is marmalade.", namespace="pearl", message_id="m1")])
    ingest_batch(
        [turn("The launch code word is marmalade.", namespace="entrepreneur", message_id="m1")]
    )
    assert count(Message) == 2
    for namespace in ("pearl", "entrepreneur"):
        assert {hit.namespace for hit in search_messages(namespace, "marmalade")} == {namespace}
        assert {hit.namespace for hit in recent_messages(namespace)} == {namespace}
        assert {hit.namespace for hit in day_messages(namespace, T0.date())} == {namespace}
        assert [s.namespace for s in list_sessions(namespace)] == [namespace]
    assert search_messages("stranger", "marmalade") == []
    with session_scope() as session:
        assert session.scalar(select(func.count()).select_from(Session)) == 2


def test_privacy_mode_persists_no_raw_turn(db: Any, settings_env: Any) -> None:
    settings_env(privacy_mode=True)
    result = ingest_batch([turn("My PIN is 4417, don't tell anyone.", message_id="m1")])
    assert result.processed == 1 and result.messages_inserted == 0
    with session_scope() as session:
        stored = session.execute(text("SELECT count(*) FROM messages WHERE content LIKE '%4417%'"))
        assert stored.scalar() == 0
    assert list_sessions("pearl")[0].session_id == "voice-1"


def test_event_ids_are_unique_per_tenant(db: Any) -> None:
    """A tenant reusing another tenant's event id is not taken for a duplicate."""
    shared = "0f7d3d1e-5a56-4f1e-9b3b-6f1f8c1f2a11"
    ingest_batch([turn("Pearl's message", namespace="pearl", event_id=shared, message_id="p")])
    other = ingest_batch(
        [turn("Another tenant's message", namespace="entrepreneur", event_id=shared,
              message_id="e")]
    )  # fmt: skip
    assert (other.processed, other.duplicates, other.messages_inserted) == (1, 0, 1)
    assert count(Message) == 2
    again = ingest_batch([turn("Pearl's message", namespace="pearl", event_id=shared,
                               message_id="p")])  # fmt: skip
    assert (again.processed, again.duplicates) == (0, 1)


def test_a_turn_announcing_a_move_sends_a_handoff_once(db: Any) -> None:
    said = now_at()
    talk = [
        turn("The drainage quote from Hoffmann is still open.", message_id="v1", at=said - 20),
        turn("Asked them, waiting on the price.", role="assistant", message_id="v2", at=said - 10),
        turn("I have to run, I'll continue on Discord later.", message_id="v3", at=said),
    ]
    ingest_batch(talk)
    assert peek_handoff("pearl", "jason", "voice") is None
    handoff = peek_handoff("pearl", "jason", "discord")
    assert handoff is not None and handoff["from_channel"] == "voice"
    assert "drainage quote" in handoff["context_summary"]
    assert "continue on Discord" in handoff["context_summary"]
    # sent once per event id: a redelivery that reached the send again would find it sent
    assert get_redis().exists(key("pearl", "handoff-sent", talk[2]["event_id"]))
    assert consume_handoff("pearl", "jason", "discord") is not None
    ingest_batch([talk[2]])  # a replayed event is a duplicate: nothing is sent again
    assert peek_handoff("pearl", "jason") is None


def test_questions_old_turns_and_assistants_send_no_handoff(db: Any) -> None:
    said = now_at()
    ingest_batch([
        turn("Should I continue on Discord?", message_id="q1", at=said),
        turn("Let's pick this up in Telegram.", role="assistant", message_id="q2", at=said),
        turn("I'll continue on Discord.", message_id="q3", at=said - 3600),  # an hour late
        turn("I'll continue on Discord.", message_id="q4", at=said, user_id=None),
    ])  # fmt: skip
    assert get_redis().keys("continuum:pearl:handoff*") == []
