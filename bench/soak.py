"""`make soak`: mixed traffic against the real processes for CONTINUUM_SOAK_MINUTES (30) or
`--minutes`, one random fault a minute, then proof that nothing was lost, duplicated, leaked
or left unembedded. Not part of `make test` or CI.

Servers: embedded Postgres and Redis under `.continuum-soak/` (database `continuum_soak`,
fresh each run; stopped at the end if this run started them). Processes, spawned as
production runs them: the three worker groups of `continuum worker` (ingest; embed, with the
real model; background), `continuum beat` and `continuum api`.

Traffic:
- events from four tenants, two through `MemoryClient`, two through `POST /v1/events`: turns
  that each yield one decision memory and carry their tenant's canary word (drawn per run);
  a send the broker or the API refuses is sent again (same event ids) until accepted;
- a transcript home that grows: OpenClaw, Claude Code and Codex sessions, a line each every
  two seconds, synced by `continuum.sync.sync` every ten seconds (and by beat every five
  minutes), each line carrying its namespace's canary;
- searches and context blocks over HTTP in every namespace, each answer checked for another
  namespace's canary;
- one fault a minute, at a random second, the kinds in shuffled rounds: a worker group
  SIGKILLed and started again, Redis restarted (shut down or SIGKILLed, 2 s down), Postgres
  restarted, the API SIGKILLed and started again.

Then traffic stops, the pipeline drains, and the checks run: every accepted event stored
exactly once, with its one memory; every transcript line stored once; no answer held another
namespace's row; every row of the run embedded, each vector written once (a trigger records
the writes: `continuum.dev.embedding_writes`), the outbox empty; no Continuum process's RSS
grew by more than 20 % from the end of the first minute. The p95 of each call is printed per
minute; results go to bench/results/soak.{json,md}; the exit status is 1 if a check failed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import secrets
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import psutil
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from bench.api_bench import serve
from bench.common import RESULTS_DIR, ROOT, bench_servers, console, percentile

SOAK_HOME = ROOT / ".continuum-soak"
SOAK_DATABASE = "continuum_soak"
TENANTS = ("soak-a", "soak-b", "soak-c", "soak-d")
PYTHON_DOOR = ("soak-a", "soak-b")  # the others send through POST /v1/events
SYNCED = {"openclaw": "soak", "claude_code": "claude-code", "codex": "codex"}  # namespaces
FAULTS = ("worker", "redis", "postgres", "api")
CALLS = ("emit", "POST events", "search", "context", "sync")  # MemoryClient, HTTP ×3, in-process
BATCH = 3  # turns a send
LINE_EVERY_S = 2.0  # each transcript format gets a line this often
SYNC_EVERY = 5  # a sync every this many lines
SESSION_LINES = 10  # a transcript session this long, then a new one
RSS_GROWTH_LIMIT = 0.20
DRAIN_TIMEOUT_S = 600.0
TOPICS = ("garden fence", "roof tiles", "team offsite", "invoice run", "release notes")


@dataclass(frozen=True)
class SoakOptions:
    minutes: float
    seed: int
    rate: float = 12.0  # events a second, over the four tenants
    faults: bool = True
    quiet: bool = False  # no progress display (tests)


@dataclass(frozen=True)
class Namespace:
    name: str
    canary: str  # a word only this namespace's rows hold


@dataclass
class Fault:
    minute: int
    kind: str
    detail: str
    seconds: float  # until Redis, Postgres or the API answered again (a worker: started)


@dataclass
class Check:
    name: str
    value: Any
    ok: bool
    note: str = ""


@dataclass
class SoakResult:
    options: SoakOptions
    checks: list[Check]
    minutes: list[dict[str, Any]]  # per minute: p95 of each call, calls, errors, the fault
    rss: list[dict[str, Any]]  # per process: start and end RSS, growth
    faults: list[Fault]
    totals: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return all(check.ok for check in self.checks)


class Recorder:
    """What the soak's threads did, by minute of the run: each call's latency or error, the
    events accepted (and when), the leaks seen, the faults."""

    def __init__(self) -> None:
        self.started = time.time()
        self.lock = threading.Lock()
        self.latencies: dict[tuple[int, str], list[float]] = defaultdict(list)
        self.errors: Counter[tuple[int, str]] = Counter()
        self.accepted: dict[str, tuple[str, float]] = {}  # event id: (namespace, when)
        self.leaks: list[str] = []
        self.faults: list[Fault] = []

    def minute(self, at: float | None = None) -> int:
        return int(((at or time.time()) - self.started) // 60)

    @contextmanager
    def call(self, name: str) -> Iterator[None]:
        """Time the block as one `name` call; an exception counts as its error (and is
        raised again)."""
        started = time.time()
        try:
            yield
        except Exception:
            with self.lock:
                self.errors[(self.minute(started), name)] += 1
            raise
        with self.lock:
            self.latencies[(self.minute(started), name)].append((time.time() - started) * 1000)

    def accept(self, events: list[dict[str, Any]]) -> None:
        now = time.time()
        with self.lock:
            self.accepted.update((event["event_id"], (event["namespace"], now)) for event in events)

    def leak(self, what: str) -> None:
        with self.lock:
            self.leaks.append(what)


class Refused(RuntimeError):
    """A send that was not accepted (broker down, API down or restarting): send it again."""


# -- the processes ------------------------------------------------------------------------


class Stack:
    """The servers and the Continuum processes of the run: started, faulted, measured."""

    def __init__(self, home: Path, log_dir: Path, env: dict[str, str]) -> None:
        from continuum.dev.embedded import EmbeddedServers, free_port
        from continuum.processes import WORKER_GROUPS

        self.servers = EmbeddedServers(home)
        self.log_dir = log_dir
        self.env = env
        self.groups = [name for name, _, _ in WORKER_GROUPS]
        self.procs: dict[str, Any] = {}
        self.api_port = free_port()
        self.base_url = f"http://127.0.0.1:{self.api_port}"
        self.lock = threading.Lock()  # a fault restarts a process; the drain checks them

    def _spawn(self, role: str, argv: list[str]) -> None:
        from continuum.processes import spawn

        self.procs[role] = spawn(argv, self.log_dir / f"{role.replace(' ', '-')}.log", self.env)

    def start_worker(self, group: str) -> None:
        from continuum.processes import group_argv

        self._spawn(f"worker {group}", group_argv(group, hostname=f"{group}-soak@%h"))

    def start_api(self) -> None:
        self.procs["api"], _ = serve(self.log_dir, self.api_port)

    def start(self) -> None:
        from continuum.processes import beat_argv

        for group in self.groups:
            self.start_worker(group)
        self._spawn("beat", beat_argv(self.log_dir / "celerybeat-schedule"))
        self.start_api()

    def revive(self) -> list[str]:
        """Start again any process that died (none should have): their roles."""
        dead = [role for role, proc in self.procs.items() if proc.poll() is not None]
        for role in dead:
            if role == "api":
                self.start_api()
            elif role.startswith("worker "):
                self.start_worker(role.removeprefix("worker "))
        return dead

    def fault(self, kind: str, rng: random.Random) -> str:
        from continuum.processes import kill

        with self.lock:
            if kind == "worker":
                group = rng.choice(self.groups)
                kill(self.procs[f"worker {group}"])
                self.start_worker(group)
                return f"worker {group} SIGKILLed"
            if kind == "redis":
                sigkill = rng.random() < 0.5
                self.servers.restart_redis(down_s=2.0, kill=sigkill)
                return "Redis SIGKILLed" if sigkill else "Redis shut down"
            if kind == "postgres":
                self.servers.restart_postgres()
                return "Postgres restarted"
            kill(self.procs["api"])
            self.start_api()
            return "API SIGKILLed"

    def pids(self) -> dict[str, int | None]:
        pids: dict[str, int | None] = {role: proc.pid for role, proc in self.procs.items()}
        pids["redis (server)"] = self.servers.redis_pid()
        pids["postgres (server)"] = self.servers.postgres_pid()
        return pids

    def stop(self) -> None:
        from continuum.processes import stop

        for proc in self.procs.values():
            stop(proc, timeout=20)


def memory(pid: int | None) -> tuple[int, int]:
    """(RSS in bytes, processes) of `pid` and its descendants."""
    if pid is None:
        return 0, 0
    try:
        root = psutil.Process(pid)
        tree = [root, *root.children(recursive=True)]
    except (psutil.NoSuchProcess, ValueError):
        return 0, 0
    total = 0
    for proc in tree:
        try:
            total += proc.memory_info().rss
        except psutil.NoSuchProcess:
            continue
    return total, len(tree)


# -- the traffic --------------------------------------------------------------------------


def turn(tenant: Namespace, n: int) -> dict[str, Any]:
    """A user's turn that yields one decision memory, with the tenant's canary."""
    topic = TOPICS[n % len(TOPICS)]
    return {
        "kind": "turn",
        "event_id": str(uuid.uuid4()),
        "namespace": tenant.name,
        "session_id": f"{tenant.name}-s{n // 20}",
        "channel": "voice",
        "user_id": "soak",
        "ts": datetime.now(UTC).isoformat(),
        "role": "user",
        "content": f"Let's go with supplier {tenant.canary} {n} for the {topic}.",
        "message_id": f"{tenant.name}-{n}",
    }


# A door events go through: (send a batch, or raise; close the client).
Door = tuple[Callable[[list[dict[str, Any]]], None], Callable[[], None]]


def produce(
    tenant: Namespace,
    door: Door,
    call: str,
    recorder: Recorder,
    stop: threading.Event,
    every_s: float,
) -> None:
    """Send a batch of turns every `every_s`; a refused batch is sent again, same ids."""
    send, close = door
    n, batch = 0, None
    try:
        while not stop.is_set():
            if batch is None:
                batch = [turn(tenant, n + i) for i in range(BATCH)]
                n += BATCH
            try:
                with recorder.call(call):
                    send(batch)
            except Exception:
                stop.wait(0.5)
                continue
            recorder.accept(batch)
            batch = None
            stop.wait(every_s)
    finally:
        close()


def python_door(urls: dict[str, str]) -> Door:
    from continuum.contract.client import EnqueueError, MemoryClient

    client = MemoryClient(urls["broker_url"])

    def send(events: list[dict[str, Any]]) -> None:
        try:
            client.emit_many(events)
        except EnqueueError as exc:
            raise Refused(str(exc)) from exc

    return send, client.close


def http_door(base_url: str, token: str) -> Door:
    client = httpx.Client(
        base_url=base_url, headers={"Authorization": f"Bearer {token}"}, timeout=30
    )

    def send(events: list[dict[str, Any]]) -> None:
        response = client.post("/v1/events", json=events)
        if response.status_code != 202:
            raise Refused(f"{response.status_code}: {response.text[:200]}")

    return send, client.close


class GrowingHome:
    """A transcript home that runtimes keep writing: one OpenClaw, one Claude Code and one
    Codex session at a time, a message line appended to each in turn, a new session every
    SESSION_LINES lines. Every line carries its namespace's canary and an id of its own."""

    def __init__(self, root: Path, canaries: dict[str, str], token: str) -> None:
        self.root = root
        self.canaries = canaries  # by format
        self.token = token
        self.written: dict[tuple[str, str], str] = {}  # (namespace, message id): format
        self.count = 0
        self.files: dict[str, Path] = {}
        self.previous: dict[str, str | None] = {}

    def _session(self, fmt: str) -> Path:
        number = self.count // SESSION_LINES
        session = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{self.token}/{fmt}/{number}"))
        now = _iso(datetime.now(UTC))
        if fmt == "openclaw":
            path = (
                self.root / ".openclaw-soak" / "agents" / "main" / "sessions" / f"{session}.jsonl"
            )
            first: dict[str, Any] | None = {"type": "session", "version": 3, "id": session,
                                             "timestamp": now, "cwd": "/soak"}  # fmt: skip
        elif fmt == "claude_code":
            path = self.root / ".claude" / "projects" / "-soak" / f"{session}.jsonl"
            first = None
        else:
            day = datetime.now(UTC).strftime("%Y/%m/%d")
            stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H-%M-%S")
            path = self.root / ".codex" / "sessions" / day / f"rollout-{stamp}-{session}.jsonl"
            first = {"timestamp": now, "type": "session_meta",
                     "payload": {"id": session, "timestamp": now, "cwd": "/soak",
                                 "originator": "codex_cli_rs", "cli_version": "0.88.0",
                                 "source": "cli", "model_provider": "openai"}}  # fmt: skip
        path.parent.mkdir(parents=True, exist_ok=True)
        if first is not None:
            path.write_text(json.dumps(first) + "\n")
        self.previous[fmt] = None
        return path

    def _line(self, fmt: str, message_id: str, role: str, text: str) -> dict[str, Any]:
        now = _iso(datetime.now(UTC))
        parent = self.previous.get(fmt)
        if fmt == "openclaw":
            return {"type": "message", "id": message_id, "parentId": parent, "timestamp": now,
                    "message": {"role": role, "content": [{"type": "text", "text": text}]}}  # fmt: skip
        if fmt == "claude_code":
            content: Any = text if role == "user" else [{"type": "text", "text": text}]
            return {"parentUuid": parent, "isSidechain": False, "userType": "external",
                    "cwd": "/soak", "sessionId": self.files[fmt].stem, "version": "2.1.200",
                    "type": role, "message": {"role": role, "content": content},
                    "uuid": message_id, "timestamp": now}  # fmt: skip
        block = "input_text" if role == "user" else "output_text"
        return {"timestamp": now, "type": "response_item",
                "payload": {"type": "message", "id": message_id, "role": role,
                            "content": [{"type": block, "text": text}]}}  # fmt: skip

    def grow(self) -> None:
        """Append one message line to each format's current session."""
        for fmt, canary in self.canaries.items():
            if self.count % SESSION_LINES == 0 or fmt not in self.files:
                self.files[fmt] = self._session(fmt)
            n = self.count
            role = "user" if n % 2 == 0 else "assistant"
            topic = TOPICS[n % len(TOPICS)]
            text = (
                f"Note {canary} {n}: the {topic} needs a check on Friday."
                if role == "user"
                else f"Noted {canary} {n}, I will keep an eye on the {topic}."
            )
            message_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{self.token}/{fmt}/line/{n}"))
            with self.files[fmt].open("a") as out:
                out.write(json.dumps(self._line(fmt, message_id, role, text)) + "\n")
            self.previous[fmt] = message_id
            self.written[(SYNCED[fmt], message_id)] = fmt
        self.count += 1


