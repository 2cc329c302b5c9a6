"""The embedding outbox: rows are written with `embedding IS NULL`; this fills them in.

Batches are claimed with `FOR UPDATE SKIP LOCKED`, so any number of embed workers share the
backlog without overlap, and a crash simply leaves the rows to be claimed again. The model
that produced the stored vectors is recorded in `system_state`; a different configured
model refuses to mix vectors until `continuum reembed` has cleared them.
"""

from __future__ import annotations

import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, cast

from pgvector import HalfVector
from pgvector.psycopg.halfvec import register_halfvec_info
from psycopg.types import TypeInfo
from sqlalchemy import text
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session as DbSession

from continuum.config import ConfigError, get_settings
from continuum.inference.embedding import Embedder, get_embedder
from continuum.sealing.envelope import read_text
from continuum.store import lsn_tokens
from continuum.store.engine import driver_connection, session_scope
from continuum.store.models import SystemState

EMBEDDED_TABLES = ("memories", "messages")
# Rows waiting for a vector: none of a tenant in no-vector mode (CONTINUUM_NO_VECTOR_TENANTS).
PENDING = "embedding IS NULL AND namespace <> ALL(CAST(:no_vectors AS text[]))"
MODEL_STATE_KEY = "embedding_model"
# Encode batches claimed at once: sorting this many rows by length before cutting them into
# batches pads each batch far less than encoding every batch in id order.
CLAIM_BATCHES = 8


@dataclass
class OutboxResult:
    embedded: dict[str, int]
    seconds: float

    @property
    def total(self) -> int:
        return sum(self.embedded.values())


def _check_model(db: DbSession, embedder: Embedder) -> None:
    wanted = {"model": embedder.model_name, "dim": embedder.dim}
    stmt = insert(SystemState).values(key=MODEL_STATE_KEY, value=wanted)
    db.execute(stmt.on_conflict_do_nothing(index_elements=["key"]))
    stored = db.get(SystemState, MODEL_STATE_KEY)
    if stored is not None and stored.value != wanted:
        raise ConfigError(
            f"stored vectors come from {stored.value}, the configured model is {wanted}: "
            "run `continuum reembed` to switch models"
        )


def embed_batch(table: str, embedder: Embedder, batch_size: int, deadline: float) -> int:
    """Claim up to `CLAIM_BATCHES` × `batch_size` rows of `table` without embeddings and fill
    them in, shortest texts first, one encode batch at a time until the monotonic `deadline`
    (the first batch always runs); rows left when it passes are released at commit. Each
    batch's vectors are written on a background thread while the next batch encodes (the
    model releases the GIL), one write in flight at a time, all in the claiming transaction.
    """
    if table not in EMBEDDED_TABLES:
        raise ValueError(f"no embedding outbox for table {table!r}")
    with session_scope() as db:
        _check_model(db, embedder)
        rows = db.execute(
            text(
                f"SELECT id, namespace, content FROM {table} WHERE {PENDING} "
                "ORDER BY id LIMIT :n FOR UPDATE SKIP LOCKED"
            ),
            {"n": batch_size * CLAIM_BATCHES, "no_vectors": get_settings().no_vector_tenants},
        ).all()
        lsn_tokens.wrote(db, {row.namespace for row in rows})
        halfvec = TypeInfo.fetch(driver_connection(db), "halfvec")
        assert halfvec is not None, "pgvector's halfvec type is missing: run `continuum db upgrade`"
        kind = f"{table}.content"
        # Batches of similar lengths pad less: sorted over the whole claim, not per batch.
        # A damaged sealed row is embedded as it reads (UNREADABLE), so it leaves the outbox
        # instead of failing every claim that holds it.
        pending = sorted(
            ((read_text(row.content, kind, row.id), row.id) for row in rows),
            key=lambda item: len(item[0]),
        )
        embedded = 0
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="embed-write") as writer:
            written: Future[None] | None = None
            while pending and (not embedded or time.monotonic() < deadline):
                batch, pending = pending[:batch_size], pending[batch_size:]
                vectors = embedder.embed([content for content, _ in batch])
                if written is not None:
                    written.result()
                ids = [row_id for _, row_id in batch]
                written = writer.submit(_write_vectors, db, table, ids, vectors, halfvec)
                embedded += len(batch)
            if written is not None:
                written.result()
        return embedded


