"""Which partition holds a tenant's rows. The per-tenant tables that grow with traffic are
`PARTITION BY HASH (namespace)` in a fixed number of partitions (migration 0018), so a
query naming one tenant reads one partition; this module names it, for readers of a
partition's own statistics (`recall.textquery`) and for the tests that check the pruning."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.orm import Session as DbSession

PARTITIONS = 16
PARTITIONED = (
    "sessions",
    "messages",
    "cron_reports",
    "memories",
    "tasks",
    "memory_log",
    "processed_events",
    "llm_calls",
)

# The partition of `table` whose hash bound admits `:ns` (its modulus and remainder read
# from the bound Postgres keeps, `FOR VALUES WITH (modulus 16, remainder 3)`).
_PARTITION_OF = text(
    """
    SELECT part.relname FROM pg_inherits inh JOIN pg_class part ON part.oid = inh.inhrelid,
    LATERAL regexp_match(pg_get_expr(part.relpartbound, part.oid),
                         'modulus (\\d+), remainder (\\d+)') AS bound
    WHERE inh.inhparent = to_regclass(:table)
      AND satisfies_hash_partition(inh.inhparent, bound[1]::int, bound[2]::int, CAST(:ns AS text))
    """
)


def partition_of(db: DbSession, table: str, namespace: str) -> str:
    """The name of the partition of `table` that holds `namespace`'s rows; `table` itself
    when it is not partitioned."""
    found = db.execute(_PARTITION_OF, {"table": table, "ns": namespace}).scalar()
    return str(found) if found else table