def _iso(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z"


def run_sync(home: GrowingHome, recorder: Recorder | None) -> None:
    from continuum.sync import sync

    if recorder is None:
        sync(home=home.root)
        return
    with recorder.call("sync"):
        sync(home=home.root)


def grow_and_sync(home: GrowingHome, recorder: Recorder, stop: threading.Event) -> None:
    while not stop.is_set():
        home.grow()
        if home.count % SYNC_EVERY == 0:
            # a failed run is counted as the call's error; the next continues from the cursors
            with contextlib.suppress(Exception):
                run_sync(home, recorder)
        stop.wait(LINE_EVERY_S)


def read(
    base_url: str,
    tokens: dict[str, str],
    spaces: list[Namespace],
    recorder: Recorder,
    stop: threading.Event,
    rng: random.Random,
) -> None:
    """Searches and context blocks in random namespaces: their own canary, another's (a
    probe for a leak) or everyday words; every answer is checked for another's canary."""
    with httpx.Client(base_url=base_url, timeout=30) as client:
        while not stop.is_set():
            _read_once(client, tokens, spaces, recorder, stop, rng)


def _read_once(
    client: httpx.Client,
    tokens: dict[str, str],
    spaces: list[Namespace],
    recorder: Recorder,
    stop: threading.Event,
    rng: random.Random,
) -> None:
    """One search or context block, in a random namespace, checked for a leak."""
    space = rng.choice(spaces)
    others = [other.canary for other in spaces if other.name != space.name]
    words = rng.choice([space.canary, rng.choice(others), rng.choice(TOPICS)])
    call = rng.choice(("search", "context"))
    path, params = (
        ("/v1/search", {"q": words, "limit": "10"})
        if call == "search"
        else ("/v1/context", {"seed_text": f"what about the {words}?"})
    )
    headers = {"Authorization": f"Bearer {tokens[space.name]}"}
    try:
        with recorder.call(call):
            response = client.get(path, params=params, headers=headers)
            if response.status_code != 200:
                raise Refused(f"{response.status_code}")
    except Exception:
        stop.wait(0.5)
        return
    rows = returned_rows(response)
    for canary in others:
        if canary in rows:
            recorder.leak(f"{call} in {space.name} returned a row holding {canary}")
    stop.wait(rng.uniform(0.05, 0.3))


def returned_rows(response: httpx.Response) -> str:
    """The rows an answer holds (search hits, the context block's items), as text: not what
    it echoes of the query (the next page's link, the topic of the seed)."""
    return json.dumps(response.json()["items"])


def inject_faults(
    stack: Stack,
    recorder: Recorder,
    stop: threading.Event,
    rng: random.Random,
    minutes: int,
) -> None:
    """One fault a minute at a random second (from 20 s into the first minute), the kinds
    in shuffled rounds so each comes up as often."""
    kinds: list[str] = []
    for minute in range(minutes):
        if not kinds:
            kinds = rng.sample(FAULTS, len(FAULTS))
        kind = kinds.pop()
        at = recorder.started + minute * 60 + rng.uniform(20 if minute == 0 else 5, 50)
        if stop.wait(max(0.0, at - time.time())):
            return
        started = time.time()
        try:
            detail = stack.fault(kind, rng)
        except Exception as exc:  # a fault that failed to apply is reported, not fatal
            detail = f"{kind} fault failed: {exc}"
        recorder.faults.append(Fault(minute, kind, detail, round(time.time() - started, 1)))


# -- the run ------------------------------------------------------------------------------


def namespaces(token: str) -> tuple[list[Namespace], dict[str, Namespace]]:
    """The four tenants and the synced namespaces (by format), each with its canary."""
    words = ("amber", "basil", "cedar", "delta", "ember", "flint", "garnet")
    canaries = iter(f"{word}x{token}" for word in words)
    tenants = [Namespace(name, next(canaries)) for name in TENANTS]
    synced = {fmt: Namespace(name, next(canaries)) for fmt, name in SYNCED.items()}
    return tenants, synced


def run_soak(urls: dict[str, str], home: Path, options: SoakOptions) -> SoakResult:
    """The soak against the servers at `urls` (embedded under `home`, which the faults
    restart): traffic for `options.minutes`, the drain, the checks."""
    from continuum.dev import embedding_writes
    from continuum.processes import child_env
    from continuum.security.tokens import create_token

    rng = random.Random(options.seed)
    token = secrets.token_hex(3)
    tenants, synced = namespaces(token)
    spaces = [*tenants, *synced.values()]
    tokens = {space.name: create_token([space.name], "soak")[0] for space in spaces}
    log_dir = Path(tempfile.mkdtemp(prefix="continuum-soak-"))
    transcripts = GrowingHome(
        log_dir / "home", {fmt: space.canary for fmt, space in synced.items()}, token
    )
    env = {**child_env(), "CONTINUUM_EMBEDDING_PROVIDER": "local",
           "CONTINUUM_SYNC_HOME": str(transcripts.root)}  # fmt: skip
    embedding_writes.install()
    stack = Stack(home, log_dir, env)
    recorder = Recorder()
    stop = threading.Event()
    minutes = max(1, round(options.minutes))
    rss_start: dict[str, tuple[int | None, int, int]] = {}
    try:
        stack.start()
        recorder = Recorder()  # the run's clock starts once every process is up
        every_s = len(TENANTS) * BATCH / options.rate
        jobs: list[tuple[Callable[..., None], tuple[Any, ...]]] = []
        for tenant in tenants:
            if tenant.name in PYTHON_DOOR:
                door, call = python_door(urls), "emit"
            else:
                door, call = http_door(stack.base_url, tokens[tenant.name]), "POST events"
            jobs.append((produce, (tenant, door, call, recorder, stop, every_s)))
        jobs.append((grow_and_sync, (transcripts, recorder, stop)))
        for _ in range(2):
            reader_rng = random.Random(rng.random())
            jobs.append((read, (stack.base_url, tokens, spaces, recorder, stop, reader_rng)))
        if options.faults:
            jobs.append((inject_faults, (stack, recorder, stop, rng, minutes)))
        threads = [threading.Thread(target=job, args=args, daemon=True) for job, args in jobs]
        for thread in threads:
            thread.start()
        duration = minutes * 60
        with _progress(options.quiet) as progress:
            task = progress.add_task("soak", total=duration)
            while (elapsed := time.time() - recorder.started) < duration:
                if not rss_start and elapsed >= 60:
                    rss_start = _sample(stack)
                progress.update(task, completed=elapsed, description=_status(recorder))
                time.sleep(1)
            progress.update(task, completed=duration, description="traffic stopped; draining")
        stop.set()
        for thread in threads:
            thread.join(timeout=60)
        with stack.lock:
            revived = stack.revive()
        rss_start = rss_start or _sample(stack)
        drained = drain(recorder, transcripts, spaces)
        rss_end = _sample(stack)
        probe(stack.base_url, tokens, spaces, recorder)
        checks = verify(recorder, transcripts, tenants, spaces)
        checks.append(Check("drained within 10 min", drained, drained == "yes"))
        if revived:
            checks.append(Check("processes that died unasked", ", ".join(revived), False))
        rss = _rss_rows(rss_start, rss_end)
        checks.append(
            Check(
                "Continuum processes' RSS growth ≤ 20 %",
                ", ".join(row["process"] for row in rss if row["flag"] and row["ours"]) or "none",
                not any(row["flag"] and row["ours"] for row in rss),
                "from the end of the first minute to the end of the run",
            )
        )
    finally:
        stop.set()
        stack.stop()
        try:
            embedding_writes.uninstall()
        except Exception:  # the database may be gone with a failed run: say so below
            console.print("[yellow]could not remove the embedding-writes trigger[/]")
    minutes_rows = _minute_rows(recorder, minutes)
    totals = {
        "events accepted": len(recorder.accepted),
        "transcript lines": len(transcripts.written),
        "calls": sum(len(v) for v in recorder.latencies.values()),
        "errors": sum(recorder.errors.values()),
        "faults": len(recorder.faults),
    }
    console.print(f"logs: {log_dir}")
    return SoakResult(options, checks, minutes_rows, rss, recorder.faults, totals)


def _progress(quiet: bool) -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TimeElapsedColumn(),
        console=console,
        disable=quiet,
    )


