"""The read plane under concurrency: `GET /v1/search` and `GET /v1/context` against a real
`continuum api` process (its default workers and threads for this machine), driven over HTTP
by 1, 4, 16 and 64 clients in closed loop (req/s, p50, p95 per level), beside the same calls
made in-process on one thread and the query embedding alone. The tenant is the synthetic
long conversation, ingested through the real pipeline and embedded with the real model; the
queries are its questions plus everyday ones, each client walking them in its own order, so
no client ever repeats a query back-to-back.

Each HTTP level is measured in ROUNDS windows of 5 s, every level and server in turn in each
round (IN_TURN: 1 client and 16 back to back), and the windows pooled: on a shared machine
the cores' speed drifts over minutes (a pure-CPU loop here ran 1.7× slower in some spells),
and with one 10 s window per level one drift fell on the single client or on the 16: the
same tree measured 16 ÷ 1 client's throughput 2.21× in one run and 1.51× in the next (1
client 47.7 against 66.7 req/s). A window opens once its clients have run WARM_S, and holds
the requests answered and the CPU spent between its opening and its closing (`_drive`).

Also reported: the CPU time per request of the API's processes and of Postgres at each
level (and their sum), beside the in-process call's, and how many cores the whole machine
kept busy (other work on a shared machine shows there); how many queries one encode of the
query embedding served with 16 concurrent in-process callers; and the issue's done-when
lines, PASS or FAIL, from this run's figures alone:

- 16-client context throughput ≥ 1.8 × 1 client's;
- 16-client context p95 ≤ 1.25 × 16 ÷ its throughput (no queueing beyond a fair share);
- with `--against`, context CPU per request at 16 clients (API + Postgres) ≤ 0.6 × the
  older checkout's.

Comparing with an older checkout, on the same machine, data and driver:

    git worktree add /tmp/fb0ab53 fb0ab53
    python -m bench --only api --against /tmp/fb0ab53
    git worktree remove /tmp/fb0ab53

The older tree's `continuum api` is started from its own directory with PYTHONPATH on it, so
it runs its own code (with its own default workers) on the database this run prepared
(migrated by this tree: later migrations only add); this process never imports it. Each
level runs on both servers back to back, ours first, so machine load falls on both alike.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psutil

from bench.common import BENCH_HOME, Options, Section, console, percentile
from bench.longconv import generate
from bench.recall_bench import load
from continuum.dev.embedded import free_port
from continuum.processes import child_env, spawn, stop

USER = "maya"
CLIENTS = (1, 4, 16, 64)
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
SCALING = 1.8  # done when: 16 clients' context throughput ≥ this × one client's
FAIR_SHARE = 1.25  # done when: 16 clients' p95 ≤ this × 16 ÷ their throughput
CPU_CUT = 0.6  # done when: context CPU per request at 16 clients ≤ this × the older tree's
CONCURRENT = 16  # the level the done-when lines read
ROUNDS = 3  # windows per level and server, one level after another in each round
# Each round's order of levels: the two the scaling line divides, one after the other.
IN_TURN = (1, CONCURRENT, *(c for c in CLIENTS if c not in (1, CONCURRENT)))
WARM_S = 1.0  # an HTTP window's clients run this long before it opens


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
    def served_ms(self) -> float:
        """CPU per request of the API and Postgres together."""
        return self.per_request_ms(self.cpu_s + self.postgres_s)

    @property
    def note(self) -> str:
        return f"{self.machine_s / self.seconds:.1f} of {psutil.cpu_count()} cores busy"

    @classmethod
    def pooled(cls, loads: list[Load]) -> Load:
        """Several windows of one level as one: their requests, times and CPU together."""
        return cls(
            [ms for load in loads for ms in load.latencies_ms],
            *(sum(getattr(load, f) for load in loads)
              for f in ("seconds", "cpu_s", "postgres_s", "client_s", "machine_s")),
        )  # fmt: skip


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


def _drive(
    base_url: str,
    token: str,
    endpoint: str,
    queries: list[str],
    clients: int,
    seconds: float,
    mark: Callable[[], None] = lambda: None,
) -> list[float]:
    """`clients` closed loops, on an event loop of their own: each sends its next query as
    soon as the last answer arrived. Client i starts at query i·7 and steps through the
    list, so two consecutive requests of one client never carry the same query. The loops
    run WARM_S before the measured window of `seconds` opens, and `mark()` is called as it
    opens and as it closes; the latencies returned are those of the requests answered in it.

    The clients are made before any request: each makes an SSL context (about 30 ms of
    this process's loop), which, made inside the window, held back the other clients'
    requests and counted in their latencies (16 clients: the first half second's answers
    measured 300-800 ms where the rest took about 200). The warm-up keeps the connections'
    first second out of the window too: 16 new connections land on the API's workers by a
    draw, and until the workers have evened them out (`continuum.api.serving`) the clients
    of the fuller worker wait longer (16 clients, 5 s windows: p95 1.17-3.07 × the fair
    share in the first second, 1.20-1.37 × after it)."""
    latencies: list[float] = []
    headers = {"Authorization": f"Bearer {token}"}
    window: list[float] = []  # perf_counter at the window's opening and closing, once open

    async def client(index: int, http: httpx.AsyncClient) -> None:
        n = index * 7
        while not window or time.perf_counter() < window[1]:
            query = queries[n % len(queries)]
            n += 1
            started = time.perf_counter()
            response = await http.get(f"/v1/{endpoint}", params=_params(endpoint, query))
            response.raise_for_status()
            answered = time.perf_counter()
            if window and window[0] <= answered <= window[1]:
                latencies.append((answered - started) * 1000)

    async def clock() -> None:
        await asyncio.sleep(WARM_S)
        mark()
        opened = time.perf_counter()
        window.extend((opened, opened + seconds))
        await asyncio.sleep(seconds)
        mark()

    async def drive() -> None:
        async with contextlib.AsyncExitStack() as stack:
            https = [
                await stack.enter_async_context(
                    httpx.AsyncClient(base_url=base_url, headers=headers, timeout=60)
                )
                for _ in range(clients)
            ]
            await asyncio.gather(clock(), *(client(i, http) for i, http in enumerate(https)))

    asyncio.run(drive())
    return latencies


def _measured(
    api: Meter, postgres: Meter, work: Callable[[Callable[[], None]], list[float]]
) -> Load:
    """Run `work`, which calls the `mark` it is given as its measured window opens and as it
    closes, and returns the latencies of the requests answered in it; with the CPU spent in
    that window."""
    me = Meter(psutil.Process(), tree=False)
    marks: list[tuple[float, tuple[float, float], float, float]] = []

    def mark() -> None:
        marks.append((time.perf_counter(), api.read(), postgres.read()[0], me.read()[0]))

    latencies = work(mark)
    (t0, (api0, machine0), pg0, me0), (t1, (api1, machine1), pg1, me1) = marks
    return Load(latencies, t1 - t0, api1 - api0, pg1 - pg0, me1 - me0, machine1 - machine0)


def _closed_loop(
    call: Callable[[str], Any], queries: list[str], deadline: float, first: int, into: list[float]
) -> None:
    """Call `call` back-to-back until `deadline` (perf_counter), through `queries` in order
    from the `first`, each latency appended to `into`."""
    n = first
    while time.perf_counter() < deadline:
        query = queries[n % len(queries)]
        n += 1
        started = time.perf_counter()
        call(query)
        into.append((time.perf_counter() - started) * 1000)


def _in_process(
    call: Callable[[str], Any], queries: list[str], seconds: float, mark: Callable[[], None]
) -> list[float]:
    """One thread calling `call` back-to-back for `seconds`, through `queries` in order."""
    latencies: list[float] = []
    mark()
    _closed_loop(call, queries, time.perf_counter() + seconds, 0, latencies)
    mark()
    return latencies


def _threads(
    call: Callable[[str], Any], queries: list[str], seconds: float, mark: Callable[[], None]
) -> list[float]:
    """CONCURRENT threads of this process in closed loop for `seconds`, as `_drive`'s
    clients walk the queries."""
    latencies: list[float] = []
    mark()
    deadline = time.perf_counter() + seconds
    threads = [
        threading.Thread(target=_closed_loop, args=(call, queries, deadline, i * 7, latencies))
        for i in range(CONCURRENT)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    mark()
    return latencies


def _postmaster_pid() -> int:
    return int((BENCH_HOME / "pg" / "postmaster.pid").read_text().split()[0])


def serve(log_dir: Path, port: int | None = None, checkout: Path | None = None) -> tuple[Any, str]:
    """`continuum api` with its defaults on `port` (default: a free one), log appended to
    `log_dir/api.log`; returns (process, base URL) once it answers. With `checkout`, that
    tree's code serves (started in it, PYTHONPATH on it alone)."""
    port = port or free_port()
    argv = [sys.executable, "-m", "continuum.cli.main", "api", "--port", str(port)]
    env = child_env()
    if checkout is not None:
        env["PYTHONPATH"] = str(checkout.resolve())
    proc = spawn(argv, log_dir / "api.log", env, cwd=checkout)
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


@dataclass(frozen=True)
class Embedding:
    """The query embedding alone: a lone query's latency and CPU, and what each query of
    CONCURRENT concurrent ones cost, with how many queries an encode served."""

    lone_ms: float
    lone_cpu_ms: float
    concurrent_cpu_ms: float
    per_encode: float


def _embedding(queries: list[str], seconds: float) -> Embedding:
    from continuum.inference.embedding import embed_query_soon, query_batching

    def embed(query: str) -> None:
        future = embed_query_soon(query)
        assert future is not None, "the api bench needs embeddings (CONTINUUM_EMBEDDING_PROVIDER)"
        future.result()

    me = Meter(psutil.Process(), tree=False)
    lone = _measured(me, me, functools.partial(_in_process, embed, queries, seconds))
    before = query_batching()
    together = _measured(me, me, functools.partial(_threads, embed, queries, seconds))
    embedded, encodes = (now - then for now, then in zip(query_batching(), before, strict=True))
    return Embedding(lone.p(0.5), lone.per_request_ms(lone.cpu_s),
                     together.per_request_ms(together.cpu_s), embedded / max(encodes, 1))  # fmt: skip


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def run(urls: dict[str, str], options: Options) -> list[Section]:
    from continuum.config import get_settings
    from continuum.inference.embedding import query_batching
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
    rounds = 1 if options.quick else ROUNDS
    window = 5.0 if rounds > 1 else seconds  # an HTTP level's window in each round
    calls: dict[str, Callable[[str], Any]] = {
        "search": lambda q: search(
            namespace, q, limit=LIMIT + 1, filters=SearchFilters(user_id=USER)
        ),
        "context": lambda q: context(namespace, q, 800, user_id=USER),
    }
    for call in calls.values():  # the model and the pools, warm
        call(queries[0])
    postgres = Meter(psutil.Process(_postmaster_pid()))
    me = Meter(psutil.Process(), tree=False)
    local = {
        name: _measured(me, postgres, functools.partial(_in_process, call, queries, seconds))
        for name, call in calls.items()
    }
    before = query_batching()
    threaded = _measured(
        me, postgres, functools.partial(_threads, calls["context"], queries, seconds)
    )
    embedded, encodes = (now - then for now, then in zip(query_batching(), before, strict=True))
    embedding = _embedding(queries, seconds)
    servers: dict[str, Path | None] = {"ours": None}
    if options.against is not None:
        servers["theirs"] = options.against
    with tempfile.TemporaryDirectory() as directory:
        running = {}
        try:
            for name, checkout in servers.items():
                running[name] = serve(Path(directory) / name, checkout=checkout)
            for endpoint in calls:  # every worker loads the model before anything is timed
                for _, base_url in running.values():
                    _drive(base_url, token, endpoint, queries, max(CLIENTS), 3.0)
            windows: dict[tuple[str, str, int], list[Load]] = {}
            for _ in range(rounds):  # a slower spell of a shared machine falls on every level
                for endpoint in calls:
                    for clients in IN_TURN:
                        for name, (proc, base_url) in running.items():
                            work = functools.partial(
                                _drive, base_url, token, endpoint, queries, clients, window
                            )
                            server = Meter(psutil.Process(proc.pid))
                            windows.setdefault((name, endpoint, clients), []).append(
                                _measured(server, postgres, work)
                            )
            loads = {key: Load.pooled(runs) for key, runs in windows.items()}
        finally:
            for proc, _ in running.values():
                stop(proc)
    settings = get_settings()
    section = Section(
        f"API under concurrency: `continuum api` with {settings.api_workers} workers of "
        f"{settings.api_threads} threads ({len(conv.events)} turns, {len(queries)} queries, "
        f"{rounds} rounds of {window:g}s per level, closed loop; machine load: see each "
        "row's note)"
    )
    for endpoint in calls:
        base = local[endpoint]
        base_note = f"in-process, one thread; {base.note}"
        for clients in CLIENTS:
            got = loads[("ours", endpoint, clients)]
            section.add(f"{endpoint} req/s, {clients} clients", got.rate, base.rate, "req/s",
                        f"{base_note} (ours: {got.note})")  # fmt: skip
            for q in (0.5, 0.95):
                section.add(f"{endpoint} p{round(q * 100)}, {clients} clients", got.p(q),
                            base.p(q), "ms", base_note, higher_is_better=False)  # fmt: skip
            for what, ours, theirs in (
                ("API", got.per_request_ms(got.cpu_s), base.per_request_ms(base.cpu_s)),
                ("Postgres", got.per_request_ms(got.postgres_s),
                 base.per_request_ms(base.postgres_s)),
                ("API + Postgres", got.served_ms, base.served_ms),
            ):  # fmt: skip
                section.add(f"{endpoint} {what} CPU/request, {clients} clients", ours, theirs,
                            "ms", f"in-process call's (HTTP clients: "
                            f"{got.per_request_ms(got.client_s):.1f} ms/request)",
                            higher_is_better=False)  # fmt: skip
            old = loads.get(("theirs", endpoint, clients))
            if old is not None:
                section.add(f"{endpoint} req/s, {clients} clients, vs --against", got.rate,
                            old.rate, "req/s", f"{options.against}'s API, same level")  # fmt: skip
                section.add(f"{endpoint} p95, {clients} clients, vs --against", got.p(0.95),
                            old.p(0.95), "ms", f"{options.against}'s API, same level",
                            higher_is_better=False)  # fmt: skip
                section.add(f"{endpoint} API + Postgres CPU/request, {clients} clients, "
                            "vs --against", got.served_ms, old.served_ms, "ms",
                            f"{options.against}'s API, same level ({old.note})",
                            higher_is_better=False)  # fmt: skip
    section.add("query embedding alone, p50", embedding.lone_ms, None, "ms",
                "one query at a time, on the query thread")  # fmt: skip
    section.add(f"query embedding CPU/query, {CONCURRENT} concurrent", embedding.concurrent_cpu_ms,
                embedding.lone_cpu_ms, "ms", "one query at a time",
                higher_is_better=False)  # fmt: skip
    section.add(f"queries per encode, {CONCURRENT} concurrent embeddings", embedding.per_encode,
                1.0, "queries", "one query per encode")  # fmt: skip
    section.add(f"queries per encode, {CONCURRENT} in-process context threads",
                embedded / max(encodes, 1), 1.0, "queries",
                f"one query per encode ({threaded.rate:.1f} req/s, "
                f"p95 {threaded.p(0.95):.0f} ms)")  # fmt: skip
    single, many = loads[("ours", "context", 1)], loads[("ours", "context", CONCURRENT)]
    fair = FAIR_SHARE * CONCURRENT / many.rate * 1000
    scaling = many.rate / single.rate
    verdicts = [
        (f"context throughput, {CONCURRENT} ÷ 1 client", scaling, "×", scaling >= SCALING,
         f"target ≥ {SCALING}"),
        (f"context p95, {CONCURRENT} clients, vs {FAIR_SHARE} × {CONCURRENT} ÷ throughput",
         many.p(0.95), "ms", many.p(0.95) <= fair, f"target ≤ {fair:.0f} ms"),
    ]  # fmt: skip
    old_many = loads.get(("theirs", "context", CONCURRENT))
    if old_many is not None:
        share = many.served_ms / old_many.served_ms
        verdicts.append((f"context API + Postgres CPU/request, {CONCURRENT} clients, "
                         "÷ --against's", share, "×", share <= CPU_CUT,
                         f"target ≤ {CPU_CUT} ({many.served_ms:.1f} vs "
                         f"{old_many.served_ms:.1f} ms)"))  # fmt: skip
    for metric, ours, unit, ok, note in verdicts:
        section.add(f"done when: {metric}", ours, None, unit, f"{_verdict(ok)}: {note}")
        console.print(f"{_verdict(ok)} {metric}: {ours:.2f} {unit} ({note})")
    return [section]
