"""The Redis ephemeral layer against a real Redis: sizes, windows, TTLs, tenancy, handoff."""

from __future__ import annotations

import json
import threading
import time
from datetime import timedelta
from typing import Any

import pytest

from continuum.ephemeral import handoff, keys, sessions, turns
from continuum.redis_client import get_redis
from tests.support.events import T0


def record(namespace: str = "pearl", *, i: int, session: str = "voice-1", channel: str = "voice",
           at: Any = None, role: str = "user", text: str | None = None) -> None:  # fmt: skip
    turns.record_turns([turns.LiveTurn(
        namespace, session_id=session, channel=channel, user_id="jason", message_id=f"m{i}",
        role=role, content=text or f"Message number {i} about the garden", at=at or T0 +
        timedelta(seconds=i), topic="garden", entities=["Hoffmann"],
    )])  # fmt: skip


def test_registry_topic_and_recent_buffer(db: Any) -> None:
    for i in range(15):
        record(i=i)
    record(i=99, session="disc-7", channel="discord", text="What did we decide?")
    recent = turns.recent_messages("pearl", "voice")
    assert [m["message_id"] for m in recent] == [f"m{i}" for i in range(5, 15)]  # last 10
    assert recent[0]["content_summary"] == "Message number 5 about the garden"
    client = get_redis()
    assert 0 < client.ttl(keys.key("pearl", "recent", "voice")) <= keys.RECENT_TTL_S
    assert 0 < client.ttl(keys.key("pearl", "topic", "voice")) <= keys.TOPIC_TTL_S
    assert 0 < client.ttl(keys.key("pearl", "session", "voice")) <= keys.SESSION_TTL_S


def test_active_sessions_across_channels(db: Any) -> None:
    from datetime import UTC, datetime

    now = datetime.now(UTC)
    record(i=1, at=now - timedelta(minutes=3))
    record(i=2, session="disc-7", channel="discord", at=now)
    record(i=3, session="old", channel="telegram", at=now - timedelta(hours=2))
    active = sessions.active_sessions("pearl")
    assert [(s.channel, s.session_id) for s in active] == [
        ("discord", "disc-7"),
        ("voice", "voice-1"),
    ]
    assert sessions.topics("pearl") == {"discord": "garden", "voice": "garden"}
    assert sessions.active_sessions("entrepreneur") == []


def test_a_new_session_on_a_channel_brings_its_own_start(db: Any) -> None:
    """The registry entry of a channel outlives its session by up to an hour: the next
    session there must not inherit the old one's start time."""
    from datetime import UTC, datetime

    now = datetime.now(UTC)
    record(i=1, session="call-1", at=now - timedelta(minutes=20))
    record(i=2, session="call-1", at=now - timedelta(minutes=15))
    record(i=3, session="call-2", at=now - timedelta(minutes=2))
    record(i=4, session="call-2", at=now - timedelta(minutes=1))
    [active] = sessions.active_sessions("pearl")
    assert active.session_id == "call-2"
    assert active.started_at == (now - timedelta(minutes=2)).isoformat()


def test_transcript_buffer_is_ordered_windowed_and_capped(db: Any) -> None:
    # Delivered out of order: the buffer is in event-time order.
    for i in (3, 1, 2):
        record(i=i)
    assert [t.message_id for t in turns.transcript("pearl", "voice-1")] == ["m1", "m2", "m3"]
    record(i=4, role="user", text="Can you remind me about the dentist?")
    assert turns.transcript("pearl", "voice-1")[-1].intent == "question"
    # 30-minute window: m1..m3 fall out of it, m4 (at +4 s) stays.
    record(i=5, at=T0 + timedelta(minutes=30, seconds=3.5))
    assert [t.message_id for t in turns.transcript("pearl", "voice-1")] == ["m4", "m5"]
    for i in range(300):
        record(i=1000 + i, at=T0 + timedelta(minutes=32, seconds=i))
    assert len(turns.transcript("pearl", "voice-1")) == keys.TRANSCRIPT_MAX_TURNS
    long = "x" * 2000
    record(i=9999, at=T0 + timedelta(minutes=40), text=long)
    assert len(turns.transcript("pearl", "voice-1")[-1].summary) == keys.SUMMARY_CHARS


def test_redelivered_turns_change_nothing(db: Any) -> None:
    for _ in range(3):
        record(i=1)
    assert len(turns.transcript("pearl", "voice-1")) == 1
    assert len(turns.recent_messages("pearl", "voice")) == 1