def _status(recorder: Recorder) -> str:
    with recorder.lock:
        calls = sum(len(v) for v in recorder.latencies.values())
        errors = sum(recorder.errors.values())
        last = recorder.faults[-1].detail if recorder.faults else "none yet"
        accepted = len(recorder.accepted)
    return (
        f"accepted {accepted:,} · calls {calls:,} · errors {errors:,} · "
        f"faults {len(recorder.faults)} (last: {last})"
    )


def _sample(stack: Stack) -> dict[str, tuple[int | None, int, int]]:
    """Per process: (pid, RSS of it and its children, their number)."""
    return {role: (pid, *memory(pid)) for role, pid in stack.pids().items()}


def _rss_rows(
    start: dict[str, tuple[int | None, int, int]], end: dict[str, tuple[int | None, int, int]]
) -> list[dict[str, Any]]:
    rows = []
    for role, (pid, rss, count) in end.items():
        pid0, rss0, _ = start.get(role, (None, 0, 0))
        growth = rss / rss0 - 1 if rss0 else 0.0
        rows.append(
            {
                "process": role,
                "ours": "(server)" not in role,
                "processes": count,
                "restarted": pid0 != pid,
                "start_mib": round(rss0 / 2**20, 1),
                "end_mib": round(rss / 2**20, 1),
                "growth": round(growth, 3),
                "flag": growth > RSS_GROWTH_LIMIT,
            }
        )
    return rows


