"""The `events` stage: validate a batch of raw events and persist it with exactly-once effect.

One transaction per batch: event ids are claimed in `processed_events`, raw turns and their
sessions go through the conversation writer (`continuum.conversations.writer`: idempotent on
namespace + session + message id, nothing of a private tenant), sessions are ended, and with
an LLM configured the turns join their session's chunk for the LLM
(`continuum.pipeline.live_chunks`; closed chunks are sent by the task after the commit).
A user's turn that announces a move to another channel ("I'll continue on Discord",
`continuum.capture.handoffs`) sends a handoff for that channel, once per event, with the
session's last turns as its summary, unless the turn is older than a handoff lives. With an
LLM configured, such a turn, and any other naming a known channel, is also sent to the LLM
after the commit (`continuum.pipeline.handoffs`: a better summary, the phrasings the rule
misses).
The batch's Redis state is written last, before the commit: if Redis fails, the transaction
rolls back and the batch is retried; a crash between those writes and the commit leaves
Postgres untouched and Redis state that the redelivered batch writes again identically
(every ephemeral write is idempotent), so redelivery simply redoes the batch.
With `CONTINUUM_REDACT_SECRETS` (the default) the secrets in the text an event carries are
replaced first (`continuum.domain.secrets`), so neither the stored rows nor the Redis buffers,
a handoff or an LLM call ever hold one.
Invalid events are dead-lettered with their reason; the rest of the batch still lands.
Once committed, the memories capture stored are announced (`continuum.ephemeral.notify`),
one notice per session and user, so a live call elsewhere refreshes its context (R43).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import redis
from sqlalchemy import select
from sqlalchemy.exc import DataError
from sqlalchemy.orm import Session as DbSession

from continuum.capture import detect_key_moments, extract_entities, topic_slug
from continuum.capture.handoffs import handoff_target, mentioned_channel
from continuum.config import get_settings
from continuum.contract.events import (
    ChatMessage,
    Event,
    EventError,
    IdleEvent,
    PreCompactionEvent,
    SessionEndEvent,
    TurnEvent,
    event_payload,
    parse_event,
)
from continuum.contract.queues import INGEST_EVENTS
from continuum.conversations import writer as conversation
from continuum.conversations.writer import EVENT_SOURCE, MessageRow, SessionFacts
from continuum.domain.memory import CaptureTurn, MemoryCandidate
from continuum.domain.secrets import redact
from continuum.domain.text import clip
from continuum.ephemeral.handoff import send_handoff
from continuum.ephemeral.keys import HANDOFF_TTL_S
from continuum.ephemeral.notify import notify_memory_changed
from continuum.ephemeral.turns import LiveTurn, add_stored_keys, record_turns, transcript
from continuum.memory.writer import Stored, WriteScope, store_memories
from continuum.pipeline import deadletters, sessions
from continuum.pipeline.handoffs import handoff_request
from continuum.pipeline.live_chunks import LiveChunk, claim_chunks
from continuum.pipeline.turns import from_event, from_message
from continuum.redis_client import get_redis
from continuum.sealing.tombstones import guard_users
from continuum.store import metrics
from continuum.store.bulk import insert_ignore
from continuum.store.engine import session_scope
from continuum.store.models import Message, ProcessedEvent

log = logging.getLogger(__name__)


@dataclass
class IngestResult:
    """What one batch did."""

    received: int = 0
    processed: int = 0
    duplicates: int = 0
    invalid: int = 0
    messages_inserted: int = 0
    sessions_ended: int = 0
    memories_stored: int = 0
    new_turns: list[tuple[str, str]] = field(default_factory=list)  # (namespace, session_id)
    finish: list[dict[str, Any]] = field(default_factory=list)  # session_end payloads
    chunks: list[LiveChunk] = field(default_factory=list)  # live turns for the LLM
    compactions: list[dict[str, Any]] = field(default_factory=list)  # for the LLM's takeaways
    handoffs: list[dict[str, Any]] = field(default_factory=list)  # turns for the LLM's handoff
    captured: list[Stored] = field(default_factory=list)  # announced once committed

    def merge(self, other: IngestResult) -> None:
        """Add what `other` (a part of the same batch) did."""
        for name in ("received", "processed", "duplicates", "invalid", "messages_inserted",
                     "sessions_ended", "memories_stored"):  # fmt: skip
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.new_turns += other.new_turns
        self.finish += other.finish
        self.chunks += other.chunks
        self.compactions += other.compactions
        self.handoffs += other.handoffs
        self.captured += other.captured


def _validate(payloads: Sequence[Any], db: DbSession, task_id: str | None) -> list[Event]:
    events: list[Event] = []
    for index, payload in enumerate(payloads):
        try:
            events.append(parse_event(payload, index))
        except EventError as exc:
            namespace = payload.get("namespace") if isinstance(payload, dict) else None
            deadletters.record(
                db,
                task_name=INGEST_EVENTS,
                task_id=task_id,
                payload=payload if isinstance(payload, dict | list) else repr(payload)[:2000],
                reason="invalid_event",
                error=str(exc),
                namespace=namespace if isinstance(namespace, str) else None,
            )
    return events


def _claim_new(db: DbSession, events: list[Event]) -> list[Event]:
    """Record event ids (unique per tenant); return only events never processed before (in
    batch order)."""
    unique = {(event.namespace, event.event_id): event for event in events}
    if not unique:
        return []
    rows = [
        {
            "event_id": event.event_id,
            "namespace": event.namespace,
            "kind": event.kind,
            "session_id": event.session_id,
            "ts": event.ts,
        }
        for event in unique.values()
    ]
    inserted = insert_ignore(
        db,
        ProcessedEvent,
        rows,
        ["namespace", "event_id"],
        returning=["namespace", "event_id"],
    )
    claimed = {(row.namespace, row.event_id) for row in inserted}
    return [event for key, event in unique.items() if key in claimed]


def _activity_at(event: Event) -> datetime:
    """When the session was last active according to this event (an idle signal is sent
    long after the activity it reports)."""
    if isinstance(event, IdleEvent):
        return event.last_activity_at
    if isinstance(event, SessionEndEvent):
        return event.ended_at
    return event.ts


def _session_facts(events: list[Event]) -> list[SessionFacts]:
    """One fact per session of the batch: its first event's channel, user and time, the
    latest activity any of its events reports, and its end when a `session_end` says so."""
    first: dict[tuple[str, str], Event] = {}
    last_ts: dict[tuple[str, str], datetime] = {}
    ends: dict[tuple[str, str], SessionEndEvent] = {}
    for event in events:
        key = (event.namespace, event.session_id)
        first.setdefault(key, event)
        at = _activity_at(event)
        last_ts[key] = max(last_ts.get(key, at), at)
        if isinstance(event, SessionEndEvent):
            ends[key] = event
    return [
        SessionFacts(
            namespace=ns,
            session_id=sid,
            channel=event.channel,
            user_id=event.user_id,
            started_at=event.ts,
            last_activity_at=last_ts[(ns, sid)],
            ended_at=ends[(ns, sid)].ended_at if (ns, sid) in ends else None,
            end_reason=ends[(ns, sid)].reason if (ns, sid) in ends else None,
        )
        for (ns, sid), event in first.items()
    ]


def message_row(turn: TurnEvent) -> MessageRow:
    return MessageRow(
        namespace=turn.namespace,
        session_id=turn.session_id,
        message_id=turn.effective_message_id,
        parent_id=turn.parent_id,
        role=turn.role,
        content=turn.content,
        channel=turn.channel,
        sender=None,
        user_id=turn.user_id,
        source=EVENT_SOURCE,
        created_at=turn.ts,
        event_id=turn.event_id,
        details=turn.metadata,
    )


def _previous_turn(db: DbSession, turn: TurnEvent) -> CaptureTurn | None:
    """The message before `turn` in its session, from storage (for context across batches)."""
    row = db.scalar(
        select(Message)
        .where(
            Message.namespace == turn.namespace,
            Message.session_id == turn.session_id,
            Message.created_at < turn.ts,
            Message.role.in_(("user", "assistant")),
        )
        .order_by(Message.created_at.desc())
        .limit(1)
    )
    return from_message(row) if row is not None else None


def _capture(db: DbSession, events: list[TurnEvent]) -> list[tuple[WriteScope, MemoryCandidate]]:
    """Cheap key-moment detection on fresh turns (event-time order), and their statements
    (none for a tenant in privacy mode: they are its words)."""
    items: list[tuple[WriteScope, MemoryCandidate]] = []
    previous: dict[tuple[str, str], CaptureTurn | None] = {}
    settings = get_settings()
    for event in events:
        session = (event.namespace, event.session_id)
        if session not in previous:
            previous[session] = _previous_turn(db, event)
        current = from_event(event)
        if current is None:
            continue
        ctx = WriteScope(event.namespace, event.session_id, event.user_id, event.channel, event.ts)
        said = not settings.is_private(event.namespace)
        found = detect_key_moments(current, previous=previous[session], with_statements=said)
        items += [(ctx, candidate) for candidate in found]
        previous[session] = current
    return items


def _record_ephemeral(
    events: list[TurnEvent], captured: list[tuple[WriteScope, MemoryCandidate]]
) -> list[dict[str, Any]]:
    """Registry, topic, recent and transcript buffers, and the keys stored during each
    session (R45) — idempotent, one Redis round trip for the whole batch — then the
    handoffs the turns announce; returns the turns to ask the LLM about (`_send_handoffs`)."""
    pipe = get_redis().pipeline(transaction=False)
    for ctx, candidate in captured:
        if candidate.key and ctx.session_id:
            add_stored_keys(ctx.namespace, ctx.session_id, [candidate.key], pipe=pipe)
    turns = [
        LiveTurn(
            namespace=event.namespace,
            session_id=event.session_id,
            channel=event.channel,
            user_id=event.user_id,
            message_id=event.effective_message_id,
            role=event.role,
            content=event.content,
            at=event.ts,
            topic=(topic_slug(event.content) or None) if event.role == "user" else None,
            entities=extract_entities(event.content) if event.role == "user" else [],
        )
        for event in events
    ]
    record_turns(turns, pipe=pipe)
    pipe.execute()
    return _send_handoffs(events)


# What a handoff carries: the session's last turns up to the announcing one, as many as fit
# in what the block's line leaves after its prefix (RecallConfig.max_item_chars is 300).
HANDOFF_SUMMARY_CHARS = 220
HANDOFF_TURN_CHARS = 120


def _handoff_summary(event: TurnEvent) -> str:
    """The session's last turns up to `event`, newest kept first, within the budget."""
    said = transcript(event.namespace, event.session_id)
    ids = [turn.message_id for turn in said]
    upto = ids.index(event.effective_message_id) + 1 if event.effective_message_id in ids else 0
    parts: list[str] = []
    for turn in reversed(said[:upto]):
        part = f"{turn.speaker}: {clip(turn.summary, HANDOFF_TURN_CHARS)}"
        if parts and len(" / ".join([part, *parts])) > HANDOFF_SUMMARY_CHARS:
            break
        parts.insert(0, part)
    return " / ".join(parts) or clip(event.content, HANDOFF_SUMMARY_CHARS)


