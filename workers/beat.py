"""Exactly one effective beat: the scheduler `continuum beat` runs takes a lock in Redis
before it schedules anything, so a second beat (a standby on another host) stands by.

The beat holding the lock renews it every third of CONTINUUM_BEAT_LOCK_TTL_S; a standby tries
to take it every second and succeeds once it lapses (the holder died, froze or lost Redis), so
scheduling resumes within the TTL and a second of the holder's last renewal. A holder that
cannot renew stops scheduling once the TTL has passed since its last renewal (the lock may be
another's by then), and one that finds the lock gone (a failover that lost the key) or taken
stands down and contends again, never crashes. A graceful stop releases the lock, so the
standby takes over at once. What a takeover costs: entries whose run fell while no beat
held the lock run once, as soon as the standby takes over (crontab, as `beat_schedule.py`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import time
from collections.abc import Callable
from typing import Any

import redis
from celery.beat import PersistentScheduler
from redis.exceptions import LockError

from continuum.config import get_settings
from continuum.redis_client import SyncRedis, get_quick_redis

log = logging.getLogger(__name__)
LOCK_KEY = "continuum:beat:lock"
STANDBY_POLL_S = 1.0
REDIS_TIMEOUT_S = 2.0


class BeatLock:
    """The beat lock as one beat sees it: `held()` takes or renews it when due and says
    whether this beat may schedule now; `next_check_in()` says when to look again."""

    def __init__(
        self, client: SyncRedis, ttl_s: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.ttl_s = ttl_s
        self._clock = clock
        # Not thread-local: beat ticks in one thread, and the token must outlive it.
        self._lock = client.lock(LOCK_KEY, timeout=ttl_s, blocking=False, thread_local=False)
        self._renewed_at: float | None = None  # when this beat last took or renewed the lock
        self._check_at = 0.0
        self._announced: bool | None = None  # the state last logged
        self.name = f"{socket.gethostname()}:{os.getpid()}"

    def _renew_or_take(self) -> bool:
        if self._renewed_at is not None:
            try:
                self._lock.reacquire()
                return True
            except LockError:  # expired or taken meanwhile: contend like a standby
                log.warning("beat %s: lost the beat lock", self.name)
        return bool(self._lock.acquire(blocking=False))

    def held(self) -> bool:
        now = self._clock()
        if now >= self._check_at:
            try:
                ok = self._renew_or_take()
            except redis.RedisError as exc:
                log.warning("beat %s: cannot reach Redis for the beat lock: %s", self.name, exc)
            else:
                self._renewed_at = now if ok else None
            self._check_at = now + (self.ttl_s / 3 if self._renewed_at else STANDBY_POLL_S)
        if self._renewed_at is not None and now - self._renewed_at >= self.ttl_s:
            self._renewed_at = None  # unrenewed for a whole TTL: another beat may hold it
        holds = self._renewed_at is not None
        if holds != self._announced:
            state = "holds the beat lock: scheduling" if holds else "stands by"
            log.info("beat %s %s", self.name, state)
            self._announced = holds
        return holds

    def next_check_in(self) -> float:
        return max(0.0, self._check_at - self._clock())

    def release(self) -> None:
        if self._renewed_at is None:
            return
        self._renewed_at = None
        with contextlib.suppress(LockError, redis.RedisError):  # lapsed, or expires by itself
            self._lock.release()


class LockedScheduler(PersistentScheduler):
    """Celery's file-backed scheduler, scheduling only while this beat holds the beat lock."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        settings = get_settings()
        self.beat_lock = BeatLock(get_quick_redis(REDIS_TIMEOUT_S), settings.beat_lock_ttl_s)
        super().__init__(*args, **kwargs)

    def tick(self, *args: Any, **kwargs: Any) -> float:
        if not self.beat_lock.held():
            return self.beat_lock.next_check_in()
        return min(super().tick(*args, **kwargs), self.beat_lock.next_check_in())

    def close(self) -> None:
        self.beat_lock.release()
        super().close()
