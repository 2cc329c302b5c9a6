"""OpenClaw user text: envelopes, metadata blocks, message ids and cron prompts."""

from __future__ import annotations

import pytest

from continuum.transcripts.openclaw_text import clean_user_text, parse_cron_prompt, slugify


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
