"""Dead-letter store: work that can never succeed is kept here with its reason, never dropped.

A payload carrying an encrypted tenant's events (R47) is stored sealed under that tenant's
key (`{"sealed": …}`, plus its `event_id` when it has one, so it can still be found), and so
is the error text (a refused value may be quoted in it), both bound to the row's id (drawn
before the insert); `payload_of` opens them.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import insert
from sqlalchemy.orm import Session

from continuum.config import get_settings
from continuum.domain.storable import escape_text, escaped_json
from continuum.sealing.envelope import (
    SEALED_JSON,
    open_optional,
    open_sealed_json,
    seal,
    seal_json,
)
from continuum.store import lsn_tokens
from continuum.store.bulk import allocate_ids
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
    """Add one dead letter inside the caller's transaction; the payload is kept as sent,
    with only what `jsonb` cannot hold escaped (`escaped_json`), sealed for an encrypted
    tenant."""
    stored = escaped_json(payload)
    text = escape_text(error) if error else error
    owner = _encrypted_owner(stored, namespace)
    row: dict[str, Any] = {}
    if owner is not None:
        (row["id"],) = allocate_ids(db, DeadLetter, 1)  # what its seals are bound to
        sealed = seal_json(owner, None, KIND, stored, row["id"])
        if isinstance(stored, dict) and isinstance(stored.get("event_id"), str):
            sealed["event_id"] = stored["event_id"]
        stored = sealed
        text = seal(owner, None, KIND, text, row["id"]) if text else text
    db.execute(
        insert(DeadLetter).values(
            **row,
            task_name=task_name,
            task_id=task_id,
            payload=stored,
            reason=reason,
            error=text,
            attempts=attempts,
            namespace=escape_text(namespace) if namespace else namespace,
        )
    )
    if namespace:
        lsn_tokens.wrote(db, [namespace])


KIND = "dead_letters.payload"


def _namespaces(value: Any, depth: int = 0) -> list[str]:
    """Tenants named in a payload: an event's `namespace`, or its events' in a task's args."""
    if depth > 4:
        return []
    if isinstance(value, dict):
        own = [value["namespace"]] if isinstance(value.get("namespace"), str) else []
        return own + [ns for item in value.values() for ns in _namespaces(item, depth + 1)]
    if isinstance(value, list):
        return [ns for item in value for ns in _namespaces(item, depth + 1)]
    return []


def _encrypted_owner(payload: Any, namespace: str | None) -> str | None:
    """The encrypted tenant whose key seals this dead letter (the first named), if any."""
    settings = get_settings()
    candidates = ([namespace] if namespace else []) + _namespaces(payload)
    return next((ns for ns in candidates if settings.is_encrypted(ns)), None)


def payload_of(row: DeadLetter) -> tuple[Any, str | None]:
    """A dead letter's payload and error as recorded (opened when sealed)."""
    payload = row.payload
    if isinstance(payload, dict) and SEALED_JSON in payload:
        payload = open_sealed_json(payload[SEALED_JSON], KIND, row.id)
    error = open_optional(row.error, KIND, row.id)
    return payload, error


def record_now(**fields: Any) -> None:
    """Add one dead letter in its own transaction."""
    with session_scope() as db:
        record(db, **fields)
