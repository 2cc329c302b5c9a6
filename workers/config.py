"""Celery configuration built from `continuum.config` (docs/design.md, "Delivery guarantees")."""

from __future__ import annotations

from typing import Any

from kombu import Queue

from continuum.config import Settings
from continuum.contract.queues import ALL_QUEUES, TASK_QUEUES
from continuum.redis_client import kombu_broker


def celery_config(settings: Settings) -> dict[str, Any]:
    broker_url, sentinel_options = kombu_broker(settings.resolved_broker_url())
    return {
        "broker_url": broker_url,
        "broker_connection_retry_on_startup": True,
        "broker_connection_max_retries": None,
        "broker_transport_options": {
            # Short visibility: a message held by a killed worker is restored within
            # visibility_timeout + unacked_restore_interval. Running and waiting tasks keep
            # their lease renewed by workers.lease, so long tasks are not redelivered.
            "visibility_timeout": settings.visibility_timeout_s,
            "unacked_restore_interval": settings.unacked_restore_interval_s,
            "unacked_restore_throttle": 1,
            # kombu takes a mutex (a Redis key) around each restore sweep and holds it for
            # milliseconds; a worker SIGKILLed, or a Redis stopped, while one is held left it
            # for kombu's default 300 s, and no worker restored anything meanwhile. Two sweeps
            # at once are safe: each message is restored in a WATCH transaction, once.
            "unacked_mutex_expire": settings.visibility_timeout_s,
            "health_check_interval": 10,
            "socket_keepalive": True,
            "socket_timeout": 30,
            "socket_connect_timeout": 5,
            **sentinel_options,  # a sentinel:// broker: the master's name, the sentinels' auth
        },
        "task_serializer": "json",
        "accept_content": ["json"],
        "task_ignore_result": True,
        "result_backend": None,
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        "task_acks_on_failure_or_timeout": True,
        "worker_prefetch_multiplier": 1,
        "worker_cancel_long_running_tasks_on_connection_loss": True,
        "task_time_limit": settings.task_time_limit_s,
        "task_soft_time_limit": settings.task_soft_time_limit_s,
        "task_default_queue": ALL_QUEUES[0],
        "task_queues": [Queue(name) for name in ALL_QUEUES],
        "task_routes": {name: {"queue": queue} for name, queue in TASK_QUEUES.items()},
        "worker_hijack_root_logger": False,
        # Exactly one effective beat however many run (workers/beat.py).
        "beat_scheduler": "workers.beat:LockedScheduler",
        "enable_utc": True,
        "timezone": "UTC",
    }
