"""The in-flight ledger: no event batch is lost between the broker and a worker.

kombu's Redis transport takes a message off the queue with BRPOP and only then records it
as unacknowledged; a Redis shutdown between the two steps loses the message (seen in our
fault tests). So every batch a producer publishes is also written to this ledger (a hash
plus a time index, in the broker's Redis) and settled by the worker that processed it; the
worker touches it (renews its time) when it starts the batch and while it waits to retry.
On the worker side (`continuum.pipeline.redelivery`), batches a broker restart lost are
re-published seconds after it, so are batches a worker took and was lost with before it
recorded them (the broker up), and a sweep re-publishes batches that stayed unsettled past a
long grace period while the queue is drained.

This module is the ledger's Redis record, all a producer needs: publishing an event never
loads SQLAlchemy.
"""

from __future__ import annotations

import json
import time
from typing import Any

from continuum.redis_client import SyncRedis

ENTRIES = "continuum:inflight"
INDEX = "continuum:inflight:index"
# A batch whose acceptance waits for replicas: a key beside its record, written with it,
# that only its TTL removes (a worker settling the batch does not), the stamp `replicated`
# writes again. Far longer than a publish's retries (CONTINUUM_REDIS_WAIT_S).
CONFIRMING = "continuum:inflight:confirming:"
CONFIRMING_TTL_S = 600


def record(
    client: SyncRedis, batch_id: str, payloads: list[dict[str, Any]], *, confirm: bool = False
) -> None:
    """Record the batch before its publish; `confirm`: `replicated` will be asked about it."""
    pipe = client.pipeline(transaction=True)
    pipe.hset(ENTRIES, batch_id, json.dumps(payloads))
    pipe.zadd(INDEX, {batch_id: time.time()})
    if confirm:
        pipe.set(CONFIRMING + batch_id, 1, ex=CONFIRMING_TTL_S)
    pipe.execute()


def replicated(client: SyncRedis, batch_id: str, replicas: int, timeout_ms: int) -> int:
    """After the publish of a batch recorded with `confirm`: how many replicas have its
    ledger record and the publish, waiting up to `timeout_ms` for `replicas` of them (WAIT).
    WAIT counts only the writes of its own connection, and kombu published on another, so the
    batch's confirming key is written again first on this one (its TTL renewed): the
    replication stream is in order, so a replica that has the stamp has the publish before
    it. The key, not the record, because a fast worker may have settled the batch already
    (the record gone, the batch done: accepted). 0 when the key is gone (a failover lost it
    with the record): not confirmed, and a resend is harmless."""
    pipe = client.pipeline(transaction=False)
    pipe.expire(CONFIRMING + batch_id, CONFIRMING_TTL_S)
    pipe.wait(replicas, timeout_ms)
    stamped, confirmed = pipe.execute()
    return int(confirmed) if stamped else 0


def touch(client: SyncRedis, batch_id: str) -> None:
    """A worker holds the batch (it starts it, or waits to retry it): restart its grace
    period, so no redelivery publishes a second copy of a batch that is running or retrying."""
    client.zadd(INDEX, {batch_id: time.time()}, xx=True)


def settle(client: SyncRedis, batch_id: str) -> None:
    pipe = client.pipeline(transaction=True)
    pipe.hdel(ENTRIES, batch_id)
    pipe.zrem(INDEX, batch_id)
    pipe.execute()


def pending(client: SyncRedis) -> int:
    return int(client.zcard(INDEX))
