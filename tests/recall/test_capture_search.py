"""Capture through real workers: a realistic conversation yields the memories a careful person
would keep, they get embedded by the outbox, and hybrid search finds them — in one tenant."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import func, select

from continuum.pipeline.outbox import embed_pending, pending_counts
from continuum.recall.scope import SearchFilters
from continuum.recall.search import search
from continuum.store.engine import session_scope
from continuum.store.models import Memory, MemoryLog, ProcessedEvent
from tests.support.events import T0, turn
from tests.support.wait import wait_for

CONVERSATION = [
    ("user", "Morning! How are you today?"),
    ("assistant", "Good morning, Jason! I'm doing well. What's on your mind?"),
    ("user", "Let's go with Hoffmann Landscaping for the garden, their quote is lower."),
    ("assistant", "Great, Hoffmann it is. They can start on December 2nd."),
    ("user", "I'm still waiting for Hoffmann to confirm whether the price includes drainage."),
    ("user", "Please keep the volume at 75%, it was too loud yesterday."),
    ("user", '{"status": 500, "trace": "Traceback (most recent call last): File app.py"}'),
    ("user", "ok"),
    ("user", "I have a doctor's appointment on Tuesday at 10, remind me the day before."),
    ("user", "I have three grandchildren."),
    ("user", "Actually, four grandchildren, not three."),
    ("assistant", "Sorry, I got that wrong. Four grandchildren, noted."),
]


def conversation(namespace: str = "pearl") -> list[dict[str, Any]]:
    return [
        turn(text, role=role, message_id=f"m{i:02d}", at=i * 20, namespace=namespace)
        for i, (role, text) in enumerate(CONVERSATION)
    ]


def memories(namespace: str = "pearl") -> list[Memory]:
    with session_scope() as db:
        stmt = select(Memory).where(Memory.namespace == namespace).order_by(Memory.id)
        return list(db.scalars(stmt))


def all_processed(count: int) -> bool:
    with session_scope() as db:
        return db.scalar(select(func.count()).select_from(ProcessedEvent)) == count


@pytest.fixture
def captured(db: Any, worker: Any, client: Any) -> list[Memory]:
    for event in conversation():
        client.emit(event)
    wait_for(lambda: all_processed(len(CONVERSATION)))
    return memories()


def by_source(found: list[Memory], message_id: str) -> list[Memory]:
    return [m for m in found if message_id in m.source_message_ids]


def test_keeps_what_a_careful_person_would(captured: list[Memory]) -> None:
    decision = by_source(captured, "m02")
    assert [m.kind for m in decision] == ["decision"]
    assert "Hoffmann" in decision[0].content and decision[0].importance >= 8
    assert decision[0].provenance == "user_explicit" and decision[0].trust == 4
    assert decision[0].created_at == T0 + timedelta(seconds=40)  # event time, not ingest time
    waiting = by_source(captured, "m04")
    assert [m.kind for m in waiting] == ["open_thread"] and "status:open" in waiting[0].tags
    volume = by_source(captured, "m05")
    assert [(m.kind, m.key, m.claim_value) for m in volume] == [
        ("preference", "volume_level", "75%")
    ]
    doctor = by_source(captured, "m08")
    assert doctor and doctor[0].kind == "follow_up"
    assert "tuesday" in doctor[0].details["time_expression"].lower()
    correction = by_source(captured, "m10")
    assert [(m.key, m.claim_value) for m in correction] == [("grandchildren_count", "4")]
    assert all("session:voice-1" in m.tags for m in captured)


def test_skips_small_talk_noise_and_tool_output(captured: list[Memory]) -> None:
    for message_id in ("m00", "m01", "m06", "m07"):
        assert by_source(captured, message_id) == [], message_id
    assert not any("Traceback" in m.content for m in captured)


def test_every_write_is_logged_and_never_duplicated(captured: list[Memory], client: Any) -> None:
    with session_scope() as db:
        logged = db.scalars(select(MemoryLog.memory_id).where(MemoryLog.action == "write")).all()
    assert sorted(logged) == sorted(m.id for m in captured)
    # The same conversation again under fresh event ids (a runtime replaying after a crash).
    for event in conversation():
        client.emit(event)
    wait_for(lambda: all_processed(2 * len(CONVERSATION)))
    assert len(memories()) == len(captured)


def test_outbox_embeds_everything_and_search_finds_by_meaning_and_word(
    captured: list[Memory],
) -> None:
    wait_for(lambda: pending_counts() == {"memories": 0, "messages": 0}, timeout=90)
    # Paraphrase: no shared words with "Let's go with Hoffmann Landscaping for the garden".
    semantic = search("pearl", "which company will redo our backyard?", limit=3)
    assert semantic and "m02" in semantic[0].source_message_ids
    assert semantic[0].parts["vector_rank"] == 1
    # A rare keyword: full text must rank the one turn that has it.
    keyword = search("pearl", "drainage", limit=5)
    assert "m04" in keyword[0].source_message_ids and "text_rank" in keyword[0].parts
    only_memories = search("pearl", "volume", sources=("memory",))
    assert {hit.source for hit in only_memories} == {"memory"}
    assert search("pearl", "volume", filters=SearchFilters(kinds=("preference",)))[0].kind == (
        "preference"
    )


def test_search_never_crosses_tenants(db: Any) -> None:
    from continuum.pipeline.ingest import ingest_batch

    ingest_batch(conversation("pearl"))
    ingest_batch([turn("We decided to use marmalade as the launch codename.",
                       namespace="entrepreneur", message_id="x1")])  # fmt: skip
    embed_pending()
    for query in ("marmalade launch codename", "Hoffmann garden"):
        for namespace in ("pearl", "entrepreneur"):
            hits = search(namespace, query, limit=50)
            assert {m for h in hits for m in h.source_message_ids} <= (
                {"x1"} if namespace == "entrepreneur" else {f"m{i:02d}" for i in range(12)}
            )
    assert search("nobody", "Hoffmann") == []
