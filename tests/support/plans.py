"""Reading query plans of partitioned tables: the indexes a partitioned index made on each
partition, and whether a plan reads one of them."""

from __future__ import annotations

from sqlalchemy import text

from continuum.store.engine import session_scope


def partition_indexes(index: str, partition: str | None = None) -> set[str]:
    """The indexes the partitioned index `index` made on its table's partitions (only the
    one on `partition` when given); `{index}` itself when its table is not partitioned."""
    with session_scope() as db:
        found = db.execute(
            text(
                "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
                " JOIN pg_index x ON x.indexrelid = c.oid WHERE i.inhparent = to_regclass(:index)"
                " AND (CAST(:partition AS text) IS NULL OR x.indrelid = to_regclass(:partition))"
            ),
            {"index": index, "partition": partition},
        ).scalars()
        return set(found) or {index}


def reads_index(plan: str, index: str) -> bool:
    """Whether `plan` reads `index`, or on a partitioned table one of its partitions' own."""
    return any(f" {name} " in f" {plan} ".replace("\n", " ") for name in partition_indexes(index))
