"""Event validation: every bad input is refused with an error naming the field."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import pytest

from continuum.contract.events import EventError, IdleEvent, TurnEvent, parse_event, parse_events

TS = "2026-11-21T09:30:04.120Z"


def turn(**overrides: object) -> dict[str, object]:
    base: dict[str, object] = {
        "kind": "turn", "namespace": "pearl", "session_id": "s1", "channel": "voice",
        "ts": TS, "role": "user", "content": "Let's go with Hoffmann.",
    }  # fmt: skip
    base.update(overrides)
    return base


def error_fields(data: object) -> list[str]:
    with pytest.raises(EventError) as info:
        parse_event(data)
    return [field for field, _ in info.value.errors]


def test_valid_turn_gets_defaults() -> None:
    event = parse_event(turn())
    assert isinstance(event, TurnEvent)
    assert event.schema_version == 1
    assert isinstance(event.event_id, uuid.UUID)
    assert event.effective_message_id == str(event.event_id)
    assert event.ts.utcoffset() is not None


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"role": "robot"}, "role"),
        ({"content": 42}, "content"),
        ({"content": "   "}, "content"),
        ({"ts": "yesterday"}, "ts"),
        ({"ts": "2026-11-21T09:30:04"}, "ts"),  # naive time: ambiguous, refused
        ({"event_id": "not-a-uuid"}, "event_id"),
        ({"session_id": ""}, "session_id"),
        ({"namespace": "Bad Name!"}, "namespace"),
        ({"surprise": 1}, "surprise"),
        ({"metadata": "x"}, "metadata"),
    ],
)
def test_bad_turn_names_the_field(overrides: dict[str, object], field: str) -> None:
    assert field in error_fields(turn(**overrides))


def test_missing_fields_are_all_named() -> None:
    data = turn()
    del data["role"], data["session_id"]
    assert set(error_fields(data)) >= {"role", "session_id"}


def test_unknown_kind_and_version() -> None:
    assert error_fields(turn(kind="teleport")) == ["kind"]
    assert error_fields(turn(schema_version=7)) == ["schema_version"]
    assert error_fields(["not", "an", "object"]) == ["event"]


def test_oversize_content_is_refused_with_the_limit(settings_env: Any) -> None:
    settings_env(max_content_chars=100)
    with pytest.raises(EventError, match="over the limit of 100"):
        parse_event(turn(content="x" * 101))
    event = parse_event(turn(content="x" * 100))
    assert isinstance(event, TurnEvent) and event.content == "x" * 100


def test_unknown_tenant_is_refused_when_tenants_are_listed(settings_env: Any) -> None:
    settings_env(namespaces="pearl, entrepreneur")
    event = parse_event(turn(namespace="entrepreneur"))
    assert (event.kind, event.namespace) == ("turn", "entrepreneur")
    with pytest.raises(EventError, match="unknown namespace 'stranger'"):
        parse_event(turn(namespace="stranger"))


def test_other_kinds_validate_their_fields() -> None:
    common = {"namespace": "pearl", "session_id": "s1", "channel": "voice", "ts": TS}
    idle = parse_event({**common, "kind": "idle", "idle_ms": 60000, "last_activity_at": TS})
    assert isinstance(idle, IdleEvent)
    assert (idle.namespace, idle.session_id, idle.idle_ms) == ("pearl", "s1", 60000)
    assert idle.last_activity_at == datetime(2026, 11, 21, 9, 30, 4, 120000, tzinfo=UTC)
    assert "idle_ms" in error_fields(
        {**common, "kind": "idle", "idle_ms": -1, "last_activity_at": TS}
    )
    assert "compaction_id" in error_fields({**common, "kind": "pre_compaction"})
    end = parse_event(
        {
            **common,
            "kind": "session_end",
            "ended_at": "2026-11-21T09:32:00Z",
            "messages": [{"role": "user", "content": "hi"}],
        }
    )
    assert end.kind == "session_end" and len(end.messages) == 1
    assert error_fields({**common, "kind": "session_end", "ended_at": "2026-11-20T00:00:00Z"}) == [
        "event"
    ]


def test_batch_error_reports_the_index_and_limit(settings_env: Any) -> None:
    with pytest.raises(EventError, match="event #1") as info:
        parse_events([turn(), turn(role=3)])
    assert info.value.index == 1
    settings_env(max_batch_events=2)
    with pytest.raises(EventError, match="over the limit of 2"):
        parse_events([turn()] * 3)
