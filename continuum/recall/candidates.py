"""Where the context block's candidates come from (R10, R26): the SQL channels and the
scope they read under.

Channels: relevance (a hybrid search of the seed, turned into candidates by `from_hit`),
recency, importance (≥ 8 within N days), and the pinned ones — the pending handoff, recent
conversation summaries, open threads, preferences, active tasks and the suggested ones waiting
for the user's answer (CONTINUUM_CONFIRM_TASKS). Which kinds each memory
channel reads comes from the kind registry (`domain.kinds`). Also here: the embedding
cosine between candidates that dedupe needs, computed in Postgres.

These reads are kept apart from the scoring and packing (`recall.packing`, pure) so the
costly part — index ranges per kind, importance level and owner, bounded however many rows
other users, other kinds or older days hold — can be tuned without touching which items
win, and the other way round.

Scoping (R16): only the namespace's active memories; memories of another user never appear
(NULL user_id is shared); a private memory appears only to its owner (`user_id` matches) in
the owner's main context — `channel` is one of `RecallConfig.main_channels` (main, dm,
direct) or ends in `:dm` (`owner_context`). Group and other channels never see private
memories.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any, Literal

from sqlalchemy.orm import Session as DbSession

from continuum.capture.due import due_label
from continuum.domain.kinds import ContextSection, MemoryKind, kind_names
from continuum.memory.user_tasks import task_rows
from continuum.recall.fusion import SearchHit
from continuum.recall.items import Candidate, RecallConfig
from continuum.recall.rankings import GENERIC_PLANS, ranked_together, use_settings
from continuum.recall.scope import SearchFilters, owner_clauses, where_sql
from continuum.sealing.envelope import read_text
from continuum.store.engine import fetch


def owner_context(user_id: str | None, channel: str | None, config: RecallConfig) -> bool:
    """Whether the caller is the user's main context, where their private memories show."""
    if not user_id or not channel:
        return False
    return channel in config.main_channels or channel.endswith(":dm")


def context_scope(user_id: str | None, channel: str | None, config: RecallConfig) -> SearchFilters:
    """What a recall for `user_id` on `channel` may read: the user's and the shared rows,
    and their private memories only in their main context."""
    return SearchFilters(user_id=user_id, include_private=owner_context(user_id, channel, config))


_MEMORY_COLUMNS = (  # a memory's channel, else the one its details name
    "id, kind, content, created_at, coalesce(nullif(channel, ''), details->>'channel') AS channel,"
    " importance, session_id, source_message_ids, status, private"
)
# A channel's rows in the ranked rows' shape (`rankings.FIELDS`, no signal): the channels
# are parts of one statement (`rankings.ranked_together`).
_AS_RANKED = (
    "m.id, m.content, m.created_at, m.session_id, m.channel, m.kind, m.importance::int AS "
    "importance, m.source_message_ids, m.status, m.private, NULL::float8 AS signal"
)


def _kinds_in(section: ContextSection) -> tuple[MemoryKind, ...]:
    return kind_names(lambda spec: spec.context_section == section)


SUMMARY_KINDS = _kinds_in("Recent conversations")


@dataclass(frozen=True)
class MemoryChannel:
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


def memory_channels(config: RecallConfig) -> list[MemoryChannel]:
    """The block's memory channels: summaries, open threads, preferences, recency and
    importance, sized by `config`."""
    by_rank = "importance DESC, created_at DESC"
    timeline_kinds = kind_names(
        lambda spec: spec.context_section != "Recent conversations" and not spec.indexes_turn
    )
    return [
        MemoryChannel("summaries", "recent conversation", SUMMARY_KINDS, config.summaries_n),
        MemoryChannel("open_threads", "open thread", _kinds_in("Open threads"), config.pinned_n,
                      "tags @> ARRAY['status:open']", by_rank),
        MemoryChannel("preferences", "preference", _kinds_in("Preferences"), config.pinned_n,
                      order=by_rank),
        MemoryChannel("recency", "recent", timeline_kinds, config.recency_n),
        MemoryChannel("importance",
                      f"importance ≥ {config.importance_min} within {config.importance_days} days",
                      timeline_kinds, config.importance_n, "created_at >= :isince", by_rank,
                      by="importance"),
    ]  # fmt: skip


def _channel_sql(
    namespace: str,
    scope: SearchFilters,
    channels: list[MemoryChannel],
    now: datetime,
    config: RecallConfig,
) -> tuple[dict[str, str], dict[str, Any]]:
    """Each channel's SELECT, tagged `section<i>` and in the ranked rows' shape, with the
    parameters they take: the parts of one statement (`rankings.ranked_together`)."""
    params: dict[str, Any] = {
        "ns": namespace,
        "imin": config.importance_min,
        "isince": now - timedelta(days=config.importance_days),
    }
    scoped = where_sql("memory", scope, params, owners=False)
    owners = owner_clauses(scope, params)
    selects = {}
    for i, channel in enumerate(channels):
        params[f"limit{i}"], params[f"wanted{i}"] = channel.limit, list(channel.kinds)
        parts, part_matches = (sql.format(i=i) for sql in _PARTS[channel.by])
        ranges = " UNION ALL ".join(
            f"(SELECT {_MEMORY_COLUMNS} FROM memories WHERE {scoped} AND {channel.where} "
            f"AND {owner} AND {part_matches} ORDER BY created_at DESC, id DESC LIMIT :limit{i})"
            for owner in owners
        )
        selects[f"section{i}"] = (
            f"SELECT 'section{i}' AS part, {_AS_RANKED} FROM {parts} AS p(part) CROSS JOIN "
            f"LATERAL ({ranges}) AS m ORDER BY {channel.order}, id DESC LIMIT :limit{i}"
        )
    return selects, params