def _minute_rows(recorder: Recorder, minutes: int) -> list[dict[str, Any]]:
    stored = _stored_p95_by_minute(recorder)
    rows = []
    for minute in range(minutes):
        faults = [fault.kind for fault in recorder.faults if fault.minute == minute]
        row: dict[str, Any] = {"minute": minute + 1, "fault": ", ".join(faults)}
        for call in CALLS:
            samples = recorder.latencies.get((minute, call), [])
            row[call] = round(percentile(samples, 0.95), 1) if samples else None
        row["calls"] = sum(len(recorder.latencies.get((minute, c), [])) for c in CALLS)
        row["errors"] = sum(recorder.errors.get((minute, c), 0) for c in CALLS)
        row["stored p95 s"] = stored.get(minute)
        rows.append(row)
    return rows


def _stored_p95_by_minute(recorder: Recorder) -> dict[int, float]:
    """Per minute of acceptance: the p95 of the seconds from an event's acceptance to its
    storage."""
    from sqlalchemy import text

    from continuum.store.engine import session_scope

    with session_scope() as db:
        stored: dict[str, float] = dict(
            db.execute(
                text(
                    "SELECT event_id::text, extract(epoch FROM processed_at) FROM processed_events"
                    " WHERE event_id = ANY(CAST(:ids AS uuid[]))"
                ),
                {"ids": list(recorder.accepted)},
            ).all()
        )
    waits: dict[int, list[float]] = defaultdict(list)
    for event_id, (_, at) in recorder.accepted.items():
        if event_id in stored:
            waits[recorder.minute(at)].append(max(0.0, float(stored[event_id]) - at))
    return {minute: round(percentile(values, 0.95), 1) for minute, values in waits.items()}


