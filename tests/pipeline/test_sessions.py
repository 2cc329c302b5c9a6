"""Session lifecycle against real Postgres and Redis: idle snapshots (at most one per idle
period), pre-compaction dumps, session-end conditions and write path, privacy mode."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

from sqlalchemy import select, text

from continuum.contract.events import SessionEndEvent, parse_event
from continuum.domain.kinds import kind_names
from continuum.ephemeral.turns import transcript
from continuum.pipeline import narrative
from continuum.pipeline.ingest import ingest_batch
from continuum.pipeline.sessions import finish_session, snapshot_idle, sweep_idle
from continuum.store.engine import session_scope
from continuum.store.models import Memory
from tests.support.events import T0, session_end, turn, voice_turns


def idle_event(**extra: Any) -> dict[str, Any]:
    return {"kind": "idle", "namespace": "pearl", "session_id": "voice-1", "channel": "voice",
            "ts": (T0 + timedelta(minutes=20)).isoformat(), "idle_ms": 600000,
            "last_activity_at": (T0 + timedelta(seconds=60)).isoformat(), **extra}  # fmt: skip


def memories(kind: str | None = None) -> list[Memory]:
    with session_scope() as db:
        stmt = select(Memory).order_by(Memory.id)
        if kind:
            stmt = stmt.where(Memory.kind == kind)
        return list(db.scalars(stmt))


def test_one_snapshot_per_idle_period_under_duplicates_and_races(db: Any) -> None:
    ingest_batch(voice_turns())
    ingest_batch([idle_event()])
    ingest_batch([idle_event()])  # the runtime resends it under a new event id
    assert sweep_idle(idle_ms=1000) == []  # the server-side sweep finds the same period covered
    threads = [threading.Thread(target=lambda: _snapshot_now()) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    snapshots = memories("session_snapshot")
    assert len(snapshots) == 1
    assert "Hoffmann" in snapshots[0].content
    # New activity makes the session dirty again: the next idle period gets its own snapshot.
    ingest_batch([turn("Actually make it Friday for the drainage call.", message_id="v9", at=300)])
    assert len(sweep_idle(idle_ms=1000)) == 1
    assert len(memories("session_snapshot")) == 2
    assert sweep_idle(idle_ms=1000) == []


def _snapshot_now() -> None:
    with session_scope() as db:
        snapshot_idle(db, "pearl", "voice-1")


def test_idle_with_nothing_substantive_stores_nothing(db: Any) -> None:
    ingest_batch([turn("hi", message_id="h1"), turn("ok", message_id="h2", at=3)])
    ingest_batch([idle_event()])
    assert memories("session_snapshot") == []


def test_pre_compaction_dump_is_idempotent_per_compaction(db: Any) -> None:
    ingest_batch(voice_turns())
    dump = {"kind": "pre_compaction", "namespace": "pearl", "session_id": "voice-1",
            "channel": "voice", "ts": (T0 + timedelta(minutes=5)).isoformat(),
            "compaction_id": "cmp-1", "tokens_used": 180000, "window": 200000}  # fmt: skip
    before = {m.id for m in memories()}
    ingest_batch([dump])
    first = [m for m in memories() if m.id not in before]
    ingest_batch([dump])  # same compaction id, new event id
    assert [m.id for m in memories() if m.id not in before] == [m.id for m in first]
    kinds = {m.kind for m in first}
    assert "session_snapshot" in kinds and {"decision", "open_thread"} <= kinds
    assert all(m.trigger == "pre_compaction:cmp-1" for m in first)


def test_pre_compaction_dump_leaves_out_the_kinds_the_registry_leaves_out(db: Any) -> None:
    moods = [turn("Thanks, that is great!", message_id="v7", at=100),
             turn("ugh, this is so annoying", message_id="v8", at=120)]  # fmt: skip
    ingest_batch(voice_turns() + moods)
    dump = {"kind": "pre_compaction", "namespace": "pearl", "session_id": "voice-1",
            "channel": "voice", "ts": (T0 + timedelta(minutes=5)).isoformat(),
            "compaction_id": "cmp-2", "tokens_used": 180000, "window": 200000}  # fmt: skip
    ingest_batch([dump])
    dumped = {m.kind for m in memories() if m.trigger == "pre_compaction:cmp-2"}
    left_out = set(kind_names(lambda spec: not spec.pre_compaction))
    assert {m.kind for m in memories() if m.trigger == "turn"} & left_out  # the moods, live
    assert {"decision", "open_thread", "preference", "session_snapshot"} <= dumped
    assert not dumped & left_out


def end_event(**extra: Any) -> SessionEndEvent:
    event = parse_event({**session_end(at=90), **extra})
    assert isinstance(event, SessionEndEvent)
    return event


def test_session_end_conditions(db: Any) -> None:
    ingest_batch(voice_turns())
    for extra, reason in (
        ({"connected": False}, "never connected"),
        ({"is_reminder": True}, "automated reminder call"),
        ({"duration_s": 12}, "lasted 12s"),
    ):
        with session_scope() as s:
            s.execute(text("UPDATE sessions SET details = '{}'"))
        result = finish_session(end_event(**extra))
        assert result.status == "skipped" and reason in result.reason
    assert memories("conversation_summary") == []


def test_session_end_waits_for_announced_turns(db: Any) -> None:
    ingest_batch(voice_turns()[:2])
    waiting = finish_session(end_event(message_count=4))
    assert waiting.status == "waiting" and "2/4" in waiting.reason
    ingest_batch(voice_turns()[2:])
    assert finish_session(end_event(message_count=4), waited_s=2).status == "finished"
    # Bounded: past the wait budget it proceeds with what it has.
    ingest_batch([turn("One more thing", session_id="other", message_id="o1")])
    late = finish_session(end_event(session_id="other", message_count=9), waited_s=3600)
    assert late.status == "finished", late


def test_session_end_writes_summary_narrative_and_clears_state(db: Any, tmp_path: Any,
                                                               settings_env: Any) -> None:  # fmt: skip
    settings_env(workspace_dir=str(tmp_path))
    ingest_batch(voice_turns())
    assert transcript("pearl", "voice-1")
    result = finish_session(end_event(message_count=4))
    assert result.status == "finished"
    summary = memories("conversation_summary")
    assert len(summary) == 1 and summary[0].id == result.summary_id
    details = summary[0].details
    assert details["message_count"] == 4 and details["channel"] == "voice"
    assert any("Hoffmann" in d for d in details["key_decisions"])
    assert (
        details["sentiment"] == "neutral"
    )  # a past annoyance ("too loud yesterday") is not frustration
    # R45: no duplicate of what the live capture already stored, no key stored twice.
    keys = [m.key for m in memories() if m.key]
    assert len(keys) == len(set(keys))
    decisions = memories("decision")
    assert len(decisions) == 1
    assert transcript("pearl", "voice-1") == []
    assert finish_session(end_event(message_count=4)).reason == "already finished"
    assert result.narrative is not None
    narrative.record_session(**{k: result.narrative[k] for k in ("namespace", "channel", "line", "summary")},
                             at=end_event().ended_at)  # fmt: skip
    log = (tmp_path / "pearl" / "activity-log.md").read_text()
    assert log.startswith("[2026-11-21 09:31] [voice] — Voice conversation (4 messages)")


def test_session_summary_weighs_topics_against_the_tenants_own_words(db: Any) -> None:
    ingest_batch([turn(f"The garden looked lovely on day {n}.", session_id="old",
                       message_id=f"h{n}", at=n - 3600) for n in range(20)])  # fmt: skip
    ingest_batch([
        turn("The garden and the drainage. The garden again, the garden!", message_id="g1"),
        turn("Remind me to call Hoffmann tomorrow at 3pm.", message_id="g2", at=40),
    ])  # fmt: skip
    assert finish_session(end_event(message_count=2)).status == "finished"
    [summary] = memories("conversation_summary")
    topics = summary.details["topics"]
    assert topics.index("drainage") < topics.index("garden")  # garden: said every day
    assert {"topic:drainage", "topic:garden"} <= set(summary.tags)
    item = "Remind user to call Hoffmann tomorrow at 3pm"
    assert summary.details["action_items"] == [item]
    assert summary.details["due_at"] == {item: "2026-11-22T15:00:00Z"}
    assert summary.content.endswith(f"Action items: {item} (due Sun 22 Nov).")


def test_privacy_mode_keeps_no_raw_turn_but_still_remembers(db: Any, settings_env: Any) -> None:
    settings_env(private_namespaces="pearl")
    ingest_batch(voice_turns())
    with session_scope() as s:
        assert s.execute(text("SELECT count(*) FROM messages")).scalar() == 0
    assert memories("decision") and memories("preference")
    ingest_batch([idle_event()])
    assert len(memories("session_snapshot")) == 1  # built from the Redis buffer
    assert finish_session(end_event(message_count=4)).status == "finished"
    assert len(memories("conversation_summary")) == 1
    with session_scope() as s:
        assert s.execute(text("SELECT count(*) FROM messages")).scalar() == 0


def test_nothing_a_producer_sends_forges_a_narrative_line(tmp_path: Any, settings_env: Any) -> None:
    """Events refuse control characters in a channel; the narrative writer flattens any
    whitespace as well, so no text can start a line of its own in a workspace file."""
    settings_env(workspace_dir=tmp_path)
    forged = "x\n[2099-01-01 00:00] [root] — INJECTED LINE"
    narrative.record_session("pearl", T0, forged, "A call.\n[2099-01-01 00:00] [root] — X", "ok")
    log = (tmp_path / "pearl" / "activity-log.md").read_text().splitlines()
    assert len(log) == 1 and log[0].startswith(f"[{T0:%Y-%m-%d %H:%M}] [x [2099")
    daily = (tmp_path / "pearl" / "memory" / f"{T0:%Y-%m-%d}.md").read_text()
    assert "\n[2099" not in daily
