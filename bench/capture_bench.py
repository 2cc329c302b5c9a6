"""Capture benchmarks: enqueue latency, key-moment extraction, ingest, embedding outbox."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import redis

from bench.common import Options, Section, alternating, latencies_ms, timed
from bench.corpus import turns

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _events(count: int, namespace: str = "bench") -> list[dict[str, object]]:
    return [
        {
            "kind": "turn",
            "namespace": namespace,
            "session_id": f"s{i // 50}",
            "channel": "discord",
            "user_id": "u1",
            "ts": (T0 + timedelta(seconds=i)).isoformat(),
            "role": role,
            "content": text,
            "message_id": f"m{i}",
        }
        for i, (role, text) in enumerate(turns(count))
    ]


def enqueue(urls: dict[str, str], samples: int = 1000) -> Section:
    from continuum.contract.client import MemoryClient

    section = Section("Enqueue latency (producer → Redis broker)")
    client = MemoryClient(urls["broker_url"])
    events = iter(_events(samples + 10, namespace="enqueue"))
    ours = latencies_ms(lambda: client.emit(next(events)), samples)
    raw = redis.Redis.from_url(urls["broker_url"])
    payload = b"x" * 700  # about the size of one task message
    base = latencies_ms(lambda: raw.lpush("bench:raw", payload), samples)
    raw.delete("bench:raw", "events")  # nobody consumes these in the benchmark
    for q in ("p50_ms", "p95_ms"):
        section.add(f"emit() {q[:3]}", ours[q], base[q], "ms", "raw LPUSH of 700 B", False)
    client.close()
    return section


def extraction(count: int = 3000) -> Section:
    from continuum.capture import detect_key_moments
    from continuum.domain.memory import CaptureTurn
    from continuum.pipeline.ingest import ingest_batch

    section = Section("Capture throughput")
    capture_turns = [
        CaptureTurn(message_id=f"m{i}", role=role, content=text, session_id="s",  # type: ignore[arg-type]
                    created_at=T0 + timedelta(seconds=i))
        for i, (role, text) in enumerate(turns(count))
    ]  # fmt: skip
    with timed() as detect_s:
        found = sum(len(detect_key_moments(t)) for t in capture_turns)
    events = _events(count)
    with timed() as ingest_s:
        for start in range(0, count, 100):
            ingest_batch(events[start : start + 100])
    section.add("key-moment detection", count / detect_s[0], None, "turns/s",
                f"{found} memories from {count} turns")  # fmt: skip
    section.add("ingest batch (persist + detect + store)", count / ingest_s[0],
                count / detect_s[0], "turns/s", "detection alone")  # fmt: skip
    return section


def embedding(count: int = 1024, rounds: int = 3) -> Section:
    from sqlalchemy import text

    from continuum.inference.embedding import get_embedder
    from continuum.pipeline.outbox import embed_pending
    from continuum.store.engine import session_scope

    section = Section("Embedding throughput (all-MiniLM-L6-v2, CPU)")
    embedder = get_embedder()
    assert embedder is not None
    texts = [f"{body} (note {i})" for i, (_, body) in enumerate(turns(count, seed=11))]
    # Warm-up on the same texts: the model's first pass over new batch shapes is slower, and
    # would handicap whichever of the two ran first.
    embedder.embed(texts)
    embed_pending(time_budget_s=600)  # drain what earlier sections left, untimed

    def raw(round_no: int) -> float:
        with timed() as seconds:
            embedder.embed(texts)
        return count / seconds[0]

    def outbox(round_no: int) -> float:
        with session_scope() as db:
            db.execute(
                text(
                    "INSERT INTO memories (namespace, kind, content, idempotency_key) "
                    "SELECT :ns, 'fact', t, md5(t) FROM unnest(CAST(:t AS text[])) AS t"
                ),
                {"ns": f"embed-{round_no}", "t": texts},
            )
        with timed() as seconds:
            result = embed_pending(time_budget_s=600, tables=("memories",))
        assert result.embedded["memories"] == count
        return count / seconds[0]

    rates = alternating(rounds, {"raw": raw, "outbox": outbox})
    section.add("outbox embed (claim + encode + write)", rates["outbox"], rates["raw"],
                "rows/s", f"raw model encode() of the same texts; best of {rounds}")  # fmt: skip
    return section


def run(urls: dict[str, str], options: Options) -> list[Section]:
    quick = options.quick
    scale = 0.2 if quick else 1.0
    return [
        enqueue(urls, samples=int(1000 * scale)),
        extraction(count=int(3000 * scale)),
        embedding(count=int(1024 * scale), rounds=1 if quick else 3),
    ]
