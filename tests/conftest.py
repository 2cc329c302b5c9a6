"""Test fixtures: real embedded Postgres + Redis (under .continuum-test/), a fresh database
per run, and a real in-process Celery worker on the real Redis broker. Helpers that test
modules share live in tests/support/, never in a test module or a conftest."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.paths import TEST_HOME

TEST_DATABASE = "continuum_test"
TABLES = (
    "sessions, messages, cron_reports, transcript_cursors, sync_problems, memories, tasks, memory_log, "
    "dead_letters, processed_events, system_state, maintenance_runs, api_tokens, data_keys, "
    "forget_tombstones, llm_calls"
)

os.environ["CONTINUUM_HOME"] = str(TEST_HOME)
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
for name in ("CONTINUUM_DATABASE_URL", "CONTINUUM_REDIS_URL", "CONTINUUM_BROKER_URL"):
    os.environ.pop(name, None)


def _recreate_database(admin_url: str) -> None:
    import psycopg

    with psycopg.connect(admin_url.replace("+psycopg", ""), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{TEST_DATABASE}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{TEST_DATABASE}"')


@pytest.fixture(scope="session")
def servers() -> Iterator[dict[str, str]]:
    """Embedded servers for the whole run; the test database is created afresh.

    The servers this run starts are stopped when it ends (`make test` leaves nothing
    running). Servers already running when it began are left running: someone else's, such
    as a `continuum dev up` with CONTINUUM_HOME on the test home, or a run killed before its
    end (stop those with `CONTINUUM_HOME=.continuum-test continuum dev down`). The fault tests
    restart servers mid-run; that changes nothing here."""
    from continuum.config import get_settings
    from continuum.dev.embedded import EmbeddedServers

    embedded = EmbeddedServers(TEST_HOME)
    with embedded.stopped_after():
        urls = embedded.up()
        database_url = urls["database_url"].replace("/continuum?", f"/{TEST_DATABASE}?")
        _recreate_database(urls["database_url"])
        os.environ["CONTINUUM_DATABASE_URL"] = database_url
        os.environ["CONTINUUM_REDIS_URL"] = urls["redis_url"]
        os.environ["CONTINUUM_BROKER_URL"] = urls["broker_url"]
        get_settings.cache_clear()

        from continuum.store import migrate

        migrate.upgrade(database_url)
        yield {**urls, "database_url": database_url}


@pytest.fixture
def db(servers: dict[str, str]) -> Iterator[Any]:
    """A clean database and Redis for one test; yields a SQLAlchemy engine."""
    from sqlalchemy import text
    from sqlalchemy.exc import OperationalError

    from continuum.recall.textquery import speakers
    from continuum.redis_client import get_redis
    from continuum.sealing.keys import keyring
    from continuum.store.engine import get_engine

    engine = get_engine()
    for attempt in range(5):  # a previous test's worker task may still hold row locks
        try:
            with engine.begin() as conn:
                conn.execute(text("SET LOCAL lock_timeout = '5s'"))
                conn.execute(text(f"TRUNCATE {TABLES} RESTART IDENTITY"))
            break
        except OperationalError:
            if attempt == 4:
                raise
            time.sleep(0.5)
    get_redis().flushdb()
    speakers.clear()  # it remembers the names of the truncated tenants' speakers
    keyring.clear()  # key ids restart with the truncated table
    yield engine


@pytest.fixture(scope="session")
def celery_app(servers: dict[str, str]) -> Any:
    import tests.support.tasks  # noqa: F401  (test-only tasks must exist before the worker)
    from workers import app

    return app


@pytest.fixture(scope="session")
def worker(celery_app: Any) -> Iterator[Any]:
    """A real Celery worker (solo pool, own thread) consuming every queue on the real broker."""
    from celery.contrib.testing.worker import start_worker

    from continuum.contract.queues import ALL_QUEUES
    from continuum.inference.embedding import warm_query_embedding

    # The model and its query graph (exported on a first run), loaded once, up front, not
    # inside the first test's deadline.
    warm_query_embedding()

    with start_worker(
        celery_app,
        pool="solo",
        concurrency=1,
        perform_ping_check=False,
        shutdown_timeout=30,
        queues=list(ALL_QUEUES),
        loglevel="WARNING",
    ) as running:
        yield running


@pytest.fixture
def client(servers: dict[str, str]) -> Iterator[Any]:
    from continuum.contract.client import MemoryClient

    memory_client = MemoryClient(servers["broker_url"])
    yield memory_client
    memory_client.close()


@pytest.fixture
def settings_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Override settings for one test: `settings_env(privacy_mode=True)`; undone after."""
    from continuum.config import get_settings

    def apply(**values: Any) -> None:
        for name, value in values.items():
            env = f"CONTINUUM_{name.upper()}"
            if value is None:
                monkeypatch.delenv(env, raising=False)
            else:
                monkeypatch.setenv(env, str(value))
        get_settings.cache_clear()

    yield apply
    monkeypatch.undo()
    get_settings.cache_clear()


@pytest.fixture
def encrypted(settings_env: Any) -> str:
    """Encryption at rest on for the tenant `vault` only; returns its name."""
    from tests.support.encryption import ENCRYPTED, KEK

    settings_env(encryption_key=KEK, encryption_tenants=ENCRYPTED)
    return ENCRYPTED


@pytest.fixture
def redis_ha(request: pytest.FixtureRequest) -> Iterator[Any]:
    """A Redis master, its replica and three sentinels on loopback for one test (options of
    `RedisHA` by indirect parametrization, e.g. `{"replicas": 2}`), stopped after it."""
    from continuum.dev.redis_ha import RedisHA

    options = getattr(request, "param", {})
    with RedisHA(TEST_HOME / "redis-ha", **options).running() as ha:
        yield ha


@pytest.fixture(scope="session")
def api_url(servers: dict[str, str]) -> Iterator[str]:
    """The HTTP API served by uvicorn on loopback for the whole run; yields its base URL."""
    from tests.support.live_api import serve_api

    with serve_api() as url:
        yield url
