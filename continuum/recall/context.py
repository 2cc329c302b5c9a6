"""The context block a session starts with (R10, R26, R27, R31).

Candidates come from channels — recency, relevance (hybrid search of the seed text),
importance (≥ 8 within N days) — plus pinned items: pending handoff, recent conversation
summaries, open threads, active tasks, preferences. Each gets

    score = w_relevance · relevance + w_importance · importance/10 + w_recency · decay + pin

near-duplicates are dropped (same normalized text, embedding cosine ≥ 0.92, or a raw turn
already covered by a memory extracted from it), and items are packed greedily by score into
`max_tokens`, counted with the embedding model's tokenizer: the block never exceeds the
budget. The pending handoff goes in first.

With a seed, the sections yield to relevance: the relevance channel brings more items and
pinned items lose their bonus, so a summary, task or preference keeps its place only as far
as the seed, its importance or its recency carry it. Without one (a session start) the
pinned items lead.

Scoping (R16): only the namespace's active memories; memories of another user never appear
(NULL user_id is shared); a private memory appears only to its owner (`user_id` matches) in
the owner's main context — `channel` is one of `RecallConfig.main_channels` (main, dm,
direct) or ends in `:dm`. Group and other channels never see private memories.

Every recall is logged in `memory_log` (action `recall`) with its query, topic slug, top
items and scores and the tokens injected; `explain=True` also reports memories the seed
matched but that were filtered out (superseded, quarantined, forgotten, archived, private).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, TypedDict, Unpack

from sqlalchemy import text
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session as DbSession

from continuum.capture.due import due_label
from continuum.capture.topics import topic_slug
from continuum.domain.kinds import KINDS, ContextSection, MemoryKind, kind_names
from continuum.domain.memory import DIGEST_KINDS
from continuum.domain.text import clip, normalize_for_key
from continuum.ephemeral.handoff import peek_handoff
from continuum.inference.tokenizer import count_block_tokens, count_tokens
from continuum.memory.user_tasks import tasks_query
from continuum.recall.search import (
    FusionWeights,
    PreparedQuery,
    SearchFilters,
    SearchHit,
    evidence_turns,
    owner_clauses,
    prepare_query,
    search_in,
    use_search_settings,
    where_sql,
)
from continuum.sealing.envelope import read_text, seal
from continuum.sealing.terms import keyed_label
from continuum.sealing.tombstones import UserForgotten
from continuum.store.engine import session_scope
from continuum.store.models import MemoryLog

ItemSource = Literal["memory", "message", "task", "handoff"]
HIDDEN_STATUSES = ("superseded", "quarantined", "forgotten", "archived")
SECTIONS = (  # block order
    "Pending handoff",
    "Recent conversations",
    "Decisions",
    "Open threads",
    "Active tasks",
    "Preferences",
    "Relevant memories",
)
_SECTION_OF_KIND: dict[str, str] = {spec.name: spec.context_section for spec in KINDS}
_PINNED_CHANNELS = {"summaries", "open_threads", "preferences", "tasks", "handoff"}
_MESSAGE_IMPORTANCE = 4  # raw turns carry no rating; they rank below rated memories


@dataclass(frozen=True)
class ScoreWeights:
    relevance: float = 0.55
    importance: float = 0.25
    recency: float = 0.2
    pinned: float = 0.25  # bonus of pinned items (summaries, open threads, tasks, preferences)
    pinned_with_seed: float = 0.0  # their bonus when a seed is given: relevance decides


@dataclass(frozen=True)
class RecallConfig:
    """Channel sizes, scoring and dedupe knobs of `context()`."""

    weights: ScoreWeights = field(default_factory=ScoreWeights)
    fusion: FusionWeights = field(default_factory=FusionWeights)
    recency_n: int = 5
    relevance_n: int = 16
    relevance_candidates: int = 24  # ranks each search channel contributes to the fusion
    importance_n: int = 10
    importance_min: int = 8
    importance_days: int = 30
    pinned_n: int = 8
    summaries_n: int = 3
    half_life_days: float = 14.0
    duplicate_cosine: float = 0.92
    max_item_chars: int = 300
    max_summary_chars: int = 700
    main_channels: frozenset[str] = frozenset({"main", "dm", "direct"})


@dataclass
class ContextItem:
    """One line of the block: what it is, where it came from and why it was chosen."""

    ref: str  # memory:<id> | message:<session>/<message_id> | task:<uuid> | handoff
    kind: str
    section: str
    text: str
    score: float
    tokens: int
    why: str
    parts: dict[str, float] = field(default_factory=dict)
    memory_id: int | None = None
    source_message_ids: list[str] = field(default_factory=list)
    created_at: datetime | None = None

    def as_dict(self) -> dict[str, Any]:
        created = self.created_at.isoformat() if self.created_at else None
        return {**self.__dict__, "created_at": created}


@dataclass(frozen=True)
class Excluded:
    ref: str
    kind: str
    reason: str
    score: float | None = None


@dataclass
class ContextResult:
    block: str
    items: list[ContextItem]
    excluded: list[Excluded]
    tokens_used: int
    query_id: str
    topic: str

    @property
    def memory_ids(self) -> list[int]:
        return [item.memory_id for item in self.items if item.memory_id is not None]

    def as_dict(self) -> dict[str, Any]:
        return {
            "block": self.block,
            "items": [item.as_dict() for item in self.items],
            "excluded": [e.__dict__ for e in self.excluded],
            "tokens_used": self.tokens_used,
            "query_id": self.query_id,
            "topic": self.topic,
            "memory_ids": self.memory_ids,
        }


@dataclass
class _Candidate:
    source: ItemSource
    ref: str
    kind: str
    content: str
    created_at: datetime | None
    channel: str | None = None
    importance: int | None = None
    db_id: int | None = None  # memories.id / messages.id, for embedding dedupe
    session_id: str | None = None
    source_message_ids: list[str] = field(default_factory=list)
    channels: dict[str, str] = field(default_factory=dict)  # channel → why it was picked
    covers: list[str] = field(default_factory=list)  # memory refs a task was created from
    relevance: float = 0.0
    parts: dict[str, float] = field(default_factory=dict)
    score: float = 0.0

    @property
    def section(self) -> str:
        if self.source == "handoff":
            return "Pending handoff"
        if self.source == "task":
            return "Active tasks"
        return _SECTION_OF_KIND.get(self.kind, "Relevant memories")  # a raw turn: kind = role


# -- rendering -------------------------------------------------------------------------
def render_when(when: datetime, now: datetime) -> str:
    """`2026-11-21 (Sat, 3 days ago)`: the date, weekday and distance from now."""
    days = (now.date() - when.astimezone(now.tzinfo or UTC).date()).days
    if days == 0:
        distance = "today"
    elif days == 1:
        distance = "yesterday"
    elif days == -1:
        distance = "tomorrow"
    elif days > 0:
        distance = f"{days} days ago" if days < 60 else f"{round(days / 30.44)} months ago"
    else:
        distance = f"in {-days} days"
    return f"{when:%Y-%m-%d} ({when:%a}, {distance})"


def _line(candidate: _Candidate, now: datetime, config: RecallConfig) -> str:
    limit = (
        config.max_summary_chars
        if candidate.section == "Recent conversations"
        else config.max_item_chars
    )
    body = clip(candidate.content, limit)
    if candidate.source == "handoff":
        return f"- {body}"
    if candidate.source == "task":
        return f"- [{candidate.kind}] {body}"
    prefix = f"{render_when(candidate.created_at, now)} " if candidate.created_at else ""
    where = f"[{candidate.channel}] " if candidate.channel else ""
    speaker = f"{candidate.kind}: " if candidate.source == "message" else ""
    return f"- {prefix}{where}{speaker}{body}"


def _header(now: datetime) -> str:
    return f"# Memory context (now {now:%Y-%m-%d %a %H:%M} UTC)"


def _render(items: list[ContextItem], now: datetime) -> str:
    if not items:
        return ""
    parts = [_header(now)]
    for section in SECTIONS:
        lines = [item.text for item in items if item.section == section]
        if lines:
            parts.append(f"## {section}\n" + "\n".join(lines))
    return "\n\n".join(parts)


# -- candidates ------------------------------------------------------------------------
_MEMORY_COLUMNS = (  # a memory's channel, else the one its details name
    "id, kind, content, created_at, coalesce(nullif(channel, ''), details->>'channel') AS channel,"
    " importance, session_id, source_message_ids"
)


def _kinds_in(section: ContextSection) -> tuple[MemoryKind, ...]:
    return kind_names(lambda spec: spec.context_section == section)


SUMMARY_KINDS = _kinds_in("Recent conversations")


@dataclass(frozen=True)
class _MemoryChannel:
    """Memories of `kinds` matching `where`, read as short index ranges: for each part (a
    kind, or an importance level from 10 down to `importance_min`) and each owner (the
    user, the shared rows) the newest `limit`; of those, the best `limit` by `order`. The
    cost is bounded by parts × owners × limit rows, however many rows other users, other
    kinds or older memories hold."""

    name: str
    why: str
    kinds: tuple[str, ...]
    limit: int
    where: str = "true"
    order: str = "created_at DESC"
    by: Literal["kind", "importance"] = "kind"


_PARTS = {  # part rows, and the condition a memory of that part meets (channel {i}'s kinds)
    "kind": ("unnest(CAST(:wanted{i} AS text[]))", "kind = p.part"),
    "importance": (
        "generate_series(10, CAST(:imin AS int), -1)",
        "importance = p.part AND kind = ANY(CAST(:wanted{i} AS text[]))",
    ),
}


def _memory_channels(config: RecallConfig) -> list[_MemoryChannel]:
    by_rank = "importance DESC, created_at DESC"
    not_summaries = kind_names(lambda spec: spec.context_section != "Recent conversations")
    return [
        _MemoryChannel("summaries", "recent conversation", SUMMARY_KINDS, config.summaries_n),
        _MemoryChannel("open_threads", "open thread", _kinds_in("Open threads"), config.pinned_n,
                       "tags @> ARRAY['status:open']", by_rank),
        _MemoryChannel("preferences", "preference", _kinds_in("Preferences"), config.pinned_n,
                       order=by_rank),
        _MemoryChannel("recency", "recent", not_summaries, config.recency_n),
        _MemoryChannel("importance",
                       f"importance ≥ {config.importance_min} within {config.importance_days} days",
                       not_summaries, config.importance_n, "created_at >= :isince", by_rank,
                       by="importance"),
    ]  # fmt: skip


def _memory_candidates(
    db: DbSession,
    namespace: str,
    scope: SearchFilters,
    channels: list[_MemoryChannel],
    now: datetime,
    config: RecallConfig,
) -> list[list[_Candidate]]:
    """Each channel's memories, all read in one statement (one round trip for the block's
    sections)."""
    params: dict[str, Any] = {
        "ns": namespace,
        "imin": config.importance_min,
        "isince": now - timedelta(days=config.importance_days),
    }
    scoped = where_sql("memory", scope, params, owners=False)
    owners = owner_clauses(scope, params)
    selects = []
    for i, channel in enumerate(channels):
        params[f"limit{i}"], params[f"wanted{i}"] = channel.limit, list(channel.kinds)
        parts, part_matches = (sql.format(i=i) for sql in _PARTS[channel.by])
        ranges = " UNION ALL ".join(
            f"(SELECT {_MEMORY_COLUMNS} FROM memories WHERE {scoped} AND {channel.where} "
            f"AND {owner} AND {part_matches} ORDER BY created_at DESC, id DESC LIMIT :limit{i})"
            for owner in owners
        )
        selects.append(
            f"(SELECT {i} AS channel_index, m.* FROM {parts} AS p(part) CROSS JOIN LATERAL "
            f"({ranges}) AS m ORDER BY {channel.order}, id DESC LIMIT :limit{i})"
        )
    found: list[list[_Candidate]] = [[] for _ in channels]
    for row in db.execute(text(" UNION ALL ".join(selects)), params):
        channel = channels[row.channel_index]
        found[row.channel_index].append(
            _Candidate(
                source="memory",
                ref=f"memory:{row.id}",
                kind=row.kind,
                content=read_text(row.content, "memories.content"),
                created_at=row.created_at,
                channel=row.channel,
                importance=row.importance,
                db_id=row.id,
                session_id=row.session_id,
                source_message_ids=list(row.source_message_ids),
                channels={channel.name: channel.why},
            )
        )
    return found


def _task_candidates(
    db: DbSession, namespace: str, user_id: str | None, limit: int
) -> list[_Candidate]:
    rows = db.scalars(tasks_query(namespace, user_id, limit=limit))
    found = []
    for row in rows:
        content = row.title + (f": {row.description}" if row.description else "")
        content += f" ({due_label(row.due_at)})" if row.due_at else ""
        candidate = _Candidate(
            source="task",
            ref=f"task:{row.task_id}",
            kind=row.status,
            content=content,
            created_at=row.created_at,
            channel=row.created_channel,
            importance=7,
            channels={"tasks": f"active task ({row.status})"},
            covers=[tag for tag in row.tags if tag.startswith("memory:")],
        )
        found.append(candidate)
    return found


def _handoff_candidate(namespace: str, user_id: str | None, now: datetime) -> list[_Candidate]:
    handoff = peek_handoff(namespace, user_id)
    if not handoff:
        return []
    when = datetime.fromisoformat(handoff["timestamp"])
    minutes = max(0, round((now - when).total_seconds() / 60))
    content = (
        f"User is switching from {handoff['from_channel']} to {handoff['to_channel']} "
        f"({minutes} min ago): {handoff['context_summary']}"
    )
    return [
        _Candidate(
            source="handoff",
            ref="handoff",
            kind="handoff",
            content=content,
            created_at=None,
            importance=10,
            channels={"handoff": "pending handoff from " + handoff["from_channel"]},
        )
    ]


def _from_hit(hit: SearchHit, best: float, rank: int) -> _Candidate:
    is_memory = hit.source == "memory"
    ref = (
        f"memory:{hit.id}" if is_memory else f"message:{hit.session_id}/{hit.source_message_ids[0]}"
    )
    signals = ", ".join(f"{k} {v:g}" for k, v in sorted(hit.parts.items()))
    return _Candidate(
        source=hit.source,
        ref=ref,
        kind=hit.kind,
        content=hit.content,
        created_at=hit.created_at,
        channel=hit.channel,
        importance=hit.importance,
        db_id=hit.id,
        session_id=hit.session_id,
        source_message_ids=hit.source_message_ids,
        channels={"relevance": f"relevance #{rank} ({signals})"},
        relevance=hit.score / best if best else 0.0,
        parts={f"search_{k}": v for k, v in hit.parts.items()},
    )


def _merge(groups: Iterable[list[_Candidate]]) -> list[_Candidate]:
    """One candidate per ref; channels and relevance of repeats are combined."""
    merged: dict[str, _Candidate] = {}
    for group in groups:
        for candidate in group:
            seen = merged.get(candidate.ref)
            if seen is None:
                merged[candidate.ref] = candidate
                continue
            seen.channels.update(candidate.channels)
            seen.relevance = max(seen.relevance, candidate.relevance)
            seen.parts.update(candidate.parts)
    return list(merged.values())


# -- scoring, dedupe, packing ------------------------------------------------------------
def _score(candidate: _Candidate, now: datetime, config: RecallConfig, seeded: bool) -> None:
    w = config.weights
    importance = (candidate.importance or _MESSAGE_IMPORTANCE) / 10
    recency = 1.0
    if candidate.created_at is not None:
        age_days = max(0.0, (now - candidate.created_at).total_seconds() / 86400)
        recency = 0.5 ** (age_days / config.half_life_days)
    bonus = w.pinned_with_seed if seeded else w.pinned
    pinned = bonus if _PINNED_CHANNELS & candidate.channels.keys() else 0.0
    candidate.parts.update(
        relevance=round(candidate.relevance, 4),
        importance=round(importance, 4),
        recency=round(recency, 4),
        pinned=pinned,
    )
    candidate.score = round(
        w.relevance * candidate.relevance
        + w.importance * importance
        + w.recency * recency
        + pinned,
        6,
    )


def _near_duplicates(
    db: DbSession, candidates: list[_Candidate], threshold: float
) -> set[frozenset[str]]:
    """Pairs of refs whose embeddings have cosine similarity ≥ threshold."""
    ids = {
        source: {c.db_id: c.ref for c in candidates if c.source == source and c.db_id}
        for source in ("memory", "message")
    }
    if not ids["memory"] and not ids["message"]:
        return set()
    rows = db.execute(
        text(
            "WITH c AS (SELECT 'memory' AS s, id, embedding FROM memories "
            "WHERE id = ANY(:mem) AND embedding IS NOT NULL UNION ALL "
            "SELECT 'message', id, embedding FROM messages "
            "WHERE id = ANY(:msg) AND embedding IS NOT NULL) "
            "SELECT a.s AS sa, a.id AS ia, b.s AS sb, b.id AS ib FROM c a JOIN c b "
            "ON (a.s, a.id) < (b.s, b.id) WHERE (a.embedding <=> b.embedding) <= :d"
        ),
        {"mem": list(ids["memory"]), "msg": list(ids["message"]), "d": 1 - threshold},
    )
    return {frozenset((ids[r.sa][r.ia], ids[r.sb][r.ib])) for r in rows}


def _duplicate_of(
    candidate: _Candidate, kept: list[_Candidate], pairs: set[frozenset[str]], keys: dict[str, str]
) -> str | None:
    for other in kept:
        if keys[other.ref] == keys[candidate.ref]:
            return f"same text as {other.ref}"
        if frozenset((candidate.ref, other.ref)) in pairs:
            return f"near-duplicate of {other.ref}"
        if (
            candidate.source == "message"
            and other.source == "memory"
            and other.kind not in DIGEST_KINDS  # a summary does not say what the turn said
            and candidate.session_id == other.session_id
            and candidate.source_message_ids[0] in other.source_message_ids
        ):
            return f"covered by {other.ref}, extracted from this turn"
    return None


def _dedupe(
    db: DbSession, candidates: list[_Candidate], config: RecallConfig, excluded: list[Excluded]
) -> list[_Candidate]:
    tracked = {ref: c.ref for c in candidates if c.source == "task" for ref in c.covers}
    for candidate in [c for c in candidates if c.ref in tracked]:
        excluded.append(
            Excluded(
                candidate.ref,
                candidate.kind,
                f"tracked as {tracked[candidate.ref]}",
                candidate.score,
            )
        )
    candidates = [c for c in candidates if c.ref not in tracked]
    pairs = _near_duplicates(db, candidates, config.duplicate_cosine)
    keys = {c.ref: normalize_for_key(c.content) for c in candidates}
    kept: list[_Candidate] = []
    # Memories before raw turns, so a turn is judged against what was extracted from it.
    for candidate in sorted(candidates, key=lambda c: (c.source == "message", -c.score, c.ref)):
        reason = _duplicate_of(candidate, kept, pairs, keys)
        if reason:
            excluded.append(Excluded(candidate.ref, candidate.kind, reason, candidate.score))
        else:
            kept.append(candidate)
    return kept


def _why(candidate: _Candidate) -> str:
    reasons = [candidate.channels[name] for name in sorted(candidate.channels)]
    return "; ".join(reasons) + f"; score {candidate.score:g}"


def _pack(
    candidates: list[_Candidate],
    max_tokens: int,
    now: datetime,
    config: RecallConfig,
    excluded: list[Excluded],
) -> tuple[list[ContextItem], str, int]:
    """Greedy by score (a long relevant turn before a short weak one); the handoff first.
    An item that no longer fits is skipped for smaller ones after it. Token counts add up across the
    whitespace that joins lines, so the sum is the block's exact count (checked after, on the
    rendered block).
    Returns the items, the rendered block and its token count."""
    used = count_tokens(_header(now))
    opened: set[str] = set()
    items: list[ContextItem] = []
    lines = {c.ref: _line(c, now, config) for c in candidates}
    tokens_of = {ref: count_tokens(line) for ref, line in lines.items()}
    order = sorted(
        candidates,
        key=lambda c: (c.source != "handoff", -c.score, tokens_of[c.ref], c.ref),
    )
    for candidate in order:
        line, tokens = lines[candidate.ref], tokens_of[candidate.ref]
        section = candidate.section
        cost = tokens + (0 if section in opened else count_tokens(f"## {section}"))
        if used + cost > max_tokens:
            excluded.append(
                Excluded(candidate.ref, candidate.kind, "over the token budget", candidate.score)
            )
            continue
        used += cost
        opened.add(section)
        items.append(
            ContextItem(
                ref=candidate.ref,
                kind=candidate.kind,
                section=section,
                text=line,
                score=candidate.score,
                tokens=tokens,
                why=_why(candidate),
                parts=candidate.parts,
                memory_id=candidate.db_id if candidate.source == "memory" else None,
                source_message_ids=candidate.source_message_ids,
                created_at=candidate.created_at,
            )
        )
    # Block order: sections in SECTIONS order; newest conversations first, else by score.
    items.sort(
        key=lambda i: (
            SECTIONS.index(i.section),
            -(i.created_at.timestamp() if i.created_at else 0)
            if i.section == "Recent conversations"
            else -i.score,
            i.ref,
        )
    )
    block = _render(items, now)
    while (tokens_used := count_block_tokens(block)) > max_tokens:  # never over the budget
        dropped = min(items, key=lambda i: (i.score / max(i.tokens, 1), i.ref))
        items.remove(dropped)
        excluded.append(Excluded(dropped.ref, dropped.kind, "over the token budget", dropped.score))
        block = _render(items, now)
    return items, block, tokens_used


# -- the request -------------------------------------------------------------------------
@dataclass(frozen=True)
class _Request:
    namespace: str
    seed_text: str
    max_tokens: int
    user_id: str | None
    channel: str | None
    explain: bool
    now: datetime
    config: RecallConfig
    pinned: bool = True  # recency, importance and pinned channels (off for topic shifts)
    skip_refs: frozenset[str] = frozenset()
    since_topic: str | None = None


def owner_context(user_id: str | None, channel: str | None, config: RecallConfig) -> bool:
    """Whether the caller is the user's main context, where their private memories show."""
    if not user_id or not channel:
        return False
    return channel in config.main_channels or channel.endswith(":dm")


