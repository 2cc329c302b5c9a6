"""Redelivery from the in-flight ledger (`continuum.contract.ledger`), on the worker side.

Three ways a batch is published again, each time only its events not already processed or
dead-lettered (which are idempotent anyway):
- the per-minute beat sweep re-publishes batches unsettled for CONTINUUM_INFLIGHT_GRACE_S,
  only while the events queue is empty (so a backlog is never mistaken for loss): the safety
  net for any loss;
- after a broker restart (its `run_id` changed; every worker watches it, the first to see the
  change records it) the batches recorded before the restart that are neither queued nor held
  unacked by a worker, nor touched by one since, are re-published once
  CONTINUUM_RESTART_GRACE_S has passed, backlog or not: what kombu's BRPOP window lost comes
  back within seconds, and a queued, running or retrying batch is never copied;
- with the broker up, a worker killed, frozen or cut off in that window (Redis handed it the
  batch, which never left its socket) loses it just the same: the taken check, a round every
  CONTINUUM_TAKEN_CHECK_INTERVAL_S run by one worker, re-publishes a batch found neither
  queued nor held, and untouched, in two rounds in a row (a live worker holds one in that
  window for milliseconds, never across two rounds).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select, tuple_

from continuum.contract import ledger
from continuum.contract.queues import EVENTS
from continuum.redis_client import SyncRedis
from continuum.store import metrics
from continuum.store.broker import UNACKED_KEY, queue_keys
from continuum.store.engine import session_scope
from continuum.store.models import DeadLetter, ProcessedEvent

Resend = Callable[[list[Any]], Any]
BROKER_STATE = "continuum:broker"  # hash: run_id last seen, restarted_at of a pending recovery
SCAN_CHUNK = 500
# The taken check: the worker running a round holds the claim for the interval; the last
# round's age bound and the batches it found absent live in TAKEN_ROUND for 3 intervals.
TAKEN_CLAIM = "continuum:broker:taken-claim"
TAKEN_ROUND = "continuum:broker:taken-round"
# Queued messages past which a round is skipped rather than read (a backlog: a batch lost
# behind it is found once the queue is shorter, or by beat's sweep).
TAKEN_SCAN_LIMIT = 1000

# The run id is compared and replaced in one step, so of all the workers that see a restart
# exactly one records it. An absent run id is a first sight, not a restart.
_OBSERVE = """
local seen = redis.call('HGET', KEYS[1], 'run_id')
if seen == ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'run_id', ARGV[1])
if not seen then return 0 end
redis.call('HSET', KEYS[1], 'restarted_at', ARGV[2])
return 1
"""
# A pending recovery past its grace is claimed by one worker: it answers the restart time.
_CLAIM = """
local at = redis.call('HGET', KEYS[1], 'restarted_at')
if not at or tonumber(at) + tonumber(ARGV[1]) > tonumber(ARGV[2]) then return false end
redis.call('HDEL', KEYS[1], 'restarted_at')
return at
"""


@dataclass
class SweepResult:
    checked: int = 0
    settled: int = 0
    resent_events: int = 0
    skipped_busy: bool = False


def _unfinished(batch_id: str, payloads: list[Any]) -> list[Any]:
    """The payloads of a batch that no worker has processed or dead-lettered."""
    keys: dict[tuple[str, uuid.UUID], Any] = {}
    unkeyed = []  # no valid namespace + event id: a worker will dead-letter them
    for payload in payloads:
        if not isinstance(payload, dict):
            continue
        try:
            keys[(str(payload["namespace"]), uuid.UUID(str(payload["event_id"])))] = payload
        except (KeyError, ValueError):
            unkeyed.append(payload)
    with session_scope() as db:
        if db.scalar(select(DeadLetter.id).where(DeadLetter.task_id == batch_id).limit(1)):
            return []
        pairs = tuple_(ProcessedEvent.namespace, ProcessedEvent.event_id)
        query = select(ProcessedEvent.namespace, ProcessedEvent.event_id).where(
            pairs.in_(list(keys))
        )
        done = {(row.namespace, row.event_id) for row in db.execute(query)} if keys else set()
    return [payload for key, payload in keys.items() if key not in done] + unkeyed


def _redeliver(client: SyncRedis, batch_id: str, resend: Resend, result: SweepResult) -> None:
    """Publish again what of the batch is unfinished (as a new batch), then settle it."""
    raw = client.hget(ledger.ENTRIES, batch_id)
    result.checked += 1
    missing = _unfinished(batch_id, json.loads(raw)) if raw else []
    if missing:
        resend(missing)
        result.resent_events += len(missing)
        metrics.incr(metrics.EVENTS_REDELIVERED, len(missing))
    ledger.settle(client, batch_id)
    result.settled += 1


def sweep(client: SyncRedis, resend: Resend, grace_s: float, queue: str = EVENTS) -> SweepResult:
    """Re-publish batches unsettled for `grace_s` (only when the events queue is empty, so a
    backlog is never mistaken for loss). `resend(payloads)` publishes a new batch."""
    result = SweepResult()
    if client.llen(queue):
        result.skipped_busy = True
        return result
    for raw_id in client.zrangebyscore(ledger.INDEX, "-inf", time.time() - grace_s):
        _redeliver(client, raw_id, resend, result)
    return result


def broker_run_id(client: SyncRedis) -> str:
    """The broker's run id: Redis draws a new one each time it starts."""
    return str(client.info("server")["run_id"])


