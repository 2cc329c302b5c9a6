"""Dead-letter store: work that can never succeed is kept here with its reason, never dropped."""

from __future__ import annotations

from typing import Any

from sqlalchemy import insert
from sqlalchemy.orm import Session

from continuum.store.engine import session_scope
from continuum.store.models import DeadLetter
from continuum.store.storable import escape_text, escaped_json


def record(
    db: Session,
    *,
    task_name: str,
    payload: Any,
    reason: str,
    error: str | None = None,
    task_id: str | None = None,
    attempts: int = 1,
    namespace: str | None = None,
) -> None:
    """Add one dead letter inside the caller's transaction; the payload is kept as sent,
    with only what `jsonb` cannot hold escaped (`escaped_json`)."""
    db.execute(
        insert(DeadLetter).values(
            task_name=task_name,
            task_id=task_id,
            payload=escaped_json(payload),
            reason=reason,
            error=escape_text(error) if error else error,
            attempts=attempts,
            namespace=escape_text(namespace) if namespace else namespace,
        )
    )


def record_now(**fields: Any) -> None:
    """Add one dead letter in its own transaction."""
    with session_scope() as db:
        record(db, **fields)
