"""Reading query plans: the indexes a partitioned index made on each partition, whether a
plan reads one of them, and which plans (`plan_cache_mode`) the statements of a transaction
ran under."""

from __future__ import annotations

from sqlalchemy import text

from continuum.store.engine import Sent, session_scope


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


def plan_modes(sent: list[Sent], markers: dict[str, str]) -> dict[str, list[str]]:
    """For each name of `markers`, the `plan_cache_mode` in force (set by `set_config` in
    the statements before, from the transaction's start: `auto`) at each statement of
    `sent` whose SQL holds that name's marker, in order."""
    mode = "auto"
    modes: dict[str, list[str]] = {}
    for statement in sent:
        params = dict(statement.parameters or {})
        for key, value in params.items():
            if key.startswith("set_name") and value == "plan_cache_mode":
                mode = str(params[key.replace("set_name", "set_value")])
        for name, marker in markers.items():
            if marker in statement.sql:
                modes.setdefault(name, []).append(mode)
    return modes
