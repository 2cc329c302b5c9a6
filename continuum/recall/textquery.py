"""Full-text query planning: which rows a search's text channel may match, bounded by corpus
statistics so its cost does not grow with the tenant.

A natural question is matched as an OR of its stemmed lexemes and every matching row is
read to rank it. That is right for a small tenant, but at a million rows an
OR of four everyday words matches ~70k rows and costs ~130 ms. Ranking engines solve this
by skipping documents that can only match uninformative terms (MaxScore/WAND); this module
does the same in Postgres terms, from the lexeme frequencies ANALYZE already keeps
(`pg_stats.most_common_elems`) and the tenant's share of the table, both read from the
partition holding the tenant (autovacuum analyzes partitions, never their parent):

- when the whole OR is expected to match at most `budget` rows, it is used as is;
- otherwise rows are matched on the rare lexemes alone, then on pairs of the common ones
  (a row holding two of them is worth ranking), then on all of them together, as long as
  the expected matches stay within budget. Ranking still weighs every query lexeme;
- whatever the plan, one ranking reads at most `MATCH_CAP` rows, so stale statistics or
  a one-word query cannot make it scan the tenant.

A row that only holds one everyday word is left to the vector channel, which finds
paraphrases anyway.

Speaker names are metadata, not words of the question: turns synced from a transcript open
with their speaker ("Caroline: …"), so a question naming a speaker would match every turn
of theirs. The names are read from the leading `Name:` of the tenant's latest turns
(`speakers`) and left out of the text query; fusion uses them instead to favour what the
person a question names said (`domain.text.speaker_of`).
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from sqlalchemy import text
from sqlalchemy.orm import Session as DbSession

from continuum.store.engine import statement
from continuum.store.partitions import partition_of

MATCH_BUDGET = 4000  # expected rows one text ranking may read
MATCH_CAP = 3 * MATCH_BUDGET  # rows it does read at most, should the statistics be wrong
STATS_TTL_S = 60.0
K = TypeVar("K", bound=Hashable)
T = TypeVar("T")

_STATS_SQL = text(
    """
    SELECT c.reltuples,
           t.most_common_elems::text::text[] AS elems, t.most_common_elem_freqs AS elem_freqs,
           n.most_common_vals::text::text[] AS namespaces, n.most_common_freqs AS ns_freqs,
           n.n_distinct, n.null_frac
    FROM pg_class c
    LEFT JOIN pg_stats t ON t.schemaname = current_schema() AND t.tablename = c.relname
                        AND t.attname = 'tsv'
    LEFT JOIN pg_stats n ON n.schemaname = current_schema() AND n.tablename = c.relname
                        AND n.attname = 'namespace'
    WHERE c.oid = to_regclass(:table)
    """
)


@dataclass(frozen=True)
class TableStats:
    """What ANALYZE last saw of one table's (or partition's) `tsv` and `namespace` columns."""

    rows: float = 0.0
    lexeme_freqs: dict[str, float] = field(default_factory=dict)
    unlisted_lexeme_freq: float = 0.0  # upper bound for a lexeme not in the common list
    namespace_freqs: dict[str, float] = field(default_factory=dict)
    unlisted_namespace_freq: float = 1.0

    def expected_rows(self, namespace: str, lexemes: tuple[str, ...]) -> float:
        """Rows of `namespace` expected to hold every one of `lexemes` (independence)."""
        share = self.namespace_freqs.get(namespace, self.unlisted_namespace_freq)
        estimate = self.rows * share
        for lexeme in lexemes:
            estimate *= self.lexeme_freqs.get(lexeme, self.unlisted_lexeme_freq)
        return estimate

    @classmethod
    def from_row(cls, row: Any) -> TableStats:
        if row is None:
            return cls()
        rows = max(float(row.reltuples or 0), 0.0)
        lexeme_freqs: dict[str, float] = {}
        unlisted_lexeme = 0.0  # no statistics yet: plan the full OR, the cap bounds it
        if row.elems and row.elem_freqs:
            # most_common_elem_freqs ends with the min and max frequency and the null one.
            lexeme_freqs = dict(zip(row.elems, row.elem_freqs, strict=False))
            unlisted_lexeme = float(row.elem_freqs[len(row.elems)])  # the listed minimum
        namespace_freqs: dict[str, float] = {}
        unlisted_namespace = 1.0
        if row.namespaces and row.ns_freqs:
            namespace_freqs = dict(zip(row.namespaces, row.ns_freqs, strict=True))
            distinct = row.n_distinct if row.n_distinct > 0 else -row.n_distinct * rows
            others = max(distinct - len(namespace_freqs), 1.0)
            rest = max(1.0 - sum(namespace_freqs.values()) - (row.null_frac or 0.0), 0.0)
            unlisted_namespace = rest / others
        return cls(rows, lexeme_freqs, unlisted_lexeme, namespace_freqs, unlisted_namespace)


class _TtlCache(Generic[K, T]):
    """Per process, a value per key (a table, a tenant) loaded by `load` and re-read at most
    once a minute; at most `max_keys` keys, the oldest dropped first."""

    def __init__(self, load: Callable[[DbSession, K], T], max_keys: int = 4096) -> None:
        self._load = load
        self._max_keys = max_keys
        self._lock = threading.Lock()
        self._entries: dict[K, tuple[float, T]] = {}

    def get(self, db: DbSession, key: K) -> T:
        now = time.monotonic()
        with self._lock:
            entry = self._entries.get(key)
        if entry and now - entry[0] < STATS_TTL_S:
            return entry[1]
        value = self._load(db, key)
        with self._lock:
            if key not in self._entries and len(self._entries) >= self._max_keys:
                self._entries.pop(next(iter(self._entries)))
            self._entries[key] = (now, value)
        return value

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


table_stats: _TtlCache[str, TableStats] = _TtlCache(
    lambda db, table: TableStats.from_row(db.execute(_STATS_SQL, {"table": table}).first())
)
# (table, namespace) → the partition holding the tenant's rows
_partitions: _TtlCache[tuple[str, str], str] = _TtlCache(lambda db, key: partition_of(db, *key))


def tenant_stats(db: DbSession, table: str, namespace: str) -> TableStats:
    """What ANALYZE last saw of the partition of `table` that holds `namespace`."""
    return table_stats.get(db, _partitions.get(db, (table, namespace)))


SPEAKER_SAMPLE = 200  # latest turns of a tenant read for speaker names
SPEAKER_MIN_TURNS = 3  # turns a `Name:` prefix must open among them to count
# A speaker's name as `domain.text.speaker_of` reads it.
_SPEAKERS_SQL = text(
    """
    SELECT name, lexeme FROM (
        SELECT substring(content FROM '^([[:upper:]][[:alpha:].''-]{0,30}):\\s') AS name
        FROM messages WHERE namespace = :ns ORDER BY created_at DESC LIMIT :sample
    ) latest CROSS JOIN LATERAL unnest(tsvector_to_array(to_tsvector('english', name))) AS lexeme
    WHERE name IS NOT NULL GROUP BY name, lexeme HAVING count(*) >= :min_turns
    """
)


def _speakers(db: DbSession, namespace: str) -> dict[str, frozenset[str]]:
    """The names the tenant's latest turns open with (`Name: …`), each with its stemmed
    lexemes: one bounded index range whatever the tenant's size."""
    params = {"ns": namespace, "sample": SPEAKER_SAMPLE, "min_turns": SPEAKER_MIN_TURNS}
    names: dict[str, set[str]] = {}
    for row in db.execute(_SPEAKERS_SQL, params):
        names.setdefault(row.name, set()).add(row.lexeme)
    return {name: frozenset(lexemes) for name, lexemes in names.items()}


