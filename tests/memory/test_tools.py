"""Memory tools as an LLM calls them: response shapes, validation errors, versioned updates,
forget / private, reminders, and the change notification a live session subscribes to."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import select

from continuum.ephemeral.notify import memory_changed_channel
from continuum.ephemeral.turns import stored_keys
from continuum.memory.preferences import get_preference, get_preferences, set_preference
from continuum.memory.tool_calls import OPERATIONS, MemoryTools
from continuum.memory.tool_schemas import TOOLS, tool_definitions
from continuum.memory.user_tasks import complete_task, create_task, list_tasks
from continuum.redis_client import get_redis
from continuum.store.engine import session_scope
from continuum.store.models import Memory


def _tools(**kw: Any) -> MemoryTools:
    return MemoryTools("pearl", user_id="jason", **kw)


def _row(memory_id: int) -> Memory:
    with session_scope() as db:
        memory = db.get(Memory, (memory_id, "pearl"))
        assert memory is not None
        return memory


def test_store_memory_response_and_validation(db: Any) -> None:
    ok = _tools().store_memory(memory_type="preference", key="Favorite Color", value="blue")
    assert set(ok) == {"success", "memoryId"} and ok["success"] is True
    stored = _row(ok["memoryId"])
    assert (stored.kind, stored.key, stored.claim_value) == ("preference", "favorite_color", "blue")
    assert (stored.provenance, stored.trigger) == ("system", "explicit")
    missing = _tools().call("store_memory", {"memory_type": "fact"})
    assert missing == {
        "success": False,
        "message": "store_memory: missing required field 'key'; missing required field 'value'",
    }
    wrong = _tools().call("store_memory", '{"memory_type": "gossip", "key": "k", "value": "v"}')
    assert not wrong["success"] and "'memory_type'" in wrong["message"]
    assert "follow_up" in wrong["message"]
    assert not _tools().call("store_memory", "{not json")["success"]
    assert _tools().call("nope", {})["message"].startswith("unknown tool 'nope'")


def test_follow_up_with_a_time_suggests_a_reminder(db: Any) -> None:
    timed = _tools().store_memory(memory_type="follow_up", key="doctor",
                                  value="Doctor appointment on Tuesday at 10am", suggest_reminder=True)  # fmt: skip
    assert timed["suggestReminder"] is True
    assert timed["reminder"]["when"].lower().startswith("on tuesday")
    untimed = _tools().store_memory(memory_type="fact", key="pet", value="a cat",
                                    suggest_reminder=True)  # fmt: skip
    assert untimed["suggestReminder"] is False and "only a follow_up" in untimed["message"]
    assert [t.title for t in list_tasks("pearl")] == [
        "Doctor: Doctor appointment on Tuesday at 10am"
    ]


def test_update_memory_versions_case_insensitively(db: Any) -> None:
    created = _tools().update_memory(existing_key="Home_City", new_value="Leeds")
    assert created["action"] == "created"
    updated = _tools().update_memory(existing_key="HOME_CITY", new_value="York", confidence=0.95)
    assert updated["action"] == "updated" and updated["previousMemoryId"] == created["memoryId"]
    old, new = _row(created["memoryId"]), _row(updated["memoryId"])
    assert (old.status, old.superseded_by, old.version) == ("superseded", new.id, 1)
    assert (new.status, new.version, new.claim_value, new.confidence) == ("active", 2, "York", 0.95)
    listed = _tools().list_memories()["memories"]
    assert [(m["key"], m["value"], m["version"]) for m in listed] == [("home_city", "York", 2)]


def test_same_value_reinforces_and_a_retried_call_is_a_no_op(db: Any) -> None:
    first = _tools().call(
        "store_memory", {"memory_type": "fact", "key": "pets", "value": "two cats"}
    )
    again = _tools().call(
        "store_memory", {"memory_type": "fact", "key": "pets", "value": "Two cats"}
    )
    assert again["memoryId"] == first["memoryId"] and "reinforced" in again["message"]
    assert _row(first["memoryId"]).corroboration == 2
    args = {"memory_type": "fact", "key": "car", "value": "a red Fiat"}
    one = _tools().call("store_memory", args, call_id="call_1")
    retry = _tools().call("store_memory", args, call_id="call_1")
    assert retry["memoryId"] == one["memoryId"] and "already stored" in retry["message"]


def test_forget_and_private(db: Any) -> None:
    a = _tools().store_memory(memory_type="wellbeing", key="mood", value="feeling low")["memoryId"]
    secret = _tools().store_memory(memory_type="fact", key="pin_hint", value="birthday")["memoryId"]
    assert _tools().forget_memory(key="MOOD")["memoryIds"] == [a]
    assert _row(a).status == "forgotten" and "forgotten_at" in _row(a).details
    assert _tools().mark_private(memory_id=secret) == {"success": True, "memoryIds": [secret]}
    assert _tools().list_memories()["memories"] == []  # not main context: private hidden
    main = _tools(main_context=True).list_memories()["memories"]
    assert [m["memoryId"] for m in main] == [secret]
    assert _tools().forget_memory(key="unknown") == {
        "success": False, "message": "no memory with key 'unknown'"}  # fmt: skip
    assert not _tools().forget_memory(key="x", memory_id=1)["success"]


def test_every_write_publishes_a_change(db: Any) -> None:
    """R43: live runtimes hear of writes in their session and in none (a tool called from
    another channel, `continuum memory`), with whose memories changed."""
    pubsub = get_redis().pubsub(ignore_subscribe_messages=True)
    pubsub.subscribe(memory_changed_channel("pearl"))
    pubsub.get_message(timeout=1)
    live = _tools(session_id="voice-7")
    stored = live.store_memory(memory_type="fact", key="tea", value="Earl Grey")
    updated = live.update_memory(existing_key="tea", new_value="green tea")
    other = _tools().store_memory(memory_type="fact", key="no_session", value="quiet")
    messages = []
    while (message := pubsub.get_message(timeout=1)) is not None:
        messages.append(json.loads(message["data"]))
    pubsub.close()
    user = {"user_id": "jason"}
    assert messages == [
        {"session_id": "voice-7", "memory_ids": [stored["memoryId"]], "action": "stored", **user},
        {"session_id": "voice-7", "memory_ids": [updated["memoryId"]], "action": "updated",
         **user},
        {"session_id": None, "memory_ids": [other["memoryId"]], "action": "stored", **user},
    ]  # fmt: skip


def test_writes_in_a_live_session_join_its_stored_keys(db: Any) -> None:
    """R45: what a tool stored in a session is not stored again from the session's turns."""
    live = _tools(session_id="voice-7")
    live.store_memory(memory_type="fact", key="Tea", value="Earl Grey")
    live.update_memory(existing_key="coffee_order", new_value="flat white")
    _tools().store_memory(memory_type="fact", key="no_session", value="quiet")  # not live
    assert stored_keys("pearl", "voice-7") == {"tea", "coffee_order"}


