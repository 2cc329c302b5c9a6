"""Pre-compaction takeaways from the LLM, after the deterministic dump: idempotent per
compaction, nothing stored twice, only the kinds a dump keeps, and sent by ingest to the
extract queue when an LLM is configured."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from pydantic import ValidationError
from sqlalchemy import select

from continuum.contract.events import PreCompactionEvent, parse_event
from continuum.inference.llm import get_llm
from continuum.inference.prompts.takeaways import Takeaways
from continuum.pipeline.extraction import compaction_takeaways
from continuum.pipeline.ingest import ingest_batch
from continuum.store.engine import session_scope
from continuum.store.models import LlmCall, Memory
from tests.support.events import T0, voice_turns
from tests.support.fake_llm import FakeLLM, fake_llm_server, llm_for
from tests.support.wait import wait_for

DUMP = {"kind": "pre_compaction", "namespace": "pearl", "session_id": "voice-1",
        "channel": "voice", "user_id": "jason", "ts": (T0 + timedelta(minutes=5)).isoformat(),
        "compaction_id": "cmp-1", "tokens_used": 180000, "window": 200000}  # fmt: skip
TAKEAWAYS = {
    "takeaways": [
        {"kind": "decision", "content": "Jason picked Hoffmann Landscaping for the garden.",
         "importance": 8, "lines": [0]},
        {"kind": "commitment", "content": "Hoffmann Landscaping starts work on December 2nd.",
         "importance": 7, "lines": [0, 1]},
    ]
}  # fmt: skip


@pytest.fixture
def fake(db: Any) -> Iterator[FakeLLM]:
    with fake_llm_server() as server:
        server.answer = TAKEAWAYS
        yield server


def _all() -> list[Memory]:
    with session_scope() as db:
        return list(db.scalars(select(Memory)))


def llm_takeaways() -> list[Memory]:
    with session_scope() as db:
        stmt = select(Memory).where(Memory.trigger == "pre_compaction_llm:cmp-1")
        return list(db.scalars(stmt.order_by(Memory.id)))


def dump_event() -> PreCompactionEvent:
    event = parse_event(DUMP)
    assert isinstance(event, PreCompactionEvent)
    return event


def test_takeaways_add_what_the_dump_missed_once(fake: FakeLLM) -> None:
    ingest_batch([*voice_turns(), DUMP])  # no LLM configured: the deterministic dump only
    assert any(m.trigger == "pre_compaction:cmp-1" and m.kind == "decision"
               for m in _all())  # fmt: skip
    result = compaction_takeaways(dump_event(), llm_for(fake))
    assert (result.llm, result.already_captured, result.llm_status) == (1, 1, "stored")
    [added] = llm_takeaways()
    assert (added.kind, added.source_message_ids) == ("commitment", ["v0", "v1"])
    assert (added.user_id, added.provenance) == ("jason", "inference")
    again = compaction_takeaways(dump_event(), llm_for(fake))  # a redelivery
    assert again.llm == 0 and len(llm_takeaways()) == 1
    with session_scope() as db:
        assert set(db.scalars(select(LlmCall.prompt))) == {"pre_compaction_takeaways"}


def test_takeaways_offer_only_the_kinds_a_dump_keeps() -> None:
    mood = {"kind": "context", "content": "The user sounded tired.", "importance": 5,
            "lines": [0]}  # fmt: skip
    with pytest.raises(ValidationError):
        Takeaways.model_validate({"takeaways": [mood]})


def test_ingest_sends_the_dump_to_the_llm_on_the_worker(
    fake: FakeLLM, worker: Any, client: Any, settings_env: Any
) -> None:
    settings_env(llm_base_url=fake.url)
    fake.by_prompt = {"pre_compaction_takeaways": TAKEAWAYS}
    get_llm.cache_clear()
    try:
        client.emit_many([*voice_turns(), DUMP])
        wait_for(lambda: len(llm_takeaways()) == 1, timeout=60)
    finally:
        get_llm.cache_clear()
