"""The HTTP API served for real: uvicorn on a free loopback port, in a thread of the test
process, on the suite's embedded servers (the browser, SDK and adapter tests talk to it)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from tests.support.net import free_port


@contextmanager
def serve_api(start_timeout: float = 20.0) -> Iterator[str]:
    """`continuum.api.create_app()` under uvicorn until the block ends; yields its base URL."""
    import uvicorn

    from continuum.api import create_app

    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(create_app(), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + start_timeout
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