speakers = _TtlCache(_speakers)


def quote_lexeme(lexeme: str) -> str:
    """`lexeme` as a tsquery operand: quoted, so no character in it is an operator."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def or_query(lexemes: tuple[str, ...]) -> str:
    return " | ".join(quote_lexeme(lexeme) for lexeme in lexemes)


def plan(
    lexemes: tuple[str, ...], stats: TableStats, namespace: str, budget: int = MATCH_BUDGET
) -> str:
    """The tsquery selecting the rows to rank for `lexemes`: their OR when it is expected to
    match at most `budget` rows, else a narrower one that is."""
    full = or_query(lexemes)
    expected = min(
        sum(stats.expected_rows(namespace, (lexeme,)) for lexeme in lexemes),
        stats.expected_rows(namespace, ()),  # no more than the tenant has
    )
    if expected <= budget:
        return full
    by_rarity = sorted(lexemes, key=lambda x: (stats.expected_rows(namespace, (x,)), x))
    clauses: list[str] = []
    spent = 0.0
    common: list[str] = []
    for lexeme in by_rarity:
        cost = stats.expected_rows(namespace, (lexeme,))
        if not common and spent + cost <= budget:
            clauses.append(quote_lexeme(lexeme))
            spent += cost
        else:
            common.append(lexeme)
    pairs = sorted(
        itertools.combinations(common, 2),
        key=lambda pair: (stats.expected_rows(namespace, pair), pair),
    )
    fitted = 0
    for pair in pairs:
        cost = stats.expected_rows(namespace, pair)
        if spent + cost > budget:
            break
        clauses.append(_all_of(pair))
        spent += cost
        fitted += 1
    if fitted < len(pairs) and len(common) > 2:  # a row holding all of them still counts
        clauses.append(_all_of(tuple(common)))
    # Nothing selective at all (one everyday word): rank the first rows found, up to the cap.
    return " | ".join(clauses) or full


def _all_of(lexemes: tuple[str, ...]) -> str:
    return "(" + " & ".join(quote_lexeme(lexeme) for lexeme in lexemes) + ")"


# The distinct stemmed lexemes of the query `:q` (English), in a stable order.
LEXEMES_SQL = "tsvector_to_array(to_tsvector('english', :q))"


def query_lexemes(db: DbSession, query: str) -> tuple[str, ...]:
    """The distinct stemmed lexemes of `query` (search selects them with its first
    statement, `LEXEMES_SQL`)."""
    found = db.execute(statement(f"SELECT {LEXEMES_SQL}"), {"q": query}).scalar()
    return tuple(found or ())
