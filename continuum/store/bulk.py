"""Multi-row writes as one `INSERT … SELECT FROM jsonb_to_recordset(:rows)` per batch: the
batch travels as a single JSON parameter, so the statement's text is the same whatever the
batch size. SQLAlchemy compiles it once and psycopg converts it once (both cache it); a
batched VALUES clause is new text for every batch size and psycopg re-parses its thousands
of placeholders each time, and array parameters are adapted value by value in Python — both
cost ingest more CPU than Postgres took to store the rows.

Postgres turns each JSON value into its column's type (JSON arrays into arrays). Result
columns keep their model types, so sealed values read back as the model reads them (with
their row, as the column types read them). A writer that seals binds each value to its row
before the row exists: `allocate_ids` draws the ids from the table's sequence first. The
rows' namespaces are marked written for read-your-writes (`lsn_tokens.wrote`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import date, datetime
from functools import lru_cache
from typing import Any
from uuid import UUID

from sqlalchemy import Row, Table, text
from sqlalchemy.dialects import postgresql
from sqlalchemy.orm import Session as DbSession
from sqlalchemy.sql.elements import TextClause
from sqlalchemy.types import TypeDecorator, TypeEngine

from continuum.store import lsn_tokens

_DIALECT = postgresql.dialect()


def _sql_type(table: Table, name: str) -> str:
    """The column's SQL type underneath any TypeDecorator (sealed text is text)."""
    column_type: TypeEngine[Any] = table.c[name].type
    while isinstance(column_type, TypeDecorator):
        column_type = column_type.impl_instance
    return column_type.compile(dialect=_DIALECT)


def _quote(name: str) -> str:
    return _DIALECT.identifier_preparer.quote(name)


@lru_cache(maxsize=64)
def _statement(
    table: Table,
    columns: tuple[str, ...],
    conflict: tuple[str, ...],
    update: tuple[tuple[str, str], ...],
    returning: tuple[str, ...],
) -> TextClause:
    names = ", ".join(_quote(name) for name in columns)
    record = ", ".join(f"{_quote(name)} {_sql_type(table, name)}" for name in columns)
    sql = (
        f"INSERT INTO {_quote(table.name)} ({names}) SELECT {names} "
        f"FROM jsonb_to_recordset(CAST(:rows AS jsonb)) AS r({record})"
    )
    if conflict:
        sets = ", ".join(f"{_quote(name)} = {value}" for name, value in update)
        action = f"DO UPDATE SET {sets}" if update else "DO NOTHING"
        sql += f" ON CONFLICT ({', '.join(_quote(name) for name in conflict)}) {action}"
    if not returning:
        return text(sql)
    sql += f" RETURNING {', '.join(_returned(table, name) for name in returning)}"
    return text(sql).columns(*(table.c[name] for name in returning))  # type: ignore[return-value]


def _returned(table: Table, name: str) -> str:
    """A RETURNING item: the column as its type reads it (a sealed column with its row)."""
    column = table.c[name]
    if not column.type._has_column_expression:  # SQLAlchemy's own flag
        return _quote(name)
    expression = column.type.column_expression(column)
    assert expression is not None, f"{name}: a column type that reads it unchanged"
    compiled = expression.compile(dialect=_DIALECT, compile_kwargs={"literal_binds": True})
    return f"{compiled} AS {_quote(name)}"


def allocate_ids(db: DbSession, model: Any, count: int) -> list[int]:
    """`count` new ids of `model`'s table, drawn from its sequence (unused ones are gaps)."""
    if count <= 0:
        return []
    table = model.__table__.name
    return list(
        db.scalars(
            text(
                "SELECT nextval(pg_get_serial_sequence(:table, 'id')) FROM generate_series(1, :n)"
            ),
            {"table": table, "n": count},
        )
    )


def _json_default(value: Any) -> str:
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, UUID):
        return str(value)
    raise TypeError(f"cannot store a {type(value).__name__} in a JSON batch: {value!r}")


def insert_rows(
    db: DbSession,
    model: Any,
    rows: Sequence[Mapping[str, Any]],
    *,
    conflict: Sequence[str] = (),
    update: Mapping[str, str] | None = None,
    returning: Sequence[str] = (),
) -> list[Row[Any]]:
    """INSERT `rows` (dicts with the same keys) [ON CONFLICT (conflict) DO NOTHING, or DO
    UPDATE SET column = SQL for each of `update` (the SQL may name `excluded`)] [RETURNING
    the `returning` columns, typed]; returns the rows RETURNING gave."""
    if not rows:
        return []
    statement = _statement(
        model.__table__,
        tuple(rows[0]),
        tuple(conflict),
        tuple((update or {}).items()),
        tuple(returning),
    )
    batch = json.dumps(rows, default=_json_default, ensure_ascii=False)
    result = db.execute(statement, {"rows": batch})
    if "namespace" in rows[0]:
        lsn_tokens.wrote(db, {row["namespace"] for row in rows})
    return list(result) if returning else []


def insert_ignore(
    db: DbSession,
    model: Any,
    rows: Sequence[Mapping[str, Any]],
    conflict: Sequence[str],
    returning: Sequence[str] = (),
) -> list[Row[Any]]:
    """INSERT … ON CONFLICT (conflict) DO NOTHING [RETURNING …]; returns inserted rows only."""
    return insert_rows(db, model, rows, conflict=conflict, returning=returning)
