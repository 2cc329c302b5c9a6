"""R47 done-when: turns carrying a unique marker (in their text and in the metadata their
producer attaches) go to an encrypted tenant; neither a `pg_dump` of the whole database,
Redis's dump nor the tenant's workspace files hold the marker anywhere, yet the same turns
are found by `continuum search` and the context block, their metadata is read back by the
API and the narrative by `continuum workspace show`."""

from __future__ import annotations

import json
import uuid
from typing import Any

from sqlalchemy import func, select
from typer.testing import CliRunner

from continuum.cli.main import app
from continuum.pipeline.deadletters import payload_of
from continuum.pipeline.ingest import ingest_batch
from continuum.store.engine import session_scope
from continuum.store.models import DeadLetter, Memory, Message, ProcessedEvent, UserTask
from tests.support.events import session_end, turn
from tests.support.wait import wait_for

runner = CliRunner()


def _processed(ids: list[str]) -> bool:
    with session_scope() as db:
        wanted = [uuid.UUID(i) for i in ids]
        query = select(func.count()).select_from(ProcessedEvent)
        return db.scalar(query.where(ProcessedEvent.event_id.in_(wanted))) == len(ids)


def _summaries(namespace: str) -> int:
    with session_scope() as db:
        query = select(func.count()).select_from(Memory).where(Memory.namespace == namespace)
        return int(db.scalar(query.where(Memory.kind == "conversation_summary")) or 0)


