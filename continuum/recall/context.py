"""The context block a session starts with (R10, R26, R27, R31): `context()` and
topic-shift `recall_since_topic()`, the entry points runtimes, the API and the CLI call.

This module owns the order of a recall, not its parts: it starts embedding the seed, then
in one transaction reads the candidates (`recall.candidates`, with the relevance channel a
hybrid search, `recall.search`), scores them, drops duplicates and packs them into
`max_tokens` (`recall.packing`), adds what `explain` reports, and logs the recall
(`recall.recall_log`). The block never exceeds the budget, counted with the embedding model's
tokenizer.

The user's pending handoff (`ephemeral.handoff`) goes in first, and only in a block for the
channel it is for (none without a `channel`). The block that shows it consumes it, after
packing: a handoff another block took meanwhile is left out and the block packed again, so
of two concurrent blocks exactly one shows it. `explain=True` (an audit) shows it without
consuming it.

With a seed, the sections yield to relevance: the relevance channel brings more items and
pinned items lose their bonus, so a summary, task or preference keeps its place only as far
as the seed, its importance or its recency carry it. Without one (a session start) the
pinned items lead.

`explain=True` also reports memories the seed matched but that were filtered out
(superseded, quarantined, forgotten, archived, private).

Days are the tenant's (`Settings.zone_for`, or the request's `tz`): `now` is put on that
clock before anything reads it, so "yesterday" in the seed, the day headings and the
header are local days.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import datetime, timedelta, tzinfo
from typing import TypedDict, Unpack

from sqlalchemy.orm import Session as DbSession

from continuum.capture.topics import topic_slug
from continuum.config import get_settings
from continuum.domain.memory import DIGEST_KINDS
from continuum.ephemeral.handoff import Handoff, consume_handoff, peek_handoff
from continuum.recall.admission import admitted
from continuum.recall.candidates import (
    context_scope,
    from_hit,
    handoff_candidate,
    memory_candidates,
    memory_channels,
    near_duplicates,
    task_candidates,
)
from continuum.recall.fusion import SearchHit, evidence_turns
from continuum.recall.items import (
    Candidate,
    ContextItem,
    ContextResult,
    Excluded,
    RecallConfig,
    RecallRequest,
)
from continuum.recall.packing import dedupe, drop_tracked, merge, pack, score
from continuum.recall.rankings import SEARCH_SETTINGS, send_settings, want_settings
from continuum.recall.recall_log import UNFLUSHED, injected_for_topic, log_recall, log_recall_apart
from continuum.recall.scope import SearchFilters
from continuum.recall.search import PreparedQuery, prepare_query, search_in
from continuum.store.reads import read_scope, writable

HIDDEN_STATUSES = ("superseded", "quarantined", "forgotten", "archived")


def _pending_handoff(request: RecallRequest) -> Handoff | None:
    """The handoff this block may show: the user's, for the block's channel."""
    if not request.pinned or not request.channel:
        return None
    return peek_handoff(request.namespace, request.user_id, request.channel)


def _gather(
    db: DbSession,
    request: RecallRequest,
    scope: SearchFilters,
    prepared: PreparedQuery | None,
    handoff: Handoff | None,
) -> list[Candidate]:
    """Every channel's candidates: those that need no query vector first, while the seed
    is embedded."""
    config, ns = request.config, request.namespace
    pinned: list[list[Candidate]] = []
    if handoff is not None:
        pinned.append([handoff_candidate(handoff, request.now)])
    tasks: list[list[Candidate]] = []
    if request.pinned:
        tasks.append(task_candidates(db, ns, request.user_id, config.pinned_n, request.zone))
        if get_settings().confirms_tasks(ns):  # suggestions exist only where tasks ask first
            tasks.append(
                task_candidates(
                    db, ns, request.user_id, config.pinned_n, request.zone, suggested=True
                )
            )
        pinned += memory_candidates(db, ns, scope, memory_channels(config), request.now, config)
    relevant: list[Candidate] = []
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
        relevant = [from_hit(hit, best, rank) for rank, hit in enumerate(hits, start=1)]
    pinned += tasks
    turns = [hit for hit in hits if hit.source == "message"]
    for candidate in [c for group in pinned for c in group if c.kind in DIGEST_KINDS]:
        candidate.source_message_ids = evidence_turns(
            candidate.session_id, candidate.source_message_ids, turns
        )
    return merge([relevant, *pinned])


def _filtered_out(
    db: DbSession,
    request: RecallRequest,
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
            found.append(Excluded(ref=ref, kind=hit.kind, reason=f"status {hit.status}"))
        elif hit.private and not scope.include_private:
            found.append(
                Excluded(
                    ref=ref, kind=hit.kind, reason="private: shown only in the owner's main context"
                )
            )
    return found


def _pack_consuming_handoff(
    request: RecallRequest,
    kept: list[Candidate],
    handoff: Handoff | None,
    excluded: list[Excluded],
    seeded: bool,
) -> tuple[list[ContextItem], str, int]:
    """`pack`, consuming the handoff if the block shows it; if another block consumed it
    first, the block is packed again without it."""
    before = list(excluded)
    packed = pack(kept, request.max_tokens, request.now, request.config, excluded, seeded)
    shown = any(item.ref == "handoff" for item in packed[0])
    if handoff is None or not shown or request.explain or request.user_id is None:
        return packed
    taken = consume_handoff(
        request.namespace, request.user_id, request.channel, handoff_id=handoff.get("id")
    )
    if taken is not None:
        return packed
    excluded[:] = [
        *before,
        Excluded(ref="handoff", kind="handoff", reason="consumed by another block"),
    ]
    rest = [candidate for candidate in kept if candidate.source != "handoff"]
    return pack(rest, request.max_tokens, request.now, request.config, excluded, seeded)


def _recall(request: RecallRequest) -> ContextResult:
    excluded: list[Excluded] = []
    scope = context_scope(request.user_id, request.channel, request.config)
    seed = request.seed_text
    prepared = prepare_query(seed, scope, request.now) if seed.strip() else None
    handoff = _pending_handoff(request)
    hurry = prepared.hurry if prepared is not None else None  # at the front of the line
    with admitted(hurry), read_scope(request.namespace) as db:
        # The only write is the recall log: in the same transaction on the primary, where it
        # need not wait for a WAL flush (a crash may lose the last few log rows, never a
        # memory); after a standby's read, in a transaction of its own on the primary. The
        # settings go with the first statement that carries settings (a search's first), else
        # before the log.
        on_primary = writable(db)
        want_settings(db, {**SEARCH_SETTINGS, **(UNFLUSHED if on_primary else {})})
        candidates = []
        for candidate in _gather(db, request, scope, prepared, handoff):
            if candidate.ref in request.skip_refs:
                excluded.append(
                    Excluded(ref=candidate.ref, kind=candidate.kind, reason="already injected")
                )
            else:
                score(candidate, request.now, request.config, prepared is not None)
                candidates.append(candidate)
        untracked = drop_tracked(candidates, excluded)
        pairs = near_duplicates(db, request.namespace, untracked, request.config.duplicate_cosine)
        kept = dedupe(untracked, pairs, excluded)
        items, block, tokens_used = _pack_consuming_handoff(
            request, kept, handoff, excluded, prepared is not None
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
        if on_primary:
            send_settings(db)
            log_recall(db, request, result)
    if not on_primary:
        log_recall_apart(request, result)
    return result


class ContextOptions(TypedDict, total=False):
    """Keyword options of `context` and `recall_since_topic`."""

    user_id: str | None  # whose memories (plus the namespace's shared ones)
    channel: str | None  # where the block goes; the user's main channel shows private items
    explain: bool  # also report what was left out and why
    now: datetime | None  # the reference time (default: the wall clock)
    tz: str | tzinfo | None  # whose days (IANA name; default: the tenant's time zone)
    config: RecallConfig | None


def _request(
    namespace: str, seed_text: str, max_tokens: int, options: ContextOptions
) -> RecallRequest:
    if max_tokens < 0:
        raise ValueError("max_tokens must be ≥ 0")
    return RecallRequest(
        namespace,
        seed_text,
        max_tokens,
        options.get("user_id"),
        options.get("channel"),
        options.get("explain", False),
        get_settings().local_time(namespace, options.get("now"), options.get("tz")),
        options.get("config") or RecallConfig(),
    )


def context(
    namespace: str, seed_text: str, max_tokens: int, **options: Unpack[ContextOptions]
) -> ContextResult:
    """The context block for a session of `user_id` on `channel`, at most `max_tokens`."""
    return _recall(_request(namespace, seed_text, max_tokens, options))


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