# -- the end ------------------------------------------------------------------------------


def _lost_events(recorder: Recorder) -> int:
    from sqlalchemy import text

    from continuum.store.engine import session_scope

    with session_scope() as db:
        found = db.execute(
            text(
                "SELECT count(*) FROM processed_events WHERE event_id = ANY(CAST(:ids AS uuid[]))"
            ),
            {"ids": list(recorder.accepted)},
        ).scalar_one()
    return len(recorder.accepted) - int(found)


def _missing_lines(home: GrowingHome) -> int:
    from sqlalchemy import text

    from continuum.store.engine import session_scope

    with session_scope() as db:
        found = db.execute(
            text(
                "SELECT count(DISTINCT (namespace, message_id)) FROM messages"
                " WHERE (namespace, message_id) IN (SELECT * FROM unnest("
                " CAST(:namespaces AS text[]), CAST(:ids AS text[])))"
            ),
            {
                "namespaces": [namespace for namespace, _ in home.written],
                "ids": [message_id for _, message_id in home.written],
            },
        ).scalar_one()
    return len(home.written) - int(found)


def drain(recorder: Recorder, home: GrowingHome, spaces: list[Namespace]) -> str:
    """Wait (up to DRAIN_TIMEOUT_S) for every accepted event to be stored, every written line
    to be synced and the outbox to be empty; "yes", or what is still waiting."""
    from continuum.pipeline.outbox import pending_counts

    deadline = time.monotonic() + DRAIN_TIMEOUT_S
    waiting = "nothing yet"
    while time.monotonic() < deadline:
        try:
            run_sync(home, None)
            lost, missing = _lost_events(recorder), _missing_lines(home)
            pending = sum(pending_counts([space.name for space in spaces]).values())
        except Exception as exc:  # a server still coming back
            waiting = f"error: {exc}"
            time.sleep(2)
            continue
        if not lost and not missing and not pending:
            return "yes"
        waiting = f"{lost} events, {missing} lines, {pending} rows to embed still waiting"
        time.sleep(5)
    return waiting