def _scope(request: _Request) -> SearchFilters:
    return SearchFilters(
        user_id=request.user_id,
        include_private=owner_context(request.user_id, request.channel, request.config),
    )


def _gather(
    db: DbSession, request: _Request, scope: SearchFilters, prepared: PreparedQuery | None
) -> list[_Candidate]:
    config, ns = request.config, request.namespace
    pinned: list[list[_Candidate]] = []
    if request.pinned:  # these need no query vector: they run while the seed is embedded
        pinned.append(_handoff_candidate(ns, request.user_id, request.now))
        pinned += _memory_candidates(db, ns, scope, _memory_channels(config), request.now, config)
        pinned.append(_task_candidates(db, ns, request.user_id, config.pinned_n))
    relevant: list[_Candidate] = []
    hits: list[SearchHit] = []
    if prepared is not None:
        hits = search_in(
            db,
            ns,
            prepared,
            limit=config.relevance_n,
            filters=scope,
            candidates=config.relevance_candidates,
            weights=config.fusion,
            now=request.now,
        )
        best = hits[0].score if hits else 0.0
        relevant = [_from_hit(hit, best, rank) for rank, hit in enumerate(hits, start=1)]
    turns = [hit for hit in hits if hit.source == "message"]
    for candidate in [c for group in pinned for c in group if c.kind in DIGEST_KINDS]:
        candidate.source_message_ids = evidence_turns(
            candidate.session_id, candidate.source_message_ids, turns
        )
    return _merge([relevant, *pinned])


