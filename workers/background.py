"""Background loops of a worker's main process (lease renewal, the broker watch): each a
daemon thread started when the worker is ready and told to stop at its shutdown."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from celery.signals import worker_ready, worker_shutdown


def background(name: str, loop: Callable[[threading.Event], None]) -> None:
    """Run `loop(stop)` in a daemon thread named `name` from worker start; `stop` is set at
    shutdown (the loop waits on it between rounds)."""
    stop = threading.Event()

    def start(**_: Any) -> None:
        stop.clear()
        threading.Thread(target=loop, args=(stop,), name=name, daemon=True).start()

    def shutdown(**_: Any) -> None:
        stop.set()

    worker_ready.connect(start, weak=False)
    worker_shutdown.connect(shutdown, weak=False)
