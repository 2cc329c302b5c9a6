"""Recall benchmarks: retrieval quality on a synthetic long conversation (evidence turns
found in the top 5 / top 10, against recency-only, full-text-only and vector-only baselines
run on the same data), and context() / search() latency at 10k and 100k memories (and 1M
with --million)."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from datetime import UTC, datetime

from sqlalchemy import text

from bench.common import Options, Section, latencies_ms, timed
from bench.longconv import LongConversation, Question, generate

Ranker = Callable[[Question], list[str]]
_BASELINE_SQL = {
    "recency": "SELECT message_id FROM messages WHERE namespace = :ns AND created_at <= :now "
    "ORDER BY created_at DESC LIMIT :k",
    "full text": "SELECT message_id FROM messages WHERE namespace = :ns "
    "AND tsv @@ CAST(:tsq AS tsquery) ORDER BY ts_rank_cd(tsv, CAST(:tsq AS tsquery)) DESC LIMIT :k",
    "vector": "SELECT message_id FROM messages WHERE namespace = :ns "
    "ORDER BY embedding <=> CAST(:qv AS halfvec) LIMIT :k",
}


def _baseline(name: str, namespace: str, k: int) -> Ranker:
    from continuum.inference.embedding import get_embedder, vector_literal
    from continuum.recall.textquery import or_query, query_lexemes
    from continuum.store.engine import session_scope

    embedder = get_embedder()
    assert embedder is not None
    sql = text(_BASELINE_SQL[name])

    def rank(question: Question) -> list[str]:
        params = {"ns": namespace, "k": k, "now": question.now}
        if name == "vector":
            params["qv"] = vector_literal(embedder.embed([question.text])[0])
        with session_scope() as db:
            if name == "full text":  # every lexeme of the question, OR-ed, unbounded
                params["tsq"] = or_query(query_lexemes(db, question.text))
            return [row.message_id for row in db.execute(sql, params)]

    return rank


def _ours(namespace: str, k: int) -> Ranker:
    from continuum.recall.search import search

    def rank(question: Question) -> list[str]:
        hits = search(namespace, question.text, limit=2 * k, now=question.now)
        ordered = dict.fromkeys(m for hit in hits for m in hit.source_message_ids)
        return list(ordered)[:k]

    return rank


def _recall_at(rank: Ranker, questions: list[Question], k: int) -> float:
    found = [len(set(q.evidence) & set(rank(q)[:k])) / len(q.evidence) for q in questions]
    return sum(found) / len(found)


def load(conv: LongConversation) -> None:
    """Ingest `conv` through the real pipeline (key moments captured) and embed it all."""
    from continuum.pipeline.ingest import ingest_batch
    from continuum.pipeline.outbox import embed_pending

    for start in range(0, len(conv.events), 200):
        ingest_batch(conv.events[start : start + 200])
    embed_pending(time_budget_s=600)


def quality() -> Section:
    conv = generate()
    with timed() as load_s:
        load(conv)
    section = Section(
        f"Retrieval quality: synthetic long conversation ({len(conv.events)} turns, "
        f"{len(conv.questions)} questions; loaded in {load_s[0]:.0f}s)"
    )
    for k in (5, 10):
        ours = _recall_at(_ours(conv.namespace, k), conv.questions, k)
        for name in ("recency", "full text", "vector"):
            base = _recall_at(_baseline(name, conv.namespace, k), conv.questions, k)
            section.add(f"Recall@{k} of evidence turns", ours, base, "fraction", f"{name} only")
    kinds = sorted({q.kind for q in conv.questions})
    for kind in kinds:
        subset = [q for q in conv.questions if q.kind == kind]
        ours = _recall_at(_ours(conv.namespace, 10), subset, 10)
        base = _recall_at(_baseline("vector", conv.namespace, 10), subset, 10)
        section.add(f"Recall@10, {kind} ({len(subset)})", ours, base, "fraction", "vector only")
    return section


_FILL_SQL = """
INSERT INTO memories (namespace, user_id, kind, content, importance, tags, private,
                      created_at, idempotency_key, embedding)
SELECT 'lat', 'u' || (g % 5), (ARRAY['fact','decision','preference','open_thread',
        'context','conversation_summary'])[1 + g % 6],
       'note ' || g || ' about ' || w.words,
       1 + (g * 7) % 10, CASE WHEN g % 4 = 3 THEN ARRAY['status:open'] ELSE '{}' END,
       g % 50 = 0, :now - (g % 365) * interval '1 day' - (g % 997) * interval '1 minute',
       'lat-' || g,
       l2_normalize((SELECT array_agg(random() - 0.5 + 0 * g + 0 * d)
                     FROM generate_series(1, CAST(:dim AS int)) AS d)
                    ::real[]::vector)