def _cli(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def test_marker_is_nowhere_at_rest_and_still_found(
    db: Any, worker: Any, client: Any, encrypted: str, dumps: Any, settings_env: Any, tmp_path: Any
) -> None:
    settings_env(workspace_dir=tmp_path)
    marker = f"zorblax{uuid.uuid4().hex[:10]}"
    plain = f"plainmark{uuid.uuid4().hex[:10]}"
    events = [
        turn(
            f"The shed key is under the {marker} stone.",
            namespace=encrypted,
            message_id="m1",
            metadata={"place": f"the {marker} garden"},
        ),
        turn(f"Remind me to move the {marker} stone on Friday.", namespace=encrypted, at=5),
        turn(f"Noted, the {marker} stone it is.", namespace=encrypted, role="assistant", at=9),
        turn(f"The {plain} tenant is not encrypted.", namespace="open", at=12),
        session_end(namespace=encrypted, at=40),
    ]
    ids = [client.emit(event) for event in events]
    wait_for(lambda: _processed(ids))
    wait_for(lambda: _summaries(encrypted))  # session end's work is done too
    wait_for(lambda: list(tmp_path.glob(f"{encrypted}/memory/*.md")))  # and its narrative
    bad = {**turn(f"A {marker} line from nowhere.", namespace=encrypted), "role": "narrator"}
    ingest_batch([bad])  # dead-lettered whole, as the worker would
    with session_scope() as s:  # the encrypted tenant's rows exist, sealed
        assert s.scalar(select(func.count()).select_from(Message)) == 4
        assert s.scalar(select(func.count()).select_from(UserTask)) == 1
        assert s.scalar(select(func.count()).select_from(Memory)) >= 1
        letter = s.scalars(select(DeadLetter)).one()
        assert payload_of(letter)[0]["content"] == bad["content"]  # sealed, and opens

    database, rdb = dumps()
    assert marker.encode() not in database
    assert marker.encode() not in rdb
    assert plain.encode() in database  # the check can see plaintext where it is stored
    files = [path for path in tmp_path.rglob("*") if path.is_file()]
    assert files and not any(marker.encode() in path.read_bytes() for path in files)
    shown = _cli("workspace", "show", "activity-log.md", "-n", encrypted)
    assert marker in shown and "enc2:" not in shown  # the session's line, opened

    hits = json.loads(_cli("search", marker, "-n", encrypted, "--user", "jason", "--json"))
    assert {"m1"} <= {mid for hit in hits for mid in hit["source_message_ids"]}
    assert all(marker in hit["content"] for hit in hits if hit["source"] == "message")
    messages = json.loads(_cli("messages", "search", marker, "-n", encrypted, "--json"))
    assert {"m1"} <= {m["message_id"] for m in messages}
    assert [m["details"] for m in messages if m["message_id"] == "m1"] == [
        {"place": f"the {marker} garden"}
    ]  # sealed whole, opened on read
    block = json.loads(
        _cli(
            "context",
            "-n",
            encrypted,
            "--user",
            "jason",
            "--channel",
            "voice",
            "--seed",
            f"where is the {marker} stone",
            "--json",
        )
    )
    assert marker in block["block"]
    database, rdb = dumps()  # searching logged the question: sealed too
    assert marker.encode() not in database
    assert marker.encode() not in rdb


def test_listings_over_several_tenants_match_each_on_its_own_terms(db: Any, encrypted: str) -> None:
    from continuum.recall.listings import MemoryFilters, MessageFilters, Window, memories, messages

    ingest_batch(
        [
            turn("I prefer the copper kettle.", namespace=encrypted, message_id="v1"),
            turn("I prefer the copper kettle.", namespace="open", message_id="o1", at=1),
            turn("Nothing about it here.", namespace="open", message_id="o2", at=2),
        ]
    )
    both = [encrypted, "open"]
    found = messages(both, MessageFilters(query="copper kettles"), Window(limit=10))
    assert sorted((hit.namespace, hit.message_id) for hit in found) == [
        ("open", "o1"),
        (encrypted, "v1"),
    ]
    assert {hit.content for hit in found} == {"I prefer the copper kettle."}
    kept = memories(both, MemoryFilters(query="kettle"), Window(limit=10))
    assert sorted(m.namespace for m in kept) == ["open", encrypted]
    assert all("kettle" in m.content for m in kept)


def test_a_no_vector_tenant_is_never_embedded_and_still_found_by_words(
    db: Any, settings_env: Any
) -> None:
    from continuum.pipeline.outbox import embed_pending, pending_counts
    from continuum.recall.search import search

    settings_env(no_vector_tenants="bare")
    ingest_batch(
        [
            turn("The copper kettle whistles.", namespace="bare", message_id="b1"),
            turn("The copper kettle whistles.", namespace="open", message_id="o1"),
        ]
    )
    embed_pending(time_budget_s=60)
    assert sum(pending_counts().values()) == 0  # nothing waits for the bare tenant's vectors
    with session_scope() as s:
        embedded = s.execute(select(Message.namespace, Message.embedding.is_not(None))).all()
    assert sorted(embedded) == [("bare", False), ("open", True)]
    assert [hit.source_message_ids for hit in search("bare", "copper kettle")] == [["b1"]]


def test_synced_transcripts_are_sealed_and_still_found(
    db: Any, settings_env: Any, tmp_path: Any
) -> None:
    import shutil
    from pathlib import Path

    from sqlalchemy import text

    from continuum.api.schemas import SessionOut
    from continuum.recall import listings
    from continuum.recall.namespace_queries import search_messages
    from continuum.store.models import Session
    from continuum.sync import sync
    from tests.support.encryption import KEK

    settings_env(encryption_key=KEK)  # every tenant
    home = tmp_path / "home"
    fixtures = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts" / "home"
    shutil.copytree(fixtures, home)
    assert sync(home, feed_capture=False).messages_inserted > 0
    with session_scope() as s:
        stored = s.execute(text("SELECT content, tsv_keyed IS NOT NULL FROM messages")).all()
        first = s.scalars(select(Message).order_by(Message.id)).first()
    assert stored and all(raw.startswith("enc2:") and keyed for raw, keyed in stored)
    assert first is not None and not first.content.startswith("enc2:")  # opened on read
    word = max(first.content.split(), key=len).strip(".,!?:;\"'()")
    with session_scope() as s:  # the cron report: sealed, with keyed terms, still listed
        summary, keyed = s.execute(text("SELECT summary, tsv_keyed FROM cron_reports")).one()
    assert summary.startswith("enc2:") and "Standup" not in summary and keyed is not None
    reports = json.loads(runner.invoke(app, ["cron-reports", "-n", "default", "--json"]).output)
    assert [r["summary"][:22] for r in reports] == ["Standup digest, Feb 27"]
    found_reports = listings.cron_reports(["default"], listings.Window(10), None, "standup digest")
    assert [r.summary[:22] for r in found_reports] == ["Standup digest, Feb 27"]
    assert word.lower() not in " ".join(raw for raw, _ in stored).lower()
    found = search_messages(first.namespace, word)
    assert first.message_id in {hit.message_id for hit in found}
    with session_scope() as s:  # compaction summaries: sealed but for their id, opened by the API
        compacted = [row for row in s.scalars(select(Session)) if row.details.get("compactions")]
    assert compacted
    for row in compacted:
        assert all(set(c) == {"compaction_id", "sealed"} for c in row.details["compactions"])
        shown = SessionOut.model_validate(row).details["compactions"]
        assert all(c["summary"] and not c["summary"].startswith("enc2:") for c in shown)


def test_a_task_created_by_hand_is_sealed_and_listed_in_plaintext_and_in_the_block(
    db: Any, encrypted: str
) -> None:
    from sqlalchemy import text

    from continuum.memory.user_tasks import create_task, list_tasks
    from continuum.recall.context import context

    made = create_task(encrypted, "Water the fig tree", user_id="jason", description="weekly")
    assert (made.title, made.description) == ("Water the fig tree", "weekly")
    with session_scope() as s:
        title, description = s.execute(text("SELECT title, description FROM tasks")).one()
    assert title.startswith("enc2:") and description.startswith("enc2:")
    assert [task.title for task in list_tasks(encrypted, "jason")] == ["Water the fig tree"]
    block = context(encrypted, "", 400, user_id="jason")  # reads the listing raw
    shown = [item.text for item in block.items if item.section == "Active tasks"]
    assert shown == ["- [pending] Water the fig tree: weekly"]


def test_a_damaged_sealed_row_reads_as_unreadable_and_breaks_no_read(
    db: Any, encrypted: str, caplog: Any
) -> None:
    """A sealed value that fails authentication (here: sealed for another field, as if
    moved) neither stalls the embedding outbox nor fails the tenant's search or context."""
    from sqlalchemy import text

    from continuum.pipeline.outbox import embed_pending, pending_counts
    from continuum.recall.context import context
    from continuum.recall.scope import SearchFilters
    from continuum.recall.search import search
    from continuum.sealing.envelope import UNREADABLE, seal

    fine = "The copper kettle is in the attic."
    contents = [
        seal(encrypted, "jason", "memories.content", fine, 1),
        seal(encrypted, "jason", "messages.content", "The kettle receipt is in the drawer.", 2),
    ]
    with session_scope() as s:
        s.execute(
            text(
                "INSERT INTO memories (id, namespace, user_id, kind, content, idempotency_key) "
                "SELECT i, :ns, 'jason', 'fact', c, md5(c) "
                "FROM unnest(CAST(:c AS text[])) WITH ORDINALITY AS x(c, i)"
            ),
            {"ns": encrypted, "c": contents},
        )
    embed_pending(time_budget_s=60)
    assert pending_counts()["memories"] == 0  # both embedded: the damaged one as it reads
    hits = search(encrypted, "where is the kettle", filters=SearchFilters(user_id="jason"))
    assert sorted(hit.content for hit in hits) == sorted([fine, UNREADABLE])
    block = context(encrypted, "where is the kettle", 400, user_id="jason").block
    assert fine in block
    assert "does not authenticate" in caplog.text  # logged, not silent


def test_a_damaged_sealed_row_loaded_whole_reads_as_unreadable_and_can_be_forgotten(
    db: Any, encrypted: str, caplog: Any
) -> None:
    """Reads that load whole rows (browsing messages, listing memories) show a damaged sealed
    value as UNREADABLE instead of failing, and the damaged memory can still be forgotten."""
    from sqlalchemy import text

    from continuum.memory.tool_calls import MemoryTools
    from continuum.recall.listings import MessageFilters, Window, messages
    from continuum.sealing.envelope import UNREADABLE, open_compactions, seal

    moved = seal(encrypted, "jason", "messages.content", "The kettle is in the attic.", 1)
    with session_scope() as s:
        s.execute(
            text(
                "INSERT INTO memories (id, namespace, user_id, kind, key, content, details,"
                " idempotency_key) VALUES (1, :ns, 'jason', 'fact', 'kettle', :c, :d, 'k1')"
            ),
            {
                "ns": encrypted,
                "c": moved,
                "d": json.dumps({"channel": "telegram", "sealed": moved}),
            },
        )
        s.execute(
            text(
                "INSERT INTO messages (id, namespace, session_id, message_id, role, content,"
                " created_at) VALUES (1, :ns, 's1', 'm1', 'user', :c, now()),"
                " (2, :ns, 's1', 'm2', 'assistant', :fine, now())"
            ),
            {
                "ns": encrypted,
                "c": seal(encrypted, None, "memories.content", "moved", 1),
                "fine": seal(encrypted, None, "messages.content", "Noted.", 2),
            },
        )
    browsed = messages([encrypted], MessageFilters(oldest_first=True), Window(limit=10))
    assert [hit.content for hit in browsed] == [UNREADABLE, "Noted."]
    with session_scope() as s:  # damaged sealed details: the plain keys only
        assert s.scalars(select(Memory.details)).one() == {"channel": "telegram"}
    summaries = open_compactions({"compactions": [{"compaction_id": "c1", "sealed": moved}]}, "s1")
    assert summaries["compactions"] == [{"compaction_id": "c1", "summary": UNREADABLE}]
    tools = MemoryTools(encrypted, user_id="jason")
    assert [m["value"] for m in tools.list_memories()["memories"]] == [UNREADABLE]
    forgotten = tools.forget_memory(key="kettle")
    assert forgotten["success"] and len(forgotten["memoryIds"]) == 1
    assert tools.list_memories()["memories"] == []
    assert "does not authenticate" in caplog.text


def test_a_damaged_claim_in_force_neither_blocks_a_new_value_nor_the_conflict_list(
    db: Any, encrypted: str, caplog: Any
) -> None:
    """Claims are compared by their opened values: a damaged one reads as UNREADABLE, so a
    competing value is still settled against it, and the conflicts list still reads."""
    from sqlalchemy import text

    from continuum.memory.claims import conflicts
    from continuum.memory.tool_calls import MemoryTools
    from continuum.sealing.envelope import UNREADABLE, seal

    user = MemoryTools(encrypted, user_id="jason", provenance="user_explicit")
    first = user.store_memory(memory_type="fact", key="home_city", value="Leeds")["memoryId"]
    with session_scope() as s:  # both sealed for another field, as if moved
        s.execute(text("UPDATE memories SET claim_value = :v, content = :c WHERE id = :id"),
                  {"v": seal(encrypted, "jason", "memories.content", "Leeds", first),
                   "c": seal(encrypted, "jason", "messages.content", "Leeds", first),
                   "id": first})  # fmt: skip
    # a system write may not override what the user said: it waits in quarantine
    system = MemoryTools(encrypted, user_id="jason")
    second = system.store_memory(memory_type="fact", key="home_city", value="York")
    assert second["success"] and second["memoryId"] != first
    with session_scope() as s:
        listed = conflicts(s, encrypted, "jason")
    assert [(c.active_id, c.active, c.quarantined_id) for c in listed] == [
        (first, UNREADABLE, second["memoryId"])
    ]
    assert "does not authenticate" in caplog.text


def test_maintenance_leaves_a_damaged_memory_as_it_is_and_compresses_the_rest(
    db: Any, encrypted: str, settings_env: Any, tmp_path: Any, caplog: Any
) -> None:
    """A damaged note stays out of its cluster's summary (and stays active); the weekly run
    still finishes, and the memory file shows it as UNREADABLE."""
    from datetime import UTC, datetime, timedelta

    from sqlalchemy import text

    from continuum.maintenance.run import maintain
    from continuum.maintenance.workspace import memory_md_path
    from continuum.sealing.entries import open_file
    from continuum.sealing.envelope import UNREADABLE, seal

    settings_env(workspace_dir=tmp_path)
    now = datetime(2026, 3, 2, 12, tzinfo=UTC)
    notes = [seal(encrypted, None, "memories.content", f"Garden note {i}", i) for i in range(9)]
    notes[4] = seal(encrypted, None, "messages.content", "Garden note 4", 4)  # as if moved
    with session_scope() as s:
        for i, content in enumerate(notes):
            s.execute(
                text(
                    "INSERT INTO memories (id, namespace, kind, content, importance, tags,"
                    " idempotency_key, created_at, updated_at) VALUES (:i, :ns, 'context', :c, 4,"
                    " ARRAY['topic:garden'], :k, :at, :at)"
                ),
                {"i": i, "ns": encrypted, "c": content, "k": f"g{i}",
                 "at": now - timedelta(days=2 + i)},
            )  # fmt: skip
        s.execute(  # a damaged fact, for the memory file
            text(
                "INSERT INTO memories (id, namespace, kind, content, importance, idempotency_key,"
                " created_at, updated_at) VALUES (9, :ns, 'fact', :c, 8, 'f1', :at, :at)"
            ),
            {
                "ns": encrypted,
                "c": seal(encrypted, None, "tasks.title", "Anna is a sister", 9),
                "at": now - timedelta(days=1),
            },
        )
        s.execute(text("SELECT setval('memories_id_seq', 9)"))
    assert maintain(encrypted, now=now).status == "done"
    with session_scope() as s:
        keys = Memory.idempotency_key.in_([f"g{i}" for i in range(9)])
        statuses = dict(s.execute(select(Memory.idempotency_key, Memory.status).where(keys)).all())
        summary = s.scalars(select(Memory).where(Memory.trigger == "compress")).one()
    assert statuses.pop("g4") == "active"  # left as it is
    assert set(statuses.values()) == {"merged"}
    assert summary.content.startswith("8 context notes on garden:")
    assert "Garden note 4" not in summary.content and UNREADABLE not in summary.content
    assert UNREADABLE in open_file(memory_md_path(encrypted).read_text(), "MEMORY.md")
    assert "does not authenticate" in caplog.text
