"""Engine and session handling: one pooled engine per process, disposed after fork."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Engine, create_engine
from sqlalchemy.orm import Session, sessionmaker

from continuum.config import get_settings

_engines: dict[tuple[int, str], Engine] = {}


def get_engine(url: str | None = None) -> Engine:
    """The engine for `url` (default: the configured database) in this process."""
    url = url or get_settings().resolved_database_url()
    key = (os.getpid(), url)
    engine = _engines.get(key)
    if engine is None:
        engine = create_engine(url, pool_pre_ping=True, pool_size=5, max_overflow=5)
        _engines[key] = engine
    return engine


def dispose_engines() -> None:
    """Forget every pooled connection (call in a freshly forked worker process)."""
    for engine in _engines.values():
        engine.dispose(close=False)
    _engines.clear()


@contextmanager
def session_scope(url: str | None = None) -> Iterator[Session]:
    """A transaction: commits on success, rolls back on any error."""
    factory = sessionmaker(get_engine(url), expire_on_commit=False)
    with factory.begin() as session:
        yield session