def _write_vectors(
    db: DbSession, table: str, ids: list[int], vectors: list[list[float]], halfvec: TypeInfo
) -> None:
    """Store `vectors` in binary: formatting 1,024 vectors as text and parsing them again
    cost about 4% of the model's own encode time."""
    with driver_connection(db).cursor() as cur:
        # pgvector's adapters, on this cursor only (its stub types a connection; a cursor
        # has the same adapters map).
        register_halfvec_info(cast(Any, cur), halfvec)
        cur.execute(
            f"UPDATE {table} AS t SET embedding = v.e "
            "FROM unnest(CAST(%s AS bigint[]), %b) AS v(id, e) WHERE t.id = v.id",
            (ids, [HalfVector(vector) for vector in vectors]),
        )


def embed_pending(
    time_budget_s: float = 20.0, tables: tuple[str, ...] = EMBEDDED_TABLES
) -> OutboxResult:
    """Fill embeddings, memories first, until the outbox is empty or the budget is spent."""
    started = time.monotonic()
    deadline = started + time_budget_s
    embedded = dict.fromkeys(tables, 0)
    embedder = get_embedder()
    if embedder is None:
        return OutboxResult(embedded, 0.0)
    batch_size = get_settings().embed_batch_size
    for table in tables:
        while time.monotonic() < deadline:
            count = embed_batch(table, embedder, batch_size, deadline)
            embedded[table] += count
            if count < batch_size * CLAIM_BATCHES:
                break
    return OutboxResult(embedded, time.monotonic() - started)


def pending_counts(namespaces: list[str] | None = None) -> dict[str, int]:
    """Rows waiting for their embedding, per table: of `namespaces`, or of every tenant."""
    params = {"no_vectors": get_settings().no_vector_tenants, "ns": namespaces}
    only = " AND (CAST(:ns AS text[]) IS NULL OR namespace = ANY(CAST(:ns AS text[])))"
    with session_scope() as db:
        return {
            table: int(
                db.execute(
                    text(f"SELECT count(*) FROM {table} WHERE {PENDING}{only}"), params
                ).scalar()
                or 0
            )
            for table in EMBEDDED_TABLES
        }


def reset_embeddings() -> dict[str, int]:
    """Clear every vector and the recorded model (`continuum reembed`), then refill lazily."""
    embedder = get_embedder()
    settings = get_settings()
    dim = embedder.dim if embedder else settings.embedding_dim
    cleared = {}
    with session_scope() as db:
        for table in EMBEDDED_TABLES:
            result = db.execute(text(f"UPDATE {table} SET embedding = NULL"))
            cleared[table] = int(result.rowcount or 0)  # type: ignore[attr-defined]
            db.execute(text(f"DROP INDEX IF EXISTS {table}_embedding"))
            _retype_embedding(db, table, f"halfvec({dim})")
            db.execute(
                text(
                    f"CREATE INDEX {table}_embedding ON {table} "
                    "USING hnsw (embedding halfvec_cosine_ops)"
                )
            )
        db.execute(text("DELETE FROM system_state WHERE key = :k"), {"k": MODEL_STATE_KEY})
    return cleared


def _retype_embedding(db: DbSession, table: str, column_type: str) -> None:
    """Give `table.embedding` the type `column_type`. Postgres refuses to retype a column
    that a view reads (the per-instance views of transcript sync read every column), so
    those views are dropped and recreated from their own definitions around the change."""
    current = db.scalar(
        text(
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
            "WHERE attrelid = CAST(:table AS regclass) AND attname = 'embedding'"
        ),
        {"table": table},
    )
    if current == column_type:
        return
    views = db.execute(
        text(
            "SELECT DISTINCT view.relname, pg_get_viewdef(view.oid) FROM pg_depend dep "
            "JOIN pg_rewrite rule ON rule.oid = dep.objid "
            "JOIN pg_class view ON view.oid = rule.ev_class "
            "WHERE dep.classid = 'pg_rewrite'::regclass "
            "AND dep.refobjid = CAST(:table AS regclass) AND view.oid <> dep.refobjid"
        ),
        {"table": table},
    ).all()
    for name, _ in views:
        db.execute(text(f'DROP VIEW "{name}"'))
    db.execute(text(f"ALTER TABLE {table} ALTER COLUMN embedding TYPE {column_type}"))
    for name, definition in views:
        db.execute(text(f'CREATE VIEW "{name}" AS {definition}'))
