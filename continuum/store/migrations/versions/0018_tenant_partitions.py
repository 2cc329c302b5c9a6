"""Tenants partitioned (#32): the per-tenant tables that grow with traffic become
`PARTITION BY HASH (namespace)` in 16 partitions, and every primary and unique key of them
carries `namespace` (which a partitioned table requires, and Citus too). A query scoped to a
tenant reads one partition and that partition's indexes: a smaller HNSW graph, GIN index
and btrees per search, whatever the other tenants hold.

Partitioned: `sessions`, `messages`, `cron_reports`, `memories`, `tasks`, `memory_log`,
`processed_events` and `llm_calls`, each row of which comes with a turn, an event or an LLM
call. The rest stay plain tables: `dead_letters` (its namespace may be NULL and it is read
across tenants), and the small ones, a row per tenant, user, file, week or token
(`transcript_cursors`, `sync_problems`, `maintenance_runs`, `data_keys`,
`forget_tombstones`, `api_tokens`, `system_state`).

Each table is converted in place, inside the migration's transaction (writers must be
stopped: the table is locked while its rows are copied): a partitioned copy made `LIKE` the
table (its column types, defaults, generated columns and checks, so the embedding keeps its
dimension), its rows copied, the table dropped and the copy renamed; then its keys, every
other index the table had (HNSW, GIN, btree, as `pg_get_indexdef` wrote them), its
triggers and the views over it are made again. The id sequence is kept (ids go on
increasing). Keys: `PRIMARY KEY (id, namespace)`, led by the id so a lookup by id alone
still finds a row through each partition's key index; `processed_events` keeps
`(namespace, event_id)`; a unique key gains `namespace` if it lacked it (`tasks.task_id`);
`memories.superseded_by` references `(id, namespace)`, its deletion setting only
`superseded_by` to NULL.

16 partitions, fixed: a query that names no tenant (the outbox's backlog, the session
sweep) plans and opens every partition, and an index is built per partition, so the count
is kept low; 16 still divides the largest tables' indexes by 16. Partition `r` of `t` is
`t__pNN` (a double underscore: no per-instance view, `messages_<slug>`, can take the name).

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-26
"""

from dataclasses import dataclass

from alembic import op
from sqlalchemy import text

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

PARTITIONS = 16


@dataclass(frozen=True)
class Keys:
    """A table's primary key, unique keys and foreign key (`memories_superseded_by_fkey`,
    its SQL) in one shape."""

    primary: tuple[str, ...]
    unique: tuple[tuple[str, ...], ...] = ()
    foreign: str = ""


def _partitioned(unique: tuple[tuple[str, ...], ...] = (), foreign: str = "") -> Keys:
    return Keys(("id", "namespace"), unique, foreign)


BEFORE = {
    "sessions": Keys(("id",), (("namespace", "session_id"),)),
    "messages": Keys(("id",), (("namespace", "session_id", "message_id"),)),
    "cron_reports": Keys(("id",), (("namespace", "session_id"),)),
    "memories": Keys(
        ("id",),
        (("namespace", "idempotency_key"),),
        "FOREIGN KEY (superseded_by) REFERENCES memories (id) ON DELETE SET NULL",
    ),
    "tasks": Keys(("id",), (("task_id",),)),
    "memory_log": Keys(("id",)),
    "processed_events": Keys(("namespace", "event_id")),
    "llm_calls": Keys(("id",)),
}
AFTER = {
    "sessions": _partitioned((("namespace", "session_id"),)),
    "messages": _partitioned((("namespace", "session_id", "message_id"),)),
    "cron_reports": _partitioned((("namespace", "session_id"),)),
    "memories": _partitioned(
        (("namespace", "idempotency_key"),),
        "FOREIGN KEY (superseded_by, namespace) REFERENCES memories (id, namespace)"
        " ON DELETE SET NULL (superseded_by)",
    ),
    "tasks": _partitioned((("namespace", "task_id"),)),
    "memory_log": _partitioned(),
    "processed_events": Keys(("namespace", "event_id")),
    "llm_calls": _partitioned(),
}


def _strings(sql: str, **params: str) -> list[str]:
    return [str(value) for value in op.get_bind().execute(text(sql), params).scalars()]


