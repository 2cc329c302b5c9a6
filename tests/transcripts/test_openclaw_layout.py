"""The OpenClaw layout: sessions.json and transcript file names."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from continuum.transcripts.openclaw_layout import (
    is_archived,
    load_sessions_index,
    session_id_from_path,
    topic_id_from_path,
)
from tests.support.transcripts import FIXTURE_HOME

MAIN_SESSIONS = FIXTURE_HOME / ".openclaw" / "agents" / "main" / "sessions"


def test_sessions_index_channels_and_fallbacks() -> None:
    index = load_sessions_index(MAIN_SESSIONS)
    assert {sid: entry.channel for sid, entry in index.items()} == {
        "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d": "webchat",
        "b96c88e2-b875-4762-a8c3-fd495a27f5bd": "telegram",
        "5d2e7c41-0a9b-4f3e-9c1d-2b8e6f4a7d10": "discord",
        "7a1b9c3d-5e6f-4a8b-9c0d-1e2f3a4b5c6d": "telegram",
        "c0ffee12-3456-4789-abcd-ef0123456789": "telegram",
    }
    topic = index["7a1b9c3d-5e6f-4a8b-9c0d-1e2f3a4b5c6d"]
    assert topic.key == "agent:main:telegram:group:-1003311:topic:42"
    assert topic.chat_type == "group"
    assert topic.updated_at == datetime.fromtimestamp(1772218805, tz=UTC)
    assert index["5d2e7c41-0a9b-4f3e-9c1d-2b8e6f4a7d10"].model == "claude-sonnet-4-6"


def test_sessions_index_tolerates_missing_malformed_and_odd_entries(tmp_path: Path) -> None:
    assert load_sessions_index(tmp_path) == {}
    assert (
        load_sessions_index(FIXTURE_HOME / ".openclaw-DTeam" / "agents" / "ops" / "sessions") == {}
    )
    (tmp_path / "sessions.json").write_text(
        '{"a": {"sessionId": "s1", "updatedAt": 1000, "lastChannel": "slack"},'
        ' "b": {"sessionId": "s1", "updatedAt": 2000, "lastChannel": "signal"},'
        ' "c": "junk", "d": {"noSession": true}}'
    )
    index = load_sessions_index(tmp_path)
    assert list(index) == ["s1"]
    assert (index["s1"].key, index["s1"].channel) == ("b", "signal")
    (tmp_path / "sessions.json").write_text("[1, 2]")
    assert load_sessions_index(tmp_path) == {}


@pytest.mark.parametrize(
    ("name", "session_id", "topic_id", "archived"),
    [
        (
            "b96c88e2-b875-4762-a8c3-fd495a27f5bd.jsonl",
            "b96c88e2-b875-4762-a8c3-fd495a27f5bd",
            None,
            False,
        ),
        (
            "7a1b9c3d-5e6f-4a8b-9c0d-1e2f3a4b5c6d-topic-42.jsonl",
            "7a1b9c3d-5e6f-4a8b-9c0d-1e2f3a4b5c6d",
            "42",
            False,
        ),
        ("e4d5.jsonl.reset.2026-02-20T09-15-02.123Z", "e4d5", None, True),
        ("e4d5-topic-7.jsonl.deleted.2026-02-20T09-15-02.123Z", "e4d5", "7", True),
        ("e4d5.jsonl.bak.1771582502", "e4d5", None, True),
    ],
)
def test_file_name_helpers(
    name: str, session_id: str, topic_id: str | None, archived: bool
) -> None:
    path = Path("/x") / name
    assert session_id_from_path(path) == session_id
    assert topic_id_from_path(path) == topic_id
    assert is_archived(path) is archived
