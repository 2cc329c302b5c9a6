"""Which faults of the servers pass: Postgres or Redis restarting, failing over or out of
reach, a write that reached a standby, a broker short of replicas. The one classification
behind what the workers retry with backoff (`workers.base`) and what the API answers with
503 and `Retry-After` (`continuum.api.app`) instead of a 500."""

from __future__ import annotations

import kombu.exceptions
import psycopg.errors
import redis
from sqlalchemy.exc import DBAPIError, OperationalError

from continuum.contract.client import NotReplicatedError

PASSING = (
    OperationalError,
    kombu.exceptions.OperationalError,  # a publish the broker refused or dropped
    redis.ConnectionError,
    redis.TimeoutError,
    NotReplicatedError,  # an event too few broker replicas confirmed
)

# Redis refusals that pass: a master short of replicas (`min-replicas-to-write`), a replica
# cut off from its master during a failover. Found inside the message: a pipeline's reads
# "Command # 1 (...) of pipeline caused error: NOREPLICAS ...".
PASSING_REDIS_REPLIES = ("NOREPLICAS ", "MASTERDOWN ")


def passes(exc: BaseException) -> bool:
    """Whether `exc` is a fault worth trying again in a few seconds."""
    if isinstance(exc, PASSING):
        return True
    if isinstance(exc, redis.ResponseError):
        return any(reply in str(exc) for reply in PASSING_REDIS_REPLIES)
    if not isinstance(exc, DBAPIError):
        return False
    # A write that reached a standby (a failover under way: a connection made before the
    # promotion, or a URL without target_session_attrs=read-write) passes with it.
    return bool(exc.connection_invalidated) or isinstance(
        exc.orig, psycopg.errors.ReadOnlySqlTransaction
    )
