"""Readiness checks of the servers Continuum needs (CLI `continuum check`, container probes)."""

from __future__ import annotations

from dataclasses import dataclass

import redis
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError

from continuum.config import ConfigError, get_settings
from continuum.redis_client import SyncRedis, client_for, redacted
from continuum.store.engine import get_engine


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str


def _postgres() -> Check:
    try:
        with get_engine().connect() as conn:
            version = conn.execute(text("SHOW server_version")).scalar()
            vector = conn.execute(
                text("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            ).scalar()
    except (SQLAlchemyError, ConfigError) as exc:
        return Check("postgres", False, str(exc).splitlines()[0])
    if vector is None:
        return Check("postgres", False, f"{version}, pgvector missing: run `continuum db upgrade`")
    return Check("postgres", True, f"PostgreSQL {version}, pgvector {vector}")


def _redis(name: str, url_of: str) -> Check:
    try:
        url = getattr(get_settings(), url_of)()
        client: SyncRedis = client_for(url, socket_connect_timeout=2)
        info = client.info("server")
    except (redis.RedisError, ConfigError) as exc:
        return Check(name, False, str(exc))
    return Check(name, True, f"Redis {info['redis_version']} at {redacted(url)}")


def run_checks() -> list[Check]:
    return [
        _postgres(),
        _redis("redis", "resolved_redis_url"),
        _redis("broker", "resolved_broker_url"),
    ]
