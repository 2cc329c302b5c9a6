"""Writing memories: idempotent inserts of capture candidates, each logged in `memory_log`.

A candidate's idempotency key (trigger + source ids + normalised content) makes a retried or
redelivered write a no-op. Every stored memory records its provenance, the trust that
follows from it (R29) and its claim (R24), and the ids of the messages it came from. Secrets
in its content and claim value are replaced by `[redacted:<type>]` first
(`CONTINUUM_REDACT_SECRETS`, `continuum.domain.secrets`), whoever proposed it.

For an encrypted tenant (R47) content, claim value and details are sealed under the owner's
data key, bound to the row's id (drawn from the sequence before the insert), the idempotency
key is keyed (an HMAC, not a plain digest of the content), the row
carries its keyed full-text terms, and a forgotten user's memories are not written.

In the same transaction, and only for rows really inserted (so effects stay exactly-once),
a new claim supersedes, reinforces or is quarantined against the active memories it meets
(`continuum.memory.claims`), and reminders and commitments become tasks (`continuum.memory.user_tasks`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.orm import Session as DbSession

from continuum.capture.topics import topic_slug
from continuum.config import get_settings
from continuum.domain.kinds import KIND_SPECS, MemoryKind
from continuum.domain.memory import MAX_CONTENT_CHARS, Claim, MemoryCandidate, Provenance
from continuum.domain.secrets import redact
from continuum.domain.text import clip
from continuum.memory.claims import claim_lock_key, lock_claims, resolve_claims
from continuum.memory.user_tasks import tasks_from_memories
from continuum.sealing.envelope import seal, seal_details
from continuum.sealing.terms import keyed_lexemes, stored_tags, terms_for
from continuum.sealing.tombstones import guard_users
from continuum.store import metrics
from continuum.store.bulk import allocate_ids, insert_ignore, insert_rows
from continuum.store.models import Memory, MemoryLog

# R29: user_explicit > system > inference > tool_output
TRUST = {"user_explicit": 4, "system": 3, "inference": 2, "tool_output": 1}
LOGGED_COLUMNS = (
    "id", "namespace", "trigger", "kind", "key", "tags", "importance", "provenance",
    "source_message_ids",
)  # fmt: skip
STORED_COLUMNS = (
    *LOGGED_COLUMNS, "user_id", "session_id", "channel", "content", "details", "claim_subject",
    "claim_predicate", "claim_value", "claim_scope", "valid_from", "valid_until", "trust",
    "created_at",
)  # fmt: skip


@dataclass(frozen=True)
class WriteScope:
    """Whose memory a write is and where it comes from: tenant, session, user, channel and
    the event time of its source turns."""

    namespace: str
    session_id: str | None = None
    user_id: str | None = None
    channel: str | None = None
    occurred_at: datetime | None = None  # event time of the source turns (never ingest time)


def stored_digest(namespace: str, digest: str) -> str:
    """A digest as an idempotency key is stored: keyed for an encrypted tenant."""
    if get_settings().is_encrypted(namespace):
        return keyed_lexemes(namespace, [digest])[0]
    return digest


def stored_idempotency_key(namespace: str, candidate: MemoryCandidate) -> str:
    """The candidate's idempotency key as stored: keyed for an encrypted tenant."""
    return stored_digest(namespace, candidate.idempotency_key(namespace))


def _row(ctx: WriteScope, candidate: MemoryCandidate, now: datetime) -> dict[str, Any]:
    """The row of a candidate, in plaintext (`_seal_rows` seals it for an encrypted tenant)."""
    claim = candidate.claim
    ns = ctx.namespace
    details = dict(candidate.details)
    if candidate.time_expression:
        details["time_expression"] = candidate.time_expression
    if candidate.due_at:
        details["due_at"] = candidate.due_at.isoformat()
    return {
        "namespace": ctx.namespace,
        "user_id": ctx.user_id,
        "session_id": ctx.session_id,
        "channel": ctx.channel,
        "kind": candidate.kind,
        "key": candidate.key,
        "content": candidate.content,
        "details": details,
        "tags": stored_tags(ns, candidate.tags),
        "importance": candidate.importance,
        "confidence": candidate.confidence,
        "provenance": candidate.provenance,
        "trust": TRUST[candidate.provenance],
        "claim_subject": claim.subject if claim else None,
        "claim_predicate": claim.predicate if claim else None,
        "claim_value": claim.value if claim else None,
        "claim_scope": claim.scope if claim else None,
        "valid_from": claim.valid_from if claim else None,
        "valid_until": claim.valid_until if claim else None,
        "source_message_ids": candidate.source_message_ids,
        "trigger": candidate.trigger,
        "idempotency_key": stored_idempotency_key(ns, candidate),
        "created_at": ctx.occurred_at or now,
        "updated_at": ctx.occurred_at or now,
    }


def _seal_rows(db: DbSession, rows: Sequence[dict[str, Any]]) -> None:
    """Seal the rows of encrypted tenants in place, each value bound to the row's id: ids
    are drawn for the whole batch (one statement, and every row keeps the same columns)."""
    settings = get_settings()
    if not any(settings.is_encrypted(row["namespace"]) for row in rows):
        return
    for row, row_id in zip(rows, allocate_ids(db, Memory, len(rows)), strict=True):
        owner, value = (row["namespace"], row["user_id"]), row["claim_value"]
        row["id"] = row_id
        row["content"] = seal(*owner, "memories.content", row["content"], row_id)
        row["details"] = seal_details(*owner, row["details"], row_id)
        if value is not None:
            row["claim_value"] = seal(*owner, "memories.claim_value", value, row_id)


