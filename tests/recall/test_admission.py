"""The recall gate (`continuum.recall.admission`): at most its slots inside at once, waiters
admitted in arrival order, each told when it comes to the front of the line; a search or
context call in line has its query embedded while it waits, and the calls behind the front
have theirs embedded together, when the first of them comes to the front (real servers, the
real model)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from continuum.config import get_settings
from continuum.inference.embedding import query_batching
from continuum.recall.admission import FifoGate, recall_gate
from continuum.recall.context import context
from continuum.recall.search import search
from tests.support.wait import query_thread_settled, wait_for


@pytest.mark.parametrize("slots", [1, 2])
def test_waiters_enter_in_arrival_order_never_more_than_the_slots_at_once(slots: int) -> None:
    gate = FifoGate(slots)
    inside, most, entered = [0], [0], []
    lock = threading.Lock()

    def recall(index: int) -> None:
        with gate.held():
            with lock:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
                entered.append(index)
            time.sleep(0.01)
            with lock:
                inside[0] -= 1

    for _ in range(slots):
        gate.acquire()
    threads = []
    for index in range(6):  # each one in line before the next arrives
        threads.append(threading.Thread(target=recall, args=(index,)))
        threads[-1].start()
        wait_for(lambda n=index + 1: gate.waiting == n, timeout=5, interval=0.001)
    for _ in range(slots):
        gate.release()
    for thread in threads:
        thread.join(timeout=5)
    assert most[0] == slots and sorted(entered) == list(range(6))
    if slots == 1:  # (two admitted together may start in either order)
        assert entered == list(range(6))


def test_a_freed_slot_goes_to_the_waiter_not_to_a_thread_arriving_then() -> None:
    """(threading.Semaphore gives it to the arrival, most of the time: the woken waiter has
    yet to run.)"""
    gate, entered = FifoGate(1), []

    def waiter() -> None:
        with gate.held():
            entered.append("waiter")

    gate.acquire()
    thread = threading.Thread(target=waiter)
    thread.start()
    wait_for(lambda: gate.waiting == 1, timeout=5, interval=0.001)
    gate.release()
    with gate.held():  # arriving as the slot is freed
        entered.append("arrival")
    thread.join(timeout=5)
    assert entered == ["waiter", "arrival"]


def test_a_waiter_is_told_when_it_comes_to_the_front_of_the_line() -> None:
    gate, fronts, inside = FifoGate(1), [], []

    def arrive(name: str) -> None:
        gate.acquire(on_front=lambda: fronts.append(name))
        inside.append(name)

    arrive("first")  # a free slot: at the front at once
    threads = []
    for name in ("second", "third"):
        threads.append(threading.Thread(target=arrive, args=(name,)))
        threads[-1].start()
        wait_for(lambda n=len(threads): gate.waiting == n, timeout=5, interval=0.001)
    assert gate.crowded and fronts == ["first", "second"]  # "second" is before "third"
    gate.release()  # "second" goes in: "third" is next
    assert fronts == ["first", "second", "third"]
    wait_for(lambda: inside == ["first", "second"], timeout=5, interval=0.001)
    gate.release()
    for thread in threads:
        thread.join(timeout=5)
    gate.release()
    assert inside == ["first", "second", "third"] and not gate.crowded


@pytest.mark.parametrize("call", ["search", "context"])
def test_a_recall_in_line_has_its_query_embedded_while_it_waits(db: Any, call: str) -> None:
    gate = recall_gate()
    run = {
        "search": lambda: search("alpha", "where did we go sailing", limit=3),
        "context": lambda: context("alpha", "where did we go sailing", 400, user_id="u1"),
    }[call]
    context("alpha", "warm up", 100)  # the model loaded before the count starts
    embedded, _ = query_batching()
    held = get_settings().recall_concurrency
    for _ in range(held):  # every slot held: the call must wait
        gate.acquire()
    done: list[Any] = []
    thread = threading.Thread(target=lambda: done.append(run()))
    try:
        thread.start()
        wait_for(lambda: gate.waiting == 1 and query_batching()[0] == embedded + 1, timeout=30)
        time.sleep(0.2)
        assert thread.is_alive() and not done  # embedded, and still waiting for a slot
    finally:
        for _ in range(held):
            gate.release()
    thread.join(timeout=30)
    assert done and not thread.is_alive()


def test_the_calls_behind_the_front_of_the_line_have_their_queries_embedded_together(
    db: Any,
) -> None:
    """The first in line has its query embedded at once; the others' are held, then embedded
    in one encode when the first of them comes to the front."""
    gate = recall_gate()
    context("alpha", "warm up", 100)
    held = get_settings().recall_concurrency
    for _ in range(held):
        gate.acquire()
    before = query_batching()
    seeds = ["where did we go sailing", "what did the doctor say", "my sister's wedding"]
    threads = [threading.Thread(target=context, args=("alpha", seed, 400)) for seed in seeds]
    try:
        for n, thread in enumerate(threads, start=1):
            thread.start()
            wait_for(lambda n=n: gate.waiting == n, timeout=30, interval=0.001)
            if n == 1:  # at the front: embedded at once
                wait_for(lambda: query_batching() == (before[0] + 1, before[1] + 1), timeout=30)
        query_thread_settled()  # an encode the others had scheduled would have run
        assert query_batching() == (before[0] + 1, before[1] + 1)
    finally:
        for _ in range(held):
            gate.release()
    for thread in threads:
        thread.join(timeout=30)
    assert query_batching() == (before[0] + 3, before[1] + 2)
