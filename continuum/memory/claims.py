"""Claims over time (R24, R29): supersession, reinforcement and quarantine.

Two memories make competing claims when they share namespace, user, subject and predicate
and both are in force. `decide` says what happens to such a pair; the primitives below
apply a verdict to the rows (each guarded by a row lock and logged in `memory_log`), and
`resolve_claims` runs it for freshly inserted memories inside the writer's transaction, so
ingest stays exactly-once: only rows that were really inserted trigger anything.

Rules, for two claims in force on the same subject+predicate:
- same value → reinforcement: the existing memory gains corroboration, a little confidence
  and `details.last_confirmed`; the repeat is kept only as a `merged` row linked to it;
- different values → the later one (by event time) supersedes the earlier, unless it comes
  from a less trusted source: then the later one is quarantined (kept, not applied) and
  listed by `conflicts()` for review, until a person `settle`s it (keeping either value).
A session-scoped claim only competes inside its session; a claim with a bounded validity
window (temporal, `valid_until` set) never overrides an open-ended one — it is an exception
during its window — and an expired claim overrides nothing.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from sqlalchemy import insert, text
from sqlalchemy.orm import Session as DbSession

from continuum.domain.records import Conflict, Settled
from continuum.domain.text import normalize_for_key
from continuum.sealing.envelope import read_optional, read_text
from continuum.store import lsn_tokens, metrics
from continuum.store.models import MemoryLog

Verdict = Literal[
    "none", "reinforce", "supersede_old", "supersede_new", "quarantine_old", "quarantine_new"
]
CLAIM_COLUMNS = (
    "id, namespace, user_id, session_id, claim_subject, claim_predicate, claim_value, "
    "claim_scope, valid_from, valid_until, trust, created_at, status"
)
REINFORCE_CONFIDENCE_STEP = 0.05
MAX_CONFIDENCE = 0.99


@dataclass(frozen=True)
class ClaimState:
    """What `decide` needs to know about one memory's claim."""

    id: int
    value: str
    scope: str
    session_id: str | None
    valid_until: datetime | None
    trust: int
    created_at: datetime

    @classmethod
    def of(cls, row: Any) -> ClaimState:
        return cls(
            id=row.id,
            # compared, never written again: a damaged value reads as UNREADABLE, equal to none
            value=read_optional(row.claim_value, "memories.claim_value", row.id) or "",
            scope=row.claim_scope or "global",
            session_id=row.session_id,
            valid_until=row.valid_until,
            trust=row.trust,
            created_at=row.created_at,
        )


def _competes(new: ClaimState, old: ClaimState, now: datetime) -> bool:
    if any(c.valid_until is not None and c.valid_until <= now for c in (new, old)):
        return False  # an expired claim is history: it neither overrides nor is overridden
    if "session" in (new.scope, old.scope):
        return new.scope == old.scope and new.session_id == old.session_id
    # A bounded window is an exception to an open-ended claim, never its replacement.
    return not (new.valid_until is not None and old.valid_until is None)


def decide(new: ClaimState, old: ClaimState, now: datetime) -> Verdict:
    """What a new claim does to an existing one on the same subject+predicate."""
    if not _competes(new, old, now):
        return "none"
    if normalize_for_key(new.value) == normalize_for_key(old.value):
        return "reinforce"
    new_is_later = (new.created_at, new.id) >= (old.created_at, old.id)
    later, earlier = (new, old) if new_is_later else (old, new)
    if later.trust >= earlier.trust:
        return "supersede_old" if new_is_later else "supersede_new"
    return "quarantine_new" if new_is_later else "quarantine_old"


def claim_lock_key(
    namespace: str, user_id: str | None, subject: str | None, predicate: str | None
) -> str:
    return "\x1f".join(
        (namespace, user_id or "", (subject or "").lower(), (predicate or "").lower())
    )


def lock_claims(db: DbSession, keys: Iterable[str]) -> None:
    """Serialize writers of the same claims (transaction-scoped advisory locks, in a fixed
    order so two writers never deadlock); a writer that waited then sees the other's rows."""
    ordered = sorted(set(keys))
    if ordered:
        db.execute(
            text(
                "SELECT pg_advisory_xact_lock(h) FROM (SELECT DISTINCT hashtextextended(k, 24) AS h "
                "FROM unnest(CAST(:keys AS text[])) AS k ORDER BY h) AS locks"
            ),
            {"keys": ordered},
        )


def _log(
    db: DbSession,
    namespace: str,
    action: str,
    memory_id: int,
    details: dict[str, Any],
    trigger: str,
) -> None:
    """Append one entry to memory_log (every change of a claim logs one)."""
    lsn_tokens.wrote(db, [namespace])
    db.execute(
        insert(MemoryLog).values(
            namespace=namespace,
            action=action,
            memory_id=memory_id,
            trigger=trigger,
            details=details,
        )
    )


