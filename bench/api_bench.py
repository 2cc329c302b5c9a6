"""The read plane under concurrency: `GET /v1/search` and `GET /v1/context` against a real
`continuum api` process (its default workers for this machine), driven over HTTP by 1, 4 and
16 clients in closed loop (req/s, p50, p95 per level), beside the same calls made in-process
on one thread. The tenant is the synthetic long conversation, ingested through the real
pipeline and embedded with the real model; the queries are its questions plus everyday ones,
each client walking them in its own order, so no client ever repeats a query back-to-back.

Also reported: the CPU time per request of the API's processes and of Postgres at each
level, beside the in-process call's, and how many cores the whole machine kept busy (other
work on a shared machine shows there): together they say how far the cores can go at all.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psutil

from bench.common import BENCH_HOME, Options, Section, percentile
from bench.longconv import generate
from bench.recall_bench import load
from continuum.dev.embedded import free_port
from continuum.processes import spawn, stop

USER = "maya"
CLIENTS = (1, 4, 16)
EVERYDAY = [
    "what did we say about the holiday plans",
    "anything about my sister lately",
    "what should I cook this week",
    "how is my knee doing after the runs",
    "what was the plan for sleep routines",
    "which books did we talk about",
    "who helped me with the camping trip",
    "what do I need to do before October",
]
LIMIT = 10  # search hits per page


@dataclass(frozen=True)
class Load:
    """One closed-loop run: every request's latency, how long it ran, and the CPU seconds
    spent meanwhile by the API, by Postgres, and by the whole machine."""

    latencies_ms: list[float]
    seconds: float
    cpu_s: float  # the API's processes (or the in-process caller)
    postgres_s: float
    client_s: float  # this process: the HTTP clients (or the in-process caller again)
    machine_s: float  # every process, ours and others' (the clients included)

    @property
    def rate(self) -> float:
        return len(self.latencies_ms) / self.seconds

    def p(self, q: float) -> float:
        return percentile(self.latencies_ms, q)

    def per_request_ms(self, cpu_s: float) -> float:
        return 1000 * cpu_s / len(self.latencies_ms)

    @property
    def note(self) -> str:
        return f"{self.machine_s / self.seconds:.1f} of {psutil.cpu_count()} cores busy"


class Meter:
    """CPU seconds used so far by a process tree (the API server, Postgres) or this process
    alone, and by the machine."""

    def __init__(self, root: psutil.Process, *, tree: bool = True) -> None:
        self.root = root
        self.tree = tree  # its children too (not for this process: the API is one of them)

    def read(self) -> tuple[float, float]:
        """(CPU seconds of the trees, busy CPU seconds of the machine). A process's own time
        includes its exited children's (a Postgres backend of a closed connection)."""
        total = 0.0
        for p in [self.root, *(self.root.children(recursive=True) if self.tree else [])]:
            try:
                times = p.cpu_times()
            except psutil.NoSuchProcess:
                continue
            total += times.user + times.system
            if self.tree:
                total += times.children_user + times.children_system
        machine = psutil.cpu_times()
        return total, machine.user + machine.system + machine.nice + machine.irq + machine.softirq


def _params(endpoint: str, query: str) -> dict[str, Any]:
    if endpoint == "search":
        return {"q": query, "user_id": USER, "limit": LIMIT}
    return {"seed_text": query, "user_id": USER}


async def _drive(
    base_url: str, token: str, endpoint: str, queries: list[str], clients: int, seconds: float
) -> list[float]:
    """`clients` closed loops for `seconds`: each sends its next query as soon as the last
    answer arrived. Client i starts at query i·7 and steps through the list, so two
    consecutive requests of one client never carry the same query."""
    deadline = time.perf_counter() + seconds
    latencies: list[float] = []

    async def client(index: int) -> None:
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx.AsyncClient(base_url=base_url, headers=headers, timeout=60) as http:
            n = index * 7
            while time.perf_counter() < deadline:
                query = queries[n % len(queries)]
                n += 1
                started = time.perf_counter()
                response = await http.get(f"/v1/{endpoint}", params=_params(endpoint, query))
                response.raise_for_status()
                latencies.append((time.perf_counter() - started) * 1000)

    await asyncio.gather(*(client(i) for i in range(clients)))
    return latencies


def _measured(api: Meter, postgres: Meter, work: Callable[[], list[float]]) -> Load:
    """Run `work` (it returns request latencies) and meter the CPU spent meanwhile."""
    me = Meter(psutil.Process(), tree=False)
    before = api.read(), postgres.read()[0], me.read()[0]
    started = time.perf_counter()
    latencies = work()
    elapsed = time.perf_counter() - started
    (api_s, machine_s), postgres_s, client_s = api.read(), postgres.read()[0], me.read()[0]
    return Load(
        latencies, elapsed, api_s - before[0][0], postgres_s - before[1],
        client_s - before[2], machine_s - before[0][1],
    )  # fmt: skip


