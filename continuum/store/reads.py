"""Where a read of the read plane goes: the primary, or the streaming standby that
CONTINUUM_READ_DATABASE_URL names. The one rule (docs/design.md, "Reads from a standby"):

- no standby configured: the primary, as every other transaction;
- a read of namespaces whose read-your-writes token (`lsn_tokens`: the primary's WAL position
  after their last committed write) the standby has not replayed yet: the primary;
- any other read: the standby;
- the server picked does not answer: the other one, with a warning; a standby that failed
  is not asked again for STANDBY_RETRY_S (its reads go to the primary meanwhile).

Writes never come here: `session_scope` is the primary's. A worker's task reads the primary
too, through the same functions (`primary_only`): what it reads, it writes on.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from sqlalchemy import text
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.orm import Session as DbSession

from continuum.config import get_settings
from continuum.store import lsn_tokens
from continuum.store.engine import driver_connection, get_engine, session_scope

log = logging.getLogger(__name__)
# How long a standby's replay position, once read, stands for it: a position only grows
# while the server runs, and no restart (after which it may restart lower) fits in this.
REPLAY_CACHE_S = 0.02
# How long reads keep away from a standby that did not answer before asking it again.
STANDBY_RETRY_S = 5.0


@dataclass
class _Standby:
    """What this process knows of one standby URL."""

    down_until: float = 0.0  # monotonic time before which its reads go to the primary
    # replay position and when it was read, per server (a multi-host URL may reach several)
    replayed: dict[tuple[str, int], tuple[float, int | None]] = field(default_factory=dict)


_standbys: dict[tuple[int, str], _Standby] = {}
_lock = threading.Lock()
_primary_only: ContextVar[bool] = ContextVar("continuum_primary_only", default=False)
_READ_ONLY = "continuum_read_only"


@contextmanager
def primary_only() -> Iterator[None]:
    """Inside the block (in this thread or task) every `read_scope` is the primary's."""
    token = _primary_only.set(True)
    try:
        yield
    finally:
        _primary_only.reset(token)


def _state(url: str) -> _Standby:
    with _lock:
        return _standbys.setdefault((os.getpid(), url), _Standby())


def _open(url: str | None) -> DbSession:
    """A read-only session on `url` (None: the primary) holding a connection: raises
    OperationalError now, not at its first statement, when the server does not answer."""
    db = DbSession(get_engine(url), expire_on_commit=False, info={_READ_ONLY: True})
    try:
        db.connection()
    except BaseException:
        db.close()
        raise
    return db


def _replayed(db: DbSession, standby: _Standby, *, fresh: bool = False) -> tuple[int | None, bool]:
    """The WAL position the server under `db` has replayed (None for a server not in
    recovery, a primary: a promoted standby, or a multi-host URL's primary, which has every
    write), and whether it is the one read last (not read now)."""
    info = driver_connection(db).info
    server = (info.host, info.port)
    cached = standby.replayed.get(server)
    now = time.monotonic()
    if not fresh and cached is not None and now - cached[0] < REPLAY_CACHE_S:
        return cached[1], True
    value = db.execute(text("SELECT pg_last_wal_replay_lsn() - '0/0'")).scalar()
    position = None if value is None else int(value)
    standby.replayed[server] = (now, position)
    return position, False


def _has_replayed(db: DbSession, standby: _Standby, written: int) -> bool:
    position, cached = _replayed(db, standby)
    if cached and position is not None and position < written:
        position, _ = _replayed(db, standby, fresh=True)  # the one read last may just be old
    return position is None or position >= written


def _standby_session(url: str, standby: _Standby) -> DbSession | None:
    """A session on the standby, None (logged, and the standby set aside) if it does not
    answer."""
    try:
        db = _open(url)
    except OperationalError as exc:
        _set_aside(standby, exc)
        return None
    if standby.down_until:
        log.warning("the read standby answers again: reads go to it")
        standby.down_until = 0.0
    return db


def _set_aside(standby: _Standby, exc: BaseException) -> None:
    log.warning(
        "the read standby (CONTINUUM_READ_DATABASE_URL) does not answer: reads go to the "
        "primary; asking it again in %.0f s. %s",
        STANDBY_RETRY_S,
        _first_line(exc),
    )
    standby.down_until = time.monotonic() + STANDBY_RETRY_S


def _pick(url: str, namespaces: Iterable[str]) -> tuple[DbSession | None, bool]:
    """A session on the server a read of `namespaces` goes to (None: the primary, through
    `session_scope`), and whether it is the standby."""
    standby = _state(url)
    if time.monotonic() < standby.down_until:
        return None, False
    written = lsn_tokens.highest(namespaces)
    db = _standby_session(url, standby)
    if db is None:
        return None, False
    try:
        # Redis cannot say what was written (UNKNOWN): no replay position is enough to ask
        if written is None or (
            written != lsn_tokens.UNKNOWN and _has_replayed(db, standby, written)
        ):
            return db, True
    except OperationalError as exc:
        db.close()
        _set_aside(standby, exc)
        return None, False
    # The standby lacks a write of these namespaces: the primary, if it answers.
    try:
        primary = _open(None)
    except OperationalError as exc:
        log.warning(
            "the primary does not answer (%s): reading the standby, which may not have the "
            "last writes of %s yet",
            _first_line(exc),
            ", ".join(sorted(namespaces)),
        )
        return db, True
    db.close()
    return primary, False


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def writable(db: DbSession) -> bool:
    """Whether a `read_scope` session is a primary's transaction that commits (not a
    standby's, nor one the rule sent to the primary, which are closed without a commit)."""
    return not db.info.get(_READ_ONLY, False)


@contextmanager
def read_scope(namespaces: str | Iterable[str]) -> Iterator[DbSession]:
    """A transaction of the read plane over `namespaces`' rows, on the server the rule above
    picks (the primary when no standby is configured). Read only: on a standby a write fails.
    A standby lost in the middle of a read fails that read; the next ones go to the primary."""
    names = (namespaces,) if isinstance(namespaces, str) else tuple(namespaces)
    url = None if _primary_only.get() else get_settings().read_database_url
    db, on_standby = _pick(url, names) if url is not None else (None, False)
    if db is None:
        with session_scope() as primary:
            yield primary
        return
    try:
        yield db
    except DBAPIError as exc:
        if on_standby and url is not None and exc.connection_invalidated:
            _set_aside(_state(url), exc)
        raise
    finally:
        db.close()
