"""The beat lock (workers/beat.py) between two beats, on the real Redis: one holds it, the
other stands by; a lock lost or released changes hands, never to both. Each beat's clock is
its own, moved by hand; the lock's TTL in Redis is never waited out here (the two-beat
process test in tests/faults does)."""

from __future__ import annotations

from typing import Any

from continuum.redis_client import get_redis


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_one_beat_holds_the_lock_the_other_takes_it_only_once_it_is_free(servers: Any) -> None:
    from workers.beat import LOCK_KEY, STANDBY_POLL_S, BeatLock

    client = get_redis()
    client.delete(LOCK_KEY)
    clock_a, clock_b = Clock(), Clock()
    a, b = BeatLock(client, 30, clock_a), BeatLock(client, 30, clock_b)
    assert a.held() and not b.held()
    assert b.next_check_in() == STANDBY_POLL_S  # the standby looks again every second
    assert a.next_check_in() == 10  # the holder renews every third of the TTL

    clock_a.now += 10
    assert a.held()  # renewed
    assert 29_000 < client.pttl(LOCK_KEY) <= 30_000
    clock_b.now += 1
    assert not b.held()

    client.delete(LOCK_KEY)  # a failover lost the key: the first beat to look takes it
    clock_b.now += 1
    assert b.held()
    clock_a.now += 10
    assert not a.held()  # the renewal finds another beat's lock: it stands down

    b.release()  # a graceful stop hands over at once
    clock_a.now += STANDBY_POLL_S
    assert a.held() and client.exists(LOCK_KEY)
    a.release()
    assert not client.exists(LOCK_KEY)


def test_a_holder_that_cannot_renew_stops_scheduling_once_its_ttl_has_passed(
    redis_ha: Any,
) -> None:
    from workers.beat import BeatLock

    clock = Clock()
    lock = BeatLock(redis_ha.client("master"), 30, clock)
    assert lock.held()
    redis_ha.kill("master")  # its Redis is gone: the renewals fail
    clock.now += 10
    assert lock.held()  # not renewed, but no other beat can have it before the TTL is out
    clock.now += 20
    assert not lock.held()
