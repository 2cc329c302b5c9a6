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

from sqlalchemy.orm import Session as DbSession

from continuum.recall.scope import SearchFilters, owner_clauses, status_clause
from continuum.sealing.envelope import read_text
from continuum.store.engine import fetch

Source = Literal["memory", "message"]

COLUMNS = {  # a row of either source in one shape (the hit's fields)
    "memory": "id, content, created_at, session_id, channel, kind, importance::int AS importance,"
    " source_message_ids, status, private",
    "message": "id, content, created_at, session_id, channel, role AS kind, NULL::int AS importance,"
    " ARRAY[message_id] AS source_message_ids, 'active' AS status, false AS private",
}
FIELDS = ("id", "content", "created_at", "session_id", "channel", "kind", "importance",
          "source_message_ids", "status", "private")  # fmt: skip
TABLES = {"memory": "memories", "message": "messages"}
_SEALED_KINDS = {"memory": "memories.content", "message": "messages.content"}
WINDOW_EXACT_ROWS = 2000  # a time window with at most this many rows is ranked exactly
WINDOW_SCAN_TUPLES = 2000  # tuples the index may visit ranking a wider one
_CHANNEL_SQL = {  # channel → SELECT of the `:n` best rows of `{table}` passing `{where}`
    "vector": "SELECT '{part}' AS part, {columns}, embedding <=> CAST(:qv AS halfvec) AS signal "
    "FROM {table} WHERE {where} AND embedding IS NOT NULL ORDER BY signal LIMIT :n",
    # A time window holds few rows (see `window_vector`): their distances are computed
    # exactly. An HNSW scan filtered to a narrow window would visit thousands of tuples to
    # fill its LIMIT (33-180 ms for 4 days of a million memories).
    "vector_window": "SELECT '{part}' AS part, {columns}, "
    "embedding <=> CAST(:qv AS halfvec) AS signal "
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
    "SELECT '{part}' AS part, {matched}, idf.weight * 2.2 / (1 + 1.2 * (0.25 + 0.75 * "
    "length(matched.tsv) / greatest(total.avgdl, 1)))::float8 AS signal FROM matched "
    "JOIN idf USING (id) CROSS JOIN total "
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
# For reads whose best plan does not depend on their values: the block's sections (index
# ranges per kind and owner, `recall.candidates`), and the reads by key after a search's
# rankings (`lifted_turns`, then the block's near-duplicates). psycopg prepares a statement
# run a few times on a connection, and Postgres then plans it once, not at each call: the
# sections' 10 ranges over the partitioned memories took about 2.5 ms to plan and 0.3 ms
# to run; the lifted turns 0.35 and 0.4.
GENERIC_PLANS = {"plan_cache_mode": "force_generic_plan"}
_SETTINGS_OF = "continuum.search_settings"  # Session.info: (transaction, sent, wanted)


def set_local(db: DbSession, settings: dict[str, str]) -> None:
    """SET LOCAL each of `settings` for the caller's transaction, in one round trip."""
    params: dict[str, Any] = {}
    fetch(db, f"SELECT {', '.join(_set_calls(settings, params))}", params)


def _set_calls(settings: dict[str, str], params: dict[str, Any]) -> list[str]:
    calls = []
    for i, (name, value) in enumerate(settings.items()):
        params[f"set_name{i}"], params[f"set_value{i}"] = name, value
        calls.append(f"set_config(:set_name{i}, :set_value{i}, true) AS set{i}")
    return calls


def _settings_state(db: DbSession) -> tuple[dict[str, str], dict[str, str]]:
    """(settings sent, settings wanted and not sent yet) in the caller's transaction."""
    transaction = db.get_transaction()
    state = db.info.get(_SETTINGS_OF)
    if state is None or state[0] is not transaction:
        state = db.info[_SETTINGS_OF] = (transaction, {}, {})
    return state[1], state[2]


def want_settings(db: DbSession, settings: dict[str, str]) -> None:
    """Ask for `settings` in the caller's transaction, sent with its next statement that
    carries settings (`settings_calls`) or by `send_settings`: a setting already in force is
    not sent again, so several searches in one transaction (context(), its explain audit)
    pay for them once, and that round trip is one the search makes anyway."""
    sent, wanted = _settings_state(db)
    wanted.update({name: value for name, value in settings.items() if sent.get(name) != value})


def settings_calls(db: DbSession, params: dict[str, Any]) -> list[str]:
    """The `set_config` calls of the settings wanted and not sent, for the caller's next
    statement to select (they count as sent from now on); fills `params`."""
    sent, wanted = _settings_state(db)
    calls = _set_calls(wanted, params)
    sent.update(wanted)
    wanted.clear()
    return calls


def send_settings(db: DbSession) -> None:
    """Send the settings wanted and not sent yet, if any, in one round trip of their own."""
    params: dict[str, Any] = {}
    calls = settings_calls(db, params)
    if calls:
        fetch(db, f"SELECT {', '.join(calls)}", params)


def use_settings(db: DbSession, settings: dict[str, str]) -> None:
    """`settings` in force for the caller's next statements, with any others wanted: one
    round trip, none when they already are (`want_settings`)."""
    want_settings(db, settings)
    send_settings(db)


def read_content(source: Source, row: Any) -> str:
    """The text of a ranked row, opened when its tenant seals it (R47)."""
    return read_text(row.content, _SEALED_KINDS[source], row.id)


def ranking_sql(source: Source, channel: str, where: str, part: str) -> str:
    """The SELECT of the `:n` best rows of `source` passing `where` by `channel` ("vector",
    "text" or the exact "vector_window"), best first, each with its raw signal (cosine
    distance or BM25) and tagged `part`: a part of `ranked_together`."""
    return _CHANNEL_SQL[channel].format(
        columns=COLUMNS[source],
        matched=", ".join(f"matched.{name}" for name in FIELDS),
        table=TABLES[source],
        where=where,
        source=source,
        part=part,
    )


def ranked_together(
    db: DbSession, parts: dict[str, str], params: dict[str, Any]
) -> dict[str, list[tuple[Any, float | None]]]:
    """Several rankings (`ranking_sql`, or any SELECT of `part`, FIELDS and `signal` in that
    shape, in its own order) in one statement, UNION ALL: each part's rows, in its order,
    with their signals. One round trip however many sources, scopes or sections."""
    found: dict[str, list[tuple[Any, float | None]]] = {part: [] for part in parts}
    if not parts:
        return found
    sql = " UNION ALL ".join(f"({select})" for select in parts.values())
    for row in fetch(db, sql, params):
        found[row.part].append((row, None if row.signal is None else float(row.signal)))
    return found


def ranked(
    db: DbSession, source: Source, channel: str, where: str, params: dict[str, Any]
) -> list[tuple[Any, float]]:
    """One ranking alone (see `ranking_sql`), best first, each row with its raw signal."""
    rows = fetch(db, ranking_sql(source, channel, where, channel), params)
    return [(row, float(row.signal)) for row in rows]


def window_bound_sql(source: Source, scope: SearchFilters, params: dict[str, Any]) -> str:
    """An expression of how many rows of `source` the time window of `scope` may hold, up to
    `WINDOW_EXACT_ROWS` + 1 (more: too many to rank exactly, see `window_vector`), for the
    caller's statement to select; fills `params`. Counted on the recent-rows indexes alone
    (namespace, owner and status of a memory; namespace of a message, and the time), so no
    row is read. An upper bound: the window's other filters (privacy, kinds, a missing
    embedding) can only remove rows. At a million memories, 0.7 ms, against 9 ms for reading
    2,001 rows to find them too many; cheap enough to ask before any ranking, while the
    query vector is still being computed."""
    params.update(since=scope.since, until=scope.until, most=WINDOW_EXACT_ROWS + 1)
    base = "namespace = :ns AND created_at >= :since AND created_at < :until"
    owners = ["true"]
    if source == "memory":
        base += " AND " + status_clause(scope, params)
        owners = owner_clauses(scope, params)
    return " + ".join(
        f"(SELECT count(*) FROM (SELECT 1 FROM {TABLES[source]} WHERE {base} AND {owner} "
        "LIMIT :most) AS w)"
        for owner in owners
    )


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


def lifted_turns(
    db: DbSession,
    params: dict[str, Any],
    keys: list[tuple[str, str]],
    keys_where: str,
    anchors: list[int],
    next_where: str | None,
) -> tuple[list[Any], list[tuple[int, Any]]]:
    """In one statement, the message rows (in the ranked rows' shape):
    - of `keys`, (session id, message id) pairs, that pass `keys_where`: the source turns
      memory hits lift;
    - with `next_where`, the turn right after each of the message rows `anchors` and of
      those source turns, in its session, among those passing `next_where`: (the id it
      follows, the row).
    The second part reads the turns after the source turns too, so the turns a lift puts
    among the best have theirs without a second round trip. On a generic plan
    (`GENERIC_PLANS`)."""
    use_settings(db, GENERIC_PLANS)
    message = COLUMNS["message"]
    params = {**params, "sids": [s for s, _ in keys], "mids": [m for _, m in keys],
              "anchors": anchors}  # fmt: skip
    sql = (
        f"WITH lifted AS (SELECT {message} FROM messages JOIN unnest(CAST(:sids AS text[]), "
        "CAST(:mids AS text[])) AS k(sid, mid) ON session_id = k.sid AND message_id = k.mid "
        f"WHERE {keys_where}) SELECT NULL::bigint AS anchor, lifted.* FROM lifted"
    )
    if next_where is not None:
        after = (
            f"(SELECT {message} FROM messages WHERE {next_where} "
            "AND session_id = h.session_id AND (created_at, id) > (h.created_at, h.id) "
            "ORDER BY created_at, id LIMIT 1)"
        )
        sql += (
            f" UNION ALL SELECT h.id, x.* FROM messages h CROSS JOIN LATERAL {after} x "
            "WHERE h.namespace = :ns AND (h.id = ANY(CAST(:anchors AS bigint[])) "
            "OR h.id IN (SELECT id FROM lifted))"
        )
    sources, following = [], []
    for row in fetch(db, sql, params):
        if row.anchor is None:
            sources.append(row)
        else:
            following.append((row.anchor, row))
    return sources, following


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
    rows = fetch(
        db,
        "SELECT h.id AS hit_id, x.* FROM messages h CROSS JOIN LATERAL ("
        + side.format(op="<", order="DESC")
        + " UNION ALL "
        + side.format(op=">", order="ASC")
        + ") x WHERE h.namespace = :ns AND h.id = ANY(:ids) ORDER BY h.id, x.created_at, x.id",
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
