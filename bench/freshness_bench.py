"""Freshness: how long after `emit` returns a turn is found by full-text search, by vector
search and in the context block, with the pipeline idle and with ingest at half its
measured maximum: what a user feels as "I just told it that".

Setup: the worker groups `continuum worker` runs for ingest and embeddings (`ingest` with
its default concurrency, `embed`), on the real broker and Postgres, the real model.

1. The maximum, measured first in the same run: a burst of turns (batches of 25, all
   queued at once); turns stored per second from the first stored to the last, and turns
   stored and embedded per second from the first stored to the last embedded: the burst
   drained end to end. A turn is fully fresh only once embedded, so the load is half the
   lower of the two (the burst's rates are the pipeline's best case: its claims are full).
   Timing the embeddings from the first turn embedded instead took their rate while
   storing had slowed and left the cores to them: 351-496 turns/s in runs of one day, and
   the runs where it came out high set a load the pipeline could not keep up with (vector
   p95 6.5-7.4 s, growing with every probe).
2. Probes: one turn at a time through `emit` (as a runtime sends a user's turn), each with
   a word of its own, in a tenant of their own, every `PROBE_EVERY_S`; timed from `emit`
   returning to
   - full text: the turn matching its word (`tsv @@`, what the text channel selects by);
   - vector: its embedding stored (from then the vector channel ranks it);
   - block: `context()` seeded with the turn's words showing it (asked from the moment the
     turn is stored: no block can show it before);
   polled every `POLL_S` by one statement for all probes in flight.
3. The same probes with the queue idle, and under the load (a producer thread emitting
   batches of 25 at half the maximum, in another tenant).

Afterwards every probe is looked for by a vector-only search (its words without its own
word, text weight 0): the row its stored vector belongs to is found by meaning, not only
stored.
"""

from __future__ import annotations

import random
import string
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import text

from bench.capture_bench import _events
from bench.common import Options, Section, console, logs_of, percentile
from continuum.contract.client import MemoryClient
from continuum.processes import child_env, group_argv, spawn, stop
from continuum.store.engine import session_scope

BATCH = 25
LOAD_MAX_S = 180  # the producer's turns last this long at most
POLL_S = 0.005
BLOCK_POLL_S = 0.02  # a context() call costs tens of ms: asked less often
PROBE_EVERY_S = 0.5
USER = "rosa"
TARGETS = {  # p95 targets (ms): (under half load, idle)
    "full text": (300.0, 100.0),
    "vector": (2000.0, None),
    "block": (2000.0, None),
}
SUBJECTS = ["the blue kayak", "my sister's wedding", "the garden shed", "the tax forms",
            "the new bike", "grandma's recipe", "the dentist", "the train tickets"]  # fmt: skip


def _word(rng: random.Random) -> str:
    return "".join(rng.choice(string.ascii_lowercase) for _ in range(10))


@dataclass
class Probe:
    message_id: str
    word: str
    sentence: str  # the turn without its word
    emitted: float  # perf_counter when emit returned
    found: dict[str, float] = field(default_factory=dict)  # what → seconds after emit

    @property
    def content(self) -> str:
        return f"{self.sentence} (code {self.word})"