def verify(
    recorder: Recorder, home: GrowingHome, tenants: list[Namespace], spaces: list[Namespace]
) -> list[Check]:
    """The checks of the run, from the database and, for leaks, from what the recorder saw
    in every answer (and the last `probe`)."""
    from sqlalchemy import text

    from continuum.dev import embedding_writes
    from continuum.pipeline.outbox import pending_counts
    from continuum.store.engine import session_scope

    names = [tenant.name for tenant in tenants]
    with session_scope() as db:
        dup = db.execute(
            text(
                "SELECT (SELECT count(*) - count(DISTINCT (namespace, session_id, message_id))"
                "  FROM messages WHERE namespace = ANY(:all)) AS messages,"
                " (SELECT count(*) - count(DISTINCT (namespace, idempotency_key)) FROM memories"
                "  WHERE namespace = ANY(:all)) AS memories,"
                " (SELECT count(*) FROM messages WHERE namespace = ANY(:tenants)) AS turns,"
                " (SELECT count(*) FROM memories WHERE namespace = ANY(:tenants)"
                "  AND kind = 'decision') AS decisions"
            ),
            {"all": [space.name for space in spaces], "tenants": names},
        ).one()
    lost = _lost_events(recorder)
    missing = _missing_lines(home)
    scope = "WHERE namespace = ANY(:namespaces)"
    embedded = embedding_writes.embedding_figures(
        {"messages": scope, "memories": scope}, {"namespaces": [s.name for s in spaces]}
    )
    pending = pending_counts([space.name for space in spaces])
    accepted = len(recorder.accepted)
    return [
        Check("accepted events lost", lost, lost == 0, f"of {accepted:,} accepted"),
        Check(
            "rows stored twice",
            dup.messages + dup.memories,
            dup.messages + dup.memories == 0,
            f"{dup.messages} messages, {dup.memories} memories",
        ),
        Check(
            "memories per evented turn",
            f"{dup.decisions:,} / {dup.turns:,}",
            dup.decisions == dup.turns,
            "each stored turn yields one decision memory",
        ),
        Check("transcript lines lost", missing, missing == 0, f"of {len(home.written):,}"),
        Check("leaks", len(recorder.leaks), not recorder.leaks, "; ".join(recorder.leaks[:3])),
        Check(
            "rows unembedded",
            embedded["messages_unembedded"] + embedded["memories_unembedded"],
            not embedded["messages_unembedded"] + embedded["memories_unembedded"],
            f"of {embedded['messages_rows']:,} messages, {embedded['memories_rows']:,} memories",
        ),
        Check(
            "rows embedded other than once",
            embedded["messages_not_once"] + embedded["memories_not_once"],
            not embedded["messages_not_once"] + embedded["memories_not_once"],
            "vector writes recorded by a trigger",
        ),
        Check("outbox pending", sum(pending.values()), not sum(pending.values())),
    ]


