"""How many recalls (searches, context blocks) a process runs at once, and in what order
the others start: `admitted()`.

A recall is mostly CPU (Python, and Postgres on the same cores). Run all at once, the
requests of a loaded API share the cores and the interpreter lock and contend in Postgres;
each is slow, and the process finishes none sooner. So at most CONTINUUM_RECALL_CONCURRENCY
recalls of a process hold a transaction at once; the others wait in arrival order (`FifoGate`),
their query embeddings already submitted. A recall that will wait submits its query held
(`inference.embedding`): it is encoded with others once a few wait, or when its recall
comes to the front of the line, whichever is first. One encode of several costs far less
than one each, and the front of the line still has a slot's turn to get its vector before
it is admitted.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from functools import lru_cache

from continuum.config import get_settings


class FifoGate:
    """A semaphore that admits its waiters in the order they arrived: a freed slot is handed
    to the longest waiter, never taken by a thread arriving at that moment
    (`threading.Semaphore` lets an arrival barge in, and puts a waiter it woke for nothing
    back at the end of the line). A waiter's `on_front` is called when it comes to the
    front of the line (the next slot freed is its), or as it takes a free slot at once."""

    def __init__(self, slots: int) -> None:
        if slots < 1:
            raise ValueError("a gate needs at least one slot")
        self._free = slots
        self._lock = threading.Lock()
        self._line: deque[tuple[threading.Event, Callable[[], None] | None]] = deque()

    def acquire(self, on_front: Callable[[], None] | None = None) -> None:
        turn = None
        with self._lock:
            if self._free and not self._line:
                self._free -= 1
            else:
                turn = threading.Event()
                self._line.append((turn, on_front))
            front = len(self._line) <= 1  # a slot now, or the next one
        if front and on_front is not None:
            on_front()
        if turn is not None:
            turn.wait()  # the slot is ours once set: release() handed it over

    def release(self) -> None:
        front = None
        with self._lock:
            if self._line:
                self._line.popleft()[0].set()
                front = self._line[0][1] if self._line else None
            else:
                self._free += 1
        if front is not None:
            front()

    @property
    def crowded(self) -> bool:
        """Whether a thread acquiring now would wait."""
        with self._lock:
            return not self._free or bool(self._line)

    @property
    def waiting(self) -> int:
        with self._lock:
            return len(self._line)

    @contextmanager
    def held(self, on_front: Callable[[], None] | None = None) -> Iterator[None]:
        self.acquire(on_front)
        try:
            yield
        finally:
            self.release()


@lru_cache(maxsize=1)
def recall_gate() -> FifoGate:
    """This process's gate, of CONTINUUM_RECALL_CONCURRENCY slots (read once)."""
    return FifoGate(get_settings().recall_concurrency)


def admitted(on_front: Callable[[], None] | None = None) -> AbstractContextManager[None]:
    """One of this process's recall slots, held for the block (waiting in line for one);
    `on_front` is called once the caller is next in line, or as it gets a slot at once."""
    return recall_gate().held(on_front)


def crowded() -> bool:
    """Whether a recall starting now would wait in line for a slot."""
    return recall_gate().crowded