def _rebuild(table: str, keys: Keys, *, partitioned: bool) -> None:
    """Make `table` again, partitioned or not, with `keys`: same columns, rows, sequence,
    indexes, triggers and views."""
    columns = ", ".join(
        _strings(
            "SELECT quote_ident(attname) FROM pg_attribute WHERE attrelid = to_regclass(:t)"
            " AND attnum > 0 AND NOT attisdropped AND attgenerated = '' ORDER BY attnum",
            t=table,
        )
    )
    indexes = _strings(
        "SELECT pg_get_indexdef(i.indexrelid) FROM pg_index i WHERE i.indrelid = to_regclass(:t)"
        " AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conrelid = i.indrelid"
        " AND c.conindid = i.indexrelid AND c.contype IN ('p', 'u', 'x'))"
        " ORDER BY i.indexrelid",
        t=table,
    )
    triggers = _strings(
        "SELECT pg_get_triggerdef(oid) FROM pg_trigger WHERE tgrelid = to_regclass(:t)"
        " AND NOT tgisinternal ORDER BY oid",
        t=table,
    )
    views = (
        op.get_bind()
        .execute(
            text(
                "SELECT DISTINCT quote_ident(view.relname) AS name, pg_get_viewdef(view.oid) AS sql,"
                " view.oid FROM pg_depend dep JOIN pg_rewrite rule ON rule.oid = dep.objid"
                " JOIN pg_class view ON view.oid = rule.ev_class"
                " WHERE dep.classid = 'pg_rewrite'::regclass AND dep.refobjid = to_regclass(:t)"
                " AND view.oid <> dep.refobjid ORDER BY view.oid"
            ),
            {"t": table},
        )
        .all()
    )
    sequence = (
        op.get_bind()
        .execute(text("SELECT pg_get_serial_sequence(:t, 'id')"), {"t": table})
        .scalar()
        if "id" in keys.primary
        else None
    )
    copy = f"{table}__new"
    op.execute(
        f"CREATE TABLE {copy} (LIKE {table} INCLUDING DEFAULTS INCLUDING GENERATED"
        " INCLUDING CONSTRAINTS INCLUDING STORAGE INCLUDING COMPRESSION)"
        + (" PARTITION BY HASH (namespace)" if partitioned else "")
    )
    for remainder in range(PARTITIONS if partitioned else 0):
        op.execute(
            f"CREATE TABLE {table}__p{remainder:02d} PARTITION OF {copy}"
            f" FOR VALUES WITH (MODULUS {PARTITIONS}, REMAINDER {remainder})"
        )
    op.execute(f"INSERT INTO {copy} ({columns}) SELECT {columns} FROM {table}")
    if sequence:
        op.execute(f"ALTER SEQUENCE {sequence} OWNED BY NONE")
    for view in views:
        op.execute(f"DROP VIEW {view.name}")
    op.execute(f"DROP TABLE {table}")
    op.execute(f"ALTER TABLE {copy} RENAME TO {table}")
    if sequence:
        op.execute(f"ALTER SEQUENCE {sequence} OWNED BY {table}.id")
    op.execute(
        f"ALTER TABLE {table} ADD CONSTRAINT {table}_pkey PRIMARY KEY ({', '.join(keys.primary)})"
    )
    for unique in keys.unique:
        name = "_".join((table, *unique, "key"))
        op.execute(f"ALTER TABLE {table} ADD CONSTRAINT {name} UNIQUE ({', '.join(unique)})")
    if keys.foreign:
        op.execute(f"ALTER TABLE {table} ADD CONSTRAINT {table}_superseded_by_fkey {keys.foreign}")
    for index in indexes:  # a partitioned table's own index reads `ON ONLY` it
        op.execute(index.replace(" ON ONLY ", " ON "))
    for trigger in triggers:
        op.execute(trigger)
    for view in views:
        op.execute(f"CREATE VIEW {view.name} AS {view.sql}")
    op.execute(f"ANALYZE {table}")


def _refuse_cross_tenant_supersession() -> None:
    """A memory superseded by another tenant's memory cannot keep that link once the key is
    (id, namespace): name them and stop, before anything is changed."""
    crossed = _strings(
        "SELECT m.id::text FROM memories m JOIN memories s ON s.id = m.superseded_by"
        " WHERE s.namespace <> m.namespace ORDER BY m.id LIMIT 20"
    )
    if crossed:
        raise RuntimeError(
            "migration 0018: memories " + ", ".join(crossed) + " are superseded by a memory of"
            " another namespace, which a per-tenant key cannot refer to. Check them, clear the"
            " link (UPDATE memories SET superseded_by = NULL WHERE id IN (...)), then run"
            " `continuum db upgrade` again; nothing was changed."
        )


def upgrade() -> None:
    _refuse_cross_tenant_supersession()
    for table, keys in AFTER.items():
        _rebuild(table, keys, partitioned=True)


def downgrade() -> None:
    for table, keys in BEFORE.items():
        _rebuild(table, keys, partitioned=False)