def _filtered_out(
    db: DbSession,
    request: _Request,
    scope: SearchFilters,
    prepared: PreparedQuery | None,
    admitted: set[str],
) -> list[Excluded]:
    """Memories the seed matches that scoping hides: reported by id and reason only."""
    if prepared is None:
        return []
    audit = replace(scope, include_private=True, statuses=("active", *HIDDEN_STATUSES))
    hits = search_in(
        db,
        request.namespace,
        prepared,
        limit=request.config.relevance_n,
        filters=audit,
        sources=("memory",),
        now=request.now,
    )
    found = []
    for hit in hits:
        ref = f"memory:{hit.id}"
        if ref in admitted:
            continue
        if hit.status != "active":
            found.append(Excluded(ref, hit.kind, f"status {hit.status}"))
        elif hit.private and not scope.include_private:
            found.append(Excluded(ref, hit.kind, "private: shown only in the owner's main context"))
    return found


def _logged_query(request: _Request) -> str | None:
    """The question as the recall log keeps it: sealed for the user of an encrypted tenant;
    not at all for a forgotten user."""
    try:
        return seal(request.namespace, request.user_id, "memory_log.query", request.seed_text)
    except UserForgotten:
        return None


def _log(db: DbSession, request: _Request, result: ContextResult) -> None:
    details = {
        "query_id": result.query_id,
        "query": _logged_query(request),
        "topic": keyed_label(request.namespace, result.topic),
        "since_topic": request.since_topic and keyed_label(request.namespace, request.since_topic),
        "user_id": request.user_id,
        "channel": request.channel,
        "max_tokens": request.max_tokens,
        "tokens_injected": result.tokens_used,
        "results": [{"ref": i.ref, "score": i.score} for i in result.items],
        "excluded": len(result.excluded),
    }
    db.execute(
        insert(MemoryLog).values(
            namespace=request.namespace, action="recall", trigger="context", details=details
        )
    )


