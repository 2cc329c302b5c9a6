"""Hybrid search: pgvector cosine and Postgres full text over memories and raw messages,
fused by score, always scoped to one namespace (and user when given).

This module is the entry point and the order of work: prepare the query (its time phrase,
its embedding on the way), plan the text match, run each channel's ranking
(`recall.rankings`, the SQL) and fuse them (`recall.fusion`, the weighing), within the
scope of `recall.scope`. The context block calls `prepare_query` and `search_in` here, so
its relevance channel is exactly a search.

Every hit carries the ids of its source messages and the parts of its score, so an answer
can be traced back to the turns it came from and explained. Beyond the two base channels:
- a time expression in the query ("last weekend", "in March", relative to `now`) is taken
  out of the query text and adds vector + text ranks among rows about that window (said in
  it, or said soon after with a phrase pointing back into it: "last weekend I…" on Monday);
- an extracted memory is an extra key for its source turns: a memory hit passes a share of
  its score to the messages it came from (fetched if no channel found them). A digest
  (conversation summary, session snapshot) spans a whole session, so it is no key for any
  one turn: it passes nothing, and cites only the turns of its session the query matched
  (`fusion.evidence_turns`), best first — its full provenance stays on the memory row;
- a message hit can carry its neighbouring turns of the same session as context.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, tzinfo
from typing import Any, TypedDict, Unpack

from sqlalchemy.orm import Session as DbSession

from continuum.config import get_settings
from continuum.inference.embedding import QueryVector, embed_query_soon, vector_literal
from continuum.recall import rankings
from continuum.recall.admission import admitted, crowded
from continuum.recall.fusion import Fusion, FusionWeights, SearchHit
from continuum.recall.rankings import Source
from continuum.recall.scope import SearchFilters, where_sql
from continuum.recall.textquery import (
    LEXEMES_SQL,
    MATCH_CAP,
    plan,
    quote_lexeme,
    speakers,
    tenant_stats,
)
from continuum.recall.timeparse import TimeRange, parse_time_range, strip_phrase
from continuum.sealing.terms import keyed_lexemes, stored_tags
from continuum.store.engine import fetch
from continuum.store.reads import read_scope

CANDIDATES = 50


def attach_neighbours(db: DbSession, namespace: str, hits: list[SearchHit], width: int = 1) -> None:
    """Give each message hit (of `namespace`) the `width` turns before and after it in its
    session."""
    ids = [hit.id for hit in hits if hit.source == "message"]
    if not ids or width < 1:
        return
    by_hit = rankings.neighbour_turns(db, namespace, ids, width)
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
    vector: QueryVector | None

    def hurry(self) -> None:
        """Have the embedding start now if it was held (see `prepare_query`)."""
        if self.vector is not None:
            self.vector.hurry()


def prepare_query(
    query: str, filters: SearchFilters | None = None, now: datetime | None = None
) -> PreparedQuery:
    """Parse `query`'s time phrase (unless `filters` bound the time already) relative to
    `now` and start embedding the rest. When a recall starting now would wait for a slot
    (`admission`), the embedding is held until a few held queries wait, the caller is at the
    front of the line (`admitted(prepared.hurry)`) or it wants the vector, so it shares an
    encode with the queries that arrive meanwhile (`inference.embedding`)."""
    window = None
    if filters is None or not filters.time_bounded:
        window = parse_time_range(query, now)
    stripped = strip_phrase(query, window)
    return PreparedQuery(stripped, window, embed_query_soon(stripped, hold=crowded()))


def _prepared(
    namespace: str,
    query: str | PreparedQuery,
    filters: SearchFilters | None,
    now: datetime | None,
    tz: str | tzinfo | None,
) -> PreparedQuery:
    """`query` prepared, unless it is already: its time phrase names a day of the tenant's
    (or `tz`'s) calendar, relative to `now`."""
    if isinstance(query, PreparedQuery):
        return query
    return prepare_query(query, filters, get_settings().local_time(namespace, now, tz))


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
    tz: str | tzinfo | None = None,
    neighbours: int = 0,
) -> list[SearchHit]:
    """`search` inside the caller's transaction; `query` may be prepared already (the
    context block prepares its seed before its other channels run).

    Round trips: one for the query's words (with the search settings and, for a time
    phrase, the size of its window), one per channel (text, vector) for both sources and
    both scopes (all rows, the window's), one for the turns memories and the best turns
    lift; the speaker names and table statistics once a minute."""
    filters = filters or SearchFilters()
    if filters.tags:
        filters = replace(filters, tags=tuple(stored_tags(namespace, filters.tags)))
    weights = weights or FusionWeights()
    prepared = _prepared(namespace, query, filters, now, tz)
    query_vector = prepared.vector  # being embedded while the text channels rank
    window = None if filters.time_bounded else prepared.window
    params: dict[str, Any] = {"ns": namespace, "n": candidates, "cap": MATCH_CAP}
    scopes = [("", filters)]
    if window:  # turns said in the window, or soon after it about it (see mentioned_in)
        scopes.append(("_in_window", replace(filters, since=window.since,
                                             until=window.reported_until)))  # fmt: skip
    rankings.want_settings(db, rankings.SEARCH_SETTINGS)
    lexemes, wide = _prelude(db, prepared.text, scopes, sources if query_vector else (), params)
    # A transcript's turns open with their speaker's name ("Caroline: …"): as a word it
    # matches every turn of that person, so it selects and ranks nothing (the vector
    # channel still reads the whole question); fusion favours what the named said instead.
    names = speakers.get(db, namespace)
    named = {name for name, stems in names.items() if stems & set(lexemes)}
    said = frozenset().union(*names.values())
    lexemes = tuple(lexeme for lexeme in lexemes if lexeme not in said) or lexemes
    if get_settings().is_encrypted(namespace):  # its index holds keyed terms (R47)
        lexemes = keyed_lexemes(namespace, lexemes)
    params["terms"] = [quote_lexeme(lexeme) for lexeme in lexemes]
    for source in sources if lexemes else ():
        stats = tenant_stats(db, rankings.TABLES[source], namespace)
        params[f"tsm_{source}"] = plan(lexemes, stats, namespace)
    fusion = Fusion(weights, named if len(named) < len(names) else set())
    channels = (["text"] if lexemes else []) + (["vector"] if query_vector else [])
    for channel in channels:  # text first: the query vector is still being computed
        if channel == "vector" and query_vector:
            params["qv"] = vector_literal(query_vector.result())
        parts: dict[str, str] = {}
        alone: dict[str, tuple[Source, str]] = {}  # a wide window's vector ranking
        for suffix, scope in scopes:
            for source in sources:
                where = where_sql(source, scope, params)
                part = f"{channel}{suffix}:{source}"
                if suffix and channel == "vector" and wide[source]:
                    alone[part] = (source, where)
                elif suffix and channel == "vector":
                    parts[part] = rankings.ranking_sql(source, "vector_window", where, part)
                else:
                    parts[part] = rankings.ranking_sql(source, channel, where, part)
        found = rankings.ranked_together(db, parts, params)
        for part, (source, where) in alone.items():
            found[part] = list(rankings.window_vector(db, source, where, params, wide=True))
        for suffix, _ in scopes:
            joint: list[tuple[Source, Any, float]] = []
            for source in sources:
                rows = found[f"{channel}{suffix}:{source}"]
                if suffix and window:
                    rows = [
                        (row, signal)
                        for row, signal in rows
                        if window.mentioned_in(rankings.read_content(source, row), row.created_at)
                    ]
                joint += [(source, row, signal or 0.0) for row, signal in rows]
            # One ranking per channel across sources, by the channel's own signal: the best
            # of a few memories ranks where its similarity or BM25 puts it among the turns.
            joint.sort(key=lambda entry: entry[2] if channel == "vector" else -entry[2])
            weight = weights.in_window if suffix else getattr(weights, channel)
            fusion.add(channel + suffix, joint, weight)
    if "message" in sources:
        fusion.lift_turns(db, filters, params, sources="memory" in sources)
    hits = fusion.ranked()[:limit]
    attach_neighbours(db, namespace, hits, neighbours)
    return hits


