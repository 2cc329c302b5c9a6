"""Plain queries over one namespace's stored conversation (R77): raw messages by full-text
search, the last N, one day (a day of the tenant's time zone); its sessions; its newest
memories. Behind `continuum messages search|recent|day`, the demo's report and many tests:
one namespace, no paging, no filters beyond a few keywords.

Also the pieces `recall.listings` builds on: the full-text match in web-search syntax
(`full_text`, on keyed terms for an encrypted tenant, R47) and the message hit it returns.
Kept apart from those listings (several namespaces, filtered and paged, for the API and
Mission Control) so each module's name says which of the two a caller gets.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, tzinfo
from typing import Any

from sqlalchemy import ColumnElement, and_, case, cast, func, literal, or_, select
from sqlalchemy.dialects.postgresql import TSQUERY
from sqlalchemy.orm import Session as DbSession

from continuum.config import get_settings
from continuum.recall.timeparse import day_span
from continuum.sealing.terms import keyed_websearch
from continuum.store.models import Memory, Message, Session
from continuum.store.reads import read_scope


@dataclass(frozen=True)
class MessageHit:
    id: int
    namespace: str
    session_id: str
    message_id: str
    role: str
    channel: str | None
    content: str
    created_at: datetime
    rank: float = 0.0
    details: dict[str, Any] = field(default_factory=dict)  # what its producer attached


def message_hits(rows: Iterable[Any]) -> list[MessageHit]:
    """Rows of (Message, rank) as hits."""
    return [
        MessageHit(
            id=m.id,
            namespace=m.namespace,
            session_id=m.session_id,
            message_id=m.message_id,
            role=m.role,
            channel=m.channel,
            content=m.content,
            created_at=m.created_at,
            rank=float(rank),
            details=m.details,
        )
        for m, rank in rows
    ]


def full_text(
    db: DbSession, namespaces: Sequence[str], namespace_column: Any, tsv: Any, query: str
) -> tuple[ColumnElement[bool], ColumnElement[float]]:
    """Whether `tsv` matches `query` (web-search syntax: quotes, OR, -word), and the rank;
    an encrypted tenant's rows (R47) are matched on their keyed terms."""
    plain: ColumnElement[Any] = func.websearch_to_tsquery("english", query)
    settings = get_settings()
    keyed = {
        namespace: cast(keyed_websearch(db, namespace, query), TSQUERY)
        for namespace in namespaces
        if settings.is_encrypted(namespace)
    }
    if not keyed:
        return tsv.op("@@")(plain), func.ts_rank_cd(tsv, plain)
    if len(keyed) == len(namespaces) == 1:  # one tenant: a plain index condition
        (tsquery,) = keyed.values()
        return tsv.op("@@")(tsquery), func.ts_rank_cd(tsv, tsquery)
    # Several tenants: each matched on its own terms, one index condition per tenant.
    others = [n for n in namespaces if n not in keyed]
    match = or_(
        *(and_(namespace_column == n, tsv.op("@@")(q)) for n, q in keyed.items()),
        and_(namespace_column.in_(others), tsv.op("@@")(plain)),
    )
    per_tenant = case(keyed, value=namespace_column, else_=plain)
    return match, func.ts_rank_cd(tsv, per_tenant)


def search_messages(
    namespace: str,
    query: str,
    *,
    limit: int = 20,
    channel: str | None = None,
    role: str | None = None,
    user_id: str | None = None,
) -> list[MessageHit]:
    """Full-text search of raw messages (web-search syntax: quotes, OR, -word)."""
    with read_scope(namespace) as db:
        match, rank = full_text(db, [namespace], Message.namespace, Message.tsv, query)
        stmt = (
            select(Message, rank)
            .where(Message.namespace == namespace, match)
            .order_by(rank.desc(), Message.created_at.desc())
            .limit(limit)
        )
        if channel:
            stmt = stmt.where(Message.channel == channel)
        if role:
            stmt = stmt.where(Message.role == role)
        if user_id:
            stmt = stmt.where(Message.user_id == user_id)
        return message_hits(db.execute(stmt).all())


def recent_messages(namespace: str, *, limit: int = 20) -> list[MessageHit]:
    """The last `limit` messages of a namespace, oldest first."""
    stmt = (
        select(Message, literal(0.0))
        .where(Message.namespace == namespace)
        .order_by(Message.created_at.desc(), Message.id.desc())
        .limit(limit)
    )
    with read_scope(namespace) as db:
        return list(reversed(message_hits(db.execute(stmt).all())))


def day_messages(namespace: str, day: date, tz: str | tzinfo | None = None) -> list[MessageHit]:
    """One day's conversation across sessions, in event-time order: a day of the tenant's
    time zone (`Settings.zone_for`), or of `tz`."""
    since, until = day_span(day, get_settings().zone_for(namespace, tz))
    stmt = (
        select(Message, literal(0.0))
        .where(
            Message.namespace == namespace,
            Message.created_at >= since,
            Message.created_at < until,
        )
        .order_by(Message.created_at, Message.id)
    )
    with read_scope(namespace) as db:
        return message_hits(db.execute(stmt).all())


def get_session(namespace: str, session_id: str) -> Session | None:
    with read_scope(namespace) as db:
        return db.scalar(
            select(Session).where(Session.namespace == namespace, Session.session_id == session_id)
        )


def list_sessions(namespace: str, *, limit: int = 20) -> list[Session]:
    with read_scope(namespace) as db:
        return list(
            db.scalars(
                select(Session)
                .where(Session.namespace == namespace)
                .order_by(Session.last_activity_at.desc().nulls_last())
                .limit(limit)
            )
        )


def recent_memories(namespace: str, *, limit: int = 20) -> list[Memory]:
    """The newest `limit` active memories, listed oldest first (in the order captured)."""
    with read_scope(namespace) as db:
        newest = list(
            db.scalars(
                select(Memory)
                .where(Memory.namespace == namespace, Memory.status == "active")
                .order_by(Memory.created_at.desc(), Memory.id.desc())
                .limit(limit)
            )
        )
    return newest[::-1]
