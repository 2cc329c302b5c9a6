"""A deployment over many hosts (`make test-cluster`): three worker hosts sharing the queues,
Redis with a replica and three sentinels on hosts of their own, Postgres on another, events
sent from a producer host; hosts killed, frozen and cut off, the Redis master killed. Each
scenario prints its figures (docs/deploy.md quotes them)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from continuum.config import get_settings
from continuum.dev.cluster import WORKER_HOSTS, Cluster
from continuum.store import metrics
from tests.support.cluster import (
    batches_run,
    cpu_seconds,
    cpu_spent,
    dead_letters_after,
    first_acceptance_after,
    ingest_in_flight,
    last_dead_letter,
    last_stored_at,
    produced,
    show,
    start_producer,
    start_worker_hosts,
    stop_worker_hosts,
)
from tests.support.producers import worst_wait_s
from tests.support.stored_events import assert_exactly_once, decisions, figures
from tests.support.wait import wait_for

pytestmark = pytest.mark.cluster

# Each worker host's least share of the batches when three share the queue: the issue's.
LEAST_SHARE = 0.15
# The producers' unavailable window when the Redis master dies: the issue's target.
WINDOW_TARGET_S = 10.0
# How far events per CPU-second may swing between runs of the same load on this shared
# 2-core machine (other work on it moves them; 302, 258 and 260 with 1, 2, 3 hosts at a load
# average of 13) without counting as a fall.
PER_CPU_SWING = 0.25


@pytest.fixture
def worker_hosts(cluster: Cluster) -> Any:
    """`continuum worker` on the three worker hosts for one scenario, stopped after it."""
    start_worker_hosts(cluster, WORKER_HOSTS)
    yield WORKER_HOSTS
    for host in WORKER_HOSTS:  # a scenario may leave one frozen or cut off
        cluster.network.thaw(host)
        cluster.network.restore(host)
    stop_worker_hosts(cluster, WORKER_HOSTS)


def test_2000_events_in_batches_spread_over_three_worker_hosts(
    cluster: Cluster, worker_hosts: tuple[str, ...]
) -> None:
    events = decisions(2000, "spread")
    dead_before = last_dead_letter()
    start_producer(cluster, events, "spread", size=10)
    produced(cluster, "spread")
    found = assert_exactly_once(events)
    runs = {host: batches_run(cluster, host) for host in worker_hosts}
    batches = len(events) // 10
    dead = dead_letters_after(dead_before)
    show("2,000 events in batches of 10 over three worker hosts",
         ["host", "batches", "share %"],
         [[host, len(ran), 100 * len(ran) / batches] for host, ran in runs.items()])  # fmt: skip
    print(f"processed {found['processed']}, duplicate rows "
          f"{found['duplicate_messages'] + found['duplicate_memories']}, dead letters {dead}")  # fmt: skip
    assert sum(len(ran) for ran in runs.values()) == batches  # each batch run once, no more
    assert all(len(ran) >= LEAST_SHARE * batches for ran in runs.values()), runs
    assert dead == 0


def _restart(cluster: Cluster, host: str) -> None:
    """The killed host comes back (its supervisor restarts `continuum worker`)."""
    cluster.stop(host, "worker")
    start_worker_hosts(cluster, [host])


FAULTS: list[tuple[str, str, str, str]] = [
    # (host, what befalls it, the fault, how it ends)
    ("worker-1", "SIGKILLed", "kill", "restart"),
    ("worker-2", "frozen (SIGSTOP)", "freeze", "thaw"),
    ("worker-3", "cut off (link down)", "cut", "restore"),
]


def test_a_killed_a_frozen_and_a_cut_off_worker_host_lose_and_duplicate_nothing(
    cluster: Cluster, worker_hosts: tuple[str, ...]
) -> None:
    """One fault at a time while events flow, the other two hosts working on: every batch
    the host held is run by another within the visibility timeout + the restore interval
    (+ 5 s); the fault ends (the host restarted, thawed, reconnected) and what a frozen or cut
    off host was still running when it came back adds no row (its batch ran elsewhere)."""
    settings = get_settings()
    bound_s = settings.visibility_timeout_s + settings.unacked_restore_interval_s + 5
    redelivered_before = metrics.count(metrics.EVENTS_REDELIVERED)
    everything: list[dict[str, Any]] = []
    rows = []
    for number, (host, what, fault, end) in enumerate(FAULTS):
        events = decisions(700, f"fault{number}-")
        everything += events
        start_producer(cluster, events, f"fault{number}")
        wait_for(lambda events=events: figures(events)["processed"] >= 200, timeout=120)
        at = time.time()
        act: Callable[[str], None] = getattr(cluster.network, fault)
        act(host)
        result = produced(cluster, f"fault{number}")
        assert_exactly_once(events)
        redelivered_s = worst_wait_s(result.accepted_at, since=at)
        if end == "restart":
            _restart(cluster, host)
        else:
            getattr(cluster.network, end)(host)
        rows.append([host, what, redelivered_s])
    # What the frozen and the cut off hosts still held runs out (acked, or found done).
    wait_for(lambda: ingest_in_flight() == 0, timeout=120, interval=0.5)
    found = assert_exactly_once(everything)
    runs = {host: batches_run(cluster, host) for host in worker_hosts}
    twice = sum(
        1 for batch in set().union(*runs.values()) if sum(batch in ran for ran in runs.values()) > 1
    )
    show(f"a fault per worker host, {len(everything)} events, bound {bound_s:.0f} s",
         ["host", "fault", "redelivered within s"], rows)  # fmt: skip
    redelivered = metrics.count(metrics.EVENTS_REDELIVERED) - redelivered_before
    print(f"batches run on two hosts: {twice}; duplicate rows: "
          f"{found['duplicate_messages'] + found['duplicate_memories']}; events published again "
          f"from the ledger (taken off the queue by a host as it was lost): {redelivered}")  # fmt: skip
    assert all(row[2] <= bound_s for row in rows), rows


@pytest.fixture
def redis_restored(cluster: Cluster) -> Any:
    """Every Redis node running again after the scenario, however it ended: the next one's
    producers need a replica to get their events accepted."""
    yield
    for name in cluster.redis.nodes():
        cluster.network.restore(next(host for host, on in cluster.hosts.items()
                                     if on.address == cluster.redis.node(name).host))  # fmt: skip
        cluster.redis.start(name)
    cluster.redis.wait_in_sync(2)


def test_the_redis_master_killed_under_load_and_again_after_its_replica_was_cut_off(
    cluster: Cluster, worker_hosts: tuple[str, ...], redis_restored: None
) -> None:
    """Accepted means on a replica (WAIT 1; two replicas). The master is SIGKILLed while the
    producer host sends; then a replica of the new master is cut off for 3 s, reconnected,
    and the master killed at once (the other replica confirms writes meanwhile). Every
    accepted event is processed exactly once; the producers' unavailable window (from the
    kill until an event is accepted again) stays under 10 s."""
    hosts = {host.address: name for name, host in cluster.hosts.items()}
    # A sentinel starts no failover of a master within twice the failover timeout of its last.
    between_s = 2 * cluster.redis.failover_timeout_ms / 1000
    killed = 0.0
    rows = []
    for number, replica_cut_s in enumerate((0.0, 3.0)):
        events = decisions(1000, f"failover{number}-")
        name = f"failover{number}"
        start_producer(cluster, events, name)
        wait_for(lambda events=events: figures(events)["processed"] >= 200, timeout=120)
        time.sleep(max(0.0, killed + between_s - time.time()))
        old = cluster.redis.master()
        started = time.time()
        if replica_cut_s:  # the replica on a Redis host (not the worker host's)
            replica = next(node for node in cluster.redis.nodes().values()
                           if not node.sentinel and node.name != old
                           and hosts[node.host].startswith("redis-"))  # fmt: skip
            cluster.network.cut(hosts[replica.host])
            time.sleep(replica_cut_s)
            cluster.network.restore(hosts[replica.host])
        killed = time.time()
        cluster.redis.kill(old)
        cluster.redis.wait_for_failover(old)
        promoted_s = time.time() - killed
        result = produced(cluster, name)
        assert_exactly_once(events)
        window_s = first_acceptance_after(result, killed)
        during_cut = len({at for at in result.accepted_at.values() if started < at < killed})
        restarted = time.time()
        cluster.redis.start(old)  # it rejoins as the new master's replica
        # Of the master the sentinels name by then: a replica promoted just after its link
        # was cut can miss a sentinel's PING (down-after 1 s here) and be failed over again.
        cluster.redis.wait_in_sync(2)
        cluster.redis.wait_watched()
        new = cluster.redis.master()
        rows.append([f"{old} killed" + (f" (replica cut {replica_cut_s:.0f} s first)"
                     if replica_cut_s else ""), new, promoted_s, window_s, result.refusals,
                     during_cut if replica_cut_s else "-", time.time() - restarted])  # fmt: skip
    show("the Redis master killed under load",
         ["fault", "master at the end", "promoted after s", "producers unavailable s",
          "refused sends", "batches accepted during the cut",
          "former master back in sync after s"], rows)  # fmt: skip
    assert all(row[3] <= WINDOW_TARGET_S for row in rows), rows


def test_events_per_second_and_per_cpu_second_with_one_two_and_three_worker_hosts(
    cluster: Cluster,
) -> None:
    """The same load on 1, 2 and 3 worker hosts, warmed up. Two cores bound the events per
    second; the events per CPU-second of the workers must not fall as hosts are added (no
    host costs the others work: contention on shared queues or rows would, as cold pool
    processes did: 159, 101 and 77 events per CPU-second before the warm-up), within
    `PER_CPU_SWING`. A last row runs one host with three hosts' pool processes: what the
    same number of processes costs on these two cores without more hosts."""
    rows = []
    for count, concurrency in ((1, 2), (2, 2), (3, 2), (1, 6)):
        hosts = WORKER_HOSTS[:count]
        start_worker_hosts(cluster, hosts, concurrency=concurrency)
        run = f"{count}x{concurrency}"
        try:
            # Warm up first: a pool process's first tasks load what they run (seconds of CPU
            # each), which would charge each added host for starting, not for its work.
            warm_up = decisions(300, f"warm{run}-")
            start_producer(cluster, warm_up, f"warm{run}")
            produced(cluster, f"warm{run}")
            assert_exactly_once(warm_up)
            events = decisions(1500, f"scale{run}-")
            before = cpu_seconds(cluster, hosts)
            start_producer(cluster, events, f"scale{run}", size=10, max_queued=40)
            result = produced(cluster, f"scale{run}")
            assert_exactly_once(events)
            took_s = last_stored_at(events) - min(result.accepted_at.values())
            cpu_s = cpu_spent(before, cpu_seconds(cluster, hosts))
        finally:
            stop_worker_hosts(cluster, hosts)
        rows.append([f"{count}" + (f" (-c {concurrency})" if concurrency != 2 else ""),
                     len(events) / took_s, cpu_s, len(events) / cpu_s])  # fmt: skip
    show("1,500 events on 1, 2 and 3 worker hosts (two cores in all; -c 2 each)",
         ["worker hosts", "events/s", "worker CPU s", "events per CPU-second"], rows)  # fmt: skip
    per_cpu = [row[3] for row in rows[:3]]
    print(
        f"3 hosts ÷ 1 host: {per_cpu[2] / per_cpu[0]:.3f}; "
        f"÷ 1 host with as many processes: {per_cpu[2] / rows[3][3]:.3f}"
    )
    assert min(per_cpu[1:]) >= (1 - PER_CPU_SWING) * per_cpu[0], per_cpu
    # Hosts cost nothing beyond their processes: three hosts do at least as well per
    # CPU-second as one host running as many processes.
    assert per_cpu[2] >= (1 - PER_CPU_SWING) * rows[3][3], rows
