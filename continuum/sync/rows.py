"""Transcript batches as the conversation writer takes them: parsed messages as message
rows (text Postgres cannot store cleaned), a batch's session facts, and the compaction
summaries a transcript carries, appended to its session's details."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session as DbSession

from continuum.conversations.writer import MessageRow, SessionFacts
from continuum.domain.storable import clean_json, clean_text
from continuum.sealing.envelope import COMPACTION_KIND, seal_json
from continuum.store import lsn_tokens
from continuum.store.models import Session
from continuum.transcripts import Compaction, TranscriptMessage


def _optional(value: str | None) -> str | None:
    return clean_text(value) if value is not None else None


def message_rows(
    facts: SessionFacts, messages: Iterable[TranscriptMessage], extra: dict[str, Any]
) -> list[MessageRow]:
    """Message rows of the batch's session; `extra` is merged into every row's details.
    Synced turns have no user: an encrypted tenant's are sealed under the tenant's key."""
    rows: list[MessageRow] = []
    for message in messages:
        details = {**message.metadata, **extra}
        if message.model:
            details["model"] = message.model
        if message.has_image:
            details["has_image"] = True
        if message.time_inferred:
            details["time_inferred"] = True
        rows.append(
            MessageRow(
                namespace=facts.namespace,
                session_id=facts.session_id,
                message_id=clean_text(message.message_id),
                parent_id=_optional(message.parent_id),
                role=message.role,
                content=clean_text(message.content),
                channel=_optional(message.channel) or facts.channel,
                sender=_optional(message.sender),
                user_id=None,  # synced turns have no user
                source=facts.source,
                created_at=message.created_at,
                event_id=None,
                details=details,
            )
        )
    return rows


def session_exists(db: DbSession, namespace: str, session_id: str) -> bool:
    """True when the session has a row."""
    where = (Session.namespace == namespace, Session.session_id == session_id)
    return db.scalar(select(Session.id).where(*where)) is not None


def add_compactions(
    db: DbSession, namespace: str, session_id: str, compactions: list[Compaction]
) -> int:
    """Append compaction summaries to `sessions.details.compactions` (once per id); sealed,
    but for their id, for an encrypted tenant, bound to the session (`open_compactions`
    reads them)."""
    if not compactions:
        return 0
    where = (Session.namespace == namespace, Session.session_id == session_id)
    details = dict(db.scalar(select(Session.details).where(*where).with_for_update()) or {})
    stored: list[dict[str, Any]] = list(details.get("compactions", []))
    known = {item.get("compaction_id") for item in stored}
    new = [
        {"compaction_id": c.compaction_id}
        | seal_json(
            namespace, None, COMPACTION_KIND, clean_json(c.model_dump(mode="json")), session_id
        )
        for c in compactions
        if c.compaction_id not in known
    ]
    if new:
        details["compactions"] = stored + new
        lsn_tokens.wrote(db, [namespace])
        db.execute(update(Session).where(*where).values(details=details))
    return len(new)
