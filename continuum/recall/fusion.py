"""Score fusion of hybrid search and the hits it returns: how each channel's ranking (from
`recall.rankings`) adds to a hit's score, how a memory lifts its source turns, which turns a
digest cites, and verbatim repeats kept once.

This is where search quality is decided (`FusionWeights`), apart from the SQL that fetches
the rankings, so a change of weighing cannot change what Postgres is asked and a change of
query plan cannot change a score. The context block reads `SearchHit` and `evidence_turns`
from here: a digest it pins cites its turns by the same rule as a digest search finds.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session as DbSession

from continuum.domain.kinds import kind_names
from continuum.domain.memory import DIGEST_KINDS
from continuum.domain.text import normalize_for_key, speaker_of
from continuum.recall.rankings import Source, lifted_turns, read_content
from continuum.recall.scope import SearchFilters, where_sql

TURN_INDEX_KINDS = frozenset(kind_names(lambda spec: spec.indexes_turn))


def _indexes_turn(source: Source, kind: str) -> bool:
    """Whether a row is a memory standing for its turn (a statement), not a hit of its own."""
    return source == "memory" and kind in TURN_INDEX_KINDS


@dataclass(frozen=True)
class FusionWeights:
    """Weights of score fusion: score = Σ source × channel × the hit's normalized signal in
    that channel's ranking (see `Fusion.add`)."""

    vector: float = 1.0
    text: float = 1.3
    in_window: float = 1.0  # each of vector/text ranked again inside the query's time window
    memory: float = 1.0
    message: float = 1.0
    memory_key: float = 0.7  # its source turns rank at least at this share of a memory's score
    statement: float = 0.7  # a turn scores at least this share of its best statement's score
    digest_evidence: float = 0.5  # a digest cites its turns scoring at least this share of it
    session: float = 0.3  # a turn gains this share of its session's best turn's score
    adjacent: float = 0.3  # the turn after a top turn scores at least this share of it
    adjacent_of: int = 5  # how many of the best turns lift the turn after them
    speaker: float = 0.5  # a turn said by a person the query names gains this share of it


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
    focus: str | None = None  # a turn's statement the query matched best, if one did

    def as_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "created_at": self.created_at.isoformat()}


def _hit(source: Source, row: Any) -> SearchHit:
    return SearchHit(
        source=source,
        id=row.id,
        content=read_content(source, row),
        created_at=row.created_at,
        session_id=row.session_id,
        channel=row.channel,
        kind=row.kind,
        importance=row.importance,
        source_message_ids=list(row.source_message_ids),
        status=row.status,
        private=row.private,
    )


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


