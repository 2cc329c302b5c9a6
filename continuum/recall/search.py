"""Hybrid search: pgvector cosine and Postgres full text over memories and raw messages,
fused by score, always scoped to one namespace (and user when given).

Every hit carries the ids of its source messages and the parts of its score, so an answer
can be traced back to the turns it came from and explained. Beyond the two base channels:
- a time expression in the query ("last weekend", "in March", relative to `now`) is taken
  out of the query text and adds vector + text ranks among rows about that window (said in
  it, or said soon after with a phrase pointing back into it: "last weekend I…" on Monday);
- an extracted memory is an extra key for its source turns: a memory hit passes a share of
  its score to the messages it came from (fetched if no channel found them). A digest
  (conversation summary, session snapshot) spans a whole session, so it is no key for any
  one turn: it passes nothing, and cites only the turns of its session the query matched
  (`evidence_turns`), best first — its full provenance stays on the memory row;
- a message hit can carry its neighbouring turns of the same session as context.
"""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Literal, TypedDict, Unpack

from sqlalchemy import text
from sqlalchemy.orm import Session as DbSession

from continuum.config import get_settings
from continuum.domain.memory import DIGEST_KINDS
from continuum.domain.text import normalize_for_key
from continuum.inference.embedding import embed_query_soon, vector_literal
from continuum.recall.textquery import (
    MATCH_CAP,
    plan,
    query_lexemes,
    quote_lexeme,
    speaker_lexemes,
    table_stats,
)
from continuum.recall.timeparse import TimeRange, parse_time_range, strip_phrase
from continuum.sealing.envelope import read_text
from continuum.sealing.terms import keyed_lexemes, stored_tags
from continuum.store.engine import session_scope

CANDIDATES = 50
Source = Literal["memory", "message"]


@dataclass(frozen=True)
class FusionWeights:
    """Weights of score fusion: score = Σ source × channel × the hit's normalized signal in
    that channel's ranking (see `_Fusion.add`)."""

    vector: float = 1.0
    text: float = 1.3
    in_window: float = 1.0  # each of vector/text ranked again inside the query's time window
    memory: float = 1.0
    message: float = 1.0
    memory_key: float = 0.9  # its source turns rank at least at this share of a memory's score
    digest_evidence: float = 0.5  # a digest cites its turns scoring at least this share of it


@dataclass(frozen=True)
class SearchFilters:
    user_id: str | None = None
    kinds: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    session_id: str | None = None
    channel: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    include_private: bool = False  # the owner's (user_id's) private memories, nobody else's
    statuses: tuple[str, ...] = ("active",)

    @property
    def time_bounded(self) -> bool:
        """Explicit `since`/`until` bounds win over a time phrase in the query."""
        return self.since is not None or self.until is not None


@dataclass
class SearchHit:
    source: Source
    id: int
    content: str
    created_at: datetime
    session_id: str | None
    channel: str | None
    kind: str  # memory kind, or the message role
    importance: int | None
    source_message_ids: list[str]
    status: str = "active"
    private: bool = False
    score: float = 0.0
    parts: dict[str, float] = field(default_factory=dict)
    neighbours: list[dict[str, Any]] = field(default_factory=list)  # ±n turns, same session

    def as_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "created_at": self.created_at.isoformat()}


def owner_clauses(filters: SearchFilters, params: dict[str, Any]) -> list[str]:
    """The user scope as alternatives that together make `where_sql(..., owners=False)`
    whole: the user's own rows and the shared ones (each an index range of its own, so an
    ordered scan never walks other users' rows), or everything without a user."""
    if not filters.user_id:
        return ["true"]
    params["uid"] = filters.user_id
    return ["user_id = :uid", "user_id IS NULL"]


def status_clause(filters: SearchFilters, params: dict[str, Any]) -> str:
    """The memory statuses `filters` admit, as a condition; fills `params`."""
    if len(filters.statuses) == 1:  # plain equality lets the planner use index order
        params["status"] = filters.statuses[0]
        return "status = :status"
    params["statuses"] = list(filters.statuses)
    return "status = ANY(:statuses)"


