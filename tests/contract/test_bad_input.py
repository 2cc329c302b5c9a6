"""A corpus of bad events: each is refused with a clear error (producer side) or dead-lettered
with its reason (worker side); no crash, and no good event around it is lost."""

from __future__ import annotations

import json
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


def nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"a": value}
    return value


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
    # Text no store can keep: one such event used to fail its whole batch.
    ("content with NUL", {**GOOD, "content": "a\u0000b"}),
    ("content with lone high surrogate", {**GOOD, "content": "a\ud800b"}),
    ("content with lone low surrogate", {**GOOD, "content": "\udfffend"}),
    ("metadata value with NUL", {**GOOD, "metadata": {"note": "x\u0000"}}),
    ("metadata key with NUL", {**GOOD, "metadata": {"no\u0000te": "x"}}),
    ("metadata nested surrogate", {**GOOD, "metadata": {"a": [{"b": "\ud83d"}]}}),
    ("metadata NaN", {**GOOD, "metadata": {"score": float("nan")}}),
    ("metadata infinity", {**GOOD, "metadata": {"score": float("inf")}}),
    ("metadata nested too deep", {**GOOD, "metadata": nested(200)}),
    ("session id with NUL", {**GOOD, "session_id": "s\u0000"}),
    (
        "compaction turn with NUL",
        {
            **COMMON,
            "kind": "pre_compaction",
            "compaction_id": "c",
            "turns": [{"role": "user", "content": "x\u0000"}],
        },
    ),
    # Identifiers end up in Redis keys and workspace files: no control characters.
    (
        "channel with newline (log injection)",
        {**GOOD, "channel": "x\n[2099-01-01 00:00] [root] — INJECTED LINE"},
    ),
    ("channel with tab", {**GOOD, "channel": "dis\tcord"}),
    ("session id with newline", {**GOOD, "session_id": "s1\n"}),
    ("user id with carriage return", {**GOOD, "user_id": "jason\r"}),
    ("user id padded", {**GOOD, "user_id": " jason"}),
    ("message id with escape", {**GOOD, "message_id": "m\u001b[31m"}),
    ("namespace with trailing newline", {**GOOD, "namespace": "pearl\n"}),
    ("namespace with NUL", {**GOOD, "namespace": "pearl\u0000"}),
    # Times outside the window: stored as year 10000 or BC, they broke every read.
    ("ts past year 9999 in UTC", {**GOOD, "ts": "9999-12-31T23:59:59-01:00"}),
    ("ts BC in UTC", {**GOOD, "ts": "0001-01-01T00:00:00+01:00"}),
    ("ts before 1970", {**GOOD, "ts": "1969-12-31T23:59:59Z"}),
    ("ts far future", {**GOOD, "ts": "2100-01-01T00:00:00Z"}),
    ("ts as epoch seconds", {**GOOD, "ts": 1_795_400_000}),
    ("ts as epoch float", {**GOOD, "ts": 1_795_400_000.5}),
    (
        "ended_at far future",
        {**COMMON, "kind": "session_end", "ended_at": "3000-01-01T00:00:00Z"},
    ),
    (
        "last activity BC",
        {**COMMON, "kind": "idle", "idle_ms": 1, "last_activity_at": "0001-01-01T00:00:00+01:00"},
    ),
    (
        "message ts out of window",
        {
            **COMMON,
            "kind": "session_end",
            "ended_at": GOOD["ts"],
            "messages": [{"role": "user", "content": "x", "ts": "9999-12-31T23:59:59-05:00"}],
        },
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


def test_worker_keeps_a_refused_event_with_its_raw_text_escaped(
    db: Any, worker: Any, client: Any
) -> None:
    """The dead letter of an event with a NUL holds what was sent, escaped, not dropped."""
    bad = {**GOOD, "message_id": "nul", "content": "a\u0000b", "metadata": {"k\ud800": 1}}
    client.app.send_task("continuum.ingest_events", args=[[bad]], queue="events")
    wait_for(lambda: _count("dead_letters") == 1)
    with session_scope() as db_session:
        payload = db_session.execute(text("SELECT payload FROM dead_letters")).scalar_one()
    assert payload["content"] == "a\\x00b" and payload["metadata"] == {"k\\ud800": 1}


def test_an_event_postgres_refuses_fails_alone(
    db: Any, worker: Any, client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Should validation ever let through a value Postgres refuses, the batch is written
    event by event: the refused one is dead-lettered, the others land, nothing retries."""
    import continuum.contract.events

    monkeypatch.setattr(continuum.contract.events, "_unstorable", lambda data: [])
    batch = [
        turn("First good message about tiles", message_id="g1"),
        {**GOOD, "message_id": "nul", "content": "tiles\u0000"},
        turn("Second good message about tiles", message_id="g2", at=2),
    ]
    client.app.send_task("continuum.ingest_events", args=[batch], queue="events")
    wait_for(lambda: _count("dead_letters") == 1)
    wait_for(lambda: _count("messages") == 2)
    with session_scope() as db_session:
        reason, payload = db_session.execute(text("SELECT reason, payload FROM dead_letters")).one()
    assert reason == "unstorable_event" and payload["content"] == "tiles\\x00"


def sandwich(bad: Any, index: int) -> list[Any]:
    """A bad event between two good ones."""
    return [
        turn(f"Good message {index}a about tiles", message_id=f"{index}a"),
        bad,
        turn(f"Good message {index}b about tiles", message_id=f"{index}b", at=1),
    ]


def test_every_door_refuses_the_bad_event_naming_it(servers: Any, client: Any) -> None:
    """HTTP (422/403/400 naming body[1]), the CLI (exit 2 naming event #1) and the Python
    client (EventError at index 1): never a 500, a traceback or an AttributeError. Nothing of
    a refused call is enqueued (the caller fixes or drops the bad event and sends again)."""
    from fastapi.testclient import TestClient
    from typer.testing import CliRunner

    from continuum.api import create_app
    from continuum.cli.main import app as cli
    from continuum.security.tokens import create_token

    token, _ = create_token(["pearl"])
    headers = {"Authorization": f"Bearer {token}"}
    runner = CliRunner()
    with TestClient(create_app()) as api:
        for index, (name, bad) in enumerate(CORPUS):
            events = sandwich(bad, index)
            body = json.dumps(events)
            if name != "no namespace":  # a one-namespace token fills it in: a valid event
                response = api.post("/v1/events", headers=headers, content=body)
                assert response.status_code in (400, 403, 422), (name, response.text)
                assert response.json()["detail"][0]["loc"][:2] == ["body", 1], name
            if name != "no kind":  # the CLI's KIND argument fills it in: a valid event
                result = runner.invoke(cli, ["emit", "turn", "--json", body])
                assert result.exit_code == 2 and "event #1" in result.output, (name, result.output)
            with pytest.raises(EventError) as refused:
                client.emit_many(events)
            assert refused.value.index == 1, name


def test_input_nested_past_the_parser_is_a_clear_error(servers: Any, client: Any) -> None:
    from fastapi.testclient import TestClient

    from continuum.api import create_app
    from continuum.security.tokens import create_token

    token, _ = create_token(["pearl"])
    deep = "[" * 100_000 + "]" * 100_000
    with TestClient(create_app()) as api:
        response = api.post(
            "/v1/events", headers={"Authorization": f"Bearer {token}"}, content=deep
        )
    assert response.status_code == 400 and "nested" in response.text
    from typer.testing import CliRunner

    from continuum.cli.main import app as cli

    result = CliRunner().invoke(cli, ["emit", "turn", "--json", deep])
    assert result.exit_code == 2 and "nested too deeply" in result.output
    for not_a_batch in (42, None, {"kind": "turn"}, "turns"):
        with pytest.raises(EventError):
            client.emit_many(not_a_batch)


def test_errors_describe_the_input_as_sent(servers: Any, client: Any) -> None:
    """A 65-character channel is over "64 characters" (was "64 items"), a JSON `null` is
    `null` (was "NoneType"), and bytes that are not UTF-8 on stdin are named as such (were
    reported as "a NUL character or an unpaired surrogate")."""
    from fastapi.testclient import TestClient
    from typer.testing import CliRunner

    from continuum.api import create_app
    from continuum.cli.main import app as cli
    from continuum.security.tokens import create_token

    with pytest.raises(EventError, match="channel: String should have at most 64 characters"):
        parse_event({**GOOD, "channel": "c" * 65})
    with pytest.raises(EventError, match="must be a list of events, got null"):
        client.emit_many(None)
    token, _ = create_token(["pearl"])
    with TestClient(create_app()) as api:
        response = api.post("/v1/events", headers={"Authorization": f"Bearer {token}"},
                            content="null")  # fmt: skip
    assert response.status_code == 422 and "must be a JSON object, got null" in response.text
    latin1 = json.dumps({**GOOD, "content": "café"}, ensure_ascii=False).encode("latin-1")
    result = CliRunner().invoke(cli, ["emit", "turn"], input=latin1)
    assert result.exit_code == 2 and "surrogate" not in result.output
    bad_byte = latin1.index("é".encode("latin-1"))
    assert f"input is not valid UTF-8: byte {bad_byte} is 0xe9" in result.output