def probe(
    base_url: str, tokens: dict[str, str], spaces: list[Namespace], recorder: Recorder
) -> None:
    """Search every namespace for every other namespace's canary: no hit may hold it."""
    with httpx.Client(base_url=base_url, timeout=60) as client:
        for space in spaces:
            headers = {"Authorization": f"Bearer {tokens[space.name]}"}
            for other in spaces:
                if other.name == space.name:
                    continue
                response = client.get(
                    "/v1/search", params={"q": other.canary, "limit": 50}, headers=headers
                )
                response.raise_for_status()
                if other.canary in returned_rows(response):
                    recorder.leak(f"probe: {space.name} found {other.name}'s canary")


# -- output -------------------------------------------------------------------------------


def tables(result: SoakResult) -> list[Table]:
    per_minute = Table(title="p95 of each call per minute, ms (stored: s from acceptance)")
    for column in ("min", *CALLS, "stored", "calls", "errors", "fault"):
        per_minute.add_column(column, no_wrap=True)
    for row in result.minutes:
        per_minute.add_row(
            str(row["minute"]),
            *("" if row[call] is None else f"{row[call]:,.0f}" for call in CALLS),
            "" if row["stored p95 s"] is None else f"{row['stored p95 s']:.1f}",
            f"{row['calls']:,}",
            str(row["errors"]),
            row["fault"],
        )
    rss = Table(title="RSS of every process (and its children), first minute's end → run's end")
    for column in ("process", "procs", "start MiB", "end MiB", "growth", ""):
        rss.add_column(column)
    for row in result.rss:
        flag = "[red]> 20 %[/]" if row["flag"] else ""
        if row["flag"] and not row["ours"]:
            flag = "[yellow]> 20 % (a server's data and caches)[/]"
        rss.add_row(
            row["process"] + (" (restarted)" if row["restarted"] else ""),
            str(row["processes"]),
            f"{row['start_mib']:,.1f}",
            f"{row['end_mib']:,.1f}",
            f"{row['growth']:+.0%}",
            flag,
        )
    faults = Table(title="Faults (s: until it answered again; a killed worker is restarted)")
    for column in ("min", "fault", "s"):
        faults.add_column(column)
    for fault in result.faults:
        faults.add_row(str(fault.minute + 1), fault.detail, f"{fault.seconds:.1f}")
    checks = Table(title="Checks")
    for column in ("check", "value", "", "note"):
        checks.add_column(column)
    for check in result.checks:
        mark = "[green]ok[/]" if check.ok else "[red]FAILED[/]"
        checks.add_row(check.name, str(check.value), mark, check.note)
    return [per_minute, faults, rss, checks]