def _without_secrets(db: DbSession, candidate: MemoryCandidate) -> MemoryCandidate:
    """The candidate with the secrets in its content and claim value replaced (counted when
    `db` commits); itself when there are none or redaction is off."""
    if not get_settings().redact_secrets:
        return candidate
    content = redact(candidate.content)
    value = redact(candidate.claim.value) if candidate.claim else None
    found = content.total + (value.total if value else 0)
    if not found:
        return candidate
    metrics.incr_on_commit(db, metrics.SECRETS_REDACTED, found)
    claim = (
        candidate.claim.model_copy(update={"value": value.text})
        if candidate.claim and value
        else None
    )
    return candidate.model_copy(update={"content": content.text, "claim": claim})


@dataclass(frozen=True)
class Stored:
    """A memory this write inserted, and its status once its claim was settled
    (active, or merged / superseded / quarantined), with whose it is."""

    id: int
    status: str
    namespace: str = ""
    session_id: str | None = None
    user_id: str | None = None


def store_memories(
    db: DbSession,
    items: Sequence[tuple[WriteScope, MemoryCandidate]],
    columns: Mapping[str, Any] | None = None,
) -> list[Stored]:
    """Insert candidates inside the caller's transaction (`columns` overrides row values, e.g.
    a version); settle their claims; returns what was inserted (retries insert nothing)."""
    if not items:
        return []
    rows = {}
    now = datetime.now(UTC)
    owners: dict[str, set[str | None]] = {}
    for ctx, _ in items:
        owners.setdefault(ctx.namespace, set()).add(ctx.user_id)
    gone = {
        (ns, user) for ns, users in sorted(owners.items()) for user in guard_users(db, ns, users)
    }
    texts: dict[tuple[str, str], str] = {}
    for ctx, proposed in items:
        if (ctx.namespace, ctx.user_id) in gone:
            continue
        candidate = _without_secrets(db, proposed)
        row = {**_row(ctx, candidate, now), **(columns or {})}
        rows[(row["namespace"], row["idempotency_key"])] = row
        texts[(row["namespace"], row["idempotency_key"])] = (
            f"{row['key'] or ''} {candidate.content}"
        )
    if not rows:
        return []
    for namespace in {ns for ns, _ in rows}:
        owned = [ident for ident in rows if ident[0] == namespace]
        terms = terms_for(db, namespace, [texts[ident] for ident in owned])
        for ident, keyed in zip(owned, terms, strict=True):
            rows[ident]["tsv_keyed"] = keyed
    _seal_rows(db, list(rows.values()))
    lock_claims(
        db,
        (
            claim_lock_key(r["namespace"], r["user_id"], r["claim_subject"], r["claim_predicate"])
            for r in rows.values()
            if r["claim_predicate"]
        ),
    )
    inserted = insert_ignore(
        db, Memory, list(rows.values()), ["namespace", "idempotency_key"], STORED_COLUMNS
    )
    _log_writes(db, inserted)
    metrics.incr_on_commit(db, metrics.MEMORIES_STORED, len(inserted))
    statuses = resolve_claims(db, inserted, now)
    tasks_from_memories(db, [row for row in inserted if row.id not in statuses])
    return [
        Stored(row.id, statuses.get(row.id, "active"), row.namespace, row.session_id, row.user_id)
        for row in inserted
    ]


def store_candidates(
    db: DbSession, items: Sequence[tuple[WriteScope, MemoryCandidate]]
) -> list[int]:
    """Insert candidates inside the caller's transaction; returns ids of new memories."""
    return [stored.id for stored in store_memories(db, items)]


def explicit_candidate(
    kind: MemoryKind,
    key: str,
    value: str,
    *,
    confidence: float,
    provenance: Provenance,
    source_id: str,
    session_id: str | None = None,
    details: Mapping[str, Any] | None = None,
    claim_subject: str = "user",
) -> MemoryCandidate:
    """A memory stated outright (a tool call, a preference set by hand): `key: value`, with the
    kind's explicit importance (R23) and, for kinds with `explicit_claim` (facts, preferences,
    decisions), a claim on `key` so later values supersede it."""
    spec = KIND_SPECS[kind]
    content = clip(f"{key.replace('_', ' ').capitalize()}: {value}", MAX_CONTENT_CHARS)
    source = "user" if provenance == "user_explicit" else "system"
    tags = [f"topic:{topic_slug(f'{key} {value}')}", f"source:{source}"]
    return MemoryCandidate(
        kind=kind,
        key=key,
        content=content,
        tags=tags + ([f"session:{session_id}"] if session_id else []),
        importance=spec.explicit_importance,
        confidence=confidence,
        provenance=provenance,
        claim=Claim(subject=claim_subject, predicate=key, value=value)
        if spec.explicit_claim
        else None,
        source_message_ids=[source_id],
        trigger="explicit",
        details=dict(details or {}),
    )


def _log_writes(db: DbSession, inserted: Sequence[Any]) -> None:
    if inserted:
        insert_rows(
            db,
            MemoryLog,
            [
                {
                    "namespace": row.namespace,
                    "action": "write",
                    "memory_id": row.id,
                    "trigger": row.trigger,
                    "details": {
                        "kind": row.kind,
                        "key": row.key,
                        "tags": row.tags,
                        "importance": row.importance,
                        "provenance": row.provenance,
                        "source_message_ids": row.source_message_ids,
                    },
                }
                for row in inserted
            ],
        )
