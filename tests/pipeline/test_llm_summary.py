"""The session-end LLM summary against the fake OpenAI-compatible endpoint: the deterministic
summary is written first and replaced once the LLM's validates; a repair, a fallback and a
hang keep the deterministic one; the follow-up runs through the real worker, for evented
and synced sessions."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from continuum.contract.events import parse_event
from continuum.inference.llm import LLMUnavailable, get_llm
from continuum.pipeline.ingest import ingest_batch
from continuum.pipeline.llm_summary import TRIGGER, summarize_with_llm
from continuum.pipeline.sessions import finish_session
from continuum.store.engine import session_scope
from continuum.store.models import LlmCall, Memory, Session
from continuum.sync import sync
from tests.support.events import session_end, voice_turns
from tests.support.fake_llm import FakeLLM, fake_llm_server, llm_for
from tests.support.llm_answers import SUMMARY
from tests.support.transcripts import copy_home
from tests.support.wait import wait_for


@pytest.fixture
def fake(db: Any) -> Iterator[FakeLLM]:
    with fake_llm_server() as server:
        server.answer = SUMMARY
        yield server


def summaries() -> list[Memory]:
    with session_scope() as db:
        stmt = select(Memory).where(Memory.kind == "conversation_summary").order_by(Memory.id)
        return list(db.scalars(stmt))


def outcomes() -> list[tuple[str, str]]:
    with session_scope() as db:
        return [(c.prompt, c.outcome) for c in db.scalars(select(LlmCall).order_by(LlmCall.id))]


def ended_session() -> int:
    """A voice session, ended: its deterministic summary's id."""
    ingest_batch(voice_turns())
    result = finish_session(parse_event(session_end(at=90)))  # type: ignore[arg-type]
    assert result.summary_id is not None
    return result.summary_id


def test_the_llm_summary_replaces_the_deterministic_one(fake: FakeLLM) -> None:
    summary_id = ended_session()
    [deterministic] = summaries()
    assert deterministic.trigger == "session_end" and deterministic.status == "active"

    result = summarize_with_llm("pearl", "voice-1", summary_id, llm_for(fake))
    assert result.status == "replaced"
    old, new = summaries()
    assert (old.id, old.status, old.superseded_by) == (summary_id, "superseded", new.id)
    assert (new.status, new.trigger, new.provenance) == ("active", TRIGGER, "inference")
    assert new.content == SUMMARY["summary"]
    assert new.details["action_items"] == [
        "Hoffmann confirms whether the price includes drainage. (due 2026-11-24T00:00:00)"
    ]
    assert new.details["key_facts"] == SUMMARY["key_facts"]
    assert new.details["message_count"] == 4 and new.details["replaces"] == summary_id
    assert "source:llm" in new.tags and "topic:hoffmann-landscaping" in new.tags
    assert "session:voice-1" in new.tags and "source:system" not in new.tags
    assert new.source_message_ids == ["v0", "v1", "v2", "v3"]
    user = fake.requests[0]["messages"][1]["content"]
    assert user.startswith("The conversation ran from Saturday 2026-11-21 09:30")
    assert "[2] 2026-11-21 09:30 user: I'm still waiting for Hoffmann" in user
    assert outcomes() == [("session_summary", "ok")]
    # A redelivered follow-up finds the deterministic summary replaced: no call, no write.
    again = summarize_with_llm("pearl", "voice-1", summary_id, llm_for(fake))
    assert again.status == "skipped" and len(fake.requests) == 1 and len(summaries()) == 2


def test_an_invalid_summary_is_repaired_once(fake: FakeLLM) -> None:
    summary_id = ended_session()
    fake.answers = [{**SUMMARY, "sentiment": "ecstatic"}, SUMMARY]
    assert summarize_with_llm("pearl", "voice-1", summary_id, llm_for(fake)).status == "replaced"
    assert "sentiment" in fake.requests[1]["messages"][-1]["content"]
    assert outcomes() == [("session_summary", "repaired")]


def test_a_failed_repair_keeps_the_deterministic_summary(fake: FakeLLM) -> None:
    summary_id = ended_session()
    fake.answers = [{**SUMMARY, "topics": "garden"}, "Sure! Here is the summary: ..."]
    result = summarize_with_llm("pearl", "voice-1", summary_id, llm_for(fake))
    assert result.status == "kept" and len(fake.requests) == 2
    [kept] = summaries()
    assert (kept.id, kept.status) == (summary_id, "active")
    assert outcomes() == [("session_summary", "fallback")]


def test_a_hanging_llm_costs_at_most_the_deadline(fake: FakeLLM) -> None:
    summary_id = ended_session()
    fake.mode, fake.delay_s = "slow", 10.0
    started = time.monotonic()
    with pytest.raises(LLMUnavailable, match="no complete answer within 1s"):
        summarize_with_llm("pearl", "voice-1", summary_id, llm_for(fake, timeout_s=1.0))
    assert time.monotonic() - started < 1.5
    [kept] = summaries()
    assert kept.status == "active" and outcomes() == [("session_summary", "timeout")]


def test_privacy_mode_tenants_keep_the_deterministic_summary(
    fake: FakeLLM, settings_env: Any
) -> None:
    settings_env(private_namespaces="pearl")
    result = summarize_with_llm("pearl", "voice-1", 1, llm_for(fake))
    assert (result.status, result.reason) == ("skipped", "privacy mode")
    assert fake.requests == []


def test_session_end_is_followed_by_the_llm_summary_on_the_worker(
    fake: FakeLLM, worker: Any, client: Any, settings_env: Any
) -> None:
    settings_env(llm_base_url=fake.url, llm_model="fake-model")
    get_llm.cache_clear()
    try:
        client.emit_many([*voice_turns(), session_end(at=90)])
        wait_for(lambda: [m.status for m in summaries()] == ["superseded", "active"], timeout=60)
    finally:
        get_llm.cache_clear()
    assert summaries()[1].content == SUMMARY["summary"]
    assert ("session_summary", "ok") in outcomes()  # beside the live chunk's judge (fallback)


def test_synced_sessions_get_the_llm_summary_once_they_end(
    fake: FakeLLM, worker: Any, settings_env: Any, tmp_path: Path
) -> None:
    """Sync ends the fixture's old (idle or archived) sessions through the same session-end
    task: each deterministic summary is then replaced by the LLM's."""
    settings_env(llm_base_url=fake.url)
    small_talk = {"category": "small_talk", "importance": 2, "memories": []}
    fake.by_prompt = {"session_summary": SUMMARY, "chunk_judge": small_talk}
    get_llm.cache_clear()
    try:
        assert sync(copy_home(tmp_path)).sessions_ended > 0

        def replaced() -> bool:
            found = summaries()
            return bool(found) and {m.trigger for m in found if m.status == "active"} == {TRIGGER}

        wait_for(replaced, timeout=120)
    finally:
        get_llm.cache_clear()
    with session_scope() as db:
        sources = set(db.scalars(select(Session.source).where(Session.details.has_key("finished"))))
    assert sources and "event" not in sources  # every ended session was a synced one
