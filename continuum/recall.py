"""Hybrid search: pgvector cosine and Postgres full text over memories and raw messages,
fused by reciprocal rank, always scoped to one namespace (and user when given).

Every hit carries the ids of its source messages and the parts of its score, so an answer
can be traced back to the turns it came from and explained.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import text
from sqlalchemy.orm import Session as DbSession

from continuum.db.engine import session_scope
from continuum.embedding import get_embedder, vector_literal

RRF_K = 60
CANDIDATES = 50
# An OR of the query's stemmed lexemes: natural questions rarely share every word.
OR_QUERY = "CAST(replace(CAST(plainto_tsquery('english', :q) AS text), '&', '|') AS tsquery)"
SOURCE_WEIGHTS = {"memory": 1.0, "message": 0.8}


@dataclass(frozen=True)
class SearchFilters:
    user_id: str | None = None
    kinds: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    session_id: str | None = None
    channel: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    include_private: bool = False


@dataclass
class SearchHit:
    source: Literal["memory", "message"]
    id: int
    content: str
    created_at: datetime
    session_id: str | None
    channel: str | None
    kind: str  # memory kind, or the message role
    importance: int | None
    source_message_ids: list[str]
    score: float = 0.0
    parts: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "created_at": self.created_at.isoformat()}


def _where(source: str, filters: SearchFilters, params: dict[str, Any]) -> str:
    clauses = ["namespace = :ns"]
    if source == "memory":
        clauses.append("status = 'active'")
        if not filters.include_private:
            clauses.append("NOT private")
        if filters.kinds:
            clauses.append("kind = ANY(:kinds)")
            params["kinds"] = list(filters.kinds)
        if filters.tags:
            clauses.append("tags @> :tags")
            params["tags"] = list(filters.tags)
    elif filters.kinds or filters.tags:
        clauses.append("false")  # kind and tag filters select memories only
    if filters.user_id:
        clauses.append("(user_id = :uid OR user_id IS NULL)")
        params["uid"] = filters.user_id
    for name in ("session_id", "channel"):
        if getattr(filters, name):
            clauses.append(f"{name} = :{name}")
            params[name] = getattr(filters, name)
    if filters.since:
        clauses.append("created_at >= :since")
        params["since"] = filters.since
    if filters.until:
        clauses.append("created_at < :until")
        params["until"] = filters.until
    return " AND ".join(clauses)


_COLUMNS = {
    "memory": "id, content, created_at, session_id, channel, kind, importance, source_message_ids",
    "message": "id, content, created_at, session_id, channel, role AS kind, NULL::int AS importance,"
    " ARRAY[message_id] AS source_message_ids",
}
_TABLES = {"memory": "memories", "message": "messages"}
_CHANNEL_SQL = {  # channel → (row filter, order of the signal)
    "vector": ("embedding IS NOT NULL", "ASC"),
    "text": (f"tsv @@ {OR_QUERY}", "DESC"),
}


def _ranked(
    db: DbSession, source: str, channel: str, order_sql: str, where: str, params: dict[str, Any]
) -> list[tuple[Any, float]]:
    match, direction = _CHANNEL_SQL[channel]
    sql = (
        f"SELECT {_COLUMNS[source]}, {order_sql} AS signal FROM {_TABLES[source]} "
        f"WHERE {where} AND {match} ORDER BY signal {direction} LIMIT :n"
    )
    return [(row, float(row.signal)) for row in db.execute(text(sql), params)]


def search(
    namespace: str,
    query: str,
    *,
    limit: int = 10,
    filters: SearchFilters | None = None,
    sources: tuple[str, ...] = ("memory", "message"),
    candidates: int = CANDIDATES,
) -> list[SearchHit]:
    """The `limit` best hits for `query` by reciprocal-rank fusion of vector and text ranks."""
    filters = filters or SearchFilters()
    embedder = get_embedder()
    vector = vector_literal(embedder.embed([query])[0]) if embedder else None
    hits: dict[tuple[str, int], SearchHit] = {}
    with session_scope() as db:
        # Filtered HNSW scans keep going until enough rows pass the WHERE clause.
        db.execute(text("SET LOCAL hnsw.iterative_scan = 'relaxed_order'"))
        db.execute(text("SET LOCAL hnsw.ef_search = 100"))
        for source in sources:
            params: dict[str, Any] = {"ns": namespace, "q": query, "n": candidates}
            where = _where(source, filters, params)
            channels = {"text": "ts_rank_cd(tsv, " + OR_QUERY + ")"}
            if vector:
                params["qv"] = vector
                channels["vector"] = "embedding <=> CAST(:qv AS vector)"
            for channel, order_sql in channels.items():
                for rank, (row, signal) in enumerate(
                    _ranked(db, source, channel, order_sql, where, params), start=1
                ):
                    hit = hits.setdefault(
                        (source, row.id),
                        SearchHit(
                            source=source,  # type: ignore[arg-type]
                            id=row.id,
                            content=row.content,
                            created_at=row.created_at,
                            session_id=row.session_id,
                            channel=row.channel,
                            kind=row.kind,
                            importance=row.importance,
                            source_message_ids=list(row.source_message_ids),
                        ),
                    )
                    contribution = SOURCE_WEIGHTS[source] / (RRF_K + rank)
                    hit.score += contribution
                    hit.parts[f"{channel}_rank"] = rank
                    hit.parts["vector_similarity" if channel == "vector" else "text_rank_cd"] = (
                        round(1 - signal if channel == "vector" else signal, 4)
                    )
    ranked = sorted(hits.values(), key=lambda h: (-h.score, -h.created_at.timestamp(), h.id))
    for hit in ranked:
        hit.score = round(hit.score, 6)
    return ranked[:limit]