def _locked_active(db: DbSession, namespace: str, ids: Sequence[int]) -> dict[int, Any]:
    rows = db.execute(
        text(
            "SELECT id, namespace, corroboration, confidence, source_message_ids, created_at "
            "FROM memories WHERE namespace = :ns AND id = ANY(:ids) AND status = 'active' "
            "ORDER BY id FOR UPDATE"
        ),
        {"ns": namespace, "ids": list(ids)},
    )
    return {row.id: row for row in rows}


def reinforce(
    db: DbSession, namespace: str, keep_id: int, duplicate_ids: Sequence[int], trigger: str
) -> bool:
    """Fold active duplicates into `keep_id` (memories of `namespace`): they become `merged`
    rows linked to it, it gains their corroboration, some confidence, their source ids and
    `last_confirmed`."""
    rows = _locked_active(db, namespace, [keep_id, *duplicate_ids])
    keep = rows.get(keep_id)
    dups = [rows[i] for i in duplicate_ids if i in rows and i != keep_id]
    if keep is None or not dups:
        return False
    _fold(db, keep, dups, trigger)
    return True


def _folded(keep: Any, dups: Sequence[Any]) -> tuple[int, float, list[str]]:
    """Corroboration, confidence and source ids of `keep` once `dups` are folded into it."""
    sources = list(
        dict.fromkeys([*keep.source_message_ids, *(s for d in dups for s in d.source_message_ids)])
    )
    corroboration = keep.corroboration + sum(d.corroboration for d in dups)
    confidence = min(MAX_CONFIDENCE, keep.confidence + REINFORCE_CONFIDENCE_STEP * len(dups))
    return corroboration, confidence, sources


def _fold(db: DbSession, keep: Any, dups: Sequence[Any], trigger: str) -> None:
    """Write a reinforcement of locked, active rows (with id, namespace, corroboration,
    confidence, source_message_ids and created_at): the duplicates merged, the kept row
    updated and the change logged, in one statement."""
    dup_ids = [d.id for d in dups]
    corroboration, confidence, sources = _folded(keep, dups)
    lsn_tokens.wrote(db, [keep.namespace])
    db.execute(
        text(
            "WITH merged AS (UPDATE memories SET status = 'merged', superseded_by = :keep, "
            "updated_at = now() WHERE namespace = :ns AND id = ANY(:ids) RETURNING id), "
            "kept AS (UPDATE memories SET corroboration = :c, confidence = :conf, "
            "source_message_ids = :src, details = details || "
            "jsonb_build_object('last_confirmed', CAST(:at AS text)), updated_at = now() "
            "WHERE namespace = :ns AND id = :keep RETURNING id) "
            "INSERT INTO memory_log (namespace, action, memory_id, trigger, details) "
            "SELECT :ns, 'reinforce', :keep, :trigger, CAST(:details AS jsonb)"
        ),
        {
            "ids": dup_ids,
            "c": corroboration,
            "conf": confidence,
            "src": sources,
            "at": max(d.created_at for d in dups).isoformat(),
            "keep": keep.id,
            "ns": keep.namespace,
            "trigger": trigger,
            "details": json.dumps({"merged": dup_ids, "corroboration": corroboration}),
        },
    )


def supersede(db: DbSession, namespace: str, old_id: int, new_id: int, trigger: str) -> bool:
    """Mark the active `old_id` superseded by `new_id` (kept, linked, out of recall), both
    memories of `namespace`."""
    rows = _locked_active(db, namespace, [old_id])
    if old_id not in rows:
        return False
    db.execute(
        text(
            "UPDATE memories SET status = 'superseded', superseded_by = :new, updated_at = now() "
            "WHERE namespace = :ns AND id = :old"
        ),
        {"ns": namespace, "old": old_id, "new": new_id},
    )
    _log(db, namespace, "supersede", old_id, {"superseded_by": new_id}, trigger)
    metrics.incr_on_commit(db, metrics.MEMORIES_SUPERSEDED)
    return True


def quarantine(
    db: DbSession, namespace: str, memory_id: int, conflicts_with: int, trigger: str
) -> bool:
    """Hold the active `memory_id` (of `namespace`) back: it contradicts the more trusted
    `conflicts_with`."""
    rows = _locked_active(db, namespace, [memory_id])
    if memory_id not in rows:
        return False
    db.execute(
        text(
            "UPDATE memories SET status = 'quarantined', updated_at = now(), "
            "details = details || jsonb_build_object('conflicts_with', CAST(:other AS bigint)) "
            "WHERE namespace = :ns AND id = :id"
        ),
        {"ns": namespace, "id": memory_id, "other": conflicts_with},
    )
    details = {"conflicts_with": conflicts_with}
    _log(db, namespace, "quarantine", memory_id, details, trigger)
    return True