def _recall(request: _Request) -> ContextResult:
    excluded: list[Excluded] = []
    scope = _scope(request)
    seed = request.seed_text
    prepared = prepare_query(seed, scope, request.now) if seed.strip() else None
    with session_scope() as db:
        # The only write is the recall log: it need not wait for a WAL flush (a crash may
        # lose the last few log rows, never a memory).
        use_search_settings(db, {"synchronous_commit": "off"})
        candidates = []
        for candidate in _gather(db, request, scope, prepared):
            if candidate.ref in request.skip_refs:
                excluded.append(Excluded(candidate.ref, candidate.kind, "already injected"))
            else:
                _score(candidate, request.now, request.config, prepared is not None)
                candidates.append(candidate)
        kept = _dedupe(db, candidates, request.config, excluded)
        items, block, tokens_used = _pack(
            kept, request.max_tokens, request.now, request.config, excluded
        )
        if request.explain:
            excluded += _filtered_out(db, request, scope, prepared, {c.ref for c in candidates})
        result = ContextResult(
            block=block,
            items=items,
            excluded=excluded if request.explain else [],
            tokens_used=tokens_used,
            query_id=str(uuid.uuid4()),
            topic=topic_slug(request.seed_text) if request.seed_text.strip() else "general",
        )
        _log(db, request, result)
    return result