def _send_handoffs(events: list[TurnEvent]) -> list[dict[str, Any]]:
    """The handoffs users' fresh turns announce, each sent once (its id is the event's).
    With an LLM configured, returns the requests for `continuum.pipeline.handoffs` of those
    turns and of every other fresh user turn naming a known channel."""
    oldest = datetime.now(UTC) - timedelta(seconds=HANDOFF_TTL_S)
    ask_llm = bool(get_settings().llm_base_url)
    requests: list[dict[str, Any]] = []
    for event in events:
        if event.role != "user" or not event.user_id or event.ts <= oldest:
            continue
        target = handoff_target(event.content, event.channel)
        if ask_llm and (target or mentioned_channel(event.content, event.channel)):
            requests.append(
                handoff_request(event.namespace, event.session_id, event.channel, event.user_id,
                                str(event.event_id), event.effective_message_id, event.ts, target)
            )  # fmt: skip
        if target is not None:
            send_handoff(
                event.namespace,
                event.user_id,
                event.channel,
                target,
                _handoff_summary(event),
                handoff_id=str(event.event_id),
                at=event.ts,
            )
    return requests


def ingest_batch(payloads: Sequence[Any], task_id: str | None = None) -> IngestResult:
    """Validate and persist a batch of raw event payloads in one transaction. If Postgres
    refuses a value of the batch (a `DataError`: something validation let through), each
    event is written in its own transaction and only the refused ones are dead-lettered, so
    one event never takes its batch down."""
    try:
        return _ingest(payloads, task_id)
    except DataError:
        if not isinstance(payloads, list | tuple):
            raise
    result = IngestResult()
    for payload in payloads:
        try:
            one = _ingest([payload], task_id)
        except DataError as exc:
            one = IngestResult(received=1, invalid=1)
            namespace = payload.get("namespace") if isinstance(payload, dict) else None
            deadletters.record_now(
                task_name=INGEST_EVENTS,
                task_id=task_id,
                payload=payload,
                reason="unstorable_event",
                error=str(exc.orig or exc),
                namespace=namespace if isinstance(namespace, str) else None,
            )
        result.merge(one)
    return result