def where_sql(
    source: str, filters: SearchFilters, params: dict[str, Any], *, owners: bool = True
) -> str:
    """The WHERE clause scoping `source` rows to the namespace, user, privacy, status and
    filters (R16); fills `params`. Search's rankings and the context block's memory channels
    build their scope with it.
    `owners=False` leaves out the user scope for a caller that ORs `owner_clauses` itself."""
    clauses = ["namespace = :ns"]
    if filters.user_id:
        params["uid"] = filters.user_id
        if owners:
            clauses.append("(user_id = :uid OR user_id IS NULL)")
    if source == "memory":
        clauses.append(status_clause(filters, params))
        owner = filters.include_private and filters.user_id
        clauses.append("(NOT private OR user_id = :uid)" if owner else "NOT private")
        if filters.kinds:
            clauses.append("kind = ANY(:kinds)")
            params["kinds"] = list(filters.kinds)
        if filters.tags:
            clauses.append("tags @> :tags")
            params["tags"] = list(filters.tags)
    elif filters.kinds or filters.tags:
        clauses.append("false")  # kind and tag filters select memories only
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
    "memory": "id, content, created_at, session_id, channel, kind, importance,"
    " source_message_ids, status, private",
    "message": "id, content, created_at, session_id, channel, role AS kind, NULL::int AS importance,"
    " ARRAY[message_id] AS source_message_ids, 'active' AS status, false AS private",
}
_TABLES = {"memory": "memories", "message": "messages"}
_SEALED_KINDS = {"memory": "memories.content", "message": "messages.content"}
WINDOW_EXACT_ROWS = 2000  # a time window with at most this many rows is ranked exactly
WINDOW_SCAN_TUPLES = 2000  # tuples the index may visit ranking a wider one
_CHANNEL_SQL = {  # channel → SELECT of the `:n` best rows of `{table}` passing `{where}`
    "vector": "SELECT {columns}, embedding <=> CAST(:qv AS halfvec) AS signal FROM {table} "
    "WHERE {where} AND embedding IS NOT NULL ORDER BY signal LIMIT :n",
    # A time window holds few rows (see `_window_vector`): their distances are computed
    # exactly. An HNSW scan filtered to a narrow window would visit thousands of tuples to
    # fill its LIMIT (33-180 ms for 4 days of a million memories).
    "vector_window": "SELECT {columns}, embedding <=> CAST(:qv AS halfvec) AS signal "
    "FROM {table} WHERE {where} AND embedding IS NOT NULL ORDER BY signal, id LIMIT :n",
    # Rows are selected by the planned match query (at most :cap of them, see textquery)
    # and ranked by BM25 on every lexeme of the question: a word's weight is its rarity
    # among the matched rows, a turn's length dampens it (k1 = 1.2, b = 0.75; chat turns
    # rarely repeat a word, so presence stands for term frequency).
    "text": "WITH matched AS (SELECT {columns}, tsv FROM {table} WHERE {where} "
    "AND tsv @@ CAST(:tsm_{source} AS tsquery) LIMIT :cap), "
    "terms AS (SELECT t, CAST(t AS tsquery) AS q FROM unnest(CAST(:terms AS text[])) AS t), "
    "hits AS (SELECT m.id, terms.t FROM matched m JOIN terms ON m.tsv @@ terms.q), "
    "df AS (SELECT t, count(*) AS n FROM hits GROUP BY t), "
    "total AS (SELECT count(*) AS rows, avg(length(tsv)) AS avgdl FROM matched), "
    "idf AS (SELECT hits.id, sum(ln(1 + total.rows::float8 / df.n)) AS weight "
    "FROM hits JOIN df USING (t) CROSS JOIN total GROUP BY hits.id) "
    "SELECT matched.*, idf.weight * 2.2 / (1 + 1.2 * (0.25 + 0.75 * length(matched.tsv) "
    "/ greatest(total.avgdl, 1))) AS signal FROM matched JOIN idf USING (id) CROSS JOIN total "
    "ORDER BY signal DESC, created_at DESC, id DESC LIMIT :n",
}