class Prober:
    """Emits probes and stamps when each is found; one poll statement for all in flight."""

    def __init__(self, client: MemoryClient, namespace: str) -> None:
        self.client = client
        self.namespace = namespace
        self.rng = random.Random(7)
        self.probes: list[Probe] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._poll, daemon=True),
                         threading.Thread(target=self._blocks, daemon=True)]  # fmt: skip
        for thread in self._threads:
            thread.start()

    def emit(self, index: int) -> None:
        subject = SUBJECTS[index % len(SUBJECTS)]
        sentence = f"Remember that {subject} is due on day {index % 28 + 1}"
        message_id = f"probe-{uuid.uuid4().hex[:12]}"
        probe = Probe(message_id, _word(self.rng), sentence, 0.0)
        event = {"kind": "turn", "namespace": self.namespace, "session_id": "probes",
                 "channel": "chat", "user_id": USER, "ts": datetime.now(UTC).isoformat(),
                 "role": "user", "content": probe.content, "message_id": message_id}  # fmt: skip
        self.client.emit(event)
        probe.emitted = time.perf_counter()
        with self._lock:
            self.probes.append(probe)

    def _pending(self, what: str) -> list[Probe]:
        with self._lock:
            return [probe for probe in self.probes if what not in probe.found]

    def _poll(self) -> None:
        sql = text(
            "SELECT message_id, tsv @@ to_tsquery('english', w.word) AS matched, "
            "embedding IS NOT NULL AS embedded FROM messages JOIN unnest(CAST(:ids AS text[]), "
            "CAST(:words AS text[])) AS w(id, word) ON message_id = w.id WHERE namespace = :ns"
        )
        while not self._stop.is_set():
            waiting = {p.message_id: p for p in self._pending("vector")}
            if waiting:
                ids, words = list(waiting), [p.word for p in waiting.values()]
                with session_scope() as db:
                    rows = db.execute(sql, {"ns": self.namespace, "ids": ids, "words": words})
                    found = rows.all()
                now = time.perf_counter()
                for row in found:
                    probe = waiting[row.message_id]
                    if row.matched:
                        probe.found.setdefault("full text", now - probe.emitted)
                    if row.embedded:
                        probe.found.setdefault("vector", now - probe.emitted)
            time.sleep(POLL_S)

    def _blocks(self) -> None:
        from continuum.recall.context import context

        while not self._stop.is_set():
            stored = [p for p in self._pending("block") if "full text" in p.found]
            for probe in stored:
                result = context(self.namespace, probe.content, 800, user_id=USER)
                if any(item.ref.endswith(f"/{probe.message_id}") for item in result.items):
                    probe.found["block"] = time.perf_counter() - probe.emitted
            time.sleep(BLOCK_POLL_S)

    def wait(self, timeout_s: float) -> None:
        """Until every probe is found every way, or `timeout_s` passed."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if all(len(p.found) == len(TARGETS) for p in self.probes):
                return
            time.sleep(0.05)

    def close(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=10)


def _count(namespace: str, embedded: bool) -> int:
    with session_scope() as db:
        return int(
            db.execute(
                text(
                    "SELECT count(*) FROM messages WHERE namespace = :ns"
                    + (" AND embedding IS NOT NULL" if embedded else "")
                ),
                {"ns": namespace},
            ).scalar_one()
        )


def _started(counter: Callable[[], int], timeout_s: float) -> tuple[float, int]:
    """When `counter` first counts a row (`perf_counter`), and how many it counts then."""
    deadline = time.monotonic() + timeout_s
    while (first := counter()) < 1:
        if time.monotonic() > deadline:
            raise TimeoutError("the workers did not start")
        time.sleep(0.01)
    return time.perf_counter(), first


def _rate(
    counter: Callable[[], int], total: int, since: tuple[float, int], timeout_s: float
) -> float:
    """Rows a second from `since` (a time and the rows then) until `counter` counts `total`."""
    deadline = time.monotonic() + timeout_s
    while counter() < total:
        if time.monotonic() > deadline:
            raise TimeoutError(f"only {counter()}/{total} after {timeout_s:g} s")
        time.sleep(0.02)
    started, first = since
    return (total - first) / (time.perf_counter() - started)


def _maximum(client: MemoryClient, turns: int) -> tuple[float, float]:
    """(turns stored a second, turns stored and embedded a second) draining a burst of
    `turns`, both from its first turn stored."""
    namespace = f"burst-{uuid.uuid4().hex[:6]}"
    events = _events(turns, namespace=namespace)
    for start in range(0, turns, BATCH):
        client.emit_many(events[start : start + BATCH])
    since = _started(lambda: _count(namespace, False), 300)
    stored = _rate(lambda: _count(namespace, False), turns, since, 300)
    embedded = _rate(lambda: _count(namespace, True), turns, since, 600)
    return stored, embedded


class Producer:
    """Batches of BATCH turns at `rate` turns a second, on a thread, until stopped."""

    def __init__(self, client: MemoryClient, rate: float) -> None:
        self.client, self.rate = client, rate
        self.sent = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        events = _events(int(self.rate * LOAD_MAX_S), namespace=f"load-{uuid.uuid4().hex[:6]}")
        started = time.perf_counter()
        while not self._stop.is_set() and self.sent < len(events):
            self.client.emit_many(events[self.sent : self.sent + BATCH])
            self.sent += BATCH
            delay = started + self.sent / self.rate - time.perf_counter()
            if delay > 0:
                self._stop.wait(delay)

    def close(self) -> int:
        """Stop; how many turns it sent."""
        self._stop.set()
        self._thread.join(timeout=30)
        return self.sent


def _probe(client: MemoryClient, count: int, load: float | None) -> tuple[list[Probe], float]:
    """`count` probes, under `load` turns a second (None: idle); (probes, the load kept)."""
    prober = Prober(client, f"probes-{uuid.uuid4().hex[:6]}")
    producer = Producer(client, load) if load else None
    started = time.perf_counter()
    try:
        for index in range(count):
            prober.emit(index)
            time.sleep(PROBE_EVERY_S)
        prober.wait(60)
    finally:
        kept = producer.close() / (time.perf_counter() - started) if producer else 0.0
        prober.close()
    _check_vectors(prober)
    return prober.probes, kept


def _check_vectors(prober: Prober) -> None:
    """Each probe's turn is found by a vector-only search for its words."""
    from continuum.recall.fusion import FusionWeights
    from continuum.recall.scope import SearchFilters
    from continuum.recall.search import search

    weights = FusionWeights(text=0.0)
    missing = 0
    for probe in prober.probes:
        hits = search(prober.namespace, probe.sentence, limit=10, weights=weights,
                      sources=("message",), filters=SearchFilters(user_id=USER))  # fmt: skip
        missing += not any(hit.source_message_ids == [probe.message_id] for hit in hits)
    if missing:
        console.print(f"[yellow]{missing} of {len(prober.probes)} probes not found by vector")