def _drop_forgotten(db: DbSession, events: list[Event]) -> list[Event]:
    """Events of users forgotten (`continuum forget`), even while the forget runs, are
    dropped: their ids stay claimed, so a redelivery cannot bring them back either."""
    users: dict[str, set[str | None]] = defaultdict(set)
    for event in events:
        users[event.namespace].add(event.user_id)
    gone = {(ns, user) for ns, ids in sorted(users.items()) for user in guard_users(db, ns, ids)}
    return [event for event in events if (event.namespace, event.user_id) not in gone]


def _without_secrets(db: DbSession, events: list[Event]) -> list[Event]:
    """`events` with the secrets replaced in every text they carry (a turn's content, the
    messages a pre-compaction or a session end hands over), counted when `db` commits."""
    if not events or not get_settings().redact_secrets:
        return events
    found = 0

    def clean(text: str) -> str:
        nonlocal found
        redaction = redact(text)
        found += redaction.total
        return redaction.text

    def clean_part(part: Any) -> Any:
        if isinstance(part, str):
            return clean(part)
        if isinstance(part, dict) and isinstance(part.get("text"), str):
            return {**part, "text": clean(part["text"])}
        return part

    def clean_message(message: ChatMessage) -> ChatMessage:
        content = message.content
        if isinstance(content, str):
            content = clean(content)
        elif isinstance(content, list):
            content = [clean_part(part) for part in content]
        return message.model_copy(update={"content": content})

    out: list[Event] = []
    for event in events:
        if isinstance(event, TurnEvent):
            event = event.model_copy(update={"content": clean(event.content)})
        elif isinstance(event, PreCompactionEvent):
            event = event.model_copy(update={"turns": [clean_message(m) for m in event.turns]})
        elif isinstance(event, SessionEndEvent):
            event = event.model_copy(
                update={"messages": [clean_message(m) for m in event.messages]}
            )
        out.append(event)
    metrics.incr_on_commit(db, metrics.SECRETS_REDACTED, found)
    return out


