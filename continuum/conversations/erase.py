"""Erasing turns of one session on request (a runtime that keeps its conversation here undoes
its last turn or clears the conversation): the rows of `messages`, their vectors with them,
and the session's count. Memories derived from them stay (they are the long-term memory;
the memory tools forget those), and so does what Redis holds of the live session (its recent
turns and transcript buffer expire within 2 hours). Forgetting a user everywhere is
`continuum.security.forget`."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import delete, func, update

from continuum.store.engine import session_scope
from continuum.store.models import Message, Session


def erase_turns(namespace: str, session_id: str, message_ids: Sequence[str] | None = None) -> int:
    """Delete the session's turns (only `message_ids` when given); returns how many went."""
    stmt = delete(Message).where(Message.namespace == namespace, Message.session_id == session_id)
    if message_ids is not None:
        stmt = stmt.where(Message.message_id.in_(list(message_ids)))
    with session_scope() as db:
        erased = len(db.scalars(stmt.returning(Message.id)).all())
        if erased:
            db.execute(
                update(Session)
                .where(Session.namespace == namespace, Session.session_id == session_id)
                .values(message_count=func.greatest(Session.message_count - erased, 0))
            )
    return erased
