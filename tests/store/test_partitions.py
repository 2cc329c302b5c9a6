"""Tenants partitioned (migration 0018): the per-tenant tables are hash-partitioned on the
namespace with the namespace in every key; a tenant's search and context block read its
partition alone, through that partition's HNSW and GIN indexes (the real statements,
caught on the engine and explained, over enough rows that the planner picks the indexes
on its own); and the migration converts a populated database in place, and back."""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import UniqueConstraint, text

from continuum.config import get_settings
from continuum.dev import embedding_writes
from continuum.memory.tool_calls import MemoryTools
from continuum.memory.user_tasks import create_task, list_tasks
from continuum.pipeline.ingest import ingest_batch
from continuum.pipeline.outbox import embed_pending
from continuum.recall.context import context
from continuum.recall.rankings import SEARCH_SETTINGS
from continuum.recall.search import search
from continuum.store import migrate
from continuum.store.engine import get_engine, session_scope, statements_run
from continuum.store.models import Base
from continuum.store.partitions import PARTITIONED, PARTITIONS, partition_of
from continuum.sync.views import ensure_views
from tests.support.events import session_end, turn, voice_turns
from tests.support.plans import partition_indexes
from tests.support.seed import seed

PLAIN = ("dead_letters", "transcript_cursors", "sync_problems", "maintenance_runs", "data_keys",
         "forget_tombstones", "api_tokens", "system_state")  # fmt: skip
PARTITION_NAME = re.compile(r"\b([a-z_]+)__p(\d\d)\b")


def _scalars(sql: str, **params: Any) -> list[Any]:
    with session_scope() as db:
        return list(db.execute(text(sql), params).scalars())


def _partitioned(table: str) -> bool:
    return bool(_scalars("SELECT count(*) FROM pg_partitioned_table WHERE partrelid = to_regclass(:t)", t=table)[0])  # fmt: skip


def test_every_tenant_table_is_hash_partitioned_and_keyed_by_tenant(db: Any) -> None:
    for table in PARTITIONED:
        [strategy] = _scalars(
            "SELECT partstrat FROM pg_partitioned_table WHERE partrelid = to_regclass(:t)", t=table
        )
        assert strategy == "h", table
        parts = _scalars(
            "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
            " WHERE i.inhparent = to_regclass(:t) ORDER BY 1",
            t=table,
        )
        assert parts == [f"{table}__p{r:02d}" for r in range(PARTITIONS)]
        keys = _scalars(
            "SELECT conname || ':' || array_to_string(ARRAY(SELECT attname FROM pg_attribute"
            " WHERE attrelid = conrelid AND attnum = ANY(conkey)), ',') FROM pg_constraint"
            " WHERE conrelid = to_regclass(:t) AND contype IN ('p', 'u')",
            t=table,
        )
        assert keys and all("namespace" in key.split(":")[1].split(",") for key in keys), keys
    assert not any(_partitioned(table) for table in PLAIN)


def _keys(table: str) -> tuple[list[str], set[tuple[str, ...]]]:
    """The primary key's columns of `table` in order, and its unique keys' columns."""
    with session_scope() as db_session:
        rows = db_session.execute(
            text(
                "SELECT contype, ARRAY(SELECT a.attname FROM unnest(conkey) WITH ORDINALITY"
                " AS k(attnum, i) JOIN pg_attribute a ON a.attrelid = conrelid"
                " AND a.attnum = k.attnum ORDER BY k.i) AS columns FROM pg_constraint"
                " WHERE conrelid = to_regclass(:t) AND contype IN ('p', 'u')"
            ),
            {"t": table},
        ).all()
    [primary] = [list(row.columns) for row in rows if row.contype == "p"]
    return primary, {tuple(row.columns) for row in rows if row.contype == "u"}


def test_the_models_carry_the_keys_the_migrations_made(db: Any) -> None:
    """What SQLAlchemy takes for a row's identity (`session.get`, the UPDATE of a loaded
    row) and for its unique keys is what the partitioned tables have."""
    for table in Base.metadata.sorted_tables:
        if table.name not in PARTITIONED:
            continue
        unique = {
            tuple(column.name for column in constraint.columns)
            for constraint in table.constraints
            if isinstance(constraint, UniqueConstraint)
        }
        assert _keys(table.name) == ([c.name for c in table.primary_key.columns], unique)
        assert table.dialect_options["postgresql"]["partition_by"] == "HASH (namespace)"


def test_a_namespace_always_lands_in_the_partition_partition_of_names(db: Any) -> None:
    seed("pearl", sessions=1, turns=2)
    seed("entrepreneur", sessions=1, turns=2)
    with session_scope() as db_session:
        for namespace in ("pearl", "entrepreneur"):
            for table in ("messages", "memories", "sessions"):
                held = db_session.execute(
                    text(
                        f"SELECT DISTINCT tableoid::regclass::text FROM {table} WHERE namespace = :ns"
                    ),
                    {"ns": namespace},
                ).scalars()
                assert list(held) == [partition_of(db_session, table, namespace)]