def _announce(stored: list[Stored]) -> None:
    """Publish what capture stored, once committed: a notice per session and user. Best
    effort: the memories are stored whatever Redis says."""
    by_owner: dict[tuple[str, str | None, str | None], list[int]] = defaultdict(list)
    for memory in stored:
        by_owner[(memory.namespace, memory.session_id, memory.user_id)].append(memory.id)
    try:
        for (namespace, session_id, user_id), ids in by_owner.items():
            notify_memory_changed(namespace, session_id, ids, "capture", user_id)
    except redis.RedisError as exc:
        log.warning("announcing captured memories failed: %s", exc)


def _ingest(payloads: Sequence[Any], task_id: str | None) -> IngestResult:
    result = _ingest_committed(payloads, task_id)
    _announce(result.captured)
    return result


def _ingest_committed(payloads: Sequence[Any], task_id: str | None) -> IngestResult:
    """The batch's one transaction, committed when this returns."""
    with session_scope() as db:
        if not isinstance(payloads, list | tuple):
            deadletters.record(
                db,
                task_name=INGEST_EVENTS,
                task_id=task_id,
                payload=repr(payloads)[:2000],
                reason="invalid_batch",
                error=f"expected a list of events, got {type(payloads).__name__}",
            )
            return IngestResult(received=1, invalid=1)
        result = IngestResult(received=len(payloads))
        events = _validate(payloads, db, task_id)
        result.invalid = len(payloads) - len(events)
        claimed = _claim_new(db, events)
        result.duplicates = len(events) - len(claimed)
        result.processed = len(claimed)
        fresh = _without_secrets(db, _drop_forgotten(db, claimed))
        if not fresh:
            return result
        fresh.sort(key=lambda event: event.ts)
        turn_events = [event for event in fresh if isinstance(event, TurnEvent)]
        inserted = conversation.write(
            db, _session_facts(fresh), [message_row(turn) for turn in turn_events], redacted=True
        )
        result.new_turns = [(message.namespace, message.session_id) for message in inserted]
        result.messages_inserted = len(inserted)
        settings = get_settings()
        captured = _capture(db, turn_events)
        result.captured = store_memories(db, captured)
        memory_ids = [memory.id for memory in result.captured]
        for event in fresh:
            if isinstance(event, IdleEvent):
                snapshot = sessions.snapshot_idle(db, event.namespace, event.session_id)
                memory_ids += [snapshot] if snapshot is not None else []
            elif isinstance(event, PreCompactionEvent):
                memory_ids += sessions.pre_compaction_dump(db, event)
                if settings.llm_base_url:
                    result.compactions.append(event_payload(event))
        result.memories_stored = len(memory_ids)
        ends = [event for event in fresh if isinstance(event, SessionEndEvent)]
        result.sessions_ended = len(ends)
        if settings.llm_base_url:
            ended = {(end.namespace, end.session_id) for end in ends}
            result.chunks = claim_chunks(db, turn_events, ended)
        result.finish = [event_payload(end) for end in ends]
        # Redis state last: if it fails the transaction rolls back and the batch is retried.
        result.handoffs = _record_ephemeral(turn_events, captured)
    return result
