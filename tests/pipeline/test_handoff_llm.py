"""Handoffs through the LLM against the fake OpenAI-compatible endpoint (the only stand-in;
Postgres, Redis and the worker are real): the LLM rewrites the summary of the rule's
handoff, finds the moves the rule misses, and whenever it gives no usable answer the rule
stands; the follow-up runs on the worker, and without an LLM nothing changes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import select

from continuum.capture.handoffs import handoff_target
from continuum.ephemeral.handoff import consume_handoff, peek_handoff
from continuum.inference.llm import get_llm
from continuum.pipeline.handoffs import handoff_with_llm
from continuum.pipeline.ingest import ingest_batch
from continuum.store.engine import session_scope
from continuum.store.models import LlmCall
from tests.support.events import now_at, turn
from tests.support.fake_llm import FakeLLM, fake_llm_server, llm_for
from tests.support.wait import wait_for

RULED = "I have to run, I'll continue on Discord later."  # the rule finds this one
MISSED = "OK let's take this to Telegram, my laptop is dying."  # ... and not this one
MOVE = {
    "moving": True,
    "to_channel": "telegram",
    "summary": "Jason is still waiting on Hoffmann's drainage price; he moved to Telegram.",
}
NO_MOVE = {"moving": False, "to_channel": None, "summary": ""}


@pytest.fixture
def fake(db: Any, settings_env: Any) -> Iterator[FakeLLM]:
    with fake_llm_server() as server:
        settings_env(llm_base_url=server.url)
        yield server


def talk(last: str) -> list[dict[str, Any]]:
    """A voice call about the drainage quote whose last user turn, said just now, is `last`."""
    said = now_at()
    return [
        turn("The drainage quote from Hoffmann is still open.", message_id="v1", at=said - 20),
        turn("Asked them, waiting on the price.", role="assistant", message_id="v2", at=said - 10),
        turn(last, message_id="v3", at=said),
    ]


def outcomes() -> list[tuple[str, str]]:
    with session_scope() as db:
        return [(c.prompt, c.outcome) for c in db.scalars(select(LlmCall).order_by(LlmCall.id))]


def test_without_an_llm_only_the_rule_hands_off(db: Any) -> None:
    assert ingest_batch(talk(MISSED)).handoffs == []
    assert peek_handoff("pearl", "jason") is None
    assert ingest_batch(talk(RULED)).handoffs == []
    handoff = peek_handoff("pearl", "jason", "discord")
    assert handoff is not None and "drainage quote" in handoff["context_summary"]


def test_the_llm_rewrites_the_summary_of_the_rules_handoff(fake: FakeLLM) -> None:
    fake.by_prompt["handoff"] = {**MOVE, "to_channel": "discord"}
    [request] = ingest_batch(talk(RULED)).handoffs
    rule = peek_handoff("pearl", "jason", "discord")  # sent at ingest, no wait on the LLM
    assert rule is not None and rule["context_summary"].startswith("user: The drainage quote")
    assert (request["rule_target"], "content" not in request) == ("discord", True)  # no text

    assert handoff_with_llm(request, llm_for(fake)).status == "revised"
    revised = peek_handoff("pearl", "jason", "discord")
    assert revised is not None
    assert revised["context_summary"] == MOVE["summary"]
    assert (revised["id"], revised["timestamp"]) == (rule["id"], rule["timestamp"])
    data = fake.requests[-1]["messages"][1]["content"]  # the call's turns, up to the last
    assert "on the voice channel" in data and "[2]" in data and RULED in data
    assert outcomes() == [("handoff", "ok")]

    # Read by the Discord block, it stays read: a late revision brings nothing back.
    assert consume_handoff("pearl", "jason", "discord") is not None
    assert handoff_with_llm(request, llm_for(fake)).status == "kept"
    assert peek_handoff("pearl", "jason") is None


def test_the_llm_finds_a_move_the_rule_misses_and_sends_it_once(fake: FakeLLM) -> None:
    assert handoff_target(MISSED, "voice") is None
    [request] = ingest_batch(talk(MISSED)).handoffs
    assert peek_handoff("pearl", "jason") is None
    fake.by_prompt["handoff"] = MOVE
    result = handoff_with_llm(request, llm_for(fake))
    assert (result.status, result.to_channel) == ("sent", "telegram")
    assert peek_handoff("pearl", "jason", "discord") is None  # it names Telegram
    taken = consume_handoff("pearl", "jason", "telegram")
    assert taken is not None and taken["context_summary"] == MOVE["summary"]
    assert taken["id"] == request["event_id"]
    handoff_with_llm(request, llm_for(fake))  # redelivered: its id was sent already
    assert peek_handoff("pearl", "jason") is None


def test_a_mention_that_is_no_move_hands_off_nothing(fake: FakeLLM) -> None:
    fake.by_prompt["handoff"] = NO_MOVE
    [request] = ingest_batch(talk("The Discord bot you built is great.")).handoffs
    assert handoff_with_llm(request, llm_for(fake)).status == "none"
    assert peek_handoff("pearl", "jason") is None
    assert ingest_batch(talk("The drainage price is all I need.")).handoffs == []  # no channel


@pytest.mark.parametrize("mode", ["error500", "not_json"])
def test_when_the_llm_fails_the_rule_stands(fake: FakeLLM, mode: str) -> None:
    fake.mode = mode
    [ruled] = ingest_batch(talk(RULED)).handoffs
    before = peek_handoff("pearl", "jason", "discord")
    assert handoff_with_llm(ruled, llm_for(fake)).status == "fallback"
    assert peek_handoff("pearl", "jason", "discord") == before
    consume_handoff("pearl", "jason", "discord")
    [missed] = ingest_batch(talk(MISSED)).handoffs
    assert handoff_with_llm(missed, llm_for(fake)).status == "fallback"
    assert peek_handoff("pearl", "jason") is None
    expected = "error" if mode == "error500" else "fallback"  # unusable after its repair
    assert outcomes() == [("handoff", expected)] * 2


def test_a_private_tenants_turns_are_read_from_the_transcript_buffer(
    fake: FakeLLM, settings_env: Any
) -> None:
    settings_env(private_namespaces="pearl")
    fake.by_prompt["handoff"] = MOVE
    [request] = ingest_batch(talk(MISSED)).handoffs
    assert handoff_with_llm(request, llm_for(fake)).status == "sent"
    assert MISSED in fake.requests[-1]["messages"][1]["content"]


def test_the_follow_up_runs_on_the_worker(fake: FakeLLM, worker: Any, client: Any) -> None:
    fake.by_prompt["handoff"] = MOVE
    get_llm.cache_clear()
    try:
        client.emit_many(talk(MISSED))
        handoff = wait_for(lambda: peek_handoff("pearl", "jason", "telegram"), timeout=30)
    finally:
        get_llm.cache_clear()
    assert handoff["context_summary"] == MOVE["summary"]