# Every memory in force on the claims of a batch (namespace, user, subject, predicate), found
# in one read: subjects and predicates compare lower-cased by Postgres, as the partial index
# `memories_claim` (used thanks to the literal status and predicate conditions) holds them.
_IN_FORCE = text(
    "SELECT m.namespace, m.id "
    "FROM memories m JOIN (SELECT DISTINCT ns, uid, lower(subject) AS subject, "
    "lower(predicate) AS predicate FROM unnest(CAST(:ns AS text[]), CAST(:uids AS text[]), "
    "CAST(:subjects AS text[]), CAST(:predicates AS text[])) AS u(ns, uid, subject, predicate)) "
    "AS k ON m.namespace = k.ns AND m.user_id IS NOT DISTINCT FROM k.uid "
    "AND lower(m.claim_subject) = k.subject AND lower(m.claim_predicate) = k.predicate "
    "WHERE m.claim_predicate IS NOT NULL AND m.status = 'active'"
)
# Then those memories locked, in event-time order, and read as they are once locked (one
# that left force meanwhile is not). Locked by id alone, not in the read above: a row lock
# that waits for another transaction rechecks its row through the plan it came from, and
# Postgres 18.6 crashes (SIGSEGV in partition pruning, every connection of the server lost)
# rechecking a join whose partitions of `memories` are pruned per row of the other side.
_LOCK_IN_FORCE = text(
    f"SELECT {CLAIM_COLUMNS}, corroboration, confidence, source_message_ids, "
    "lower(claim_subject) AS subject, lower(claim_predicate) AS predicate FROM memories "
    "WHERE namespace = ANY(CAST(:ns AS text[])) AND id = ANY(CAST(:ids AS bigint[])) "
    "AND claim_predicate IS NOT NULL AND status = 'active' "
    "ORDER BY created_at, id FOR UPDATE"
)

ClaimKey = tuple[str, str | None, str, str]  # namespace, user, subject and predicate lower-cased


@dataclass
class _InForce:
    """A memory in force on a claim of the batch, as the batch's verdicts leave it."""

    id: int
    namespace: str
    key: ClaimKey
    claim: ClaimState
    corroboration: int
    confidence: float
    source_message_ids: list[str]
    created_at: datetime
    status: str = "active"


def _in_force(db: DbSession, claimed: Sequence[Any]) -> dict[int, _InForce]:
    """The memories in force on the claims of `claimed` (themselves included), by id, in
    event-time order."""
    matching = db.execute(
        _IN_FORCE,
        {
            "ns": [row.namespace for row in claimed],
            "uids": [row.user_id for row in claimed],
            "subjects": [row.claim_subject for row in claimed],
            "predicates": [row.claim_predicate for row in claimed],
        },
    ).all()
    if not matching:
        return {}
    found = db.execute(
        _LOCK_IN_FORCE,
        {"ns": sorted({row.namespace for row in matching}), "ids": [row.id for row in matching]},
    )
    return {
        row.id: _InForce(row.id, row.namespace, (row.namespace, row.user_id, row.subject,
                         row.predicate), ClaimState.of(row), row.corroboration, row.confidence,
                         list(row.source_message_ids or []), row.created_at)
        for row in found
    }  # fmt: skip


def resolve_claims(db: DbSession, rows: Sequence[Any], now: datetime) -> dict[int, str]:
    """Settle the claims of freshly inserted `rows` in event-time order, each as if written
    alone: it meets the memories in force before it, the batch's earlier claims included
    and its later ones not yet, and stops at the first verdict that takes it out of force.
    So where a batch ends never changes the outcome. Returns the status of each new memory
    that did not stay active."""
    claimed = sorted(
        (r for r in rows if r.claim_subject and r.claim_predicate),
        key=lambda r: (r.created_at, r.id),
    )
    if not claimed:
        return {}
    standing = _in_force(db, claimed)
    groups: dict[ClaimKey, list[_InForce]] = defaultdict(list)
    for memory in standing.values():
        groups[memory.key].append(memory)
    unwritten = {row.id for row in claimed}
    for row in claimed:
        unwritten.discard(row.id)
        new = standing.get(row.id)
        if new is None or new.status != "active":
            continue
        for other in groups[new.key]:
            if other.id == new.id or other.id in unwritten or other.status != "active":
                continue
            _settle(db, decide(new.claim, other.claim, now), new, other)
            if new.status != "active":
                break
    return {row.id: standing[row.id].status for row in claimed
            if row.id in standing and standing[row.id].status != "active"}  # fmt: skip