# Every ranking's best plan depends on its tsquery and vector. psycopg prepares a statement
# after a few runs and Postgres may then switch to a generic plan, which cannot see them
# (measured at 1M memories: the text channel went from 7 ms to 20-50 ms). Filtered HNSW
# scans go on until enough rows pass the WHERE clause, so the candidate list (ef_search)
# need not cover the filter: on 60k real sentences with a one-user-in-five filter, the 24
# nearest agreed with an exact ranking 97.2% at 64 against 97.9% at 100, while at a
# million memories 64 took 6 ms against 8.
SEARCH_SETTINGS = {
    "plan_cache_mode": "force_custom_plan",
    "hnsw.iterative_scan": "relaxed_order",
    "hnsw.ef_search": "64",  # at least the default search's candidates (50)
    "hnsw.max_scan_tuples": "20000",  # pgvector's default; one window ranking may lower it
}
_SETTINGS_OF = "continuum.search_settings"  # Session.info key: the transaction they are set in


def set_local(db: DbSession, settings: dict[str, str]) -> None:
    """SET LOCAL each of `settings` for the caller's transaction, in one round trip."""
    calls = ", ".join(f"set_config(:name{i}, :value{i}, true)" for i in range(len(settings)))
    params = {}
    for i, (name, value) in enumerate(settings.items()):
        params[f"name{i}"], params[f"value{i}"] = name, value
    db.execute(text(f"SELECT {calls}"), params)


def use_search_settings(db: DbSession, extra: dict[str, str] | None = None) -> None:
    """SEARCH_SETTINGS (and `extra`) for the caller's transaction, set once in it: a caller
    running several searches in one transaction (context(), its explain audit) pays one
    round trip."""
    transaction = db.get_transaction()
    pending = {} if db.info.get(_SETTINGS_OF) is transaction else dict(SEARCH_SETTINGS)
    pending.update(extra or {})
    if pending:
        set_local(db, pending)
        db.info[_SETTINGS_OF] = transaction


def _hit(source: Source, row: Any) -> SearchHit:
    return SearchHit(
        source=source,
        id=row.id,
        content=read_text(row.content, _SEALED_KINDS[source]),
        created_at=row.created_at,
        session_id=row.session_id,
        channel=row.channel,
        kind=row.kind,
        importance=row.importance,
        source_message_ids=list(row.source_message_ids),
        status=row.status,
        private=row.private,
    )


def _ranked(
    db: DbSession, source: Source, channel: str, where: str, params: dict[str, Any]
) -> list[tuple[Any, float]]:
    sql = _CHANNEL_SQL[channel].format(
        columns=_COLUMNS[source], table=_TABLES[source], where=where, source=source
    )
    return [(row, float(row.signal)) for row in db.execute(text(sql), params)]


def _window_bound(
    db: DbSession, source: Source, scope: SearchFilters, params: dict[str, Any]
) -> int:
    """How many rows the time window of `scope` may hold, up to `WINDOW_EXACT_ROWS` + 1:
    counted on the recent-rows indexes alone (namespace, owner and status of a memory;
    namespace of a message, and the time), so no row is read. An upper bound: the window's
    other filters (privacy, kinds, a missing embedding) can only remove rows. At a million
    memories, 0.7 ms, against 9 ms for reading 2,001 rows to find them too many."""
    params = {**params, "since": scope.since, "until": scope.until, "most": WINDOW_EXACT_ROWS + 1}
    base = "namespace = :ns AND created_at >= :since AND created_at < :until"
    owners = ["true"]
    if source == "memory":
        base += " AND " + status_clause(scope, params)
        owners = owner_clauses(scope, params)
    counts = " + ".join(
        f"(SELECT count(*) FROM (SELECT 1 FROM {_TABLES[source]} WHERE {base} AND {owner} "
        "LIMIT :most) AS w)"
        for owner in owners
    )
    return int(db.execute(text(f"SELECT {counts}"), params).scalar_one())


