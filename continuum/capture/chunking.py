"""Chunking of synced transcript messages for capture (R60): a chunk closes at 10 messages
or when the next message is more than 5 minutes after the chunk's first one."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Protocol, TypeVar

DEFAULT_MAX_MESSAGES = 10
DEFAULT_MAX_SPAN = timedelta(minutes=5)


class Timestamped(Protocol):
    @property
    def created_at(self) -> datetime: ...


T = TypeVar("T", bound=Timestamped)


def chunk_messages(
    messages: Iterable[T],
    max_messages: int = DEFAULT_MAX_MESSAGES,
    max_span: timedelta = DEFAULT_MAX_SPAN,
) -> list[list[T]]:
    """Group messages (ordered by `created_at`, stable for ties) into capture chunks."""
    if max_messages < 1:
        raise ValueError("max_messages must be at least 1")
    chunks: list[list[T]] = []
    for message in sorted(messages, key=lambda m: m.created_at):
        current = chunks[-1] if chunks else None
        if (
            current is None
            or len(current) >= max_messages
            or message.created_at - current[0].created_at > max_span
        ):
            chunks.append([message])
        else:
            current.append(message)
    return chunks
