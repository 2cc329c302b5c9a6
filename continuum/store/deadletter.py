"""Dead-letter store: work that can never succeed is kept here with its reason, never dropped."""

from __future__ import annotations

from typing import Any

from sqlalchemy import insert
from sqlalchemy.orm import Session

from continuum.store.engine import session_scope
from continuum.store.models import DeadLetter


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
    """Add one dead letter inside the caller's transaction."""
    db.execute(
        insert(DeadLetter).values(
            task_name=task_name,
            task_id=task_id,
            payload=payload,
            reason=reason,
            error=error,
            attempts=attempts,
            namespace=namespace,
        )
    )


def record_now(**fields: Any) -> None:
    """Add one dead letter in its own transaction."""
    with session_scope() as db:
        record(db, **fields)