def observe_restart(client: SyncRedis, run_id: str, now: float) -> bool:
    """Remember the broker's run id; True for the one caller that saw it change (a restart,
    recorded as a recovery pending since `now`)."""
    return bool(client.eval(_OBSERVE, 1, BROKER_STATE, run_id, now))


def _task_id(message: Any) -> str | None:
    """The task id in a kombu message as Redis holds it (a JSON object with `headers`)."""
    try:
        return str(message["headers"]["id"])
    except (KeyError, TypeError):
        return None


def queued_ids(client: SyncRedis, queue: str) -> Iterator[str | None]:
    """The task ids of the messages in `queue` (None for one without)."""
    # Read each of the queue's lists (one per priority step) from the head in chunks: a
    # publish (LPUSH) only shifts what is left to read to higher indexes and a consumer takes
    # from the tail, so no message present throughout is skipped (one taken meanwhile is in
    # the unacked hash, read after this).
    for name in queue_keys(queue):
        start = 0
        while chunk := client.lrange(name, start, start + SCAN_CHUNK - 1):
            for raw in chunk:
                yield _task_id(json.loads(raw))
            start += SCAN_CHUNK


def held_ids(client: SyncRedis) -> Iterator[str | None]:
    """The task ids of the messages delivered to a worker and not yet acknowledged."""
    for _, raw in client.hscan_iter(UNACKED_KEY, count=SCAN_CHUNK):
        yield _task_id(json.loads(raw)[0])  # kombu stores [message, exchange, routing key]


def _absent(client: SyncRedis, before: float, queue: str) -> list[str]:
    """The ledger's batches last recorded or touched before `before` that are neither in
    `queue` nor held unacked by a worker."""
    candidates = client.zrangebyscore(ledger.INDEX, "-inf", f"({before}")
    if not candidates:
        return []
    present = {*queued_ids(client, queue), *held_ids(client)}
    return [batch_id for batch_id in candidates if batch_id not in present]


def _redeliver_untouched(
    client: SyncRedis, batch_ids: list[str], before: float, resend: Resend, result: SweepResult
) -> None:
    """Re-publish those of `batch_ids` still in the ledger and not touched since `before`:
    one a worker settled or started meanwhile is left to it."""
    if not batch_ids:
        return
    pipe = client.pipeline(transaction=False)
    for batch_id in batch_ids:
        pipe.zscore(ledger.INDEX, batch_id)
    for batch_id, score in zip(batch_ids, pipe.execute(), strict=True):
        if score is not None and float(score) < before:
            _redeliver(client, batch_id, resend, result)


def redeliver_lost(
    client: SyncRedis, resend: Resend, before: float, queue: str = EVENTS
) -> SweepResult:
    """Re-publish the ledger's batches last recorded or touched before `before` that are
    neither in `queue` nor held unacked by a worker: taken off the queue and lost. One a
    worker touches or settles meanwhile is left to it."""
    result = SweepResult()
    _redeliver_untouched(client, _absent(client, before, queue), before, resend, result)
    return result


def check_taken(
    client: SyncRedis, resend: Resend, every_s: float, now: float, queue: str = EVENTS
) -> SweepResult | None:
    """One round of the taken check, for a batch a worker took off the queue and never
    recorded as held (killed, frozen or cut off in kombu's BRPOP window, the broker up): the
    batches older than `every_s` found neither queued nor held are remembered, and those the
    previous round (at most 3 intervals ago) found so too, untouched since, are published
    again. None when another worker holds this interval's round; skipped (`skipped_busy`)
    while more than TAKEN_SCAN_LIMIT messages are queued."""
    if not client.set(TAKEN_CLAIM, now, nx=True, px=max(1, int(every_s * 1000))):
        return None
    result = SweepResult()
    pipe = client.pipeline(transaction=False)
    for key in queue_keys(queue):
        pipe.llen(key)
    if sum(pipe.execute()) > TAKEN_SCAN_LIMIT:
        client.delete(TAKEN_ROUND)
        result.skipped_busy = True
        return result
    raw = client.get(TAKEN_ROUND)
    last = json.loads(raw) if raw else None
    before = now - every_s
    absent = _absent(client, before, queue)
    round_ = {"before": before, "absent": absent}
    client.set(TAKEN_ROUND, json.dumps(round_), px=max(1, int(3 * every_s * 1000)))
    if last:
        again = sorted(set(absent).intersection(last["absent"]))
        _redeliver_untouched(client, again, last["before"], resend, result)
    return result


def recover_after_restart(
    client: SyncRedis, resend: Resend, grace_s: float, now: float, queue: str = EVENTS
) -> SweepResult | None:
    """Once `grace_s` has passed since a restart was recorded, one caller claims the recovery
    and re-publishes what the restart lost (`redeliver_lost`); None when there is nothing
    to do yet. A recovery that fails (Postgres down) is left pending for the next call."""
    restarted_at = client.eval(_CLAIM, 1, BROKER_STATE, grace_s, now)
    if restarted_at is None:
        return None
    try:
        return redeliver_lost(client, resend, float(restarted_at), queue)
    except Exception:
        client.hsetnx(BROKER_STATE, "restarted_at", restarted_at)
        raise


def watch_broker(client: SyncRedis, resend: Resend, grace_s: float) -> SweepResult | None:
    """One round of a worker's broker watch: note a restart, recover once its grace passed."""
    now = time.time()
    observe_restart(client, broker_run_id(client), now)
    return recover_after_restart(client, resend, grace_s, now)
