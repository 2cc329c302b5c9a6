"""Fixtures for the encryption tests: dumps of everything stored (the encrypted tenant is
the root conftest's `encrypted`)."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture
def dumps(servers: dict[str, str]) -> Any:
    """`dumps()` → (whole-database pg_dump, Redis RDB) as bytes."""
    from tests.support.dumps import database_dump, redis_dump

    return lambda: (database_dump(servers["database_url"]), redis_dump())
