"""The handoff rule: which turns announce a move to another channel, and to which."""

from __future__ import annotations

import pytest

from continuum.capture.handoffs import handoff_target


@pytest.mark.parametrize(
    ("content", "channel", "target"),
    [
        ("I'll continue on Discord", "voice", "discord"),
        ("OK, sounds good. I’ll continue on Discord later.", "voice", "discord"),
        ("let's pick this up in the voice call", "discord", "voice"),
        ("continue this in telegram later", "claude-code", "telegram"),
        ("Let's switch to Telegram.", "discord:dm", "telegram"),
        ("I'm going to move this conversation over to Slack tomorrow.", "voice", "slack"),
        ("I have to go, talk later on Discord.", "voice", "discord"),
        ("We'll carry on in Claude Code.", "voice", "claude-code"),
    ],
)
def test_a_turn_announcing_a_move_names_the_channel(
    content: str, channel: str, target: str
) -> None:
    assert handoff_target(content, channel) == target


@pytest.mark.parametrize(
    "content",
    [
        "Should I continue on Discord?",
        "Can we pick this up in the voice call",  # a question without its mark still asks
        "If it rains I'll continue on Discord.",
        "Maybe we'll continue on Telegram.",
        "What if we continue on Slack?",
        "I won't continue on Discord.",
        "I'll talk to Discord support about the bot.",  # talking to someone is no move
        "We chatted on Discord yesterday.",  # the past
        "I'll continue on IRC.",  # not a known channel
        "I love Discord.",
        "I'll continue reading tonight.",
    ],
)
def test_questions_hypotheticals_and_mentions_announce_nothing(content: str) -> None:
    assert handoff_target(content, "voice") is None


def test_the_channel_the_turn_is_on_is_no_move() -> None:
    assert handoff_target("I'll continue on Discord.", "discord") is None
    assert handoff_target("I'll continue on Discord.", "discord:#garden") is None
