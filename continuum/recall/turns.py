"""A session's turns in order, whole: content, ids and the metadata their producer attached
(what `GET /v1/sessions/{session_id}/messages` serves, so a runtime that keeps its
conversation in Continuum reads it back as it sent it)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from sqlalchemy import select

from continuum.domain.records import Turn
from continuum.store.models import Message
from continuum.store.reads import read_scope


def session_turns(
    namespaces: Sequence[str],
    session_id: str,
    order: Literal["oldest", "newest"],
    limit: int,
    offset: int,
) -> list[Turn]:
    """`limit` turns of the session from `offset`, by event time (then arrival)."""
    by_time = (
        (Message.created_at.asc(), Message.id.asc())
        if order == "oldest"
        else (Message.created_at.desc(), Message.id.desc())
    )
    stmt = (
        select(Message)
        .where(Message.namespace.in_(list(namespaces)), Message.session_id == session_id)
        .order_by(*by_time)
        .offset(offset)
        .limit(limit)
    )
    with read_scope(namespaces) as db:
        return [
            Turn(
                id=m.id,
                namespace=m.namespace,
                session_id=m.session_id,
                message_id=m.message_id,
                parent_id=m.parent_id,
                role=m.role,
                content=m.content,
                channel=m.channel,
                user_id=m.user_id,
                created_at=m.created_at,
                metadata=m.details or {},
            )
            for m in db.scalars(stmt)
        ]
