"""Producer SDK: validate events and enqueue them by task name. No worker code needed.

client = MemoryClient()
client.turn(namespace="pearl", session_id="s1", channel="voice", role="user",
            content="Let's go with Postgres.")
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

import redis
from celery import Celery
from kombu.exceptions import OperationalError
from pydantic import BaseModel

from continuum.config import get_settings
from continuum.contract import ledger
from continuum.contract.events import Event, EventError, event_payload, json_type, parse_events
from continuum.contract.queues import INGEST_EVENTS, queue_for
from continuum.observability import tracing
from continuum.redis_client import get_redis, kombu_broker, retries_for, wait_s


def publish_retry_policy() -> dict[str, float]:
    """kombu's retry policy for a publish: keep trying while the broker restarts, for as long
    as this process's Redis calls do (CONTINUUM_REDIS_WAIT_S for producers), then fail loudly."""
    step, cap = 0.25, 1.0
    return {
        "max_retries": retries_for(wait_s(), base=step, cap=cap),
        "interval_start": 0,
        "interval_step": step,
        "interval_max": cap,
    }


class EnqueueError(RuntimeError):
    """The broker could not take the events; nothing was enqueued for this call."""


class NotReplicatedError(EnqueueError):
    """The events were published but too few replicas confirmed them in time
    (CONTINUUM_REDIS_WAIT_REPLICAS): they are not accepted. They may still be processed;
    resending them has no second effect."""


def producer_app(broker_url: str | None = None) -> Celery:
    """A minimal Celery app that can only publish (no task code imported)."""
    settings = get_settings()
    url, sentinel_options = kombu_broker(broker_url or settings.resolved_broker_url())
    app = Celery("continuum-producer", broker=url)
    app.conf.update(
        broker_connection_retry_on_startup=True,
        task_serializer="json",
        accept_content=["json"],
        broker_transport_options={
            "visibility_timeout": settings.visibility_timeout_s,
            **sentinel_options,
        },
    )
    return app


class MemoryClient:
    """Enqueue memory events. Each call validates first and raises EventError on bad input."""

    def __init__(self, broker_url: str | None = None, *, app: Celery | None = None) -> None:
        self.app = app or producer_app(broker_url)
        self._ledger = get_redis(broker_url or get_settings().resolved_broker_url())
        tracing.configure("continuum-producer", tracing.PRODUCER_LIBRARIES)  # CONTINUUM_OTEL

    def emit(self, event: Event | Mapping[str, Any]) -> str:
        """Validate and enqueue one event at once; returns its event id."""
        return self.emit_many([event])[0]

    def emit_many(self, events: Iterable[Event | Mapping[str, Any]]) -> list[str]:
        """Validate a batch and enqueue it as one task message; returns the event ids."""
        if isinstance(events, Mapping | str | bytes) or not isinstance(events, Iterable):
            raise EventError([("events", f"must be a list of events, got {json_type(events)}")])
        parsed = parse_events(
            event_payload(item) if isinstance(item, BaseModel) else item for item in events
        )
        payloads = [event_payload(event) for event in parsed]
        if not payloads:
            return []
        batch_id = str(uuid.uuid4())
        traced = {"messaging.message.id": batch_id, "continuum.events": len(payloads)}
        try:
            # The producer span: its context travels in the task message (tracing).
            with tracing.span("continuum.emit", "producer", traced):
                confirm = bool(get_settings().redis_wait_replicas)
                ledger.record(self._ledger, batch_id, payloads, confirm=confirm)
                self.app.send_task(
                    INGEST_EVENTS,
                    args=[payloads],
                    task_id=batch_id,
                    queue=queue_for(INGEST_EVENTS),
                    # What Flower shows for the args. Celery would repr the whole batch for
                    # it, which took a quarter of emit()'s time.
                    argsrepr=f"[{len(payloads)} event(s)]",
                    kwargsrepr="{}",
                    retry=True,
                    retry_policy=publish_retry_policy(),
                )
        except (OperationalError, redis.RedisError) as exc:
            raise EnqueueError(
                f"broker unreachable, {len(payloads)} event(s) not enqueued: {exc}. "
                "Check CONTINUUM_BROKER_URL / `continuum dev status`, then resend."
            ) from exc
        self._confirm_replicated(batch_id, len(payloads))
        return [payload["event_id"] for payload in payloads]

    def _confirm_replicated(self, batch_id: str, count: int) -> None:
        """With CONTINUUM_REDIS_WAIT_REPLICAS set, the batch and its ledger record are on that
        many replicas of the broker's Redis, or NotReplicatedError: not accepted."""
        settings = get_settings()
        wanted, timeout_ms = settings.redis_wait_replicas, settings.redis_wait_timeout_ms
        if not wanted:
            return
        try:
            confirmed = ledger.replicated(self._ledger, batch_id, wanted, timeout_ms)
        except redis.RedisError as exc:
            confirmed, why = 0, f" ({exc})"
        else:
            why = ""
        if confirmed < wanted:
            raise NotReplicatedError(
                f"{count} event(s) published but not accepted: {confirmed} of {wanted} broker "
                f"replica(s) confirmed them within {timeout_ms} ms{why}. Resend them (a resend "
                "has no second effect); check the replicas (`INFO replication` on the master) "
                "or CONTINUUM_REDIS_WAIT_REPLICAS."
            )

    def _emit_kind(self, kind: str, fields: dict[str, Any]) -> str:
        fields.setdefault("ts", datetime.now(UTC))
        return self.emit({"kind": kind, **fields})

    def turn(self, **fields: Any) -> str:
        """Enqueue a `turn` (role, content, namespace, session_id, channel, ...)."""
        return self._emit_kind("turn", fields)

    def idle(self, **fields: Any) -> str:
        return self._emit_kind("idle", fields)

    def pre_compaction(self, **fields: Any) -> str:
        return self._emit_kind("pre_compaction", fields)

    def session_end(self, **fields: Any) -> str:
        fields.setdefault("ended_at", datetime.now(UTC))
        return self._emit_kind("session_end", fields)

    def close(self) -> None:
        self.app.close()
