"""Who may see which rows (R16), as SQL: the one place the read plane's scoping rule is
written, so hybrid search and the context block's memory channels cannot disagree on it.

A read is scoped to one namespace; with a user, to that user's rows and the shared ones
(`user_id IS NULL`), never another user's; a private memory only to its owner, and only
when the caller asks for the owner's view (`include_private`; the context block decides it
from the channel). Only `active` memories unless a caller (explain's audit) asks for more.
The user scope also comes as separate alternatives (`owner_clauses`) so an ordered scan can
read the user's rows and the shared rows as two index ranges instead of walking other
users' rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class SearchFilters:
    """What a search (or a memory channel of the context block) may read."""

    user_id: str | None = None
    kinds: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    session_id: str | None = None
    channel: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    include_private: bool = False  # the owner's (user_id's) private memories, nobody else's
    statuses: tuple[str, ...] = ("active",)

    @property
    def time_bounded(self) -> bool:
        """Explicit `since`/`until` bounds win over a time phrase in the query."""
        return self.since is not None or self.until is not None


def owner_clauses(filters: SearchFilters, params: dict[str, Any]) -> list[str]:
    """The user scope as alternatives that together make `where_sql(..., owners=False)`
    whole: the user's own rows and the shared ones (each an index range of its own, so an
    ordered scan never walks other users' rows), or everything without a user."""
    if not filters.user_id:
        return ["true"]
    params["uid"] = filters.user_id
    return ["user_id = :uid", "user_id IS NULL"]


def status_clause(filters: SearchFilters, params: dict[str, Any]) -> str:
    """The memory statuses `filters` admit, as a condition; fills `params`."""
    if len(filters.statuses) == 1:  # plain equality lets the planner use index order
        params["status"] = filters.statuses[0]
        return "status = :status"
    params["statuses"] = list(filters.statuses)
    return "status = ANY(:statuses)"


def where_sql(
    source: str, filters: SearchFilters, params: dict[str, Any], *, owners: bool = True
) -> str:
    """The WHERE clause scoping `source` rows to the namespace, user, privacy, status and
    filters (R16); fills `params`. Search's rankings and the context block's memory channels
    build their scope with it.
    `owners=False` leaves out the user scope for a caller that ORs `owner_clauses` itself."""
    clauses = ["namespace = :ns"]
    if filters.user_id:
        params["uid"] = filters.user_id
        if owners:
            clauses.append("(user_id = :uid OR user_id IS NULL)")
    if source == "memory":
        clauses.append(status_clause(filters, params))
        owner = filters.include_private and filters.user_id
        clauses.append("(NOT private OR user_id = :uid)" if owner else "NOT private")
        if filters.kinds:
            clauses.append("kind = ANY(:kinds)")
            params["kinds"] = list(filters.kinds)
        if filters.tags:
            clauses.append("tags @> :tags")
            params["tags"] = list(filters.tags)
    elif filters.kinds or filters.tags:
        clauses.append("false")  # kind and tag filters select memories only
    for name in ("session_id", "channel"):
        if getattr(filters, name):
            clauses.append(f"{name} = :{name}")
            params[name] = getattr(filters, name)
    if filters.since:
        clauses.append("created_at >= :since")
        params["since"] = filters.since
    if filters.until:
        clauses.append("created_at < :until")
        params["until"] = filters.until
    return " AND ".join(clauses)
