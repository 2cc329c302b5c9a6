"""Multi-row writes as executemany, so SQLAlchemy compiles each statement once and psycopg
sends it as batched VALUES (insertmanyvalues) — compiling a fresh 100-row VALUES clause per
call costs more than Postgres takes to store the rows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Row
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session as DbSession
from sqlalchemy.sql.dml import Insert, ReturningInsert


def insert_ignore(
    db: DbSession,
    model: Any,
    rows: Sequence[dict[str, Any]],
    conflict: Sequence[str],
    returning: Sequence[Any] = (),
) -> list[Row[Any]]:
    """INSERT … ON CONFLICT (conflict) DO NOTHING [RETURNING …]; returns inserted rows only."""
    stmt = insert(model.__table__).on_conflict_do_nothing(index_elements=list(conflict))
    return execute_many(db, stmt.returning(*returning) if returning else stmt, rows)


def execute_many(
    db: DbSession, stmt: Insert | ReturningInsert[Any], rows: Sequence[dict[str, Any]]
) -> list[Row[Any]]:
    """Run `stmt` for every row in one round of batched VALUES."""
    if not rows:
        return []
    result = db.connection().execute(stmt, list(rows))
    return list(result) if result.returns_rows else []