def test_list_memories_of_one_channel(db: Any) -> None:
    voice = _tools(channel="voice").store_memory(memory_type="fact", key="tea", value="Earl Grey")
    _tools(channel="discord").store_memory(memory_type="fact", key="fence", value="cedar")
    listed = _tools().list_memories(channel="voice")["memories"]
    assert [m["memoryId"] for m in listed] == [voice["memoryId"]]
    assert _tools().list_memories(channel="telegram")["memories"] == []


def test_tool_definitions_match_the_validators() -> None:
    openai = {d["function"]["name"]: d["function"] for d in tool_definitions("openai")}
    anthropic = {d["name"]: d for d in tool_definitions("anthropic")}
    assert set(openai) == set(anthropic) == {
        "store_memory", "update_memory", "forget_memory", "mark_private", "list_memories"}  # fmt: skip
    store = anthropic["store_memory"]["input_schema"]
    assert store["required"] == ["memory_type", "key", "value"]
    assert "memory_type" in store["properties"]  # its kinds: tests/capture/test_kinds.py
    update = openai["update_memory"]["parameters"]
    assert update["properties"]["memory_type"]["type"] == "string"  # no anyOf-null noise
    assert "title" not in json.dumps(openai)
    assert set(OPERATIONS) == set(TOOLS) == set(openai)  # every tool offered can run


def test_preferences_api(db: Any) -> None:
    set_preference("pearl", "volume_level", "75%", user_id="jason")
    set_preference("pearl", "Favorite_Tea", "Earl Grey", user_id="jason", category="drinks")
    set_preference("pearl", "volume_level", "60%", user_id="jason")
    volume = get_preference("pearl", "VOLUME_LEVEL", "jason")
    assert volume is not None and (volume.value, volume.category) == ("60%", "settings")
    assert volume.learned_from["provenance"] == "user_explicit"
    assert [(p.key, p.value) for p in get_preferences("pearl", "jason")] == [
        ("favorite_tea", "Earl Grey"),
        ("volume_level", "60%"),
    ]
    assert [p.key for p in get_preferences("pearl", "jason", "drinks")] == ["favorite_tea"]
    assert get_preference("pearl", "volume_level", "someone_else") is None


def test_tasks_api(db: Any) -> None:
    task = create_task("pearl", "Buy birthday card", user_id="jason", channel="discord")
    create_task("pearl", "Water plants", channel="voice")
    create_task("other", "Not ours")
    create_task("pearl", "Renew passport", due_at=datetime.now(UTC) + timedelta(days=9))
    # Most pressing first: due soonest, then the newest of those without a due date.
    assert [t.title for t in list_tasks("pearl", "jason")] == [
        "Renew passport",
        "Water plants",
        "Buy birthday card",
    ]
    done = complete_task("pearl", task.task_id[:8])
    assert done.status == "done" and done.completed_at is not None
    assert [t.title for t in list_tasks("pearl")] == ["Renew passport", "Water plants"]
    with session_scope() as dbs:
        assert dbs.scalar(select(Memory.id)) is None  # tasks are not memories