def _add(section: Section, probes: list[Probe], label: str, idle: bool) -> list[str]:
    """Rows of `probes` (p50, p95, max per way found); returns the done-when lines."""
    lines = []
    for what, (loaded_target, idle_target) in TARGETS.items():
        times = [p.found[what] * 1000 for p in probes if what in p.found]
        lost = len(probes) - len(times)
        if not times:
            section.add(f"{what}, {label}: never found", float(lost), None, "probes")
            continue
        note = f"{len(times)} probes" + (f", {lost} never found" if lost else "")
        for q, name in ((0.5, "p50"), (0.95, "p95"), (1.0, "max")):
            section.add(f"{what} {name}, {label}", percentile(times, q), None, "ms", note)
        target = idle_target if idle else loaded_target
        if target is not None:
            p95 = percentile(times, 0.95) if not lost else float("inf")
            verdict = "PASS" if p95 <= target else "FAIL"
            lines.append(f"{verdict} {what} p95, {label}: {p95:.0f} ms (target ≤ {target:g} ms)")
            section.add(f"done when: {what} p95, {label}", p95, None, "ms",
                        f"{verdict}: target ≤ {target:g} ms")  # fmt: skip
    return lines


def _workers(logs: Path) -> list[Any]:
    env = child_env()
    return [spawn(group_argv(name, loglevel="WARNING"), logs / f"{name}.log", env)
            for name in ("ingest", "embed")]  # fmt: skip


def run(urls: dict[str, str], options: Options) -> list[Section]:
    quick = options.quick
    burst, probes = (500, 10) if quick else (3000, 40)
    client = MemoryClient(urls["broker_url"])
    logs = logs_of("freshness")
    procs = _workers(logs)
    try:
        warm = Prober(client, f"warm-{uuid.uuid4().hex[:6]}")  # workers up, model loaded
        warm.emit(0)
        warm.wait(180)
        warm.close()
        stored, embedded = _maximum(client, burst)
        load = min(stored, embedded) / 2
        idle, _ = _probe(client, probes, None)
        loaded, kept = _probe(client, probes, load)
    finally:
        for proc in procs:
            stop(proc)
        client.close()
    section = Section(
        f"Freshness: from `emit` returning to found (probe every {PROBE_EVERY_S:g} s, polled "
        f"every {POLL_S * 1000:g} ms; workers: ingest + embed groups; machine load: shared)"
    )
    section.add("maximum: turns stored/s (burst)", stored, None, "turns/s", f"{burst} turns")
    section.add("maximum: turns stored and embedded/s (burst)", embedded, None, "turns/s",
                "from the first stored; memories embedded first")  # fmt: skip
    section.add("half load: turns/s emitted", kept, load, "turns/s", "half the lower maximum")
    lines = _add(section, idle, "idle", True) + _add(section, loaded, "half load", False)
    for line in lines:
        console.print(line)
    return [section]
