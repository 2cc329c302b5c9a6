"""Servers a test starts on loopback: a free port to give one, and whether it answers yet."""

from __future__ import annotations

import socket

import httpx


def free_port() -> int:
    """A loopback port nothing listens on (the OS picks it)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def answers(url: str) -> bool:
    """Whether an HTTP server answers `url` at all (any status)."""
    try:
        httpx.get(url, timeout=1)
    except httpx.HTTPError:
        return False
    return True
