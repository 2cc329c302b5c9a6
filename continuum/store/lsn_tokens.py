"""Read-your-writes tokens, kept while the read plane reads a standby
(CONTINUUM_READ_DATABASE_URL): the primary's WAL position after the last committed
transaction that changed a namespace's rows, per namespace, in Redis.

A transaction says which namespaces it changes: ORM objects flushed and the bulk inserts of
`continuum.store.bulk` name their rows' namespaces themselves; an UPDATE, DELETE or COPY in
SQL says so with `wrote`. Once the transaction has committed,
`session_scope` records `pg_current_wal_insert_lsn()` for each of them (`record_committed`),
kept at the highest position any writer recorded. `continuum.store.reads` sends a read of a
namespace to the standby only once the standby has replayed that far. Without a standby
configured nothing is marked or recorded: a single Postgres pays nothing for it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

import redis
from sqlalchemy import event, text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session as DbSession

from continuum.config import get_settings
from continuum.redis_client import get_redis

log = logging.getLogger(__name__)
PREFIX = "continuum:lsn:"
# A namespace's token outlives its last write by this long: a standby lagging more than a day
# behind could serve a read that misses that write (docs/design.md, "Reads from a standby").
TTL_S = 86_400
# What a read assumes when the tokens cannot be read (Redis unreachable): past any position.
UNKNOWN = 1 << 64
_WROTE = "continuum_wrote"

# SET with max semantics, one call for every namespace of a commit: positions are written as
# 16 hex digits, so comparing them as strings compares the positions.
_RAISE = """
for _, key in ipairs(KEYS) do
  local current = redis.call('GET', key)
  if not current or current < ARGV[1] then
    redis.call('SET', key, ARGV[1], 'EX', ARGV[2])
  else
    redis.call('EXPIRE', key, ARGV[2])
  end
end
return #KEYS
"""


def enabled() -> bool:
    """Whether the read plane reads a standby, so writers record their tokens."""
    return get_settings().read_database_url is not None


def wrote(db: DbSession, namespaces: Iterable[str]) -> None:
    """`db`'s transaction changes rows of `namespaces`: their tokens move to the primary's WAL
    position once it commits."""
    if enabled():
        db.info.setdefault(_WROTE, set()).update(namespaces)


@event.listens_for(DbSession, "before_flush")
def _flushed(db: DbSession, _context: object, _instances: object) -> None:
    """ORM objects added, changed or deleted mark their namespaces."""
    if enabled():
        touched = (getattr(row, "namespace", None) for row in (*db.new, *db.dirty, *db.deleted))
        wrote(db, {namespace for namespace in touched if isinstance(namespace, str)})


def record_committed(db: DbSession) -> None:
    """Called once `db`'s transaction has committed: records the primary's WAL position as the
    token of every namespace the transaction named (nothing when it named none). A failure is
    logged, never raised: the write stands; reads of those namespaces may then miss it until
    the standby has replayed it."""
    namespaces = sorted(db.info.pop(_WROTE, ()))
    if not namespaces:
        return
    try:
        position = int(db.execute(text("SELECT pg_current_wal_insert_lsn() - '0/0'")).scalar_one())
        get_redis().eval(
            _RAISE, len(namespaces), *(PREFIX + ns for ns in namespaces), f"{position:016x}", TTL_S
        )
    except (SQLAlchemyError, redis.RedisError) as exc:
        log.warning(
            "read-your-writes token of %s not recorded (%s): until the standby replays this "
            "write, a read of them there may miss it",
            ", ".join(namespaces),
            exc,
        )


def highest(namespaces: Iterable[str]) -> int | None:
    """The highest token of `namespaces` (a WAL position), None when none of them has one;
    UNKNOWN when Redis does not answer."""
    keys = [PREFIX + ns for ns in namespaces]
    if not keys:
        return None
    try:
        values = get_redis().mget(keys)
    except redis.RedisError as exc:
        log.warning("read-your-writes tokens unreadable (%s): reading the primary", exc)
        return UNKNOWN
    positions = [int(value, 16) for value in values if value is not None]
    return max(positions, default=None)