def _window_vector(
    db: DbSession, source: Source, where: str, params: dict[str, Any], *, wide: bool
) -> list[tuple[Any, float]]:
    """The vector ranking inside a time window: exact over the window's rows when they are
    few, else (`wide`, see `_window_bound`) by the index with its scan bounded for this one
    query (a boost channel need not be complete: at a million memories, 4 days of them,
    32 → 8 ms)."""
    if not wide:
        return _ranked(db, source, "vector_window", where, params)
    setting = "hnsw.max_scan_tuples"
    set_local(db, {setting: str(WINDOW_SCAN_TUPLES)})
    ranked = _ranked(db, source, "vector", where, params)
    set_local(db, {setting: SEARCH_SETTINGS[setting]})
    return ranked


class _Fusion:
    """Accumulates each channel's score contributions per (source, id)."""

    def __init__(self, weights: FusionWeights) -> None:
        self.weights = weights
        self.hits: dict[tuple[str, int], SearchHit] = {}

    def _hit(self, source: Source, row: Any) -> SearchHit:
        """The hit of `row`, made (and its text opened) the first time a channel finds it."""
        hit = self.hits.get((source, row.id))
        if hit is None:
            hit = self.hits[(source, row.id)] = _hit(source, row)
        return hit

    def add(self, channel: str, ranked: list[tuple[Source, Any, float]], weight: float) -> None:
        """Add one channel's joint ranking (best first) by its signal normalized on the scale
        of the turns in it: BM25 as a share of the best turn's; a cosine similarity by its
        place between the worst and best turn's (dense similarities crowd into a narrow
        band). Turns thus score as they would alone, and a memory counts only as far as
        its own signal places it among them (at most as much as the best turn)."""
        vector = channel.startswith("vector")
        values = [1 - signal if vector else signal for _, _, signal in ranked]
        scale = [v for (source, _, _), v in zip(ranked, values, strict=True) if source == "message"]
        scale = scale or values
        top = max(scale, default=0.0)
        floor = min(scale, default=0.0) if vector else 0.0
        for rank, ((source, row, _), value) in enumerate(zip(ranked, values, strict=True), 1):
            share = min((value - floor) / (top - floor), 1.0) if top > floor else 1.0
            if share < 0:
                continue  # a memory weaker than every turn the channel kept
            hit = self._hit(source, row)
            hit.score += getattr(self.weights, source) * weight * share
            hit.parts[f"{channel}_rank"] = rank
            if channel == "vector":
                hit.parts["vector_similarity"] = round(value, 4)
            elif channel == "text":
                hit.parts["text_bm25"] = round(value, 4)

    def propagate_to_sources(
        self, db: DbSession, filters: SearchFilters, params: dict[str, Any]
    ) -> None:
        """A memory hit lifts the messages it was extracted from to `memory_key` of its
        score (unless they score higher already): the turns show up right after it."""
        best: dict[tuple[str, str], float] = {}
        for hit in self.hits.values():
            if hit.source != "memory" or hit.kind in DIGEST_KINDS or not hit.session_id:
                continue
            for message_id in hit.source_message_ids:
                pair = (hit.session_id, message_id)
                best[pair] = max(best.get(pair, 0.0), hit.score * self.weights.memory_key)
        if not best:
            return
        where = where_sql("message", replace(filters, session_id=None), params)
        rows = db.execute(
            text(
                f"SELECT {_COLUMNS['message']} FROM messages JOIN unnest(CAST(:sids AS text[]), "
                "CAST(:mids AS text[])) AS k(sid, mid) ON session_id = k.sid AND message_id = k.mid "
                f"WHERE {where}"
            ),
            {**params, "sids": [s for s, _ in best], "mids": [m for _, m in best]},
        )
        for row in rows:
            hit = self._hit("message", row)
            share = best[(row.session_id, row.source_message_ids[0])]
            hit.score = max(hit.score, share)
            hit.parts["memory_key"] = round(share, 6)

    def ranked(self) -> list[SearchHit]:
        """Best first; a text repeated verbatim (recurring small talk, a memory that copies
        its turn) is kept once, at its best-scored occurrence, so copies cannot crowd out
        everything else. A digest cites the turns of its session the query matched at least
        `digest_evidence` as strongly as the digest itself (weaker ones are no evidence)."""
        ordered = sorted(
            self.hits.values(), key=lambda h: (-h.score, -h.created_at.timestamp(), h.id)
        )
        turns = [hit for hit in ordered if hit.source == "message"]
        for hit in ordered:
            if hit.source == "memory" and hit.kind in DIGEST_KINDS:
                floor = self.weights.digest_evidence * hit.score
                strong = [turn for turn in turns if turn.score >= floor]
                hit.source_message_ids = evidence_turns(
                    hit.session_id, hit.source_message_ids, strong
                )
        seen: set[str] = set()
        unique = []
        for hit in ordered:
            key = normalize_for_key(hit.content)
            if key not in seen:
                seen.add(key)
                hit.score = round(hit.score, 6)
                unique.append(hit)
        return unique


