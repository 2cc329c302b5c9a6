"""Fixtures for the encryption tests: a key-encryption key and an encrypted tenant."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.support.encryption import ENCRYPTED, KEK


@pytest.fixture
def encrypted(settings_env: Callable[..., None]) -> str:
    """Encryption on for the tenant `vault` only; returns its name."""
    settings_env(encryption_key=KEK, encryption_tenants=ENCRYPTED)
    return ENCRYPTED


@pytest.fixture
def dumps(servers: dict[str, str]) -> Any:
    """`dumps()` → (whole-database pg_dump, Redis RDB) as bytes."""
    from tests.support.dumps import database_dump, redis_dump

    return lambda: (database_dump(servers["database_url"]), redis_dump())
