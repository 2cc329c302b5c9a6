"""OpenClaw helpers: user-text cleaning, cron prompts, sessions.json and file names."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from continuum.transcripts.openclaw import (
    clean_user_text,
    is_archived,
    load_sessions_index,
    parse_cron_prompt,
    session_id_from_path,
    slugify,
    topic_id_from_path,
)

HOME = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts" / "home"
MAIN_SESSIONS = HOME / ".openclaw" / "agents" / "main" / "sessions"


@pytest.mark.parametrize(
    ("raw", "text", "sender", "channel"),
    [
        ("[Telegram Alice +2m Thu 2026-02-26 14:00 PST] hi", "hi", "Alice", "telegram"),
        ("[Telegram Alice Thu 2026-02-26 14:00 PST] hi there", "hi there", "Alice", "telegram"),
        ("[Discord Guild #general] Alice: hi", "hi", "Alice", "discord"),
        ("[Thu 2026-02-26 14:00 PST] text", "text", None, "webchat"),
        ("hello\n[message_id: 42]", "hello", None, None),
        ("System: [2026-02-26 14:00:00 PST] Node connected\n\nhi", "hi", None, None),
        ("[Note to self] brackets stay", "[Note to self] brackets stay", None, None),
        ("Note: colons stay", "Note: colons stay", None, None),
        ("Thu 2026-02-26 is fine", "Thu 2026-02-26 is fine", None, None),
        ("[line 42 of the log] is wrong", "[line 42 of the log] is wrong", None, None),
    ],
)
def test_clean_user_text(raw: str, text: str, sender: str | None, channel: str | None) -> None:
    clean = clean_user_text(raw)
    assert (clean.text, clean.sender, clean.channel) == (text, sender, channel)


def test_untrusted_metadata_blocks_are_removed_and_read() -> None:
    raw = (
        "System: [2026-02-26 14:00:01 PST] Model switched.\n\n"
        "Conversation info (untrusted metadata):\n```json\n"
        '{"message_id": "4812", "sender_id": "60", "sender": "Jason"}\n```\n\n'
        "Sender (untrusted metadata):\n```json\n"
        '{"label": "Jason (@jw)", "name": "J"}\n```\n\n'
        "Ship it on Friday."
    )
    clean = clean_user_text(raw)
    assert clean.text == "Ship it on Friday."
    assert clean.sender == "Jason"
    assert clean.metadata == {
        "system_events": ["Model switched."],
        "conversation_info": {
            "message_id": "4812",
            "sender_id": "60",
            "sender": "Jason",
            "label": "Jason (@jw)",
            "name": "J",
        },
        "channel_message_id": "4812",
    }


def test_malformed_metadata_block_is_still_stripped() -> None:
    raw = "Conversation info (untrusted metadata):\n```json\n{not json\n```\n\nhello"
    clean = clean_user_text(raw)
    assert (clean.text, clean.sender, clean.metadata) == ("hello", None, {})


def test_cron_prompt() -> None:
    parsed = parse_cron_prompt(
        "[cron:ab12 Weekly Review: Q1 & Q2!] Review the roadmap.\n"
        "Current time: Monday, March 2nd, 2026 — 9:00 AM (Europe/Berlin)"
    )
    assert parsed is not None
    info, body = parsed
    assert (info.job_id, info.name, info.slug) == (
        "ab12",
        "Weekly Review: Q1 & Q2!",
        "weekly-review-q1-q2",
    )
    assert body == "Review the roadmap."
    assert parse_cron_prompt("no cron here [cron:x y]") is None
    assert slugify("  Daily  Standup__Digest ") == "daily-standup-digest"


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
    assert load_sessions_index(HOME / ".openclaw-DTeam" / "agents" / "ops" / "sessions") == {}
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