class Fusion:
    """Accumulates each channel's score contributions per (source, id)."""

    def __init__(self, weights: FusionWeights, named: set[str] | None = None) -> None:
        self.weights = weights
        self.named = named or set()  # speakers the query names (not all of the tenant's)
        self.hits: dict[tuple[str, int], SearchHit] = {}
        self.unlifted: dict[int, float] = {}  # a lifted turn's score before `lift_adjacent`

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
        said = [source == "message" or _indexes_turn(source, row.kind) for source, row, _ in ranked]
        scale = [value for value, turn in zip(values, said, strict=True) if turn] or values
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

    def lift_turns(
        self, db: DbSession, filters: SearchFilters, params: dict[str, Any], *, sources: bool
    ) -> None:
        """The turns memory hits stand for (with `sources`), then the turns after the best
        turns, read in one statement (`rankings.lifted_turns`):

        - a memory hit lifts the messages it was extracted from to `memory_key` of its score
          (unless they score higher already): the turns show up right after it. A statement
          is one sentence of its turn: the turn scores at least `statement` of the best of
          its statements, as a match of its own words (`ranked` then leaves the statements
          out);
        - then the turn right after each of the `adjacent_of` best turns scores at least
          `adjacent` of it, found by a channel or not: a question's answer is the turn after
          the one that matches it, and rarely repeats its words.

        A lift only raises the turns it reaches, so the best turns after it are among the
        best before it and the lifted ones: the statement reads the turns after all of
        those."""
        best = self._source_lifts() if sources else {}
        adjacent = bool(self.weights.adjacent)
        anchors = [hit.id for hit in self._best_turns()] if adjacent else []
        if not best and not anchors:
            return
        keys_where = where_sql("message", replace(filters, session_id=None), params)
        next_where = where_sql("message", filters, params) if adjacent else None
        lifted, following = lifted_turns(db, params, list(best), keys_where, anchors, next_where)
        for row in lifted:
            hit = self._hit("message", row)
            share, why, focus = best[(row.session_id, row.source_message_ids[0])]
            hit.score = max(hit.score, share)
            hit.parts[why] = round(share, 6)
            hit.focus = focus or hit.focus
        if adjacent:
            self._lift_adjacent(following)

    def _source_lifts(self) -> dict[tuple[str, str], tuple[float, str, str | None]]:
        """(session id, message id) of each turn a memory hit stands for: the share of the
        score it lifts the turn to, why, and the statement to show for it."""
        best: dict[tuple[str, str], tuple[float, str, str | None]] = {}
        for hit in self.hits.values():
            if hit.source != "memory" or hit.kind in DIGEST_KINDS or not hit.session_id:
                continue
            index = _indexes_turn(hit.source, hit.kind)
            lift = (
                (hit.score * self.weights.statement, "statement", hit.content)
                if index
                else (hit.score * self.weights.memory_key, "memory_key", None)
            )
            for message_id in hit.source_message_ids:
                pair = (hit.session_id, message_id)
                if lift[0] > best.get(pair, (0.0,))[0]:
                    best[pair] = lift
        return best

    def _best_turns(self) -> list[SearchHit]:
        return sorted(
            (hit for hit in self.hits.values() if hit.source == "message"),
            key=lambda hit: -hit.score,
        )[: self.weights.adjacent_of]

    def _lift_adjacent(self, following: list[tuple[int, Any]]) -> None:
        anchors = {hit.id: hit.score for hit in self._best_turns()}
        for anchor, row in following:
            if anchor not in anchors:
                continue
            hit = self._hit("message", row)
            share = anchors[anchor] * self.weights.adjacent
            if share > hit.score:
                self.unlifted.setdefault(hit.id, hit.score)
                hit.score = share
                hit.parts["adjacent"] = round(share, 6)

    def ranked(self) -> list[SearchHit]:
        """Best first. A turn gains `session` of its session's best turn's score: a session
        the query reaches strongly is where its other turns most likely answer too (what was
        said around the best match, the answer after a question). A text repeated verbatim
        (recurring small talk, a memory that copies its turn) is kept once, at its best-scored
        occurrence, so copies cannot crowd out everything else. A digest cites the turns of
        its session the query itself matched at least `digest_evidence` as strongly as the
        digest (weaker ones are no evidence; neither lift is a match, and a session's best
        turn is the best the query matched)."""
        turns = [hit for hit in self.hits.values() if hit.source == "message"]
        matched = {turn.id: self.unlifted.get(turn.id, turn.score) for turn in turns}
        best: dict[str | None, float] = {}
        for turn in turns:
            best[turn.session_id] = max(best.get(turn.session_id, 0.0), matched[turn.id])
        for turn in turns:
            turn.score += self.weights.session * best[turn.session_id]
            if self.named and speaker_of(turn.content) in self.named:
                turn.score *= 1 + self.weights.speaker
                turn.parts["speaker"] = self.weights.speaker
        shown = [h for h in self.hits.values() if not _indexes_turn(h.source, h.kind)]
        ordered = sorted(shown, key=lambda h: (-h.score, -h.created_at.timestamp(), h.id))
        for hit in ordered:
            if hit.source == "memory" and hit.kind in DIGEST_KINDS:
                floor = self.weights.digest_evidence * hit.score
                strong = [h for h in ordered if h.source == "message" and matched[h.id] >= floor]
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