def evidence_turns(
    session_id: str | None, source_message_ids: list[str], turns: list[SearchHit]
) -> list[str]:
    """The ids of a digest's source turns among `turns` (message hits, in their order): what
    a summary of a whole session is evidence of for one query."""
    sources = set(source_message_ids)
    return [
        turn.source_message_ids[0]
        for turn in turns
        if turn.session_id == session_id and turn.source_message_ids[0] in sources
    ]


def attach_neighbours(db: DbSession, hits: list[SearchHit], width: int = 1) -> None:
    """Give each message hit the `width` turns before and after it in its session."""
    ids = [hit.id for hit in hits if hit.source == "message"]
    if not ids or width < 1:
        return
    side = (
        "(SELECT n.message_id, n.role, n.content, n.created_at, n.id FROM messages n "
        "WHERE n.namespace = h.namespace AND n.session_id = h.session_id "
        "AND (n.created_at, n.id) {op} (h.created_at, h.id) "
        "ORDER BY n.created_at {order}, n.id {order} LIMIT :w)"
    )
    rows = db.execute(
        text(
            "SELECT h.id AS hit_id, x.* FROM messages h CROSS JOIN LATERAL ("
            + side.format(op="<", order="DESC")
            + " UNION ALL "
            + side.format(op=">", order="ASC")
            + ") x WHERE h.id = ANY(:ids) ORDER BY h.id, x.created_at, x.id"
        ),
        {"ids": ids, "w": width},
    )
    by_hit: dict[int, list[dict[str, Any]]] = {}
    for row in rows:
        by_hit.setdefault(row.hit_id, []).append(
            {
                "message_id": row.message_id,
                "role": row.role,
                "content": read_text(row.content, "messages.content"),
                "created_at": row.created_at.isoformat(),
            }
        )
    for hit in hits:
        if hit.source == "message":
            hit.neighbours = by_hit.get(hit.id, [])


@dataclass(frozen=True)
class PreparedQuery:
    """A query made ready before any SQL runs: the time window it names, its text without
    that phrase, and its embedding on the way (computed on a background thread, so the
    caller's SQL runs meanwhile). One prepared query serves several searches."""

    text: str
    window: TimeRange | None
    vector: Future[list[float]] | None


def prepare_query(
    query: str, filters: SearchFilters | None = None, now: datetime | None = None
) -> PreparedQuery:
    """Parse `query`'s time phrase (unless `filters` bound the time already) relative to
    `now` and start embedding the rest."""
    window = None
    if filters is None or not filters.time_bounded:
        window = parse_time_range(query, now)
    stripped = strip_phrase(query, window)
    return PreparedQuery(stripped, window, embed_query_soon(stripped))