# -- one partition per tenant, and its indexes ---------------------------------------------

ROWS = 4000  # a tenant's rows per table: enough that the planner reads its indexes unasked
TOPICS = [
    "garden",
    "invoice",
    "knee",
    "tea",
    "jazz",
    "marathon",
    "dentist",
    "rent",
    "camping",
    "soup",
]


def _fill(namespace: str, rows: int) -> None:
    """`rows` memories and turns of `namespace` with random unit-ish vectors, and three of
    each about a ferry to Zanzibar (the only rows holding those words)."""
    params = {"ns": namespace, "n": rows, "dim": get_settings().embedding_dim, "topics": TOPICS}
    vector = "CAST(CAST((SELECT array_agg(random() - 0.5) FROM generate_series(1, :dim) WHERE n > 0) AS real[]) AS halfvec)"  # fmt: skip
    words = "CASE WHEN n <= 3 THEN 'the Zanzibar ferry leaves at noon' ELSE 'talked about ' || (CAST(:topics AS text[]))[1 + n % 10] || ' again, note ' || n END"  # fmt: skip
    with session_scope() as db_session:
        db_session.execute(
            text(
                "INSERT INTO memories (namespace, user_id, kind, content, idempotency_key,"
                f" importance, created_at, embedding) SELECT :ns, 'jason', 'fact', {words},"
                f" 'bulk-' || n, 1 + n % 10, now() - n * interval '1 hour', {vector}"
                " FROM generate_series(1, :n) AS n"
            ),
            params,
        )
        db_session.execute(
            text(
                "INSERT INTO messages (namespace, session_id, message_id, role, content, user_id,"
                f" channel, created_at, embedding) SELECT :ns, 'bulk-' || (n / 50), 'm' || n,"
                f" 'user', {words}, 'jason', 'voice', now() - n * interval '1 hour', {vector}"
                " FROM generate_series(1, :n) AS n"
            ),
            params,
        )
    with get_engine().connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("ANALYZE memories, messages"))


def plan(statement: str, parameters: Any) -> str:
    """The statement's plan under the settings every search runs with."""
    with get_engine().connect() as conn:
        for name, value in SEARCH_SETTINGS.items():
            conn.execute(text("SELECT set_config(:n, :v, true)"), {"n": name, "v": value})
        rows = conn.exec_driver_sql(f"EXPLAIN {statement}", parameters).scalars()
        found = "\n".join(rows)
        conn.rollback()
        return found


