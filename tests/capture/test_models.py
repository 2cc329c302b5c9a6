"""Memory candidate validation and idempotency keys."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from continuum.capture import CaptureTurn, detect_key_moments
from continuum.domain.memory import MemoryCandidate


def _decision(message_id: str = "d4", content: str = "Let's use Postgres for the event store."):
    turn = CaptureTurn(
        message_id=message_id,
        role="user",
        content=content,
        created_at=datetime(2025, 3, 4, 14, 0, tzinfo=UTC),
        session_id="discord-7",
        channel="discord",
    )
    (memory,) = detect_key_moments(turn)
    return memory


def test_same_input_gives_the_same_key():
    assert _decision().idempotency_key("atlas") == _decision().idempotency_key("atlas")
    assert len(_decision().idempotency_key("atlas")) == 64


def test_key_changes_with_source_namespace_trigger_and_content():
    base = _decision()
    key = base.idempotency_key("atlas")
    assert _decision(message_id="d5").idempotency_key("atlas") != key
    assert base.idempotency_key("pearl") != key
    assert base.model_copy(update={"trigger": "chunk"}).idempotency_key("atlas") != key
    assert _decision(content="Let's use MySQL for the event store.").idempotency_key("atlas") != key


def test_key_ignores_case_whitespace_and_source_order():
    base = _decision().model_copy(update={"source_message_ids": ["a", "b"]})
    same = base.model_copy(
        update={
            "source_message_ids": ["b", "a"],
            "content": "  decided TO use postgres  for the event store",
        }
    )
    assert base.idempotency_key("atlas") == same.idempotency_key("atlas")


def _candidate(**overrides: object) -> MemoryCandidate:
    fields: dict[str, object] = {
        "kind": "fact",
        "key": "grandchildren_count",
        "content": "User has 4 grandchildren",
        "importance": 7,
        "confidence": 0.9,
        "provenance": "user_explicit",
        "source_message_ids": ["v7"],
    }
    fields.update(overrides)
    return MemoryCandidate.model_validate(fields)


@pytest.mark.parametrize(
    "overrides",
    [
        {"kind": "gossip"},
        {"key": "Grandchildren Count"},
        {"importance": 11},
        {"importance": 0},
        {"confidence": 1.5},
        {"provenance": "rumour"},
        {"source_message_ids": []},
        {"content": "x" * 301},
    ],
)
def test_invalid_candidates_are_refused(overrides):
    with pytest.raises(ValidationError):
        _candidate(**overrides)


def test_digest_kinds_may_be_longer_but_not_unbounded():
    assert (
        _candidate(kind="session_snapshot", key=None, content="x" * 900).kind == "session_snapshot"
    )
    with pytest.raises(ValidationError):
        _candidate(kind="session_snapshot", key=None, content="x" * 1201)
