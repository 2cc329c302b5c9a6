"""Claims through the real write path: a correction supersedes (three → four grandchildren),
a repeat reinforces, a less trusted contradiction is quarantined and listed for review, and
ingest stays exactly-once while doing so."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

from sqlalchemy import select, text

from continuum.domain.memory import Claim, MemoryCandidate
from continuum.memory.claims import _in_force, conflicts
from continuum.memory.writer import WriteScope, store_candidates
from continuum.pipeline.ingest import ingest_batch
from continuum.recall.scope import SearchFilters
from continuum.recall.search import search
from continuum.store.engine import get_engine, session_scope
from continuum.store.models import Memory, MemoryLog, UserTask
from tests.support.events import T0, turn


def _memories(**where: Any) -> list[Memory]:
    with session_scope() as db:
        stmt = select(Memory).filter_by(namespace="pearl", **where).order_by(Memory.id)
        return list(db.scalars(stmt))


def _grandchildren() -> list[Memory]:
    return _memories(key="grandchildren_count")


def _log(action: str) -> list[MemoryLog]:
    with session_scope() as db:
        return list(db.scalars(select(MemoryLog).where(MemoryLog.action == action)))


def test_correction_supersedes_and_only_the_new_value_is_recalled(db: Any) -> None:
    ingest_batch(
        [
            turn("I have three grandchildren.", message_id="m1", at=0),
            turn("Actually, four grandchildren, not three.", message_id="m2", at=20),
        ]
    )
    old, new = _grandchildren()
    assert (old.claim_value, old.status, old.superseded_by) == ("3", "superseded", new.id)
    assert (new.claim_value, new.status) == ("4", "active")
    active = search("pearl", "how many grandchildren", sources=("memory",))
    assert [hit.id for hit in active] == [new.id]
    assert [(e.memory_id, e.details["superseded_by"]) for e in _log("supersede")] == [
        (old.id, new.id)
    ]
    # Redelivery of the same turns changes nothing (exactly-once effect).
    ingest_batch([turn("Actually, four grandchildren, not three.", message_id="m2", at=20)])
    assert [(m.status, m.corroboration) for m in _grandchildren()] == [
        ("superseded", 1),
        ("active", 1),
    ]


def test_correction_in_one_batch_and_across_batches_agree(db: Any) -> None:
    ingest_batch([turn("I have three grandchildren.", message_id="m1", at=0)])
    ingest_batch([turn("Actually, four grandchildren, not three.", message_id="m2", at=20)])
    assert [(m.claim_value, m.status) for m in _grandchildren()] == [
        ("3", "superseded"),
        ("4", "active"),
    ]


def test_late_backfill_of_an_older_value_does_not_override_the_newer(db: Any) -> None:
    ingest_batch([turn("Actually, four grandchildren, not three.", message_id="m2", at=20)])
    ingest_batch([turn("I have three grandchildren.", message_id="m1", at=0)])
    by_value = {m.claim_value: m for m in _grandchildren()}
    assert by_value["4"].status == "active"
    assert (by_value["3"].status, by_value["3"].superseded_by) == ("superseded", by_value["4"].id)


def test_repeat_reinforces_instead_of_duplicating(db: Any) -> None:
    ingest_batch([turn("I have four grandchildren.", message_id="m1", at=0)])
    ingest_batch([turn("I have four grandchildren.", message_id="m9", session_id="tg-2", at=900)])
    kept, repeat = _grandchildren()
    assert (kept.status, kept.corroboration) == ("active", 2)
    assert kept.confidence > repeat.confidence
    assert kept.details["last_confirmed"] == (T0 + timedelta(seconds=900)).isoformat()
    assert kept.source_message_ids == ["m1", "m9"]
    assert (repeat.status, repeat.superseded_by) == ("merged", kept.id)
    assert [e.memory_id for e in _log("reinforce")] == [kept.id]


def test_repeats_and_a_correction_in_one_batch_settle_as_in_separate_batches(db: Any) -> None:
    said = [
        turn("I have four grandchildren.", message_id="m1", at=0),
        turn("I have four grandchildren.", message_id="m2", session_id="tg-2", at=300),
        turn("I have four grandchildren.", message_id="m3", session_id="tg-3", at=600),
        turn("Actually, five grandchildren, not four.", message_id="m4", session_id="tg-3", at=900),
    ]

    def settled() -> list[tuple[Any, ...]]:
        memories = _grandchildren()
        index = {m.id: i for i, m in enumerate(memories)}
        return [
            (m.claim_value, m.status, m.corroboration, m.source_message_ids,
             index.get(m.superseded_by), round(m.confidence, 2))
            for m in memories
        ]  # fmt: skip

    ingest_batch(said)
    one_batch = settled()
    assert one_batch == [
        ("4", "superseded", 3, ["m1", "m2", "m3"], 3, 0.99),  # two repeats folded, corrected
        ("4", "merged", 1, ["m2"], 0, 0.9),
        ("4", "merged", 1, ["m3"], 0, 0.9),
        ("5", "active", 1, ["m4"], None, 0.9),
    ]
    with session_scope() as session:
        session.execute(text("TRUNCATE memories, memory_log, messages, processed_events"))
    for event in said:
        ingest_batch([event])
    assert settled() == one_batch


def _fact(value: str, provenance: str, source: str, scope: str = "global", **claim: Any) -> Any:
    return MemoryCandidate(
        kind="fact",
        key="home_location",
        content=f"User lives in {value}",
        importance=7,
        confidence=0.8,
        provenance=provenance,  # type: ignore[arg-type]
        claim=Claim(subject="user", predicate="home_location", value=value, scope=scope, **claim),  # type: ignore[arg-type]
        source_message_ids=[source],
    )


def _store(*candidates: MemoryCandidate, at: float = 0, session: str = "s1") -> list[int]:
    ctx = WriteScope("pearl", session, "jason", "voice", T0 + timedelta(seconds=at))
    with session_scope() as db:
        return store_candidates(db, [(ctx, c) for c in candidates])


def test_less_trusted_contradiction_is_quarantined_and_listed(db: Any) -> None:
    [trusted] = _store(_fact("Leeds", "user_explicit", "m1"))
    [doubtful] = _store(_fact("York", "tool_output", "web-1"), at=60)
    statuses = {m.id: m.status for m in _memories()}
    assert statuses == {trusted: "active", doubtful: "quarantined"}
    with session_scope() as dbs:
        found = conflicts(dbs, "pearl")
    assert [(c.quarantined_id, c.active_id) for c in found] == [(doubtful, trusted)]
    # Equal or higher trust applies the newer value.
    [confirmed] = _store(_fact("York", "user_explicit", "m3"), at=120)
    statuses = {m.id: m.status for m in _memories()}
    assert statuses == {trusted: "superseded", doubtful: "quarantined", confirmed: "active"}


def test_windows_and_scopes_limit_what_supersedes(db: Any) -> None:
    [home] = _store(_fact("Leeds", "user_explicit", "m1"))
    window = {"valid_from": T0, "valid_until": T0 + timedelta(days=3650)}
    [trip] = _store(_fact("Paris", "user_explicit", "m2", scope="temporal", **window), at=10)
    expired = {"valid_from": T0, "valid_until": T0 + timedelta(minutes=1)}
    [old_trip] = _store(_fact("Rome", "user_explicit", "m3", scope="temporal", **expired), at=20)
    [session] = _store(_fact("Oslo", "user_explicit", "m4", scope="session"), at=30)
    statuses = {m.id: m.status for m in _memories()}
    assert statuses == dict.fromkeys((home, trip, old_trip, session), "active")
    [later_session] = _store(
        _fact("Bergen", "user_explicit", "m5", scope="session"), at=40, session="s1"
    )
    assert {m.id: m.status for m in _memories()}[session] == "superseded"
    assert {m.id: m.status for m in _memories()}[later_session] == "active"


def test_reminders_become_tasks_once(db: Any) -> None:
    ingest_batch([turn("Please remind me to call the pharmacy tomorrow.", message_id="m1")])
    ingest_batch([turn("Please remind me to call the pharmacy tomorrow.", message_id="m1")])
    ingest_batch([turn("Please remind me to call the pharmacy tomorrow.", message_id="m7", at=50)])
    with session_scope() as dbs:
        tasks = list(dbs.scalars(select(UserTask)))
    assert len(tasks) == 1
    assert tasks[0].title.startswith("Remind user to call the pharmacy")
    assert tasks[0].created_channel == "voice"
    # "tomorrow" from when it was said, not from now; said once, in the title
    assert tasks[0].due_at == T0.replace(hour=9, minute=0) + timedelta(days=1)
    assert tasks[0].description is None
    assert any(tag.startswith("memory:") for tag in tasks[0].tags)


def test_a_confirmed_reminder_is_one_task_in_the_confirmations_words(db: Any) -> None:
    asked = "I have a doctor's appointment on Tuesday at 10, remind me the day before."
    confirmed = "I'll remind you on Monday about the doctor's appointment on Tuesday at 10."
    ingest_batch(
        [turn(asked, message_id="m1"), turn(confirmed, role="assistant", message_id="m2", at=5)]
    )
    ingest_batch([turn("I'll call the pharmacy on Monday.", message_id="m3", at=10)])
    with session_scope() as dbs:
        tasks = list(dbs.scalars(select(UserTask).order_by(UserTask.id)))
    monday = T0.replace(hour=9, minute=0) + timedelta(days=2)  # T0 is a Saturday
    assert [(t.title, t.due_at) for t in tasks] == [
        ("Remind user on Monday about the doctor's appointment on Tuesday at 10", monday),
        ("User committed to call the pharmacy on Monday", monday),  # same time, same side
    ]
    assert sum(tag.startswith("memory:") for tag in tasks[0].tags) == 2


def test_a_reminder_confirmed_in_a_later_batch_restates_the_stored_task(db: Any) -> None:
    """The confirmation takes over the stored task; the request said again after it is the
    same reminder, not a second task (its wording was the task's title until just before)."""
    asked = "I have a doctor's appointment on Tuesday at 10, remind me the day before."
    confirmed = "I'll remind you on Monday about the doctor's appointment on Tuesday at 10."
    ingest_batch([turn(asked, message_id="m1")])
    ingest_batch([turn(confirmed, role="assistant", message_id="m2", at=5),
                  turn(asked, message_id="m3", at=8)])  # fmt: skip
    with session_scope() as dbs:
        tasks = list(dbs.scalars(select(UserTask).order_by(UserTask.id)))
    assert [t.title for t in tasks] == [
        "Remind user on Monday about the doctor's appointment on Tuesday at 10"
    ]
    assert sum(tag.startswith("memory:") for tag in tasks[0].tags) == 2


def test_private_and_user_scoping_of_search_untouched(db: Any) -> None:
    ingest_batch([turn("I have three grandchildren.", message_id="m1", user_id="ann")])
    ingest_batch([turn("I have four grandchildren.", message_id="m2", user_id="bob", at=5)])
    # Different users' claims never supersede each other.
    assert [m.status for m in _grandchildren()] == ["active", "active"]
    hits = search("pearl", "grandchildren", filters=SearchFilters(user_id="ann"))
    assert {h.content for h in hits if h.source == "memory"} == {"User has 3 grandchildren"}


def _in_force_while_another_transaction_writes(memory: Memory, write: str) -> list[int]:
    """The memories in force on `memory`'s claim, read while another transaction has run
    `write` on it and not committed (it commits half a second later), with the plan Postgres
    picks once `memories` is large: a nested loop pruning its partitions per row."""
    holder = get_engine().connect()
    holder.execute(text(write), {"id": memory.id})
    committing = threading.Timer(0.5, holder.commit)
    committing.start()
    try:
        with session_scope() as dbs:
            for method in ("hashjoin", "mergejoin", "seqscan"):
                dbs.execute(text(f"SET LOCAL enable_{method} = off"))
            return list(_in_force(dbs, [memory]))
    finally:
        committing.join()
        holder.close()


def test_claims_locked_behind_a_concurrent_write_are_read_as_it_left_them(db: Any) -> None:
    """A batch's claims wait for the lock another transaction holds on a memory in force,
    then see it as that transaction left it. Locking inside the read that joins the batch's
    claims to `memories` crashed Postgres 18.6 on that wait (SIGSEGV: every connection lost)."""
    [home] = _store(_fact("Leeds", "user_explicit", "m1"))
    [memory] = _memories(id=home)
    with session_scope() as dbs:  # other tenants' claims, and statistics that know them
        dbs.execute(
            text(
                "INSERT INTO memories (namespace, kind, content, idempotency_key, "
                "claim_subject, claim_predicate, claim_value) SELECT 'other' || n % 8, 'fact', "
                "'lives somewhere', 'filler-' || n, 'user' || n, 'home_location', 'Leeds' "
                "FROM generate_series(1, 400) AS n"
            )
        )
    with get_engine().connect() as connection:
        connection.execute(text("ANALYZE memories"))
        connection.commit()
    bump = "UPDATE memories SET corroboration = corroboration + 1 WHERE id = :id"
    assert _in_force_while_another_transaction_writes(memory, bump) == [home]
    retire = "UPDATE memories SET status = 'superseded' WHERE id = :id"
    assert _in_force_while_another_transaction_writes(memory, retire) == []
