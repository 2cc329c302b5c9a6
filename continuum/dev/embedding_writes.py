"""Every committed write of a vector, recorded by a trigger: the fault tests with embeddings on
and the soak (bench/soak.py) prove each row of theirs was embedded exactly once (a write a
killed worker or a restarted Postgres rolled back leaves no record), not merely that it holds
a vector at the end. Instrumentation for tests and the soak, never installed by the product."""

from __future__ import annotations

import math
from typing import Any

from sqlalchemy import text

from continuum.pipeline.outbox import EMBEDDED_TABLES
from continuum.store.engine import session_scope

LOG = "dev_embedding_writes"
FUNCTION = "dev_log_embedding_write"


def install() -> None:
    """Record from now on every committed write of a vector to `messages` and `memories`.
    The trigger is given its table's name: on a partitioned table it fires on the partition,
    whose name `TG_TABLE_NAME` would be."""
    with session_scope() as db:
        db.execute(
            text(
                f"CREATE TABLE IF NOT EXISTS {LOG} (tbl text NOT NULL, row_id bigint NOT NULL,"
                " was_null boolean NOT NULL)"
            )
        )
        db.execute(text(f"TRUNCATE {LOG}"))
        db.execute(
            text(
                f"CREATE OR REPLACE FUNCTION {FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS $$"
                f" BEGIN INSERT INTO {LOG} VALUES (TG_ARGV[0], NEW.id,"
                " OLD.embedding IS NULL); RETURN NULL; END $$"
            )
        )
        for table in EMBEDDED_TABLES:
            db.execute(text(f"DROP TRIGGER IF EXISTS {FUNCTION} ON {table}"))
            db.execute(
                text(
                    f"CREATE TRIGGER {FUNCTION} AFTER INSERT OR UPDATE OF embedding ON {table}"
                    f" FOR EACH ROW WHEN (NEW.embedding IS NOT NULL)"
                    f" EXECUTE FUNCTION {FUNCTION}('{table}')"
                )
            )


def uninstall() -> None:
    with session_scope() as db:
        db.execute(text("SET LOCAL lock_timeout = '20s'"))
        for table in EMBEDDED_TABLES:
            db.execute(text(f"DROP TRIGGER IF EXISTS {FUNCTION} ON {table}"))
        db.execute(text(f"DROP FUNCTION IF EXISTS {FUNCTION}()"))
        db.execute(text(f"DROP TABLE IF EXISTS {LOG}"))


def embedding_figures(wheres: dict[str, str], params: dict[str, Any]) -> dict[str, int]:
    """Per table, of the rows its `wheres` clause selects: how many there are, how many still lack a
    vector, how many hold the same vector as another, and how many were written other than
    exactly once from NULL (the trigger's log)."""
    found: dict[str, int] = {}
    with session_scope() as db:
        for table in EMBEDDED_TABLES:
            row = db.execute(
                text(
                    f"WITH mine AS (SELECT id, embedding FROM {table} {wheres[table]}),"
                    f" writes AS (SELECT row_id, count(*) AS n, bool_and(was_null) AS from_null"
                    f"  FROM {LOG} WHERE tbl = :table GROUP BY row_id)"
                    " SELECT (SELECT count(*) FROM mine) AS rows,"
                    " (SELECT count(*) FILTER (WHERE embedding IS NULL) FROM mine) AS unembedded,"
                    " (SELECT count(embedding) - count(DISTINCT embedding::text) FROM mine)"
                    "  AS duplicate_vectors,"
                    " (SELECT count(*) FROM mine LEFT JOIN writes ON writes.row_id = mine.id"
                    "  WHERE writes.n IS DISTINCT FROM 1 OR NOT writes.from_null) AS not_once"
                ),
                {**params, "table": table},
            ).one()
            found |= {f"{table}_{name}": int(value) for name, value in row._mapping.items()}
    return found


def mismatched_vectors(
    wheres: dict[str, str], params: dict[str, Any], sample: int = 40
) -> list[int]:
    """Ids of a sample of these rows whose stored vector is not the model's vector of their
    own text (a batch written to the wrong rows): the model loads in this process."""
    from continuum.inference.embedding import get_embedder
    from continuum.sealing.envelope import read_text

    embedder = get_embedder()
    assert embedder is not None
    wrong: list[int] = []
    with session_scope() as db:
        for table in EMBEDDED_TABLES:
            rows = db.execute(
                text(
                    f"SELECT id, content, embedding::text AS vector FROM {table} {wheres[table]}"
                    " AND embedding IS NOT NULL ORDER BY random() LIMIT :sample"
                ),
                {**params, "sample": sample},
            ).all()
            texts = [read_text(row.content, f"{table}.content", row.id) for row in rows]
            expected = embedder.embed(texts)
            for row, vector in zip(rows, expected, strict=True):
                stored = [float(x) for x in row.vector.strip("[]").split(",")]
                dot = sum(a * b for a, b in zip(stored, vector, strict=True))
                norms = math.sqrt(sum(a * a for a in stored) * sum(b * b for b in vector))
                if dot / norms < 0.99:  # halfvec rounding moves a vector a little, not this much
                    wrong.append(row.id)
    return wrong
