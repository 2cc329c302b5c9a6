"""A seal is bound to its row (R47): a sealed value copied by SQL into another row of the same
tenant, user and field reads there as `[unreadable]` (logged), while every other row of the
tenant still reads; a value sealed before rows were bound (`enc1:`) still opens, and
`continuum keys rotate --data` seals it again bound to its row."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import select, text
from typer.testing import CliRunner

from continuum.cli.main import app
from continuum.memory.tool_calls import MemoryTools
from continuum.memory.user_tasks import create_task, list_tasks
from continuum.pipeline.ingest import ingest_batch
from continuum.recall.context import context
from continuum.recall.listings import MessageFilters, Window, messages
from continuum.recall.namespace_queries import search_messages
from continuum.sealing.envelope import UNREADABLE, SealBroken, open_text
from continuum.store.engine import session_scope
from continuum.store.models import Memory
from continuum.sync.cron import cron_reports, upsert_report
from continuum.transcripts import CronReport
from tests.support.encryption import legacy_seal
from tests.support.events import turn

runner = CliRunner()
SECRET = "The locker code is 4417, kept in the quillon notebook."


def _copy(table: str, column: str, source: str, target: str, key: str = "id") -> None:
    """What someone with the database (not the key) can do: copy a sealed value across rows."""
    with session_scope() as s:
        s.execute(
            text(
                f"UPDATE {table} SET {column} = (SELECT {column} FROM {table} WHERE {key} = :a) "
                f"WHERE {key} = :b"
            ),
            {"a": source, "b": target},
        )


def _id_of(table: str, where: str, **params: Any) -> str:
    with session_scope() as s:
        return str(s.execute(text(f"SELECT id FROM {table} WHERE {where}"), params).scalar_one())


def test_a_sealed_value_copied_into_another_row_does_not_open_there(
    db: Any, encrypted: str, caplog: Any
) -> None:
    ingest_batch(
        [
            turn(SECRET, namespace=encrypted, message_id="m1", metadata={"note": "quillon"}),
            turn("Nothing else today.", namespace=encrypted, message_id="m2", at=5),
        ]
    )
    tools = MemoryTools(encrypted, user_id="jason", provenance="user_explicit")
    tools.store_memory(memory_type="fact", key="locker_code", value="4417")
    tools.store_memory(memory_type="fact", key="shoe_size", value="44")
    create_task(encrypted, "Burn the quillon notebook", user_id="jason")
    create_task(encrypted, "Water the fig tree", user_id="jason")
    with session_scope() as s:
        for run in ("run-1", "run-2"):
            report = CronReport(
                job_id="digest", name="Digest", text=f"Digest of {run}: the quillon notebook.",
                message_id=run, run_started_at=None, run_ended_at=None,
            )  # fmt: skip
            upsert_report(s, encrypted, run, report, datetime(2026, 3, 2, 9, tzinfo=UTC))
    m1, m2 = (_id_of("messages", "message_id = :m", m=m) for m in ("m1", "m2"))
    _copy("messages", "content", m1, m2)
    _copy("messages", "details", m1, m2)
    code, size = (_id_of("memories", "key = :k", k=k) for k in ("locker_code", "shoe_size"))
    _copy("memories", "content", code, size)
    _copy("memories", "claim_value", code, size)
    burn, water = (_id_of("tasks", "true ORDER BY id LIMIT 1 OFFSET :n", n=n) for n in (0, 1))
    _copy("tasks", "title", burn, water)
    _copy("cron_reports", "summary", "run-1", "run-2", key="session_id")

    browsed = messages([encrypted], MessageFilters(oldest_first=True), Window(limit=10))
    assert [hit.content for hit in browsed] == [SECRET, UNREADABLE]  # the copy: not the secret
    assert [hit.details for hit in browsed] == [{"note": "quillon"}, {}]  # nor its details
    found = search_messages(encrypted, "quillon notebook")
    assert [(hit.message_id, hit.content) for hit in found] == [("m1", SECRET)]
    listed = {m["key"]: m["value"] for m in tools.list_memories()["memories"]}
    assert listed == {"locker_code": "4417", "shoe_size": UNREADABLE}
    assert sorted(task.title for task in list_tasks(encrypted, "jason")) == [
        "Burn the quillon notebook",
        UNREADABLE,
    ]
    assert sorted(report.summary for report in cron_reports(encrypted)) == [
        "Digest of run-1: the quillon notebook.",
        UNREADABLE,
    ]
    block = context(encrypted, "where is the locker code", 600, user_id="jason").block
    assert "4417" in block  # the tenant's reads go on
    assert "does not authenticate" in caplog.text  # each copy logged, not silent
    with session_scope() as s:  # where opened text is written again, a copy is refused
        raw = s.execute(text("SELECT content FROM messages WHERE id = :id"), {"id": m2}).scalar()
    with pytest.raises(SealBroken, match=f"row {m2}"):
        open_text(raw, "messages.content", m2)


def test_an_old_format_value_opens_and_rotation_binds_it_to_its_row(
    db: Any, encrypted: str
) -> None:
    """Rows of a deployment encrypted before rows were bound: their `enc1:` values read,
    `keys rotate --data` seals them again bound to their rows, and from then a copy across
    rows no longer opens."""
    first = legacy_seal(encrypted, "jason", "messages.content", SECRET)
    second = legacy_seal(encrypted, "jason", "messages.content", "Nothing else today.")
    details = {"sealed": legacy_seal(encrypted, "jason", "memories.details", '{"origin": "x"}')}
    with session_scope() as s:
        s.execute(
            text(
                "INSERT INTO messages (namespace, session_id, message_id, role, user_id, content,"
                " created_at) VALUES (:ns, 's1', 'm1', 'user', 'jason', :a, now()),"
                " (:ns, 's1', 'm2', 'user', 'jason', :b, now() + interval '1 minute')"
            ),
            {"ns": encrypted, "a": first, "b": second},
        )
        s.execute(
            text(
                "INSERT INTO memories (namespace, user_id, kind, key, content, details,"
                " idempotency_key) VALUES (:ns, 'jason', 'fact', 'k', :c, :d, 'k1')"
            ),
            {
                "ns": encrypted,
                "c": legacy_seal(encrypted, "jason", "memories.content", "An old fact."),
                "d": json.dumps(details),
            },
        )
    browse = MessageFilters(oldest_first=True)
    assert [hit.content for hit in messages([encrypted], browse, Window(limit=10))] == [
        SECRET,
        "Nothing else today.",
    ]
    tools = MemoryTools(encrypted, user_id="jason")
    assert [m["value"] for m in tools.list_memories()["memories"]] == ["An old fact."]

    rotated = runner.invoke(app, ["keys", "rotate", "--data", "-n", encrypted, "--json"])
    assert rotated.exit_code == 0, rotated.output
    assert json.loads(rotated.output)["resealed"] == {"messages": 2, "memories": 1}
    with session_scope() as s:
        raw = list(s.scalars(text("SELECT content FROM messages ORDER BY message_id")))
        (stored_details,) = s.scalars(text("SELECT details FROM memories"))
    assert all(value.startswith("enc2:") for value in raw)
    assert stored_details["sealed"].startswith("enc2:")
    assert [m["value"] for m in tools.list_memories()["memories"]] == ["An old fact."]
    with session_scope() as s:  # the memory's details open, bound to it now
        assert s.scalars(select(Memory.details)).one() == {"origin": "x"}
    _copy(
        "messages",
        "content",
        _id_of("messages", "message_id = 'm1'"),
        _id_of("messages", "message_id = 'm2'"),
    )
    assert [hit.content for hit in messages([encrypted], browse, Window(limit=10))] == [
        SECRET,
        UNREADABLE,
    ]
