"""A corpus of bad events: each is refused with a clear error (producer side) or dead-lettered
with its reason (worker side); no crash, and no good event around it is lost."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import text

from continuum.contract.events import EventError, parse_event
from continuum.store.engine import session_scope
from tests.support.events import turn
from tests.support.wait import wait_for

GOOD = turn("Let's go with the blue tiles for the bathroom.", message_id="good")
COMMON = {k: GOOD[k] for k in ("namespace", "session_id", "channel", "ts")}


def without(field: str, base: dict[str, Any] = GOOD) -> dict[str, Any]:
    return {k: v for k, v in base.items() if k != field}


CORPUS: list[tuple[str, Any]] = [
    ("not an object: string", "hello"),
    ("not an object: number", 42),
    ("not an object: list", ["a", "b"]),
    ("not an object: null", None),
    ("empty object", {}),
    ("no kind", without("kind")),
    ("unknown kind", {**GOOD, "kind": "telepathy"}),
    ("kind wrong type", {**GOOD, "kind": 3}),
    ("future schema version", {**GOOD, "schema_version": 2}),
    ("schema version as text", {**GOOD, "schema_version": "one"}),
    ("no namespace", without("namespace")),
    ("namespace with spaces", {**GOOD, "namespace": "my tenant"}),
    ("namespace uppercase", {**GOOD, "namespace": "Pearl"}),
    ("namespace too long", {**GOOD, "namespace": "a" * 65}),
    ("namespace wrong type", {**GOOD, "namespace": ["pearl"]}),
    ("no session id", without("session_id")),
    ("empty session id", {**GOOD, "session_id": ""}),
    ("session id too long", {**GOOD, "session_id": "s" * 201}),
    ("session id wrong type", {**GOOD, "session_id": {"id": 1}}),
    ("no channel", without("channel")),
    ("empty channel", {**GOOD, "channel": ""}),
    ("channel too long", {**GOOD, "channel": "c" * 65}),
    ("no ts", without("ts")),
    ("ts not a date", {**GOOD, "ts": "last tuesday"}),
    ("ts without timezone", {**GOOD, "ts": "2026-11-21T09:30:00"}),
    ("ts wrong type", {**GOOD, "ts": [2026, 11, 21]}),
    ("ts impossible date", {**GOOD, "ts": "2026-02-30T10:00:00Z"}),
    ("event id not a uuid", {**GOOD, "event_id": "12345"}),
    ("event id wrong type", {**GOOD, "event_id": 12345}),
    ("user id empty", {**GOOD, "user_id": ""}),
    ("user id wrong type", {**GOOD, "user_id": 7}),
    ("unknown field", {**GOOD, "mood": "happy"}),
    ("no role", without("role")),
    ("role unknown", {**GOOD, "role": "narrator"}),
    ("role wrong type", {**GOOD, "role": None}),
    ("no content", without("content")),
    ("content empty", {**GOOD, "content": ""}),
    ("content whitespace", {**GOOD, "content": " \n\t "}),
    ("content wrong type", {**GOOD, "content": {"text": "hi"}}),
    ("content list", {**GOOD, "content": ["hi"]}),
    ("content oversize", {**GOOD, "content": "x" * 100_001}),
    ("message id empty", {**GOOD, "message_id": ""}),
    ("parent id too long", {**GOOD, "parent_id": "p" * 201}),
    ("metadata wrong type", {**GOOD, "metadata": "{}"}),
    ("idle without idle_ms", {**COMMON, "kind": "idle", "last_activity_at": GOOD["ts"]}),
    (
        "idle negative idle_ms",
        {**COMMON, "kind": "idle", "idle_ms": -5, "last_activity_at": GOOD["ts"]},
    ),
    (
        "idle idle_ms text",
        {**COMMON, "kind": "idle", "idle_ms": "ten minutes", "last_activity_at": GOOD["ts"]},
    ),
    ("idle without last activity", {**COMMON, "kind": "idle", "idle_ms": 1000}),
    ("compaction without id", {**COMMON, "kind": "pre_compaction"}),
    (
        "compaction negative tokens",
        {**COMMON, "kind": "pre_compaction", "compaction_id": "c", "tokens_used": -1},
    ),
    (
        "compaction turns wrong type",
        {**COMMON, "kind": "pre_compaction", "compaction_id": "c", "turns": "all of them"},
    ),
    (
        "compaction turn bad role",
        {
            **COMMON,
            "kind": "pre_compaction",
            "compaction_id": "c",
            "turns": [{"role": "alien", "content": "x"}],
        },
    ),
    ("session end without ended_at", {**COMMON, "kind": "session_end"}),
    (
        "session end before start",
        {**COMMON, "kind": "session_end", "ended_at": "2020-01-01T00:00:00Z"},
    ),
    (
        "session end negative duration",
        {**COMMON, "kind": "session_end", "ended_at": GOOD["ts"], "duration_s": -3},
    ),
    (
        "session end connected text",
        {**COMMON, "kind": "session_end", "ended_at": GOOD["ts"], "connected": "maybe"},
    ),
]


@pytest.mark.parametrize(("name", "payload"), CORPUS, ids=[name for name, _ in CORPUS])
def test_producer_refuses_with_a_clear_error(name: str, payload: Any) -> None:
    with pytest.raises(EventError) as info:
        parse_event(payload)
    assert info.value.errors and all(field and message for field, message in info.value.errors)


def test_worker_dead_letters_each_bad_event_and_keeps_every_good_one(
    db: Any, worker: Any, client: Any
) -> None:
    good = [turn(f"Good message number {i} about tiles", message_id=f"g{i}", at=i)
            for i in range(len(CORPUS))]  # fmt: skip
    batch: list[Any] = []
    for (_, bad), ok in zip(CORPUS, good, strict=True):
        batch += [ok, bad]
    # Bypass producer validation, as a buggy producer in another language would.
    client.app.send_task("continuum.ingest_events", args=[batch], queue="events")
    wait_for(lambda: _count("dead_letters") == len(CORPUS), timeout=30)
    assert _count("messages") == len(good)
    with session_scope() as db_session:
        reasons = db_session.execute(text("SELECT DISTINCT reason FROM dead_letters")).scalars()
        assert set(reasons) == {"invalid_event"}


def _count(table: str) -> int:
    with session_scope() as db_session:
        return int(db_session.execute(text(f"SELECT count(*) FROM {table}")).scalar() or 0)