def _prelude(
    db: DbSession,
    query: str,
    scopes: list[tuple[str, SearchFilters]],
    vector_sources: tuple[Source, ...],
    params: dict[str, Any],
) -> tuple[tuple[str, ...], dict[Source, bool]]:
    """One statement before any ranking: the distinct stemmed lexemes of `query` (English,
    in a stable order), the settings the transaction still needs, and for a time window
    whether it is too wide to rank exactly per source of `vector_sources` (see
    `rankings.window_vector`)."""
    selects = [f"{LEXEMES_SQL} AS lexemes"]
    selects += rankings.settings_calls(db, params)
    window = [scope for suffix, scope in scopes if suffix]
    counted = vector_sources if window else ()
    for source in counted:
        selects.append(f"({rankings.window_bound_sql(source, window[0], params)}) AS {source}")
    (row,) = fetch(db, f"SELECT {', '.join(selects)}", {**params, "q": query})
    wide = {source: getattr(row, source) > rankings.WINDOW_EXACT_ROWS for source in counted}
    return tuple(row.lexemes or ()), wide


class SearchOptions(TypedDict, total=False):
    """Keyword options of `search` (same meaning as in `search_in`)."""

    limit: int
    filters: SearchFilters | None
    sources: tuple[Source, ...]
    candidates: int
    weights: FusionWeights | None
    now: datetime | None
    tz: str | tzinfo | None
    neighbours: int


def search(namespace: str, query: str, **options: Unpack[SearchOptions]) -> list[SearchHit]:
    """The `limit` best hits for `query` by score fusion of the vector and text rankings
    (plus in-window ranks when the query names a time, relative to `now` on the tenant's
    clock, or `tz`'s: "yesterday" is a local day); `neighbours=n` attaches the n turns
    around each message hit."""
    # Prepared first: its query is embedded while it waits for a recall slot.
    prepared = _prepared(namespace, query, options.get("filters"), options.get("now"),
                         options.get("tz"))  # fmt: skip
    with admitted(prepared.hurry), read_scope(namespace) as db:
        return search_in(db, namespace, prepared, **options)