FROM generate_series(CAST(:first AS int), CAST(:last AS int)) AS g
CROSS JOIN LATERAL (
    SELECT string_agg(CASE WHEN random() < 0.1 + 0 * g + 0 * i  -- 1 word in 10 is topical
                      THEN (string_to_array(CAST(:vocab AS text), ' '))
                           [1 + floor(random() * CAST(:n AS int))::int]
                      ELSE 'w' || floor(random() * 20000)::int END, ' ') AS words
    FROM generate_series(1, 10) AS i) AS w
"""
_VOCAB = (
    "garden drainage invoice plumber holiday lisbon piano guitar doctor appointment "
    "medication sister wedding budget deadline meeting report database migration deploy "
    "kubernetes python rust coffee tea volume speaker grandchildren birthday recipe soup "
    "marathon knee shoulder dentist landlord rent camping tent climbing market jazz"
)


def _fill(first: int, last: int, now: datetime, dim: int) -> None:
    from continuum.store.engine import get_engine, session_scope

    with session_scope() as db:
        db.execute(text("SELECT setseed(:seed)"), {"seed": first / (last + 1)})  # new rows
        db.execute(text("SET LOCAL max_parallel_workers_per_gather = 0"))
        db.execute(text("DROP INDEX IF EXISTS memories_embedding"))
        db.execute(
            text(_FILL_SQL),
            {
                "first": first,
                "last": last,
                "now": now,
                "dim": dim,
                "vocab": _VOCAB,
                "n": len(_VOCAB.split()),
            },
        )
    with session_scope() as db:  # the graph must fit in memory, or the build crawls
        db.execute(text("SET LOCAL maintenance_work_mem = '4GB'"))
        db.execute(
            text(
                "CREATE INDEX memories_embedding ON memories USING hnsw (embedding halfvec_cosine_ops)"
            )
        )
    # Steady state: without this, autovacuum wakes up for the new rows (and walks the HNSW
    # graph), and the checkpointer writes the fill's gigabytes out, on the same two cores
    # while latency is measured.
    with get_engine().connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("VACUUM (ANALYZE) memories, messages"))
        conn.execute(text("CHECKPOINT"))


def latency(sizes: tuple[int, ...], samples: int) -> Section:
    from continuum.config import get_settings
    from continuum.recall.context import context
    from continuum.recall.search import search

    section = Section("Recall latency (one process, query embedding included)")
    now = datetime(2026, 11, 24, 9, 30, tzinfo=UTC)
    seeds = itertools.cycle(
        [
            "what did we decide about the garden drainage invoice",
            "my sister's wedding budget",
            "database migration deadline",
            "doctor appointment and medication",
            "which recipe for soup",
            "what did I cook last weekend",  # a time phrase: in-window channels too
        ]
    )
    loaded = 0
    for size in sizes:
        with timed() as fill_s:
            _fill(loaded + 1, size, now, get_settings().embedding_dim)
        loaded = size
        # Warm-up: each seed once through each call, so no timed call is the first to touch
        # its pages after the fill (right after a million-row build, the first hundred
        # context calls ran 6-11 ms slower at p95 than the same calls a minute later).
        for _ in range(6):
            seed = next(seeds)
            context("lat", seed, 800, user_id="u1", now=now)
            search("lat", seed, limit=10, now=now)
        ours = latencies_ms(
            lambda: context("lat", next(seeds), 800, user_id="u1", now=now), samples
        )
        found = latencies_ms(lambda: search("lat", next(seeds), limit=10, now=now), samples)
        base = latencies_ms(
            lambda: search("lat", next(seeds), limit=10, sources=(), now=now), samples
        )
        note = f"{size:,} memories (+{fill_s[0]:.0f}s to generate and index)"
        for q in ("p50_ms", "p95_ms"):
            section.add(f"context() {q[:3]} @ {size:,}", ours[q], found[q], "ms",
                        "search() alone; " + note, higher_is_better=False)  # fmt: skip
            section.add(f"search() {q[:3]} @ {size:,}", found[q], base[q], "ms",
                        "query embedding alone (no SQL)", higher_is_better=False)  # fmt: skip
    return section


def run(urls: dict[str, str], options: Options) -> list[Section]:
    sizes: tuple[int, ...] = (10_000,) if options.quick else (10_000, 100_000)
    if options.million:
        sizes += (1_000_000,)
    return [quality(), latency(sizes, 40 if options.quick else 100)]