def search_in(
    db: DbSession,
    namespace: str,
    query: str | PreparedQuery,
    *,
    limit: int = 10,
    filters: SearchFilters | None = None,
    sources: tuple[Source, ...] = ("memory", "message"),
    candidates: int = CANDIDATES,
    weights: FusionWeights | None = None,
    now: datetime | None = None,
    neighbours: int = 0,
) -> list[SearchHit]:
    """`search` inside the caller's transaction; `query` may be prepared already."""
    filters = filters or SearchFilters()
    if filters.tags:
        filters = replace(filters, tags=tuple(stored_tags(namespace, filters.tags)))
    weights = weights or FusionWeights()
    prepared = query if isinstance(query, PreparedQuery) else prepare_query(query, filters, now)
    query_vector = prepared.vector  # being embedded while the text channels rank
    window = None if filters.time_bounded else prepared.window
    lexemes = query_lexemes(db, prepared.text)
    # A transcript's turns open with their speaker's name ("Caroline: …"): as a word it
    # matches every turn of that person, so it selects and ranks nothing (the vector
    # channel still reads the whole question).
    speakers = speaker_lexemes.get(db, namespace)
    lexemes = tuple(lexeme for lexeme in lexemes if lexeme not in speakers) or lexemes
    if get_settings().is_encrypted(namespace):  # its index holds keyed terms (R47)
        lexemes = keyed_lexemes(namespace, lexemes)
    params: dict[str, Any] = {
        "ns": namespace,
        "n": candidates,
        "cap": MATCH_CAP,
        "terms": [quote_lexeme(lexeme) for lexeme in lexemes],
    }
    for source in sources if lexemes else ():
        stats = table_stats.get(db, _TABLES[source])
        params[f"tsm_{source}"] = plan(lexemes, stats, namespace)
    use_search_settings(db)
    scopes = [("", filters)]
    wide: dict[Source, bool] = {}  # whether the window is too wide to rank exactly
    if window:  # turns said in the window, or soon after it about it (see mentioned_in)
        reach = replace(filters, since=window.since, until=window.reported_until)
        scopes.append(("_in_window", reach))
        # Counted before any ranking, while the query vector is still being computed.
        for source in sources if query_vector else ():
            wide[source] = _window_bound(db, source, reach, params) > WINDOW_EXACT_ROWS
    fusion = _Fusion(weights)
    channels = (["text"] if lexemes else []) + (["vector"] if query_vector else [])
    for channel in channels:  # text first: the query vector is still being computed
        if channel == "vector" and query_vector:
            params["qv"] = vector_literal(query_vector.result())
        for suffix, scope in scopes:
            joint: list[tuple[Source, Any, float]] = []
            for source in sources:
                where = where_sql(source, scope, params)
                if suffix and channel == "vector":
                    ranked = _window_vector(db, source, where, params, wide=wide[source])
                else:
                    ranked = _ranked(db, source, channel, where, params)
                if suffix and window:
                    ranked = [
                        r
                        for r in ranked
                        if window.mentioned_in(
                            read_text(r[0].content, _SEALED_KINDS[source]), r[0].created_at
                        )
                    ]
                joint += [(source, row, signal) for row, signal in ranked]
            # One ranking per channel across sources, by the channel's own signal: the best
            # of a few memories ranks where its similarity or BM25 puts it among the turns.
            joint.sort(key=lambda entry: entry[2] if channel == "vector" else -entry[2])
            weight = weights.in_window if suffix else getattr(weights, channel)
            fusion.add(channel + suffix, joint, weight)
    if "message" in sources and "memory" in sources:
        fusion.propagate_to_sources(db, filters, params)
    hits = fusion.ranked()[:limit]
    attach_neighbours(db, hits, neighbours)
    return hits


class SearchOptions(TypedDict, total=False):
    """Keyword options of `search` (same meaning as in `search_in`)."""

    limit: int
    filters: SearchFilters | None
    sources: tuple[Source, ...]
    candidates: int
    weights: FusionWeights | None
    now: datetime | None
    neighbours: int


def search(namespace: str, query: str, **options: Unpack[SearchOptions]) -> list[SearchHit]:
    """The `limit` best hits for `query` by score fusion of the vector and text rankings
    (plus in-window ranks when the query names a time, relative to `now`); `neighbours=n`
    attaches the n turns around each message hit."""
    with session_scope() as db:
        return search_in(db, namespace, query, **options)