def test_handoff_is_announced_and_consumed_exactly_once(db: Any) -> None:
    pubsub = get_redis().pubsub()
    pubsub.subscribe(keys.key("pearl", "handoff"))
    pubsub.get_message(timeout=1)  # subscription confirmation
    handoff.send_handoff("pearl", "jason", "voice", "discord", "Chose Hoffmann; drainage open.")
    announced = pubsub.get_message(timeout=2)
    assert announced and json.loads(announced["data"])["to_channel"] == "discord"
    assert handoff.peek_handoff("pearl", "jason")["from_channel"] == "voice"  # type: ignore[index]
    results: list[Any] = []
    threads = [
        threading.Thread(target=lambda: results.append(handoff.consume_handoff("pearl", "jason")))
        for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(r is not None for r in results) == 1
    assert handoff.peek_handoff("pearl", "jason") is None
    assert handoff.peek_handoff("entrepreneur", "jason") is None


def test_handoff_expires(db: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(handoff, "HANDOFF_TTL_S", 1)
    handoff.send_handoff("pearl", "jason", "voice", "discord", "short-lived")
    assert handoff.peek_handoff("pearl", "jason") is not None
    time.sleep(1.2)
    assert handoff.peek_handoff("pearl", "jason") is None


def test_idle_index_take_is_guarded_against_new_activity(db: Any) -> None:
    record(i=1)
    idle = sessions.idle_sessions(idle_ms=1000)
    assert [(s.namespace, s.session_id) for s in idle] == [("pearl", "voice-1")]
    record(i=2)  # a newer turn moves the session before the sweep takes it
    assert sessions.take_idle(idle[0]) is False
    fresh = sessions.idle_sessions(idle_ms=1000)
    assert sessions.take_idle(fresh[0]) is True
    assert sessions.idle_sessions(idle_ms=1000) == []


def _state() -> dict[str, Any]:
    """Every key of the ephemeral layer with its value (TTLs only as "has one")."""
    client = get_redis()
    state: dict[str, Any] = {}
    for name in sorted(client.keys("continuum:*")):
        kind = client.type(name)
        if kind == "hash":
            value: Any = client.hgetall(name)
        elif kind == "zset":
            value = client.zrange(name, 0, -1, withscores=True)
        elif kind == "set":
            value = sorted(client.smembers(name))
        else:
            value = client.get(name)
        state[name] = (value, client.ttl(name) > 0)
    return state


def test_a_batch_leaves_the_state_of_its_turns_applied_one_by_one(db: Any) -> None:
    """Two channels and three sessions, more turns than the recent buffer holds, and a turn
    that pushes the others out of the transcript window: one `record_turns` call for the
    batch ends where applying each turn on its own ends."""
    live = [
        turns.LiveTurn(
            "pearl",
            session_id=f"s{i % 3}",
            channel=("voice", "discord")[i % 2],
            user_id=f"u{i % 2}",
            message_id=f"m{i}",
            role=("user", "assistant")[i % 2],
            content=f"Turn {i} about the fence?",
            at=T0 + timedelta(seconds=10 * i),
            topic=f"topic-{i}" if i % 4 else None,
            entities=[f"Name{i}"],
        )
        for i in range(30)
    ]
    live.append(turns.LiveTurn("pearl", "s0", "voice", "u0", "late", "user", "Much later",
                                    T0 + timedelta(minutes=40), None, []))  # fmt: skip
    for turn in live:
        turns.record_turns([turn])
    one_by_one = _state()
    get_redis().flushdb()
    turns.record_turns(live)
    assert _state() == one_by_one
    assert [t.message_id for t in turns.transcript("pearl", "s0")] == ["late"]


def test_a_handoff_is_only_for_the_channel_it_names(db: Any) -> None:
    handoff.send_handoff("pearl", "jason", "voice", "discord", "Chose Hoffmann.")
    assert handoff.peek_handoff("pearl", "jason", "voice") is None  # where it came from
    assert handoff.consume_handoff("pearl", "jason", "telegram") is None
    assert handoff.consume_handoff("pearl", "jason", "discord:dm")["to_channel"] == "discord"  # type: ignore[index]
    assert handoff.peek_handoff("pearl", "jason") is None


def test_a_handoff_with_no_target_is_for_any_other_channel(db: Any) -> None:
    handoff.send_handoff("pearl", "jason", "voice", None, "Chose Hoffmann.")
    assert handoff.consume_handoff("pearl", "jason", "voice") is None
    assert handoff.consume_handoff("pearl", "jason", "telegram")["to_channel"] == ""  # type: ignore[index]


def test_a_handoff_is_sent_once_per_id(db: Any) -> None:
    handoff.send_handoff("pearl", "jason", "voice", "discord", "first", handoff_id="e1")
    assert handoff.consume_handoff("pearl", "jason", "discord")["context_summary"] == "first"  # type: ignore[index]
    handoff.send_handoff("pearl", "jason", "voice", "discord", "first", handoff_id="e1")
    assert handoff.peek_handoff("pearl", "jason") is None  # a redelivery does not bring it back
