"""Servers a test starts on loopback: a free port to give one, and whether it answers yet."""

from __future__ import annotations

import httpx

from continuum.dev.embedded import free_port

__all__ = ["answers", "free_port"]


def answers(url: str) -> bool:
    """Whether an HTTP server answers `url` at all (any status)."""
    try:
        httpx.get(url, timeout=1)
    except httpx.HTTPError:
        return False
    return True
