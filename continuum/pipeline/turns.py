"""Conversions into capture's `CaptureTurn` from stored messages and from turn events."""

from __future__ import annotations

from continuum.contract.events import TurnEvent
from continuum.domain.memory import CaptureTurn
from continuum.store.models import Message


def from_message(row: Message) -> CaptureTurn:
    return CaptureTurn(
        message_id=row.message_id,
        role=row.role,  # type: ignore[arg-type]
        content=row.content,
        created_at=row.created_at,
        session_id=row.session_id,
        channel=row.channel,
        user_id=row.user_id,
    )


def from_event(turn: TurnEvent) -> CaptureTurn | None:
    """None for system turns: capture reads what the user and the assistant said."""
    if turn.role == "system":
        return None
    return CaptureTurn(
        message_id=turn.effective_message_id,
        role=turn.role,
        content=turn.content,
        created_at=turn.ts,
        session_id=turn.session_id,
        channel=turn.channel,
        user_id=turn.user_id,
        source="tool" if turn.metadata.get("source") == "tool" else "user",
    )
