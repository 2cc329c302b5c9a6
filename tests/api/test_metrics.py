"""`GET /metrics`: queue depths read from the broker, dead letters, pipeline counters, and
what R48 asks of memory writes: stored / updated / superseded, summarization time, memories
per session."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from kombu.transport.redis import Channel
from sqlalchemy import func, select

from continuum.api import create_app
from continuum.contract.events import SessionEndEvent, parse_event
from continuum.contract.queues import ALL_QUEUES, EMBED
from continuum.memory.tool_calls import MemoryTools
from continuum.pipeline import deadletters
from continuum.pipeline.ingest import ingest_batch
from continuum.pipeline.sessions import finish_session
from continuum.redis_client import get_redis
from continuum.store import metrics
from continuum.store.engine import session_scope
from continuum.store.models import Memory
from continuum.sync import sync
from tests.support.events import session_end, voice_turns
from tests.support.metrics import scrape
from tests.support.transcripts import ADVERSARIAL

SPARE_BROKER_DB = 9  # no worker listens here, so the queued messages stay put


@pytest.fixture
def api(db: Any) -> Iterator[TestClient]:
    with TestClient(create_app()) as client:
        yield client


def test_queue_depth_counts_every_priority_list(
    api: TestClient, servers: dict[str, str], settings_env: Any
) -> None:
    broker = servers["broker_url"].rsplit("/", 1)[0] + f"/{SPARE_BROKER_DB}"
    settings_env(broker_url=broker)
    client = get_redis(broker)
    client.flushdb()
    client.lpush(EMBED, "a", "b", "c")
    client.lpush(f"{EMBED}{Channel.sep}3", "d", "e")
    client.hset(Channel.unacked_key, "tag", "message")
    samples = scrape(api)
    client.flushdb()
    assert samples[("continuum_queue_depth", (("queue", EMBED),))] == 5
    for queue in set(ALL_QUEUES) - {EMBED}:
        assert samples[("continuum_queue_depth", (("queue", queue),))] == 0
    assert samples[("continuum_queue_unacked", ())] == 1
    assert samples[("continuum_source_up", (("source", "broker"),))] == 1


def test_dead_letters_and_pipeline_counters(api: TestClient) -> None:
    deadletters.record_now(task_name="continuum.ingest_events", payload={}, reason="bad input")
    metrics.incr(metrics.MEMORIES_STORED, 3)
    metrics.incr(metrics.LLM_FALLBACKS)
    samples = scrape(api)
    assert samples[("continuum_dead_letters_stored", (("task", "continuum.ingest_events"),))] == 1
    assert samples[("continuum_memories_stored_total", ())] == 3
    assert samples[("continuum_llm_fallbacks_total", ())] == 1
    assert all(
        samples[("continuum_source_up", (("source", s),))] == 1 for s in ("redis", "postgres")
    )


def test_an_unreachable_source_is_reported_not_raised(api: TestClient, settings_env: Any) -> None:
    settings_env(broker_url="redis://127.0.0.1:1/0")
    samples = scrape(api)
    assert samples[("continuum_source_up", (("source", "broker"),))] == 0
    assert samples[("continuum_source_up", (("source", "postgres"),))] == 1


def test_open_sync_problems_are_counted_by_kind(api: TestClient, tmp_path: Any) -> None:
    shutil.copytree(ADVERSARIAL, tmp_path / "home")
    sync(tmp_path / "home", feed_capture=False)
    samples = scrape(api)
    assert samples[("continuum_sync_problems_open", (("kind", "binary_file"),))] == 1
    assert samples[("continuum_sync_problems_open", (("kind", "malformed_json"),))] == 1


def test_memory_writes_and_session_ends_are_measured(api: TestClient) -> None:
    ingest_batch(voice_turns())  # capture stores what the call decided
    tools = MemoryTools("pearl", user_id="jason", session_id="voice-1")
    tools.store_memory(memory_type="fact", key="garden_budget", value="4000 euros")
    tools.update_memory(existing_key="garden_budget", new_value="5000 euros")
    end = parse_event(session_end(at=90))
    assert isinstance(end, SessionEndEvent)
    assert finish_session(end).status == "finished"
    finish_session(end)  # a second session end does nothing, and is not measured
    samples = scrape(api)
    with session_scope() as db:
        statuses = dict(db.execute(select(Memory.status, func.count()).group_by(Memory.status)).all())  # fmt: skip
        of_session = db.scalar(select(func.count()).where(Memory.session_id == "voice-1"))
    assert samples[("continuum_memories_stored_total", ())] == sum(statuses.values())
    assert samples[("continuum_memories_updated_total", ())] == 1
    assert samples[("continuum_memories_superseded_total", ())] == statuses["superseded"] >= 1
    assert samples[("continuum_summarization_seconds_count", ())] == 1
    assert 0 < samples[("continuum_summarization_seconds_sum", ())] < 60
    assert samples[("continuum_session_memories_count", ())] == 1
    assert samples[("continuum_session_memories_sum", ())] == of_session > 3
