"""Evented sessions reach the LLM: live turns are chunked at ingest as sync chunks them (10
messages, or 5 minutes), judged on the extract queue without duplicating what capture
stored, and a privacy-mode tenant's chunk is read from the Redis transcript buffer."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import select

from continuum.inference.llm import get_llm
from continuum.memory.tool_calls import MemoryTools
from continuum.pipeline.extraction import extract_chunk
from continuum.pipeline.ingest import ingest_batch
from continuum.pipeline.live_chunks import PENDING_KEY, LiveChunk
from continuum.store.engine import session_scope
from continuum.store.models import LlmCall, Memory, Message, Session
from tests.support.events import session_end, turn
from tests.support.fake_llm import FakeLLM, fake_llm_server, llm_for
from tests.support.llm_answers import CHUNK, SUMMARY
from tests.support.wait import wait_for

LIVE_VERDICT = {
    "category": "home",
    "importance": 7,
    "memories": [
        {"kind": "decision", "content": "Jason chose Hoffmann Landscaping for the garden.",
         "importance": 8, "lines": [0]},
        {"kind": "fact", "content": "Jason's garden needs new drainage.", "importance": 6,
         "lines": [1]},
    ],
}  # fmt: skip


@pytest.fixture
def fake(db: Any) -> Iterator[FakeLLM]:
    with fake_llm_server() as server:
        server.answer = LIVE_VERDICT
        yield server


def pending() -> list[str]:
    with session_scope() as db:
        session = db.scalar(select(Session).where(Session.session_id == "voice-1"))
        assert session is not None
        return [message_id for message_id, _ in session.details.get(PENDING_KEY, [])]


def ids(chunks: list[LiveChunk]) -> list[list[str]]:
    return [chunk.message_ids for chunk in chunks]


def test_live_turns_are_chunked_by_count_and_time(db: Any, settings_env: Any) -> None:
    settings_env(llm_base_url="http://127.0.0.1:9/v1")
    closed: list[LiveChunk] = []
    for i in range(12):  # one turn per batch, as a voice agent sends them
        closed += ingest_batch(
            [turn(f"Turn {i} about the garden", message_id=f"t{i}", at=i * 10)]
        ).chunks
    assert ids(closed) == [[f"t{i}" for i in range(10)]]  # ten messages close a chunk
    assert pending() == ["t10", "t11"]
    again = ingest_batch([turn("Turn 11 about the garden", message_id="t11", at=110)])
    assert again.chunks == [] and pending() == ["t10", "t11"]  # resent: claimed once
    later = ingest_batch([turn("Back after a break", message_id="t12", at=420)])
    assert ids(later.chunks) == [["t10", "t11"]]  # over 5 minutes after the chunk's first
    assert pending() == ["t12"]
    end = ingest_batch([session_end(at=440)])
    assert ids(end.chunks) == [["t12"]] and pending() == []  # session end flushes the rest
    assert all(c.namespace == "pearl" and c.session_id == "voice-1" for c in closed)


def test_without_an_llm_nothing_is_chunked(db: Any) -> None:
    result = ingest_batch([turn(f"Turn {i}", message_id=f"t{i}", at=i) for i in range(12)])
    assert result.chunks == [] and pending() == []


def test_a_live_chunk_is_judged_without_duplicating_capture(
    fake: FakeLLM, settings_env: Any
) -> None:
    settings_env(llm_base_url=fake.url)
    ingest_batch(CHUNK)
    with session_scope() as db:
        captured = {(m.kind, tuple(m.source_message_ids)) for m in db.scalars(select(Memory))}
    assert ("decision", ("m0",)) in captured  # capture stored the decision at ingest
    result = extract_chunk("pearl", "voice-1", ["m0", "m1", "m2"], llm=llm_for(fake), live=True)
    assert (result.deterministic, result.llm, result.already_captured) == (0, 1, 1)
    with session_scope() as db:
        [llm_memory] = db.scalars(select(Memory).where(Memory.trigger == "llm_chunk"))
    assert (llm_memory.kind, llm_memory.source_message_ids) == ("fact", ["m1"])


def test_the_llm_stores_no_key_already_stored(fake: FakeLLM, settings_env: Any) -> None:
    """Keys already stored are not stored again: one an active memory has (in Postgres, from
    an earlier session), one a memory tool stored in this session (then forgot: only the
    session's stored keys know it), one the same answer gives twice."""
    settings_env(llm_base_url=fake.url)
    MemoryTools("pearl", user_id="jason").store_memory(
        memory_type="fact", key="drainage_status", value="Hoffmann has not priced the drainage"
    )
    ingest_batch(CHUNK)
    live = MemoryTools("pearl", user_id="jason", session_id="voice-1")
    live.store_memory(memory_type="fact", key="garden_contractor", value="Hoffmann Landscaping")
    live.forget_memory(key="garden_contractor")  # the user asked to forget it
    fact = {"kind": "fact", "importance": 7, "lines": [0]}
    fake.answer = {"category": "home", "importance": 7, "memories": [
        {**fact, "key": "drainage_status", "content": "The drainage price is still open."},
        {**fact, "key": "garden_contractor", "content": "Hoffmann Landscaping does the garden."},
        {**fact, "key": "garden_plan", "content": "The garden is being redone."},
        {**fact, "key": "garden_plan", "content": "The garden is being redone soon."},
    ]}  # fmt: skip
    result = extract_chunk("pearl", "voice-1", ["m0", "m1", "m2"], llm=llm_for(fake), live=True)
    assert (result.llm, result.already_captured) == (1, 3)
    with session_scope() as db:
        keys = list(db.scalars(select(Memory.key).where(Memory.trigger == "llm_chunk")))
    assert keys == ["garden_plan"]


def test_privacy_mode_chunks_are_read_from_the_transcript_buffer(
    fake: FakeLLM, settings_env: Any
) -> None:
    settings_env(llm_base_url=fake.url, private_namespaces="pearl")
    ingest_batch(CHUNK)
    with session_scope() as db:
        assert db.scalars(select(Message)).all() == []  # raw turns never persisted
    result = extract_chunk("pearl", "voice-1", ["m0", "m1", "m2"], llm=llm_for(fake), live=True)
    assert result.messages == 3 and result.llm == 1
    user = fake.requests[0]["messages"][1]["content"]
    assert "[1] 2026-11-21 09:30 user: I'm still waiting for Hoffmann" in user
    with session_scope() as db:
        [llm_memory] = db.scalars(select(Memory).where(Memory.trigger == "llm_chunk"))
    assert (llm_memory.user_id, llm_memory.channel) == ("jason", "voice")


def test_an_evented_session_reaches_the_llm_on_the_worker(
    fake: FakeLLM, worker: Any, client: Any, settings_env: Any
) -> None:
    settings_env(llm_base_url=fake.url, llm_model="fake-model")
    fake.by_prompt = {"chunk_judge": LIVE_VERDICT, "session_summary": SUMMARY}
    get_llm.cache_clear()
    try:
        client.emit_many([*CHUNK, session_end(at=90)])

        def calls() -> set[tuple[str, str]]:
            with session_scope() as db:
                return {(c.prompt, c.outcome) for c in db.scalars(select(LlmCall))}

        def triggers() -> set[str]:
            with session_scope() as db:
                return set(db.scalars(select(Memory.trigger).where(Memory.status == "active")))

        # A call is recorded as it returns, before its memories are written: wait for both.
        wait_for(lambda: calls() == {("chunk_judge", "ok"), ("session_summary", "ok")}
                 and {"llm_chunk", "session_end_llm"} <= triggers(), timeout=60)  # fmt: skip
    finally:
        get_llm.cache_clear()
    assert calls() == {("chunk_judge", "ok"), ("session_summary", "ok")}  # and no more
