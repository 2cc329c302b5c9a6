"""Sessions that never send `session_end` (a dropped call, a crashed runtime): finished once
they have been idle for `CONTINUUM_SESSION_TIMEOUT_S`, once, through `finish_session`; a late
`session_end` summarizes nothing twice."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from continuum.contract.dispatch import send
from continuum.contract.events import parse_event
from continuum.contract.queues import END_IDLE_SESSIONS, FINISH_SESSION
from continuum.ephemeral.keys import key
from continuum.ephemeral.turns import transcript
from continuum.pipeline.ending import end_idle_sessions
from continuum.pipeline.ingest import ingest_batch
from continuum.pipeline.sessions import finish_session
from continuum.redis_client import get_redis
from continuum.store.engine import session_scope
from continuum.store.models import Memory, Session
from tests.support.events import T0, session_end, turn, voice_turns
from tests.support.wait import wait_for


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    calls: list[tuple[Any, ...]] = []
    monkeypatch.setattr("continuum.contract.dispatch.send", lambda *args: calls.append(args))
    return calls


def summaries() -> list[Memory]:
    with session_scope() as db:
        return list(db.scalars(select(Memory).where(Memory.kind == "conversation_summary")))


def test_a_session_that_never_ends_is_finished_once_after_the_timeout(
    db: Any, sent: list[tuple[Any, ...]], settings_env: Any
) -> None:
    settings_env(session_timeout_s=1800)
    ingest_batch(voice_turns())  # the last turn at T0 + 60 s
    ingest_batch([turn("Still here, talking on Discord.", channel="discord", session_id="d-1",
                       message_id="d1", at=1700)])  # fmt: skip
    assert end_idle_sessions(now=T0 + timedelta(minutes=25)) == 0  # not idle long enough
    assert end_idle_sessions(now=T0 + timedelta(minutes=32)) == 1  # the voice call only
    assert end_idle_sessions(now=T0 + timedelta(minutes=40)) == 0  # claimed once
    [(task, payload)] = sent
    end = parse_event(payload)
    assert task == FINISH_SESSION and (end.session_id, end.channel) == ("voice-1", "voice")
    result = finish_session(end)  # type: ignore[arg-type]
    assert result.status == "finished" and result.narrative is not None
    assert [m.id for m in summaries()] == [result.summary_id]
    assert transcript("pearl", "voice-1") == []  # ephemeral state cleared
    registry = get_redis()
    assert not registry.exists(key("pearl", "session", "voice"))
    assert registry.exists(key("pearl", "session", "discord"))
    with session_scope() as db_session:
        voice = db_session.scalar(select(Session).where(Session.session_id == "voice-1"))
        assert voice is not None and (voice.status, voice.end_reason) == ("ended", "idle")
    # The runtime comes back and says goodbye after all: nothing is summarized twice.
    late = ingest_batch([session_end(at=5000)])
    [again] = late.finish
    assert finish_session(parse_event(again)).reason == "already finished"  # type: ignore[arg-type]
    assert len(summaries()) == 1
    assert end_idle_sessions(now=T0 + timedelta(hours=3)) == 1  # the Discord session, once
    assert end_idle_sessions(now=T0 + timedelta(hours=4)) == 0  # nothing left


def test_beat_ends_an_abandoned_session_through_the_worker(
    db: Any, worker: Any, settings_env: Any, tmp_path: Path
) -> None:
    settings_env(workspace_dir=str(tmp_path))
    ingest_batch(voice_turns())  # days ago: idle far past the default timeout
    send(END_IDLE_SESSIONS)
    wait_for(summaries, timeout=60)
    log = tmp_path / "pearl" / "activity-log.md"
    assert "[voice]" in wait_for(lambda: log.exists() and log.read_text())
