"""Per-instance views (R70): `messages_<slug>` and `cron_reports_<slug>` for each instance.

Created the first time an instance is seen; identifiers are sanitized to `[a-z0-9_]` and
quoted, the namespace goes in as a literal, so no instance name can inject SQL.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from psycopg import sql
from sqlalchemy import text
from sqlalchemy.orm import Session as DbSession

from continuum.store.engine import driver_connection

VIEW_TABLES = ("messages", "cron_reports")
_UNSAFE = re.compile(r"[^a-z0-9_]+")
MAX_SLUG = 40  # keeps `cron_reports_<slug>` within Postgres' 63-byte identifiers


def view_slug(namespace: str) -> str:
    """`claude-code` → `claude_code`; anything outside `[a-z0-9_]` becomes `_`."""
    slug = _UNSAFE.sub("_", namespace.lower()).strip("_")[:MAX_SLUG]
    return slug or "default"


def view_names(namespace: str) -> list[str]:
    """The views that scope `namespace`: one per table in `VIEW_TABLES`."""
    return [f"{table}_{view_slug(namespace)}" for table in VIEW_TABLES]


def ensure_views(db: DbSession, namespaces: Iterable[str]) -> list[str]:
    """Create the missing views of `namespaces`; returns the names created."""
    wanted = {name: (table, ns) for ns in namespaces for table, name in _pairs(ns)}
    if not wanted:
        return []
    db.execute(text("SELECT pg_advisory_xact_lock(hashtextextended('continuum:sync:views', 0))"))
    existing = set(
        db.scalars(
            text(
                "SELECT viewname FROM pg_views WHERE schemaname = current_schema()"
                " AND viewname = ANY(:names)"
            ),
            {"names": list(wanted)},
        )
    )
    raw = driver_connection(db)
    created = []
    for name in sorted(set(wanted) - existing):
        table, namespace = wanted[name]
        statement = sql.SQL("CREATE OR REPLACE VIEW {} AS SELECT * FROM {} WHERE namespace = {}")
        raw.execute(
            statement.format(sql.Identifier(name), sql.Identifier(table), sql.Literal(namespace))
        )
        created.append(name)
    return created


def _pairs(namespace: str) -> list[tuple[str, str]]:
    return list(zip(VIEW_TABLES, view_names(namespace), strict=True))