def _in_process(call: Callable[[str], Any], queries: list[str], seconds: float) -> list[float]:
    """One thread calling `call` back-to-back for `seconds`, through `queries` in order."""
    latencies = []
    deadline = time.perf_counter() + seconds
    n = 0
    while time.perf_counter() < deadline:
        query = queries[n % len(queries)]
        n += 1
        started = time.perf_counter()
        call(query)
        latencies.append((time.perf_counter() - started) * 1000)
    return latencies


def _postmaster_pid() -> int:
    return int((BENCH_HOME / "pg" / "postmaster.pid").read_text().split()[0])


def serve(log_dir: Path, port: int | None = None) -> tuple[Any, str]:
    """`continuum api` with its defaults on `port` (default: a free one), log appended to
    `log_dir/api.log`; returns (process, base URL) once it answers."""
    port = port or free_port()
    argv = [sys.executable, "-m", "continuum.cli.main", "api", "--port", str(port)]
    proc = spawn(argv, log_dir / "api.log")
    base_url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"continuum api exited {proc.returncode}: see {log_dir}/api.log")
        try:
            if httpx.get(f"{base_url}/openapi.json", timeout=2).status_code == 200:
                return proc, base_url
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    stop(proc)
    raise RuntimeError(f"continuum api did not answer within 120 s: see {log_dir}/api.log")


def run(urls: dict[str, str], options: Options) -> list[Section]:
    from continuum.config import get_settings
    from continuum.recall.context import context
    from continuum.recall.scope import SearchFilters
    from continuum.recall.search import search
    from continuum.security.tokens import create_token

    conv = generate()
    load(conv)
    queries = [q.text for q in conv.questions] + EVERYDAY
    namespace = conv.namespace
    token, _ = create_token([namespace], "bench")
    seconds = 4.0 if options.quick else 10.0
    calls: dict[str, Callable[[str], Any]] = {
        "search": lambda q: search(
            namespace, q, limit=LIMIT + 1, filters=SearchFilters(user_id=USER)
        ),
        "context": lambda q: context(namespace, q, 800, user_id=USER),
    }
    for call in calls.values():  # the model and the pools, warm
        call(queries[0])
    postgres = Meter(psutil.Process(_postmaster_pid()))
    local = {
        name: _measured(
            Meter(psutil.Process(), tree=False),
            postgres,
            lambda call=call: _in_process(call, queries, seconds),
        )
        for name, call in calls.items()
    }
    with tempfile.TemporaryDirectory() as directory:
        proc, base_url = serve(Path(directory))
        api = Meter(psutil.Process(proc.pid))

        def drive(endpoint: str, clients: int, seconds: float) -> list[float]:
            return asyncio.run(_drive(base_url, token, endpoint, queries, clients, seconds))

        try:
            for endpoint in calls:  # every worker loads the model before anything is timed
                drive(endpoint, max(CLIENTS), 3.0)
            loads = {
                (endpoint, clients): _measured(
                    api, postgres, lambda e=endpoint, c=clients: drive(e, c, seconds)
                )
                for endpoint in calls
                for clients in CLIENTS
            }
        finally:
            stop(proc)
    section = Section(
        f"API under concurrency: `continuum api` with {get_settings().api_workers} workers "
        f"({len(conv.events)} turns, {len(queries)} queries, {seconds:g}s per level, "
        "closed loop)"
    )
    for endpoint in calls:
        base = local[endpoint]
        base_note = f"in-process, one thread; {base.note}"
        for clients in CLIENTS:
            got = loads[(endpoint, clients)]
            section.add(f"{endpoint} req/s, {clients} clients", got.rate, base.rate, "req/s",
                        f"{base_note} (ours: {got.note})")  # fmt: skip
            for q in (0.5, 0.95):
                section.add(f"{endpoint} p{round(q * 100)}, {clients} clients", got.p(q),
                            base.p(q), "ms", base_note, higher_is_better=False)  # fmt: skip
            for what, ours, theirs in (
                ("API", got.cpu_s, base.cpu_s),
                ("Postgres", got.postgres_s, base.postgres_s),
            ):
                section.add(f"{endpoint} {what} CPU/request, {clients} clients",
                            got.per_request_ms(ours), base.per_request_ms(theirs), "ms",
                            f"in-process call's (HTTP clients: "
                            f"{got.per_request_ms(got.client_s):.1f} ms/request)",
                            higher_is_better=False)  # fmt: skip
    single, sixteen = loads[("context", 1)], loads[("context", max(CLIENTS))]
    section.add(f"context p95, {max(CLIENTS)} clients", sixteen.p(0.95), single.p(0.95), "ms",
                "1 client's p95 (target: ratio ≥ 0.33, within 3×)",
                higher_is_better=False)  # fmt: skip
    return [section]
