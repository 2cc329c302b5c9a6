"""Noise filters and the short-message rule (R63, R29)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from continuum.capture.filters import (
    detect_sentiment,
    is_small_talk,
    short_signal,
    strip_pasted,
    triage,
)
from continuum.domain.memory import CaptureTurn


def _turn(content: str, source: str = "user") -> CaptureTurn:
    return CaptureTurn(
        message_id="m1",
        role="user",
        content=content,
        created_at=datetime(2025, 1, 1, tzinfo=UTC),
        session_id="s1",
        source=source,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(
    ("content", "source", "reason"),
    [
        ("We decided to use Postgres for the event store.", "tool", "tool_output"),
        ("HEARTBEAT_OK", "user", "heartbeat"),
        ("Read HEARTBEAT.md if it exists and follow it.", "user", "heartbeat"),
        ("ping", "user", "heartbeat"),
        ('{"status": "ok", "items": [1, 2, 3]}', "user", "pasted_content"),
        ("```python\nprint('hi')\n```", "user", "pasted_content"),
        ("<html><body><div>Cookie settings</div></body></html>", "user", "pasted_content"),
        ("See https://a.example/x and https://b.example/y for the docs", "user", "pasted_content"),
        ("Lorem ipsum dolor sit amet. " * 80, "user", "pasted_content"),
        ("hi", "user", "small_talk"),
        ("Thanks so much!", "user", "small_talk"),
        ("ok", "user", "small_talk"),
        ("good morning, how are you?", "user", "small_talk"),
    ],
)
def test_noise_is_skipped_with_a_reason(content, source, reason):
    assert triage(_turn(content, source)).skip_reason == reason


@pytest.mark.parametrize(
    "content",
    [
        "Ping me tomorrow about the deploy",
        "My heartbeat was irregular this morning",
        "let's go with Redis",
        "this is great, thanks!",
    ],
)
def test_real_messages_pass(content):
    checked = triage(_turn(content))
    assert checked.skip_reason is None
    assert checked.prose == content


def test_prose_around_a_stack_trace_is_kept_without_the_trace():
    text = (
        "The sync keeps failing.\nTraceback (most recent call last):\n"
        '  File "sync.py", line 3, in <module>\n    main()\n'
        "KeyError: 'offset'\nAny idea why?"
    )
    assert strip_pasted(text) == "The sync keeps failing.\nAny idea why?"


def test_short_flag_uses_fifty_characters():
    assert triage(_turn("x" * 49 + " ")).is_short
    assert not triage(_turn("word " * 10 + "words")).is_short


@pytest.mark.parametrize(
    ("text", "signal"),
    [
        ("I'm so frustrated", "sentiment"),
        ("this is great, thanks!", "sentiment"),
        ("ok let's do it", "acknowledgment"),
        ("sounds good, go ahead", "acknowledgment"),
        ("the red one", None),
    ],
)
def test_short_signal(text, signal):
    assert short_signal(text) == signal


@pytest.mark.parametrize(
    ("text", "sentiment"),
    [
        ("prod is down, fix it asap", "urgent"),
        ("ugh, it still doesn't work", "frustrated"),
        ("that's not very helpful", "frustrated"),
        ("perfect, that worked", "positive"),
        ("the meeting is at noon", "neutral"),
    ],
)
def test_detect_sentiment(text, sentiment):
    assert detect_sentiment(text) == sentiment


def test_small_talk_requires_every_word_to_be_small_talk():
    assert is_small_talk("hey there!")
    assert not is_small_talk("hey, the build broke")