def _settle(db: DbSession, verdict: Verdict, new: _InForce, old: _InForce) -> None:
    """Apply `verdict` to two memories in force, locked by `_in_force`, and keep their
    standing up to date for the rest of the batch."""
    if verdict == "reinforce":
        _fold(db, old, [new], "claim")
        old.corroboration, old.confidence, old.source_message_ids = _folded(old, [new])
        new.status = "merged"
    elif verdict in ("supersede_old", "supersede_new"):
        loser, winner = (old, new) if verdict == "supersede_old" else (new, old)
        supersede(db, loser.namespace, loser.id, winner.id, "claim")
        loser.status = "superseded"
    elif verdict in ("quarantine_old", "quarantine_new"):
        held, other = (old, new) if verdict == "quarantine_old" else (new, old)
        quarantine(db, held.namespace, held.id, other.id, "claim")
        held.status = "quarantined"


def conflicts(
    db: DbSession,
    namespace: str | Sequence[str],
    user_id: str | None = None,
    limit: int | None = None,
    offset: int = 0,
) -> list[Conflict]:
    """Open conflicts for review, oldest first: quarantined memories of `namespace` (or of
    several) beside what they contradict; a page of them with `limit` and `offset`."""
    namespaces = [namespace] if isinstance(namespace, str) else list(namespace)
    result = db.execute(
        text(
            "SELECT q.namespace, q.id, q.content, q.provenance, q.claim_subject, "
            "q.claim_predicate, q.created_at, a.id AS a_id, a.content AS a_content, "
            "a.provenance AS a_provenance "
            "FROM memories q LEFT JOIN memories a "
            "ON a.namespace = q.namespace AND a.id = CAST(q.details->>'conflicts_with' AS bigint) "
            "WHERE q.namespace = ANY(:ns) AND q.status = 'quarantined' "
            "AND (CAST(:uid AS text) IS NULL OR q.user_id = :uid) ORDER BY q.created_at, q.id "
            "LIMIT :limit OFFSET :offset"
        ),
        {"ns": namespaces, "uid": user_id, "limit": limit, "offset": offset},
    )
    return [
        Conflict(
            namespace=r.namespace,
            quarantined_id=r.id,
            quarantined=read_text(r.content, "memories.content", r.id),
            quarantined_provenance=r.provenance,
            active_id=r.a_id,
            active=read_optional(r.a_content, "memories.content", r.a_id),
            active_provenance=r.a_provenance,
            subject=r.claim_subject,
            predicate=r.claim_predicate,
            created_at=r.created_at,
        )
        for r in result
    ]


def settle(
    db: DbSession, namespaces: Sequence[str], quarantined_id: int, keep_quarantined: bool
) -> Settled | None:
    """A person settles the conflict of the quarantined memory `quarantined_id` (in one of
    `namespaces`; None when there is no such conflict). Keeping it makes it active and
    supersedes the memories in force on its claim that it competes with (the one it
    contradicted among them); otherwise it is superseded by the memory it contradicted (a
    hand-written update: `supersede` takes active memories only). Logged as `settle`."""
    row = db.execute(
        text(
            f"SELECT {CLAIM_COLUMNS}, CAST(details->>'conflicts_with' AS bigint) AS other "
            "FROM memories WHERE id = :id AND namespace = ANY(:ns) AND status = 'quarantined' "
            "FOR UPDATE"
        ),
        {"id": quarantined_id, "ns": list(namespaces)},
    ).first()
    if row is None:
        return None
    if not keep_quarantined:
        db.execute(
            text(
                "UPDATE memories SET status = 'superseded', superseded_by = :other, "
                "updated_at = now() WHERE namespace = :ns AND id = :id"
            ),
            {"ns": row.namespace, "id": row.id, "other": row.other},
        )
        _log(db, row.namespace, "settle", row.id, {"kept": row.other}, "review")
        metrics.incr_on_commit(db, metrics.MEMORIES_SUPERSEDED)
        return Settled(namespace=row.namespace, kept=row.other, superseded=[row.id])
    lock_claims(db, [claim_lock_key(row.namespace, row.user_id, row.claim_subject,
                                    row.claim_predicate)])  # fmt: skip
    # What it overrides is what it competes with, as when a claim is written (`decide`): not
    # another session's claim, nor an open-ended one it is a bounded exception to.
    kept, now = ClaimState.of(row), datetime.now(UTC)
    in_force = [m.id for m in _in_force(db, [row]).values() if _competes(kept, m.claim, now)]
    db.execute(
        text(
            "UPDATE memories SET status = 'active', updated_at = now(), "
            "details = details - 'conflicts_with' WHERE namespace = :ns AND id = :id"
        ),
        {"ns": row.namespace, "id": row.id},
    )
    superseded = [old for old in in_force if supersede(db, row.namespace, old, row.id, "review")]
    _log(db, row.namespace, "settle", row.id, {"kept": row.id, "superseded": superseded}, "review")
    return Settled(namespace=row.namespace, kept=row.id, superseded=superseded)