class ContextOptions(TypedDict, total=False):
    """Keyword options of `context` and `recall_since_topic`."""

    user_id: str | None  # whose memories (plus the namespace's shared ones)
    channel: str | None  # where the block goes; the user's main channel shows private items
    explain: bool  # also report what was left out and why
    now: datetime | None  # the reference time (default: the wall clock)
    config: RecallConfig | None


def _request(namespace: str, seed_text: str, max_tokens: int, options: ContextOptions) -> _Request:
    if max_tokens < 0:
        raise ValueError("max_tokens must be ≥ 0")
    return _Request(
        namespace,
        seed_text,
        max_tokens,
        options.get("user_id"),
        options.get("channel"),
        options.get("explain", False),
        options.get("now") or datetime.now(UTC),
        options.get("config") or RecallConfig(),
    )


def context(
    namespace: str, seed_text: str, max_tokens: int, **options: Unpack[ContextOptions]
) -> ContextResult:
    """The context block for a session of `user_id` on `channel`, at most `max_tokens`."""
    return _recall(_request(namespace, seed_text, max_tokens, options))


def injected_for_topic(
    namespace: str, topic: str, user_id: str | None, within: timedelta
) -> frozenset[str]:
    """Refs injected by recalls logged under `topic` (for this user) in the last `within`
    (wall-clock time: when the recalls ran)."""
    with session_scope() as db:
        rows = db.execute(
            text(
                "SELECT details->'results' AS results FROM memory_log "
                "WHERE namespace = :ns AND action = 'recall' AND details->>'topic' = :topic "
                "AND created_at >= :since "
                "AND (CAST(:uid AS text) IS NULL OR details->>'user_id' = :uid)"
            ),
            {
                "ns": namespace,
                "topic": keyed_label(namespace, topic),
                "since": datetime.now(UTC) - within,
                "uid": user_id,
            },
        )
        return frozenset(item["ref"] for row in rows for item in row.results or [])


