"""End to end through a real Celery worker on the real Redis broker."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from sqlalchemy import func, select

from continuum.contract.events import EventError
from continuum.recall.namespace_queries import list_sessions, search_messages
from continuum.redis_client import get_redis
from continuum.store.engine import session_scope
from continuum.store.models import DeadLetter, Memory, Message, ProcessedEvent, Session
from tests.support.events import session_end, turn
from tests.support.wait import wait_for


def processed(event_ids: list[str]) -> int:
    with session_scope() as db:
        ids = [uuid.UUID(e) for e in event_ids]
        stmt = (
            select(func.count()).select_from(ProcessedEvent).where(ProcessedEvent.event_id.in_(ids))
        )
        return int(db.scalar(stmt) or 0)


def rows(model: Any) -> int:
    with session_scope() as db:
        return int(db.scalar(select(func.count()).select_from(model)) or 0)


def test_turns_flow_from_sdk_to_search(db: Any, worker: Any, client: Any) -> None:
    ids = [
        client.emit(turn("Let's go with Hoffmann for the garden renovation.", message_id="m1")),
        client.emit(turn("Noted: Hoffmann, starting December 2nd.", role="assistant", at=4)),
        client.emit(session_end(at=40)),
    ]
    wait_for(lambda: processed(ids) == 3)
    assert [hit.message_id for hit in search_messages("pearl", "Hoffmann renovation")] == ["m1"]
    session = list_sessions("pearl")[0]
    assert (session.status, session.message_count) == ("ended", 2)


def test_duplicate_delivery_stores_one_row(db: Any, worker: Any, client: Any) -> None:
    event = turn("I have four grandchildren.", message_id="m1")
    first = client.emit(event)
    client.emit(event)
    client.emit_many([event, event])
    wait_for(lambda: processed([first]) == 1)
    # Let the later copies drain: the queue is empty once a sentinel behind them is done.
    sentinel = client.emit(turn("sentinel message for ordering", message_id="sentinel"))
    wait_for(lambda: processed([sentinel]) == 1)
    assert rows(Message) == 2
    assert list_sessions("pearl")[0].message_count == 2


def test_batches_go_out_as_one_task(db: Any, worker: Any, client: Any) -> None:
    events = [
        turn(f"Item number {i} on the shopping list", message_id=f"m{i}", at=i) for i in range(50)
    ]
    ids = client.emit_many(events)
    wait_for(lambda: processed(ids) == 50)
    assert rows(Message) == 50
    # One task means one transaction: every event was claimed at the same now().
    with session_scope() as db_session:
        stamps = db_session.scalar(select(func.count(func.distinct(ProcessedEvent.processed_at))))
    assert stamps == 1


def test_sdk_refuses_invalid_events_before_enqueueing(db: Any, client: Any) -> None:
    with pytest.raises(EventError, match="role"):
        client.turn(namespace="pearl", session_id="s", channel="voice", role="robot", content="x")
    with pytest.raises(EventError, match="event #1"):
        client.emit_many([turn("fine"), {"kind": "turn"}])


def test_transient_faults_retry_with_backoff_until_success(
    db: Any, worker: Any, celery_app: Any
) -> None:
    key = f"flaky:{uuid.uuid4()}"
    celery_app.send_task("tests.flaky", args=[key, 2], queue="events")
    retries = wait_for(lambda: get_redis().get(f"{key}:done"), timeout=30)
    assert retries == "2"
    assert get_redis().get(f"{key}:attempts") == "3"
    assert rows(DeadLetter) == 0


def test_permanent_faults_are_dead_lettered_not_retried(
    db: Any, worker: Any, celery_app: Any
) -> None:
    key = f"poison:{uuid.uuid4()}"
    celery_app.send_task("tests.poison", args=[key], queue="events")
    wait_for(lambda: rows(DeadLetter) == 1)
    with session_scope() as session:
        letter = session.scalars(select(DeadLetter)).one()
    assert (letter.task_name, letter.reason, letter.attempts) == ("tests.poison", "task_error", 1)
    assert "can never be processed" in (letter.error or "")
    assert letter.payload == {"args": [key], "kwargs": {}}
    assert get_redis().get(f"{key}:attempts") == "1"


def test_a_message_that_keeps_killing_workers_is_dead_lettered(
    db: Any, worker: Any, celery_app: Any
) -> None:
    # Simulate earlier deliveries that died with their worker: the counter is already at max.
    from continuum.config import get_settings
    from workers.base import DELIVERIES_KEY

    task_id = str(uuid.uuid4())
    get_redis().set(DELIVERIES_KEY.format(task_id), get_settings().max_deliveries)
    key = f"flaky:{uuid.uuid4()}"
    celery_app.send_task("tests.flaky", args=[key, 0], queue="events", task_id=task_id)
    wait_for(lambda: rows(DeadLetter) == 1)
    with session_scope() as session:
        letter = session.scalars(select(DeadLetter)).one()
    assert letter.reason == "max_deliveries_exceeded"
    assert letter.attempts == get_settings().max_deliveries
    assert get_redis().get(f"{key}:attempts") is None  # never ran again


def test_session_end_waits_its_whole_window_for_late_turns(
    db: Any, worker: Any, client: Any, settings_env: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The wait is CONTINUUM_SESSION_END_WAIT_S of real time, however many looks it takes:
    a turn that arrives after more looks than the task's retry budget (20) is still summed up."""
    import tasks.sessions

    monkeypatch.setattr(tasks.sessions, "WAIT_STEP_S", 0.05)  # 20 looks take ~1 s
    settings_env(session_end_wait_s=30)
    client.emit_many([turn("We'll paint the fence green.", message_id="m1"),
                      turn("And the gate too.", message_id="m2", at=5)])  # fmt: skip
    client.emit({**session_end(at=40), "message_count": 3})
    time.sleep(2.5)  # > 40 looks
    assert rows(DeadLetter) == 0
    with session_scope() as db_session:
        details = db_session.scalars(select(Session.details)).one()
        assert "finished" not in details  # still waiting for the third turn
    client.emit(turn("Green it is, for both.", message_id="m3", role="assistant", at=30))
    wait_for(lambda: summary_of("voice-1") is not None)
    assert sorted(summary_of("voice-1") or []) == ["m1", "m2", "m3"]
    assert rows(DeadLetter) == 0


def summary_of(session_id: str) -> list[str] | None:
    with session_scope() as db:
        return db.scalar(
            select(Memory.source_message_ids).where(
                Memory.session_id == session_id, Memory.kind == "conversation_summary"
            )
        )
