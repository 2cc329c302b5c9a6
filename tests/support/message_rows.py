"""Message rows of one synced session, as the conversation writer takes them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from continuum.conversations.writer import MessageRow, SessionFacts
from continuum.sync.rows import message_rows
from continuum.transcripts import TranscriptMessage

T0 = datetime(2026, 2, 26, 22, 0, tzinfo=UTC)
FACTS = SessionFacts(namespace="default", session_id="s1", source="openclaw")


def rows(*ids: str) -> list[MessageRow]:
    """A user message per id (`m3` is said 3 minutes after T0), reading `message m3`."""
    messages = [
        TranscriptMessage(
            message_id=message_id,
            parent_id=None,
            role="user",
            content=f"message {message_id}",
            created_at=T0 + timedelta(minutes=int(message_id[1:])),
        )
        for message_id in ids
    ]
    return message_rows(FACTS, messages, {})
