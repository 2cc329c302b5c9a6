"""The SQL of hybrid search: each channel's ranking of memories or raw turns (pgvector
cosine, BM25 over full text, both again inside a time window), the planner settings they
need, and the few reads around them (a memory's source turns, a hit's neighbouring turns).

Kept apart from fusion (`recall.fusion`) because the two change for different reasons:
this module is about what Postgres must be told to answer fast and right at a million rows
(index ranges, exact vs bounded HNSW scans, custom plans); fusion is about how the answers
are weighed. Rows come back as they are, each with its channel's raw signal; nothing here
scores.
"""

from __future__ import annotations

from typing import Any, Literal

from sqlalchemy import text
from sqlalchemy.orm import Session as DbSession

from continuum.recall.scope import SearchFilters, owner_clauses, status_clause
from continuum.sealing.envelope import read_text

Source = Literal["memory", "message"]

COLUMNS = {  # a row of either source in one shape (the hit's fields)
    "memory": "id, content, created_at, session_id, channel, kind, importance,"
    " source_message_ids, status, private",
    "message": "id, content, created_at, session_id, channel, role AS kind, NULL::int AS importance,"
    " ARRAY[message_id] AS source_message_ids, 'active' AS status, false AS private",
}
TABLES = {"memory": "memories", "message": "messages"}
_SEALED_KINDS = {"memory": "memories.content", "message": "messages.content"}
WINDOW_EXACT_ROWS = 2000  # a time window with at most this many rows is ranked exactly
WINDOW_SCAN_TUPLES = 2000  # tuples the index may visit ranking a wider one
_CHANNEL_SQL = {  # channel → SELECT of the `:n` best rows of `{table}` passing `{where}`
    "vector": "SELECT {columns}, embedding <=> CAST(:qv AS halfvec) AS signal FROM {table} "
    "WHERE {where} AND embedding IS NOT NULL ORDER BY signal LIMIT :n",
    # A time window holds few rows (see `window_vector`): their distances are computed
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


def read_content(source: Source, row: Any) -> str:
    """The text of a ranked row, opened when its tenant seals it (R47)."""
    return read_text(row.content, _SEALED_KINDS[source], row.id)


def ranked(
    db: DbSession, source: Source, channel: str, where: str, params: dict[str, Any]
) -> list[tuple[Any, float]]:
    """The `:n` best rows of `source` passing `where` by `channel` ("vector", "text" or the
    exact "vector_window"), best first, each with its raw signal (cosine distance or BM25)."""
    sql = _CHANNEL_SQL[channel].format(
        columns=COLUMNS[source], table=TABLES[source], where=where, source=source
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
        f"(SELECT count(*) FROM (SELECT 1 FROM {TABLES[source]} WHERE {base} AND {owner} "
        "LIMIT :most) AS w)"
        for owner in owners
    )
    return int(db.execute(text(f"SELECT {counts}"), params).scalar_one())


def window_is_wide(
    db: DbSession, source: Source, scope: SearchFilters, params: dict[str, Any]
) -> bool:
    """Whether the time window of `scope` may hold more than `WINDOW_EXACT_ROWS` rows of
    `source`: too many to rank exactly (see `window_vector`). Cheap enough to ask before
    any ranking, while the query vector is still being computed."""
    return _window_bound(db, source, scope, params) > WINDOW_EXACT_ROWS


def window_vector(
    db: DbSession, source: Source, where: str, params: dict[str, Any], *, wide: bool
) -> list[tuple[Any, float]]:
    """The vector ranking inside a time window: exact over the window's rows when they are
    few, else (`wide`, see `window_is_wide`) by the index with its scan bounded for this one
    query (a boost channel need not be complete: at a million memories, 4 days of them,
    32 → 8 ms)."""
    if not wide:
        return ranked(db, source, "vector_window", where, params)
    setting = "hnsw.max_scan_tuples"
    set_local(db, {setting: str(WINDOW_SCAN_TUPLES)})
    rows = ranked(db, source, "vector", where, params)
    set_local(db, {setting: SEARCH_SETTINGS[setting]})
    return rows


def turns_by_message_id(
    db: DbSession, where: str, params: dict[str, Any], keys: list[tuple[str, str]]
) -> list[Any]:
    """The message rows (in the ranked rows' shape) of `keys`, (session id, message id)
    pairs, that pass `where`: the source turns a memory hit lifts."""
    return list(
        db.execute(
            text(
                f"SELECT {COLUMNS['message']} FROM messages JOIN unnest(CAST(:sids AS text[]), "
                "CAST(:mids AS text[])) AS k(sid, mid) ON session_id = k.sid AND message_id = k.mid "
                f"WHERE {where}"
            ),
            {**params, "sids": [s for s, _ in keys], "mids": [m for _, m in keys]},
        )
    )


def next_turns(
    db: DbSession, where: str, params: dict[str, Any], ids: list[int]
) -> list[tuple[int, Any]]:
    """The turn right after each message row id of `ids` in its session, among those passing
    `where`, in the ranked rows' shape: (the id it follows, the row)."""
    after = (
        f"(SELECT {COLUMNS['message']} FROM messages WHERE {where} "
        "AND session_id = h.session_id AND (created_at, id) > (h.created_at, h.id) "
        "ORDER BY created_at, id LIMIT 1)"
    )
    rows = db.execute(
        text(
            f"SELECT h.id AS anchor, x.* FROM messages h CROSS JOIN LATERAL {after} x "
            "WHERE h.namespace = :ns AND h.id = ANY(:anchors)"
        ),
        {**params, "anchors": ids},
    )
    return [(row.anchor, row) for row in rows]


def neighbour_turns(
    db: DbSession, namespace: str, ids: list[int], width: int
) -> dict[int, list[dict[str, Any]]]:
    """For each message row id in `ids` (of `namespace`), the `width` turns before and after
    it in its session, in order, as plain dicts."""
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
            + ") x WHERE h.namespace = :ns AND h.id = ANY(:ids) ORDER BY h.id, x.created_at, x.id"
        ),
        {"ns": namespace, "ids": ids, "w": width},
    )
    by_hit: dict[int, list[dict[str, Any]]] = {}
    for row in rows:
        by_hit.setdefault(row.hit_id, []).append(
            {
                "message_id": row.message_id,
                "role": row.role,
                "content": read_text(row.content, "messages.content", row.id),
                "created_at": row.created_at.isoformat(),
            }
        )
    return by_hit
