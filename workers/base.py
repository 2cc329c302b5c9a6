"""The base task: transient faults retry with backoff, permanent ones are dead-lettered, and a
message that keeps killing its worker is dead-lettered after `max_deliveries` attempts."""

from __future__ import annotations

import logging
import random
import traceback
from typing import Any

import redis
from celery import Task
from celery.exceptions import Retry, SoftTimeLimitExceeded

from continuum.config import get_settings
from continuum.pipeline import deadletters
from continuum.redis_client import get_redis
from continuum.store import faults, reads

log = logging.getLogger(__name__)
DELIVERIES_KEY = "continuum:deliveries:{}"
DELIVERIES_TTL_S = 7 * 24 * 3600


class TransientError(RuntimeError):
    """Raise from task logic for a fault that is worth retrying later."""


def is_transient(exc: BaseException) -> bool:
    """A fault to retry with backoff: one that passes (`continuum.store.faults`), a soft time
    limit, or what task logic raised as transient."""
    return isinstance(exc, SoftTimeLimitExceeded | TransientError) or faults.passes(exc)


def backoff_seconds(retries: int, cap: float) -> float:
    """Exponential backoff with jitter: a random 50–100 % of 1, 2, 4 ... seconds, capped."""
    return random.uniform(0.5, 1.0) * min(cap, 2.0**retries)


class ReliableTask(Task):
    """Base of every task (late acks and reject-on-lost come from the app configuration)."""

    max_retries = 20

    def _deliveries(self, task_id: str) -> int:
        key = DELIVERIES_KEY.format(task_id)
        pipe = get_redis().pipeline()
        pipe.incr(key).expire(key, DELIVERIES_TTL_S)
        return int(pipe.execute()[0])

    def _forget_deliveries(self, task_id: str) -> None:
        try:
            get_redis().delete(DELIVERIES_KEY.format(task_id))
        except redis.RedisError:
            log.warning("could not clear delivery counter of %s", task_id)

    def _dead_letter(self, reason: str, error: str, attempts: int) -> None:
        payload = {"args": list(self.request.args or []), "kwargs": self.request.kwargs or {}}
        try:
            deadletters.record_now(
                task_name=self.name,
                task_id=self.request.id,
                payload=payload,
                reason=reason,
                error=error[-4000:],
                attempts=attempts,
            )
        except Exception as exc:  # the store itself is down: keep the message, try later
            raise self.retry(exc=exc, countdown=backoff_seconds(self.request.retries, 60)) from exc
        log.error("dead-lettered %s[%s]: %s", self.name, self.request.id, reason)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        with reads.primary_only():  # a task reads where it writes: never the standby
            return self._call(*args, **kwargs)

    def _call(self, *args: Any, **kwargs: Any) -> Any:
        task_id = self.request.id
        if self.request.is_eager or not task_id:
            return self.run(*args, **kwargs)
        settings = get_settings()
        deliveries = self._deliveries(task_id)
        if deliveries > settings.max_deliveries:
            self._dead_letter(
                "max_deliveries_exceeded",
                f"delivered {deliveries - 1} times without finishing (worker lost each time)",
                deliveries - 1,
            )
            self._forget_deliveries(task_id)
            return None
        try:
            result = self.run(*args, **kwargs)
        except Retry:
            self._forget_deliveries(task_id)
            raise
        except Exception as exc:
            self._forget_deliveries(task_id)
            if is_transient(exc) and self.request.retries < self.max_retries:
                countdown = backoff_seconds(self.request.retries, settings.retry_backoff_max_s)
                log.warning(
                    "%s[%s] transient fault, retry in %.1fs: %s", self.name, task_id, countdown, exc
                )
                raise self.retry(exc=exc, countdown=countdown) from None
            reason = "retries_exhausted" if is_transient(exc) else "task_error"
            self._dead_letter(reason, traceback.format_exc(), self.request.retries + 1)
            return None
        self._forget_deliveries(task_id)
        return result