def test_a_tenants_search_and_context_read_its_partition_through_its_indexes(db: Any) -> None:
    _fill("pearl", ROWS)
    _fill("entrepreneur", ROWS // 10)  # another tenant's rows, wherever they land
    with session_scope() as db_session:
        mine = {table: partition_of(db_session, table, "pearl") for table in PARTITIONED}
    with statements_run() as statements:
        hits = search("pearl", "when does the Zanzibar ferry leave?", limit=5)
        block = context("pearl", "the Zanzibar ferry", 600, user_id="jason", channel="voice")
    assert hits and "Zanzibar" in hits[0].content and block.items
    read = {"vector": [], "text": []}
    for statement, parameters in statements:
        if not statement.lstrip().upper().startswith(("SELECT", "WITH", "(SELECT", "(WITH")):
            continue  # the recall log's INSERT
        explained = plan(statement, parameters)
        for table, remainder in PARTITION_NAME.findall(explained):
            assert f"{table}__p{remainder}" == mine[table], (statement, explained)
        for table in ("memories", "messages"):
            if f"FROM {table} WHERE" not in statement:
                continue
            if "<=> CAST(:qv" in statement or "<=> CAST(%(qv)s" in statement:
                read["vector"].append(table)
                [index] = partition_indexes(f"{table}_embedding", mine[table])
                assert f"Index Scan using {index} " in explained, explained
            if "@@ CAST(%(tsm_" in statement:
                read["text"].append(table)
                [index] = partition_indexes(f"{table}_tsv", mine[table])
                assert f"Bitmap Index Scan on {index}" in explained, explained
    # search and the context block's relevance channel each rank both tables by vector and
    # by text, the text through their GIN indexes; every statement pruned above
    assert sorted(read["vector"]) == ["memories"] * 2 + ["messages"] * 2
    assert sorted(read["text"]) == ["memories"] * 2 + ["messages"] * 2


# -- the migration, on a populated database ------------------------------------------------

TABLES = (*PARTITIONED, *PLAIN)


def _fingerprints() -> dict[str, tuple[int, str]]:
    """Per table, its row count and a digest of every row as text (every column, vectors,
    full-text terms and sealed values included), in an order that does not depend on keys."""
    found = {}
    with session_scope() as db_session:
        for table in TABLES:
            found[table] = tuple(
                db_session.execute(
                    text(
                        f"SELECT count(*), md5(coalesce(string_agg(t::text, E'\\n'"
                        f" ORDER BY t::text), '')) FROM {table} t"
                    )
                ).one()
            )
    return found


def _indexes() -> set[str]:
    """Every index that is no key of its table, as its definition on the table itself."""
    return {
        definition.replace(" ON ONLY ", " ON ")
        for definition in _scalars(
            "SELECT pg_get_indexdef(i.indexrelid) FROM pg_index i JOIN pg_class c"
            " ON c.oid = i.indrelid WHERE c.relname = ANY(:tables)"
            " AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid"
            " AND k.conrelid = i.indrelid)",
            tables=list(TABLES),
        )
    }


def _answers() -> tuple[list[Any], list[Any], str, str, list[str]]:
    def shown(hits: list[Any]) -> list[Any]:
        return [(hit.source, hit.id, hit.content) for hit in hits]

    return (
        shown(search("pearl", "which landscaper for the garden", limit=5)),
        shown(search("vault", "where is the shed key", limit=5)),
        context("pearl", "garden drainage", 500, user_id="jason", channel="voice").block,
        context("vault", "shed key", 500, user_id="jason", channel="voice").block,
        [task.title for task in list_tasks("vault", "jason")],
    )


def _populate(vault: str) -> None:
    """At 0017, through the writers: turns, sessions, memories and events of a plain and an
    encrypted tenant, their vectors (recorded by the dev trigger), a superseded memory,
    tasks, cron reports, an LLM call and a per-instance view."""
    ingest_batch([*voice_turns(), session_end()])
    ingest_batch([
        turn("The shed key is under the blue stone.", namespace=vault, message_id="k1",
             metadata={"place": "the garden"}),
        turn("Remind me to call the plumber on Friday.", namespace=vault, at=5),
        session_end(namespace=vault, at=30),
    ])  # fmt: skip
    embedding_writes.install()
    embed_pending()
    tools = MemoryTools("pearl", user_id="jason")
    tools.store_memory(memory_type="preference", key="tea", value="Earl Grey")
    tools.update_memory(existing_key="tea", new_value="Assam, strong")
    create_task(vault, "Call the plumber about the boiler", user_id="jason")
    seed("pearl", sessions=2, turns=4)
    with session_scope() as db_session:
        ensure_views(db_session, ["pearl"])
        db_session.execute(
            text(
                "INSERT INTO llm_calls (namespace, model, prompt, prompt_version, outcome,"
                " requests, latency_ms) VALUES ('pearl', 'm', 'summary', '1', 'ok', 1, 40)"
            )
        )


def test_the_migration_converts_a_populated_database_in_place_and_back(
    db: Any, servers: dict[str, str], encrypted: str
) -> None:
    url = servers["database_url"]
    migrate.downgrade(url, "0017")
    try:
        assert not any(_partitioned(table) for table in PARTITIONED)
        _populate(encrypted)
        with session_scope() as db_session:
            sealed = db_session.scalar(
                text(
                    "SELECT count(*) FROM messages WHERE namespace = :ns AND content LIKE 'enc2:%'"
                ),
                {"ns": encrypted},
            )
            superseded = db_session.scalar(
                text("SELECT id FROM memories WHERE key = 'tea' AND status = 'superseded'")
            )
        assert sealed and superseded  # what the copy must carry over is there
        answers = _answers()  # (the context block logs its recall: before the digests)
        before, indexes = _fingerprints(), _indexes()
        top = {t: _scalars(f"SELECT max(id) FROM {t}")[0] for t in PARTITIONED if t != "processed_events"}  # fmt: skip

        migrate.upgrade(url)
        assert all(_partitioned(table) for table in PARTITIONED)
        assert _fingerprints() == before
        assert _indexes() == indexes
        assert _answers() == answers
        pearls = "SELECT count(*) FROM messages WHERE namespace = 'pearl'"
        assert _scalars("SELECT count(*) FROM messages_pearl") == _scalars(pearls) != [0]
        # ids go on from the same sequences; the vector trigger still records its table
        ingest_batch([turn("A new turn after the migration.", message_id="after-1")])
        embed_pending()
        [new_id] = _scalars("SELECT id FROM messages WHERE message_id = 'after-1'")
        assert new_id > top["messages"]
        logged = _scalars(f"SELECT tbl FROM {embedding_writes.LOG} WHERE row_id = :id", id=new_id)
        assert logged == ["messages"]
        with session_scope() as db_session:  # deleting its successor clears the link alone
            db_session.execute(text("DELETE FROM memories WHERE status = 'active' AND key = 'tea'"))
        link = "SELECT namespace, superseded_by FROM memories WHERE id = :id"
        with session_scope() as db_session:
            assert tuple(db_session.execute(text(link), {"id": superseded}).one()) == (
                "pearl",
                None,
            )

        after = _fingerprints()
        migrate.downgrade(url, "0017")
        assert not any(_partitioned(table) for table in PARTITIONED)
        assert _fingerprints() == after
    finally:
        migrate.upgrade(url)  # the rest of the run is at head
        embedding_writes.uninstall()