def save(result: SoakResult) -> Path:
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    data = {
        "when": datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ"),
        "ok": result.ok,
        "options": asdict(result.options),
        "totals": result.totals,
        "checks": [asdict(check) for check in result.checks],
        "minutes": result.minutes,
        "rss": result.rss,
        "faults": [asdict(fault) for fault in result.faults],
    }
    (RESULTS_DIR / "soak.json").write_text(json.dumps(data, indent=2, default=str) + "\n")
    lines = [f"# Soak ({data['when']}, {result.options.minutes:g} min, seed "
             f"{result.options.seed}): {'passed' if result.ok else 'FAILED'}", ""]  # fmt: skip
    lines += ["| check | value | ok | note |", "| --- | --- | --- | --- |"]
    lines += [f"| {c.name} | {c.value} | {'ok' if c.ok else 'FAILED'} | {c.note} |"
              for c in result.checks]  # fmt: skip
    (RESULTS_DIR / "soak.md").write_text("\n".join(lines) + "\n")
    return RESULTS_DIR / "soak.md"


def main(argv: list[str] | None = None) -> int:
    from continuum.config import get_settings
    from continuum.dev.embedded import EmbeddedServers

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--minutes",
        type=float,
        default=None,
        help="how long the traffic runs (default: CONTINUUM_SOAK_MINUTES, 30)",
    )
    parser.add_argument("--seed", type=int, default=None, help="fault schedule (default: random)")
    parser.add_argument("--rate", type=float, default=12.0, help="events a second, all tenants")
    parser.add_argument("--no-faults", action="store_true", help="traffic only")
    args = parser.parse_args(argv)
    if not console.is_terminal:  # a log file: the per-minute table's columns unabridged
        console.width = max(console.width, 130)
    options = SoakOptions(
        minutes=args.minutes or get_settings().soak_minutes,
        seed=args.seed if args.seed is not None else secrets.randbelow(10**6),
        rate=args.rate,
        faults=not args.no_faults,
    )
    console.print(
        f"soak: {options.minutes:g} min, seed {options.seed}, {options.rate:g} events/s"
        f"{'' if options.faults else ', no faults'}; servers under {SOAK_HOME}"
    )
    with EmbeddedServers(SOAK_HOME).stopped_after():
        urls = bench_servers(SOAK_HOME, SOAK_DATABASE)
        result = run_soak(urls, SOAK_HOME, options)
    for table in tables(result):
        console.print(table)
    for name, value in result.totals.items():
        console.print(f"{name}: {value:,}")
    path = save(result)
    verdict = "[green]passed[/]" if result.ok else "[red]FAILED[/]"
    console.print(f"soak {verdict}; saved {path} and {path.with_suffix('.json')}")
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
