"""How many recalls (searches, context blocks) a process runs at once, and in what order
the others start: `admitted()`.

A recall is mostly CPU (Python, and Postgres on the same cores). Run all at once, the
requests of a loaded API share the cores and the interpreter lock and contend in Postgres;
each is slow, and the process finishes none sooner. So at most CONTINUUM_RECALL_CONCURRENCY
recalls of a process hold a transaction at once; the others wait in arrival order (`FifoGate`),
their query embeddings already on the way: they were submitted before the wait, so the
waiting queries are embedded together (one encode of several costs far less than one each).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from functools import lru_cache

from continuum.config import get_settings


class FifoGate:
    """A semaphore that admits its waiters in the order they arrived: a freed slot is handed
    to the longest waiter, never taken by a thread arriving at that moment
    (`threading.Semaphore` lets an arrival barge in, and puts a waiter it woke for nothing
    back at the end of the line)."""

    def __init__(self, slots: int) -> None:
        if slots < 1:
            raise ValueError("a gate needs at least one slot")
        self._free = slots
        self._lock = threading.Lock()
        self._line: deque[threading.Event] = deque()

    def acquire(self) -> None:
        with self._lock:
            if self._free and not self._line:
                self._free -= 1
                return
            turn = threading.Event()
            self._line.append(turn)
        turn.wait()  # the slot is ours once set: release() handed it over

    def release(self) -> None:
        with self._lock:
            if self._line:
                self._line.popleft().set()
            else:
                self._free += 1

    @property
    def waiting(self) -> int:
        with self._lock:
            return len(self._line)

    @contextmanager
    def held(self) -> Iterator[None]:
        self.acquire()
        try:
            yield
        finally:
            self.release()


@lru_cache(maxsize=1)
def recall_gate() -> FifoGate:
    """This process's gate, of CONTINUUM_RECALL_CONCURRENCY slots (read once)."""
    return FifoGate(get_settings().recall_concurrency)


def admitted() -> AbstractContextManager[None]:
    """One of this process's recall slots, held for the block (waiting in line for one)."""
    return recall_gate().held()