def recall_since_topic(
    namespace: str,
    since_topic: str,
    seed_text: str,
    max_tokens: int,
    within: timedelta = timedelta(hours=24),
    **options: Unpack[ContextOptions],
) -> ContextResult:
    """Topic-shift recall mid-session (R27): the items relevant to `seed_text` (the new
    topic) that no recall logged under `since_topic` in the last `within` already injected.
    Only the relevance channel runs; the pinned items are already in the session's block.
    When the seed's topic slug equals `since_topic` (synonyms included), nothing is new."""
    request = replace(
        _request(namespace, seed_text, max_tokens, options),
        pinned=False,
        skip_refs=injected_for_topic(namespace, since_topic, options.get("user_id"), within),
        since_topic=since_topic,
    )
    if topic_slug(seed_text) == since_topic:
        request = replace(request, seed_text="")
    return _recall(request)


# -- listings for runtimes (R14) ---------------------------------------------------------
def _listing(candidates: list[_Candidate]) -> list[dict[str, Any]]:
    return [
        {
            "ref": c.ref,
            "kind": c.kind,
            "content": c.content,
            "created_at": c.created_at.isoformat() if c.created_at else None,
            "channel": c.channel,
            "importance": c.importance,
            "source_message_ids": c.source_message_ids,
        }
        for c in candidates
    ]


def _list_memories(
    namespace: str, spec: _MemoryChannel, user_id: str | None, channel: str | None
) -> list[dict[str, Any]]:
    config = RecallConfig()
    scope = SearchFilters(user_id=user_id, include_private=owner_context(user_id, channel, config))
    with session_scope() as db:
        (found,) = _memory_candidates(db, namespace, scope, [spec], datetime.now(UTC), config)
    return _listing(found)


def recent_conversations(
    namespace: str, *, limit: int = 10, user_id: str | None = None, channel: str | None = None
) -> list[dict[str, Any]]:
    """Conversation summaries across channels, newest first (scoped like `context`)."""
    spec = _MemoryChannel("summaries", "", SUMMARY_KINDS, limit)
    return _list_memories(namespace, spec, user_id, channel)


def active_tasks(
    namespace: str, *, limit: int = 100, user_id: str | None = None
) -> list[dict[str, Any]]:
    """Tasks pending, in progress or blocked, visible from every channel (R8)."""
    with session_scope() as db:
        return _listing(_task_candidates(db, namespace, user_id, limit))
