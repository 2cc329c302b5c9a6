"""The routes behind Mission Control's console, against the real app and servers: editing a
memory makes a new version, settling a conflict keeps one value, and the status is scoped to
the token's tenants (the global figures only for an operator token)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from continuum.api import create_app
from continuum.security.tokens import create_token
from continuum.store.engine import session_scope
from continuum.store.models import Memory, MemoryLog
from tests.support.console import conflict, pipeline_rows, status_of
from tests.support.seed import seed


@pytest.fixture
def api(db: Any) -> Iterator[TestClient]:
    with TestClient(create_app()) as client:
        yield client


def bearer(*namespaces: str, ops: bool = False) -> dict[str, str]:
    token, _ = create_token(list(namespaces), ops=ops)
    return {"Authorization": f"Bearer {token}"}


def memory_id(namespace: str, key: str) -> int:
    with session_scope() as db:
        found = db.scalar(select(Memory.id).where(Memory.namespace == namespace, Memory.key == key))
    assert found is not None
    return found


def test_editing_a_memory_makes_a_new_version_in_the_tokens_tenant(api: TestClient) -> None:
    seed("pearl", sessions=1, turns=4)
    seed("entrepreneur", sessions=1, turns=4)
    pearl, old = bearer("pearl"), memory_id("pearl", "decision-0")
    edit = f"/v1/memories/{old}?provenance=user_explicit"
    answer = api.patch(edit, headers=pearl, json={"content": "  Garden goes to Green & Co.  "})
    assert answer.status_code == 200, answer.text
    new = answer.json()["memoryId"]
    assert answer.json() == {"success": True, "memoryId": new, "previousMemoryId": old,
                             "version": 2}  # fmt: skip
    assert status_of(old) == ("superseded", new)
    with session_scope() as db:
        memory = db.get(Memory, (new, "pearl"))
        assert memory is not None
        assert (memory.content, memory.kind, memory.key, memory.user_id, memory.session_id) == (
            "Garden goes to Green & Co.",
            "decision",
            "decision-0",
            "jason",
            "pearl-voice-0",
        )
        assert memory.provenance == "user_explicit" and memory.source_message_ids == ["m1"]
        [logged] = db.scalars(select(MemoryLog).where(MemoryLog.memory_id == old))
        assert (logged.action, logged.trigger) == ("update", "review")
    assert api.patch(edit, headers=pearl, json={"content": "again"}).status_code == 404  # gone
    other = memory_id("entrepreneur", "decision-0")
    assert (
        api.patch(f"/v1/memories/{other}", headers=pearl, json={"content": "x"}).status_code == 404
    )
    assert status_of(other) == ("active", None)  # another tenant's memory is out of reach
    empty = api.patch(f"/v1/memories/{new}", headers=pearl, json={"content": " "})
    too_long = api.patch(f"/v1/memories/{new}", headers=pearl, json={"content": "x" * 400})
    assert [r.json()["detail"][0]["loc"] for r in (empty, too_long)] == [
        ["body", "content"], ["body", "content"]]  # fmt: skip
    assert status_of(new) == ("active", None)


def test_a_conflict_is_settled_either_way_once(api: TestClient) -> None:
    held, in_force = conflict("pearl", "favorite_drink", "tea", "coffee")
    held_2, in_force_2 = conflict("pearl", "favorite_city", "Lisbon", "Paris")
    conflict("entrepreneur", "favorite_drink", "water", "soda")
    pearl = bearer("pearl")
    listed = api.get("/v1/conflicts", headers=pearl).json()["items"]
    assert [(c["quarantined_id"], c["active_id"]) for c in listed] == [
        (held, in_force), (held_2, in_force_2)]  # fmt: skip
    assert (
        listed[0]["quarantined"] == "Favorite drink: coffee" and listed[0]["namespace"] == "pearl"
    )

    kept = api.post(f"/v1/conflicts/{held}/settle", headers=pearl, json={"keep": "quarantined"})
    assert kept.json() == {"namespace": "pearl", "kept": held, "superseded": [in_force]}
    assert status_of(held) == ("active", None) and status_of(in_force) == ("superseded", held)
    current = api.post(f"/v1/conflicts/{held_2}/settle", headers=pearl, json={"keep": "active"})
    assert current.json() == {"namespace": "pearl", "kept": in_force_2, "superseded": [held_2]}
    assert status_of(held_2) == ("superseded", in_force_2)
    assert status_of(in_force_2) == ("active", None)
    again = api.post(f"/v1/conflicts/{held}/settle", headers=pearl, json={"keep": "active"})
    assert again.status_code == 404 and status_of(held) == ("active", None)
    assert api.get("/v1/conflicts", headers=pearl).json()["items"] == []
    [theirs] = api.get("/v1/conflicts", headers=bearer("entrepreneur")).json()["items"]
    out_of_reach = api.post(
        f"/v1/conflicts/{theirs['quarantined_id']}/settle", headers=pearl, json={"keep": "active"}
    )
    assert out_of_reach.status_code == 404


def test_keeping_a_held_claim_supersedes_only_what_it_competes_with(api: TestClient) -> None:
    """Settling follows the rules a claim is written under: a global claim kept does not
    override a claim scoped to another session."""
    held, in_force = conflict("pearl", "favorite_drink", "tea", "coffee")
    with session_scope() as db:  # the claim in force now holds for one other session only
        memory = db.get(Memory, (in_force, "pearl"))
        assert memory is not None
        memory.claim_scope, memory.session_id = "session", "another-session"
    kept = api.post(
        f"/v1/conflicts/{held}/settle", headers=bearer("pearl"), json={"keep": "quarantined"}
    )
    assert kept.json() == {"namespace": "pearl", "kept": held, "superseded": []}
    assert status_of(held) == ("active", None) and status_of(in_force) == ("active", None)


def test_status_shows_the_tokens_tenants_and_global_figures_to_an_operator(
    api: TestClient,
) -> None:
    seed("pearl", sessions=1, turns=4)  # 4 messages and 2 memories waiting for vectors
    seed("entrepreneur", sessions=2, turns=4)
    pipeline_rows("pearl", "entrepreneur")
    tenant = api.get("/v1/status", headers=bearer("pearl")).json()
    assert tenant["pipeline"] is None
    mine = tenant["tenant"]
    assert mine["namespaces"] == ["pearl"] and mine["dead_letters"] == 1
    assert mine["embeddings_pending"] == {"memories": 2, "messages": 4}
    assert [(u["namespace"], u["calls"], u["prompt_tokens"]) for u in mine["llm"]] == [
        ("pearl", 1, 100)]  # fmt: skip
    assert [(b["namespace"], b["used_today"]) for b in mine["llm_budgets"]] == [("pearl", 100)]

    both = api.get("/v1/status", headers=bearer("pearl", "entrepreneur", ops=True)).json()
    assert both["tenant"]["dead_letters"] == 3
    one = api.get("/v1/status?instance=entrepreneur", headers=bearer("pearl", "entrepreneur"))
    assert one.json()["tenant"]["embeddings_pending"] == {"memories": 4, "messages": 8}
    pipeline = both["pipeline"]
    assert pipeline["dead_letters"] == 3 and "events" in pipeline["queues"]
    assert pipeline["embeddings_pending"] == {"memories": 6, "messages": 12}
