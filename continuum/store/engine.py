"""Engine and session handling: one pooled engine per URL and process, disposed after fork;
the primary's transactions (`session_scope`); `statement`, a raw SQL text parsed once, and
`fetch`, its rows on the session's own psycopg connection; `statements_run`, what the tests
and benchmarks count round trips with. Where a read goes: `continuum.store.reads`."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any, NamedTuple, cast

import psycopg
import sqlalchemy
from psycopg.rows import namedtuple_row
from psycopg.types.datetime import TimestamptzLoader
from sqlalchemy import Engine, TextClause, event, text
from sqlalchemy.dialects.postgresql.psycopg import PGDialect_psycopg
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from continuum.config import get_settings
from continuum.observability import tracing
from continuum.store import lsn_tokens

_engines: dict[tuple[int, str], Engine] = {}

_DEFAULT_TIMESTAMPTZ_LOADER = (
    psycopg.adapters.get_loader(psycopg.postgres.types["timestamptz"].oid, psycopg.pq.Format.TEXT)
    or TimestamptzLoader
)


class ClampedTimestamptzLoader(TimestamptzLoader):
    """Postgres stores years past 9999 and before 1 AD; Python's datetime holds neither, so
    one such row would make every read that returns it fail. It reads as the nearest
    datetime Python has instead (events outside the accepted window are refused at the door;
    this guards rows written before that, or by hand).

    Every value is parsed by psycopg's own loader (its C one when psycopg is built with it,
    which cannot be subclassed): the pure-Python parser this class inherits cost a context
    call about 0.25 ms of its ~7.5 ms of Python (1.9 against 0.18 us a value; a context call
    reads about 130)."""

    def __init__(self, oid: int, context: Any = None) -> None:
        super().__init__(oid, context)
        self._parse = _DEFAULT_TIMESTAMPTZ_LOADER(oid, context).load

    def load(self, data: Any) -> datetime:
        try:
            return self._parse(data)
        except psycopg.DataError:
            return (datetime.min if b"BC" in bytes(data) else datetime.max).replace(tzinfo=UTC)


def _clamp_timestamps(connection: Any, _record: Any) -> None:
    connection.adapters.register_loader("timestamptz", ClampedTimestamptzLoader)


def get_engine(url: str | None = None) -> Engine:
    """The engine for `url` (default: the configured database) in this process."""
    url = url or get_settings().resolved_database_url()
    key = (os.getpid(), url)
    engine = _engines.get(key)
    if engine is None:
        # Looked up on the module at each call: with tracing on, the SQLAlchemy
        # instrumentation wraps `sqlalchemy.create_engine`, and so traces our engines.
        size = get_settings().db_pool_size
        engine = sqlalchemy.create_engine(
            url, pool_pre_ping=True, pool_size=size, max_overflow=size
        )
        event.listen(engine, "connect", _clamp_timestamps)
        _engines[key] = engine
    return engine


@lru_cache(maxsize=1024)
def statement(sql: str) -> TextClause:
    """`text(sql)`, parsed for its `:parameters` once per distinct SQL: a search's and a
    context block's statements run to several KB, parsed again on each call at about 0.05 ms
    a KB. The SQL must bind its values, never inline them (or each call is a new entry)."""
    return text(sql)


@lru_cache(maxsize=1024)
def _driver_sql(sql: str) -> str:
    """`sql` as psycopg takes it: `:name` parameters as `%(name)s`, a literal % doubled."""
    return str(text(sql).compile(dialect=PGDialect_psycopg()))  # cached here, not twice


def fetch(db: Session, sql: str, params: dict[str, Any]) -> list[Any]:
    """The rows (named tuples) of raw `sql` with `:name` parameters, in `db`'s transaction
    (none for a statement that returns none).

    Run on the session's psycopg connection itself: SQLAlchemy's execution of a statement
    (cache key, compiled-statement lookup, parameters, result rows) costs more CPU than
    psycopg's, 0.41 against 0.25 ms for the context block's sections, and a context call runs
    several. Through SQLAlchemy instead while something listens to the engine's statements
    (tracing's spans, `statements_run`), so they see it as every other statement. Errors are
    SQLAlchemy's either way (`DBAPIError`, a lost connection invalidated): what the API's 503,
    the standby fallback and the workers' retries key on."""
    engine = db.get_bind()
    if engine.dispatch.before_cursor_execute or engine.dispatch.after_cursor_execute:
        result = db.connection().execute(statement(sql), params)
        return list(result.all()) if result.returns_rows else []
    raw = driver_connection(db)
    try:
        with raw.cursor(row_factory=namedtuple_row) as cursor:
            cursor.execute(_driver_sql(sql), params)
            return cursor.fetchall() if cursor.description else []
    except psycopg.Error as exc:  # as SQLAlchemy would raise it: the fault handling keys on it
        connection = db.connection()
        lost = connection.dialect.is_disconnect(cast(Any, exc), connection.connection, None)
        if lost:  # the pool must not hand this connection out again
            connection.invalidate(exc)
        raise DBAPIError.instance(
            sql, params, exc, psycopg.Error, hide_parameters=connection.engine.hide_parameters,
            connection_invalidated=lost, dialect=connection.dialect,
        ) from exc  # fmt: skip


def dispose_engines() -> None:
    """Forget every pooled connection (call in a freshly forked worker process)."""
    for engine in _engines.values():
        engine.dispose(close=False)
    _engines.clear()


def driver_connection(db: Session) -> psycopg.Connection[Any]:
    """The psycopg connection under the session's transaction (for COPY and raw SQL)."""
    raw = db.connection().connection.driver_connection
    assert isinstance(raw, psycopg.Connection)
    return raw


class _Committing:
    """A session's transaction as a context manager whose commit, at a clean exit, runs in a
    `continuum.commit` span (the last flush included; no-op while tracing is off). Otherwise
    exactly `session.begin()`: an error inside rolls back."""

    def __init__(self, session: Session) -> None:
        self._transaction = session.begin()

    def __enter__(self) -> None:
        self._transaction.__enter__()

    def __exit__(self, *error: Any) -> None:
        if error[0] is not None:
            self._transaction.__exit__(*error)
            return
        with tracing.span("continuum.commit", "client", {"db.system": "postgresql"}):
            self._transaction.__exit__(None, None, None)


@contextmanager
def session_scope(url: str | None = None) -> Iterator[Session]:
    """A transaction: commits on success, rolls back on any error. Once it has committed, the
    namespaces it said it changed get their read-your-writes tokens (`lsn_tokens`)."""
    # A Session of its own, not `sessionmaker(...)()`: a sessionmaker makes a new Session
    # subclass each time, a class per transaction for the cyclic garbage collector to find.
    with Session(get_engine(url), expire_on_commit=False) as session:
        with _Committing(session):
            yield session
        lsn_tokens.record_committed(session)


class Sent(NamedTuple):
    """One statement sent to the server, with its parameters."""

    sql: str
    parameters: Any


@contextmanager
def statements_run(url: str | None = None) -> Iterator[list[Sent]]:
    """The SQL statements this process sends on the engine of `url` (default: the configured
    database) until the block ends, in order: each is one round trip (COMMIT not counted)."""
    sent: list[Sent] = []

    def record(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        sent.append(Sent(statement, parameters))

    engine = get_engine(url)
    event.listen(engine, "before_cursor_execute", record)
    try:
        yield sent
    finally:
        event.remove(engine, "before_cursor_execute", record)
