"""What is waiting in the Celery broker: messages queued per queue (summed over kombu's
priority lists) and messages delivered to a worker but not yet acknowledged.

Read with its own short-timeout client and no retries, so a down broker raises at once
(`redis.RedisError`) instead of stalling a metrics scrape or a status command.
"""

from __future__ import annotations

from dataclasses import dataclass

from kombu.transport.redis import PRIORITY_STEPS, Channel

from continuum.config import get_settings
from continuum.contract.queues import ALL_QUEUES
from continuum.redis_client import get_quick_redis

TIMEOUT_S = 2.0
UNACKED_KEY = Channel.unacked_key  # kombu's hash of delivered, unacknowledged messages


@dataclass(frozen=True)
class BrokerState:
    depths: dict[str, int]
    unacked: int

    @property
    def idle(self) -> bool:
        """Nothing queued and nothing held by a worker."""
        return not self.unacked and not any(self.depths.values())


def queue_keys(queue: str) -> list[str]:
    """kombu's Redis lists of a queue: the name itself, then one per priority step."""
    return [queue if step == 0 else f"{queue}{Channel.sep}{step}" for step in PRIORITY_STEPS]


def broker_state(timeout_s: float = TIMEOUT_S) -> BrokerState:
    """Queue depths and unacked messages, read in one round trip."""
    url = get_settings().resolved_broker_url()
    with get_quick_redis(timeout_s, url) as client:
        pipe = client.pipeline(transaction=False)
        for queue in ALL_QUEUES:
            for key in queue_keys(queue):
                pipe.llen(key)
        pipe.hlen(UNACKED_KEY)
        *lengths, unacked = pipe.execute()
    steps = len(PRIORITY_STEPS)
    depths = {
        queue: sum(lengths[index * steps : (index + 1) * steps])
        for index, queue in enumerate(ALL_QUEUES)
    }
    return BrokerState(depths, unacked)