def memory_candidates(
    db: DbSession,
    namespace: str,
    scope: SearchFilters,
    channels: list[MemoryChannel],
    now: datetime,
    config: RecallConfig,
) -> list[list[Candidate]]:
    """Each channel's memories, all read in one statement on a generic plan
    (`rankings.GENERIC_PLANS`: its index ranges do not depend on the values it is read
    with, so it is planned once a connection, not at each call)."""
    parts, params = _channel_sql(namespace, scope, channels, now, config)
    use_settings(db, GENERIC_PLANS)
    found = ranked_together(db, parts, params)
    return [
        [
            Candidate(
                source="memory",
                ref=f"memory:{row.id}",
                kind=row.kind,
                content=read_text(row.content, "memories.content", row.id),
                created_at=row.created_at,
                channel=row.channel,
                importance=row.importance,
                db_id=row.id,
                session_id=row.session_id,
                source_message_ids=list(row.source_message_ids),
                channels={channel.name: channel.why},
            )
            for row, _ in found[f"section{i}"]
        ]
        for i, channel in enumerate(channels)
    ]


def task_candidates(
    db: DbSession,
    namespace: str,
    user_id: str | None,
    limit: int,
    zone: tzinfo = UTC,
    *,
    suggested: bool = False,
) -> list[Candidate]:
    """The user's active tasks (pending, in progress, blocked), or with `suggested` the
    suggestions waiting for the user's answer, each covering the memories it was created
    from; a due time is shown on the clock of `zone` (the tenant's)."""
    found = []
    for row in task_rows(db, namespace, user_id, limit, suggested=suggested):
        content = read_text(row.title, "tasks.title", row.id)
        if row.description:
            content += ": " + read_text(row.description, "tasks.description", row.id)
        content += f" ({due_label(row.due_at.astimezone(zone))})" if row.due_at else ""
        candidate = Candidate(
            source="task",
            ref=f"task:{row.task_id}",
            kind="suggested" if suggested else row.status,
            content=content,
            created_at=row.created_at,
            channel=row.created_channel,
            importance=7,
            channels={"tasks": "suggested task" if suggested else f"active task ({row.status})"},
            covers=[tag for tag in row.tags if tag.startswith("memory:")],
        )
        found.append(candidate)
    return found


def handoff_candidate(handoff: dict[str, str], now: datetime) -> Candidate:
    """The candidate of a pending handoff (`ephemeral.handoff`) the block may show."""
    when = datetime.fromisoformat(handoff["timestamp"])
    minutes = max(0, round((now - when).total_seconds() / 60))
    target = handoff.get("to_channel") or "another channel"
    content = (
        f"User is switching from {handoff['from_channel']} to {target} "
        f"({minutes} min ago): {handoff['context_summary']}"
    )
    return Candidate(
        source="handoff",
        ref="handoff",
        kind="handoff",
        content=content,
        created_at=None,
        importance=10,
        channels={"handoff": "pending handoff from " + handoff["from_channel"]},
    )


def from_hit(hit: SearchHit, best: float, rank: int) -> Candidate:
    """The relevance channel's candidate for a search hit at `rank`: its relevance is its
    score over the best hit's."""
    is_memory = hit.source == "memory"
    ref = (
        f"memory:{hit.id}" if is_memory else f"message:{hit.session_id}/{hit.source_message_ids[0]}"
    )
    signals = ", ".join(f"{k} {v:g}" for k, v in sorted(hit.parts.items()))
    return Candidate(
        source=hit.source,
        ref=ref,
        kind=hit.kind,
        # A turn a statement reached shows that sentence: what the seed matched, at a
        # fraction of the turn's tokens (the item still refers to the whole turn).
        content=f"{hit.focus} …" if hit.focus else hit.content,
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


def near_duplicates(
    db: DbSession, namespace: str, candidates: list[Candidate], threshold: float
) -> set[frozenset[str]]:
    """Pairs of refs (rows of `namespace`) whose embeddings have cosine similarity ≥
    threshold, read on a generic plan (after a search's lifted turns, already in force)."""
    ids = {
        source: {c.db_id: c.ref for c in candidates if c.source == source and c.db_id}
        for source in ("memory", "message")
    }
    if not ids["memory"] and not ids["message"]:
        return set()
    use_settings(db, GENERIC_PLANS)  # by key: see GENERIC_PLANS
    rows = fetch(
        db,
        (
            "WITH c AS (SELECT 'memory' AS s, id, embedding FROM memories "
            "WHERE namespace = :ns AND id = ANY(:mem) AND embedding IS NOT NULL UNION ALL "
            "SELECT 'message', id, embedding FROM messages "
            "WHERE namespace = :ns AND id = ANY(:msg) AND embedding IS NOT NULL) "
            "SELECT a.s AS sa, a.id AS ia, b.s AS sb, b.id AS ib FROM c a JOIN c b "
            "ON (a.s, a.id) < (b.s, b.id) WHERE (a.embedding <=> b.embedding) <= :d"
        ),
        {
            "ns": namespace,
            "mem": list(ids["memory"]),
            "msg": list(ids["message"]),
            "d": 1 - threshold,
        },
    )
    return {frozenset((ids[r.sa][r.ia], ids[r.sb][r.ib])) for r in rows}
