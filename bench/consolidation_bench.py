"""Consolidation benchmark: weekly maintenance (plan + apply) over 100k and, when it fits in
about three minutes, 1M memories, beside a full-table scan of the same rows.

Rows are generated with COPY (binary) into a database of their own: deterministic random
kinds, keys, topics, ages and unit vectors (seed 7), 1 % contested claims, 2 % forgotten and
3 % superseded rows. The HNSW index is dropped there: maintenance groups by kind and key
(or topic) and never asks for nearest neighbours, and building the index would dominate.
"""

from __future__ import annotations

import hashlib
import os
import time
from datetime import UTC, datetime, timedelta

import numpy as np
import psycopg
from pgvector import HalfVector

from bench.common import Options, Section, timed

DATABASE = "continuum_consolidation"
NAMESPACE = "bench"
NOW = datetime(2026, 11, 25, tzinfo=UTC)
KINDS = ("fact", "preference", "decision", "open_thread", "context", "wellbeing")
COLUMNS = (
    "namespace, user_id, kind, key, content, tags, importance, status, trust, "
    "claim_subject, claim_predicate, claim_value, idempotency_key, created_at, updated_at, "
    "source_message_ids, embedding"
)
TYPES = ["text"] * 5 + ["text[]", "int2", "text", "int2"] + ["text"] * 4
TYPES += ["timestamptz", "timestamptz", "text[]", "halfvec"]
BASELINE_SQL = "SELECT kind, key, count(*) FROM memories WHERE namespace = %s GROUP BY kind, key"


def _database(urls: dict[str, str]) -> str:
    """A fresh database for the generated rows, migrated, without the HNSW index."""
    from continuum.store import migrate

    admin = urls["database_url"].replace("+psycopg", "")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{DATABASE}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{DATABASE}"')
    base, _, query = urls["database_url"].partition("?")
    url = f"{base.rsplit('/', 1)[0]}/{DATABASE}?{query}"
    migrate.upgrade(url)
    with psycopg.connect(url.replace("+psycopg", ""), autocommit=True) as conn:
        conn.execute("DROP INDEX memories_embedding")
    return url


def _generate(url: str, count: int, seed: int = 7) -> None:
    from pgvector.psycopg import register_vector

    rng = np.random.default_rng(seed)
    with psycopg.connect(url.replace("+psycopg", "")) as conn:
        register_vector(conn)
        conn.execute("TRUNCATE memories RESTART IDENTITY CASCADE")
        with (
            conn.cursor() as cur,
            cur.copy(f"COPY memories ({COLUMNS}) FROM STDIN (FORMAT BINARY)") as copy,
        ):
            copy.set_types(TYPES)
            for start in range(0, count, 10_000):
                n = min(10_000, count - start)
                vectors = rng.standard_normal((n, 384), dtype=np.float32)
                vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
                kinds = rng.integers(0, len(KINDS), n)
                keyed = rng.random(n) < 0.2
                keys = rng.integers(0, count // 20 + 1, n)
                topics = rng.integers(0, count // 50 + 1, n)
                ages = rng.random(n) * 730
                roll = rng.random(n)
                for i in range(n):
                    row = start + i
                    created = NOW - timedelta(days=float(ages[i]))
                    contested = roll[i] < 0.01
                    status = (
                        "forgotten"
                        if roll[i] > 0.98
                        else "superseded"
                        if roll[i] > 0.95
                        else "active"
                    )
                    copy.write_row((
                        NAMESPACE, f"u{row % 10}", KINDS[kinds[i]],
                        f"key_{keys[i]}" if keyed[i] or contested else None,
                        f"memory {row} about topic {topics[i]}", [f"topic:t{topics[i]}"],
                        int(1 + row % 10), status, int(1 + row % 4),
                        "user" if contested else None,
                        f"key_{keys[i] % 100}" if contested else None,
                        str(row % 3) if contested else None,
                        hashlib.md5(str(row).encode()).hexdigest(), created, created,
                        [f"m{row}"], HalfVector(vectors[i]),
                    ))  # fmt: skip
        conn.execute("ANALYZE memories")
        conn.commit()


def _measure(url: str, count: int, section: Section) -> float:
    from continuum.config import get_settings
    from continuum.maintenance.plan import plan
    from continuum.maintenance.rules import MaintenanceConfig
    from continuum.maintenance.run import maintain

    with timed() as generate_s:
        _generate(url, count)
    previous = os.environ.get("CONTINUUM_DATABASE_URL")
    os.environ["CONTINUUM_DATABASE_URL"] = url
    get_settings.cache_clear()
    try:
        with psycopg.connect(url.replace("+psycopg", "")) as conn:
            conn.execute(BASELINE_SQL, (NAMESPACE,)).fetchall()  # warm the cache
            with timed() as baseline_s:
                conn.execute(BASELINE_SQL, (NAMESPACE,)).fetchall()
        config = MaintenanceConfig(step_size=5_000)
        with timed() as plan_s:
            steps = plan(NAMESPACE, NOW, config)
        with timed() as run_s:
            report = maintain(NAMESPACE, now=NOW, config=config, force=True)
    finally:
        if previous is not None:
            os.environ["CONTINUUM_DATABASE_URL"] = previous
        get_settings.cache_clear()
    touched = sum(v for k, v in report.applied.items() if k != "memory_md")
    label = f"{count // 1000}k memories"
    section.add(f"plan (dry run), {label}", plan_s[0], baseline_s[0], "s",
                "GROUP BY kind, key full scan", higher_is_better=False)  # fmt: skip
    section.add(f"plan + apply, {label}", run_s[0], baseline_s[0], "s",
                f"{len(steps)} steps, {touched:,} rows changed", higher_is_better=False)  # fmt: skip
    section.add(f"generate with COPY, {label}", count / generate_s[0], None, "rows/s")
    return generate_s[0] + plan_s[0] + run_s[0]


def run(urls: dict[str, str], options: Options) -> list[Section]:
    quick = options.quick
    section = Section("Weekly consolidation (maintenance) time")
    url = _database(urls)
    started = time.perf_counter()
    small = 10_000 if quick else 100_000
    spent = _measure(url, small, section)
    if not quick and spent * 10 < 180:  # roughly linear: 1M only if it fits in ~3 minutes
        _measure(url, 1_000_000, section)
    else:
        section.rows.append({"metric": "1M memories", "ours": 0, "baseline": None, "unit": "",
                             "ratio": None, "note": f"skipped: {small:,} took {spent:.0f}s"})  # fmt: skip
    section.rows[-1]["note"] += f" (section {time.perf_counter() - started:.0f}s)"
    return [section]
