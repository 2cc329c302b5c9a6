"""Filtered, paged listings across namespaces: what the API and Mission Control browse
(messages, memories, sessions, cron reports, cron names), and what cron-report sync reads
back. Every listing is scoped by `namespaces` (one instance or several, R77).

These extend the plain one-namespace queries of `recall.namespace_queries` (search, last N,
one day) with the filters a browsing UI needs (role, session, channel, date range, cron
name, memory kind, status, tags) and an offset, in one statement each.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVarTuple

from sqlalchemy import (
    ARRAY,
    ColumnElement,
    Select,
    Text,
    and_,
    cast,
    literal,
    literal_column,
    or_,
    select,
)
from sqlalchemy.dialects.postgresql import TSVECTOR

from continuum.recall.namespace_queries import MessageHit, full_text, message_hits
from continuum.sealing.terms import stored_tags
from continuum.store.models import TSV_CRON_REPORTS, CronReport, Memory, Message, Session
from continuum.store.reads import read_scope

CRON_TERMS = literal_column(TSV_CRON_REPORTS, TSVECTOR)  # the expression its index covers

Ts = TypeVarTuple("Ts")


@dataclass(frozen=True)
class Window:
    """Rows `offset .. offset+limit` and the time range they must fall in."""

    limit: int
    offset: int = 0
    since: datetime | None = None
    until: datetime | None = None


@dataclass(frozen=True)
class MessageFilters:
    query: str | None = None
    role: str | None = None
    session_id: str | None = None
    channel: str | None = None
    user_id: str | None = None
    oldest_first: bool = False


@dataclass(frozen=True)
class MemoryFilters:
    query: str | None = None
    kind: str | None = None
    status: str | None = "active"  # None: every status
    min_importance: int | None = None
    tags: tuple[str, ...] = ()
    session_id: str | None = None
    channel: str | None = None
    user_id: str | None = None
    include_private: bool = False


def _scoped(
    stmt: Select[*Ts],
    namespace_column: Any,
    namespaces: Sequence[str],
    time_column: Any,
    window: Window,
    equal: dict[Any, Any],
) -> Select[*Ts]:
    """`stmt` limited to `namespaces`, the window's time range and every given equality."""
    clauses: list[ColumnElement[bool]] = [namespace_column.in_(namespaces)]
    clauses += [column == value for column, value in equal.items() if value is not None]
    if window.since:
        clauses.append(time_column >= window.since)
    if window.until:
        clauses.append(time_column < window.until)
    return stmt.where(*clauses).limit(window.limit).offset(window.offset)


def messages(
    namespaces: Sequence[str], filters: MessageFilters, window: Window
) -> list[MessageHit]:
    """Raw messages: ranked by full-text match when `query` is given, else by event time."""
    equal = {
        Message.role: filters.role,
        Message.session_id: filters.session_id,
        Message.channel: filters.channel,
        Message.user_id: filters.user_id,
    }
    with read_scope(namespaces) as db:
        rank: ColumnElement[float] = literal(0.0)
        match = None
        if filters.query:
            match, rank = full_text(db, namespaces, Message.namespace, Message.tsv, filters.query)
        stmt = _scoped(
            select(Message, rank), Message.namespace, namespaces, Message.created_at, window, equal
        )
        if match is not None:
            stmt = stmt.where(match).order_by(rank.desc())
        time_order = Message.created_at.asc() if filters.oldest_first else Message.created_at.desc()
        stmt = stmt.order_by(time_order, Message.id)
        return message_hits(db.execute(stmt).all())


def memories(namespaces: Sequence[str], filters: MemoryFilters, window: Window) -> list[Memory]:
    """Memories, newest first (best full-text match first when `query` is given). A user sees
    their own memories and the namespace's shared ones (no user), as search does."""
    equal = {
        Memory.kind: filters.kind,
        Memory.status: filters.status,
        Memory.session_id: filters.session_id,
        Memory.channel: filters.channel,
    }
    stmt = _scoped(select(Memory), Memory.namespace, namespaces, Memory.created_at, window, equal)
    if filters.user_id is not None:
        stmt = stmt.where(or_(Memory.user_id == filters.user_id, Memory.user_id.is_(None)))
    if not filters.include_private:
        stmt = stmt.where(Memory.private.is_(False))
    if filters.min_importance is not None:
        stmt = stmt.where(Memory.importance >= filters.min_importance)
    if filters.tags:
        stmt = stmt.where(
            or_(
                *(
                    and_(
                        Memory.namespace == namespace,
                        Memory.tags.op("@>")(
                            cast(stored_tags(namespace, filters.tags), ARRAY(Text))
                        ),
                    )
                    for namespace in namespaces
                )
            )
        )
    with read_scope(namespaces) as db:
        if filters.query:
            match, rank = full_text(db, namespaces, Memory.namespace, Memory.tsv, filters.query)
            stmt = stmt.where(match).order_by(rank.desc())
        stmt = stmt.order_by(Memory.created_at.desc(), Memory.id.desc())
        return list(db.scalars(stmt))


def cron_reports(
    namespaces: Sequence[str], window: Window, cron_name: str | None, query: str | None
) -> list[CronReport]:
    """Cron reports, newest run first; `query` searches their text."""
    stmt = _scoped(
        select(CronReport),
        CronReport.namespace,
        namespaces,
        CronReport.event_at,
        window,
        {CronReport.cron_name: cron_name},
    )
    with read_scope(namespaces) as db:
        if query:  # on the indexed terms: keyed for an encrypted tenant, whose text is sealed
            match, _ = full_text(db, namespaces, CronReport.namespace, CRON_TERMS, query)
            stmt = stmt.where(match)
        stmt = stmt.order_by(CronReport.event_at.desc().nulls_last(), CronReport.id.desc())
        return list(db.scalars(stmt))


def cron_names(namespaces: Sequence[str]) -> list[str]:
    """Every cron name that has a report, for filters."""
    stmt = (
        select(CronReport.cron_name)
        .where(CronReport.namespace.in_(namespaces))
        .distinct()
        .order_by(CronReport.cron_name)
    )
    with read_scope(namespaces) as db:
        return list(db.scalars(stmt))


def sessions(
    namespaces: Sequence[str], window: Window, channel: str | None, source: str | None
) -> list[Session]:
    """Sessions, most recently active first."""
    stmt = _scoped(
        select(Session),
        Session.namespace,
        namespaces,
        Session.last_activity_at,
        window,
        {Session.channel: channel, Session.source: source},
    )
    stmt = stmt.order_by(Session.last_activity_at.desc().nulls_last(), Session.id.desc())
    with read_scope(namespaces) as db:
        return list(db.scalars(stmt))


def find_session(namespaces: Sequence[str], session_id: str) -> Session | None:
    """The session `session_id` in one of `namespaces` (the first by name when several)."""
    stmt = (
        select(Session)
        .where(Session.namespace.in_(namespaces), Session.session_id == session_id)
        .order_by(Session.namespace)
        .limit(1)
    )
    with read_scope(namespaces) as db:
        return db.scalar(stmt)
