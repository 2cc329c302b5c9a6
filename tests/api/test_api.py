"""The HTTP API against the real app and real servers: auth and namespace scoping,
validation errors that name fields, pagination, the body limit, events through a worker."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from continuum.api import create_app
from continuum.domain.kinds import KINDS
from continuum.security.tokens import create_token, revoke_token
from continuum.sync import sync
from tests.support.events import turn
from tests.support.memories import remember
from tests.support.seed import seed
from tests.support.transcripts import ADVERSARIAL, GZIP
from tests.support.wait import wait_for

BODY_LIMIT = 64 * 1024


@pytest.fixture
def api(db: Any) -> Iterator[TestClient]:
    with TestClient(create_app(max_body_bytes=BODY_LIMIT)) as client:
        yield client


def bearer(*namespaces: str) -> dict[str, str]:
    token, _ = create_token(list(namespaces))
    return {"Authorization": f"Bearer {token}"}


def locs(response: Any) -> list[list[Any]]:
    return [error["loc"] for error in response.json()["detail"]]


def test_requests_without_a_valid_token_are_refused(api: TestClient) -> None:
    token, info = create_token(["pearl"], "ops")
    assert api.get("/v1/me", headers={"Authorization": f"Bearer {token}"}).json() == {
        "token_id": info.id,
        "name": "ops",
        "namespaces": ["pearl"],
    }
    for headers in ({}, {"Authorization": "Bearer ctm_wrong"}, {"Authorization": "Basic x"}):
        response = api.get("/v1/messages", headers=headers)
        assert response.status_code == 401
        assert response.headers["www-authenticate"] == "Bearer"
    revoke_token(info.id)
    assert api.get("/v1/me", headers={"Authorization": f"Bearer {token}"}).status_code == 401


def test_memory_kinds_come_from_the_registry_behind_the_token(api: TestClient) -> None:
    assert api.get("/v1/memories/kinds").status_code == 401
    kinds = api.get("/v1/memories/kinds", headers=bearer("pearl")).json()
    assert kinds == [
        {"kind": spec.name, "description": spec.description, "storable": spec.tool_storable}
        for spec in KINDS
    ]
    store = api.get("/openapi.json").json()["components"]["schemas"]["StoreMemoryArgs"]
    assert [k["kind"] for k in kinds if k["storable"]] == store["properties"]["memory_type"]["enum"]


def test_every_request_is_scoped_to_the_token_namespaces(api: TestClient) -> None:
    seed("pearl", sessions=1, turns=4)
    seed("entrepreneur", sessions=1, turns=4)
    pearl = bearer("pearl")
    listed = api.get("/v1/messages", headers=pearl).json()["items"]
    assert {m["namespace"] for m in listed} == {"pearl"} and len(listed) == 4
    for path in (
        "/v1/me?instance=entrepreneur",
        "/v1/memories/kinds?instance=entrepreneur",
        "/v1/messages?instance=entrepreneur",
        "/v1/memories?instance=entrepreneur",
        "/v1/sessions/entrepreneur-voice-0",
        "/v1/tasks/abcd1234/status",
    ):
        method = api.post if path.endswith("/status") else api.get
        kwargs = {"json": {"status": "done"}} if path.endswith("/status") else {}
        assert method(path, headers=pearl, **kwargs).status_code == 404, path
    assert api.get("/v1/sessions/pearl-voice-0", headers=pearl).json()["message_count"] == 4
    for path in ("/v1/me?instance=pearl", "/v1/memories/kinds?instance=pearl"):
        assert api.get(path, headers=pearl).status_code == 200, path

    both = bearer("pearl", "entrepreneur")
    across = api.get("/v1/messages?q=Hoffmann", headers=both).json()["items"]
    assert {m["namespace"] for m in across} == {"pearl", "entrepreneur"}
    one = api.get("/v1/search?q=Hoffmann", headers=both)
    assert one.status_code == 422 and locs(one) == [["query", "instance"]]
    assert api.get("/v1/search?q=Hoffmann&instance=pearl", headers=both).status_code == 200


def test_events_are_validated_with_errors_naming_fields(api: TestClient) -> None:
    headers = bearer("pearl")
    bad_role = api.post("/v1/events", headers=headers, json={**turn("hi"), "role": "robot"})
    assert bad_role.status_code == 422 and locs(bad_role) == [["body", "role"]]
    batch = [turn("fine"), {**turn("x"), "content": "   ", "channel": ""}]
    second = api.post("/v1/events", headers=headers, json=batch)
    assert second.status_code == 422
    assert sorted(locs(second)) == [["body", 1, "channel"], ["body", 1, "content"]]
    assert api.post("/v1/events", headers=headers, json={"kind": "nap"}).json()["detail"][0][
        "loc"
    ] == ["body", "kind"]
    not_json = api.post("/v1/events", headers=headers, content=b"{oops")
    assert not_json.status_code == 400 and locs(not_json) == [["body"]]
    foreign = api.post("/v1/events", headers=headers, json=[turn("a", namespace="entrepreneur")])
    assert foreign.status_code == 403 and locs(foreign) == [["body", 0, "namespace"]]
    too_big_page = api.get("/v1/messages?limit=1000", headers=headers)
    assert too_big_page.status_code == 422 and locs(too_big_page) == [["query", "limit"]]


def test_events_are_enqueued_and_processed_by_a_worker(api: TestClient, worker: Any) -> None:
    headers = bearer("pearl")
    first = turn("We'll use Postgres for the event store.", message_id="m1")
    del first["namespace"]  # a token of one namespace fills it in
    response = api.post(
        "/v1/events", headers=headers, json=[first, turn("Sounds good.", role="assistant", at=2)]
    )
    assert response.status_code == 202
    assert response.json()["enqueued"] == 2
    found = wait_for(lambda: api.get("/v1/messages?q=event store", headers=headers).json()["items"])
    assert [(m["message_id"], m["role"]) for m in found] == [("m1", "user")]
    single = api.post("/v1/events", headers=headers, json=turn("One more thing.", at=3))
    assert single.status_code == 202 and len(single.json()["event_ids"]) == 1
    wait_for(lambda: api.get("/v1/messages?q=one more thing", headers=headers).json()["items"])


def test_lists_page_with_next_links_until_exhausted(api: TestClient) -> None:
    seed("pearl", sessions=3, turns=20)
    headers = bearer("pearl")
    url: str | None = "/v1/messages?limit=25&role=user"
    seen: list[tuple[str, str]] = []
    while url:
        page = api.get(url, headers=headers).json()
        seen += [(m["session_id"], m["message_id"]) for m in page["items"]]
        url = page["next"]
    assert len(seen) == len(set(seen)) == 30
    first = api.get("/v1/messages?limit=2&order=oldest", headers=headers).json()
    assert [m["message_id"] for m in first["items"]] == ["m0", "m1"]
    assert first["next"] == "/v1/messages?limit=2&order=oldest&offset=2"


def test_filters_by_day_session_role_cron_name_and_memory_fields(api: TestClient) -> None:
    seed("pearl", sessions=3, turns=8)
    headers = bearer("pearl")

    def items(path: str) -> list[dict[str, Any]]:
        response = api.get(path, headers=headers)
        assert response.status_code == 200, response.text
        return list(response.json()["items"])

    day = items("/v1/messages?day=2026-11-21&order=oldest&limit=200")
    assert {m["session_id"] for m in day} == {"pearl-voice-1"} and len(day) == 8
    ranged = items("/v1/messages?since=2026-11-21T08:00:00Z&until=2026-11-21T08:03:00Z")
    assert [m["message_id"] for m in ranged] == ["m2", "m1", "m0"]
    session = items("/v1/messages?session_id=pearl-voice-2&role=assistant")
    assert len(session) == 4 and {m["role"] for m in session} == {"assistant"}
    assert len(items("/v1/cron-reports?cron_name=morning-brief")) == 2
    assert [r["summary"][:14] for r in items("/v1/cron-reports?day=2026-11-21")] == [
        "Daily report 1"
    ]
    names = api.get("/v1/cron-reports/names", headers=headers).json()
    assert names == ["inbox-sweep", "morning-brief"]
    decisions = items("/v1/memories?kind=decision&min_importance=8")
    assert len(decisions) == 3 and {m["provenance"] for m in decisions} == {"user_explicit"}
    assert decisions[0]["source_message_ids"] == ["m1"]
    assert len(items("/v1/memories?session_id=pearl-voice-0")) == 2
    assert len(items("/v1/memories?tag=topic:garden&q=morning")) == 3
    bad = api.get("/v1/messages?day=2026-11-21&since=2026-11-20", headers=headers)
    assert bad.status_code == 422 and locs(bad) == [["query", "day"]]


def test_memories_are_listed_by_channel(api: TestClient) -> None:
    remember("Voice call: picked Hoffmann.", "conversation_summary", days_ago=2)
    remember("Discord chat: the fence.", "conversation_summary", channel="discord")
    url = "/v1/memories?kind=conversation_summary&channel="
    voice = api.get(url + "voice", headers=bearer("pearl")).json()["items"]
    assert [(m["channel"], m["content"]) for m in voice] == [
        ("voice", "Voice call: picked Hoffmann.")
    ]
    assert api.get(url + "telegram", headers=bearer("pearl")).json()["items"] == []


def test_private_memories_only_for_their_owner(api: TestClient) -> None:
    from sqlalchemy import update

    from continuum.store.engine import session_scope
    from continuum.store.models import Memory

    seed("pearl", sessions=1, turns=2)
    with session_scope() as db:
        db.execute(update(Memory).where(Memory.kind == "preference").values(private=True))
    headers = bearer("pearl")
    assert len(api.get("/v1/memories", headers=headers).json()["items"]) == 1
    assert len(api.get("/v1/memories?include_private=true", headers=headers).json()["items"]) == 1
    owner = api.get("/v1/memories?include_private=true&user_id=jason", headers=headers).json()
    assert len(owner["items"]) == 2


def test_request_bodies_over_the_limit_are_refused(api: TestClient) -> None:
    headers = bearer("pearl")
    big = json.dumps([turn("x" * 1000, at=i) for i in range(80)]).encode()
    announced = api.post("/v1/events", headers=headers, content=big)
    assert announced.status_code == 413 and locs(announced) == [["body"]]
    streamed = api.post(
        "/v1/events",
        headers={**headers, "content-type": "application/json"},
        content=(big[i : i + 8192] for i in range(0, len(big), 8192)),
    )
    assert streamed.status_code == 413


def test_hybrid_search_context_and_tasks(api: TestClient) -> None:
    seed("pearl", sessions=2, turns=4)
    headers = bearer("pearl")
    hits = api.get("/v1/search?q=garden renovation Hoffmann&limit=3", headers=headers).json()
    assert len(hits["items"]) == 3 and hits["next"]
    assert {"memory", "message"} >= {hit["source"] for hit in hits["items"]}
    memories_only = api.get("/v1/search?q=Hoffmann&source=memory", headers=headers).json()
    assert {hit["source"] for hit in memories_only["items"]} == {"memory"}

    block = api.get(
        "/v1/context?seed_text=garden renovation&max_tokens=300&user_id=jason", headers=headers
    ).json()
    assert "Hoffmann" in block["block"] and block["memory_ids"]

    created = api.post("/v1/tasks", headers=headers, json={"title": "Call Hoffmann"})
    assert created.status_code == 201
    task_id = created.json()["task_id"]
    assert [t["title"] for t in api.get("/v1/tasks", headers=headers).json()["items"]] == [
        "Call Hoffmann"
    ]
    done = api.post(f"/v1/tasks/{task_id[:8]}/status", headers=headers, json={"status": "done"})
    assert done.json()["status"] == "done"
    assert api.get("/v1/tasks", headers=headers).json()["items"] == []
    blank = api.post("/v1/tasks", headers=headers, json={"title": "   "})
    assert blank.status_code == 422 and locs(blank) == [["body", "title"]]


def test_handoff_is_read_once_and_active_sessions_listed(api: TestClient) -> None:
    headers = bearer("pearl")
    sent = api.post(
        "/v1/handoff",
        headers=headers,
        json={
            "user_id": "jason",
            "from_channel": "voice",
            "to_channel": "discord",
            "context_summary": "Talking about the garden renovation.",
        },
    )
    assert sent.status_code == 201
    peek = api.get("/v1/handoff?user_id=jason&consume=false", headers=headers).json()
    assert peek["to_channel"] == "discord"
    assert api.get("/v1/handoff?user_id=jason", headers=headers).json()["from_channel"] == "voice"
    assert api.get("/v1/handoff?user_id=jason", headers=headers).json() is None
    assert api.get("/v1/sessions/active", headers=headers).json() == []


def test_a_handoff_is_taken_only_by_its_channel(api: TestClient) -> None:
    headers = bearer("pearl")
    body = {"user_id": "jason", "from_channel": "voice", "context_summary": "Garden tiles."}
    sent = api.post("/v1/handoff", headers=headers, json=body)  # no target: any other channel
    assert sent.status_code == 201 and sent.json()["to_channel"] == ""
    check = "/v1/handoff?user_id=jason&channel="
    assert api.get(check + "voice", headers=headers).json() is None
    assert (
        api.get(check + "discord&consume=false", headers=headers).json()["from_channel"] == "voice"
    )
    assert api.get(check + "discord", headers=headers).json()["context_summary"] == "Garden tiles."
    assert api.get(check + "telegram", headers=headers).json() is None


def test_openapi_spec_and_docs_are_served(api: TestClient) -> None:
    spec = api.get("/openapi.json").json()
    body = spec["paths"]["/v1/events"]["post"]["requestBody"]["content"]["application/json"]
    refs = json.dumps(body["schema"])
    assert "#/components/schemas/TurnEvent" in refs
    assert "TurnEvent" in spec["components"]["schemas"]
    assert "/v1/messages" in spec["paths"] and "/metrics" in spec["paths"]
    assert api.get("/docs").status_code == 200
    page = api.get("/")
    assert page.status_code == 200 and "Mission Control" in page.text
    assert api.get("/static/app.js").status_code == 200


def test_memory_tools_and_preferences(api: TestClient) -> None:
    headers = bearer("pearl")
    as_jason = "?user_id=jason&provenance=user_explicit"
    missing = api.post(f"/v1/memories/store{as_jason}", headers=headers, json={"key": "x"})
    assert missing.status_code == 422
    assert sorted(locs(missing)) == [["body", "memory_type"], ["body", "value"]]
    stored = api.post(
        f"/v1/memories/store{as_jason}",
        headers=headers,
        json={"memory_type": "fact", "key": "grandchildren", "value": "Has four grandchildren"},
    ).json()
    assert stored["success"] and stored["memoryId"]
    updated = api.post(
        f"/v1/memories/update{as_jason}",
        headers=headers,
        json={"existing_key": "GRANDCHILDREN", "new_value": "Has five grandchildren"},
    ).json()
    assert updated["action"] == "updated"
    repeat = {"memory_type": "fact", "key": "grandchildren", "value": "Has five grandchildren"}
    api.post(f"/v1/memories/store{as_jason}", headers=headers, json=repeat)
    merged = api.get("/v1/memories?status=merged", headers=headers).json()["items"]
    assert [m["superseded_by"] for m in merged] == [updated["memoryId"]]
    listed = api.get("/v1/memories?kind=fact", headers=headers).json()["items"]
    assert [m["content"] for m in listed] == ["Grandchildren: Has five grandchildren"]
    private = api.post(
        "/v1/memories/mark-private", headers=headers, json={"key": "grandchildren"}
    ).json()
    assert private["success"]
    assert api.get("/v1/memories?kind=fact", headers=headers).json()["items"] == []
    gone = api.post("/v1/memories/forget", headers=headers, json={"key": "no_such_key"})
    assert gone.status_code == 404

    put = api.put(
        "/v1/preferences/coffee", headers=headers, json={"value": "black", "user_id": "jason"}
    )
    assert put.status_code == 200 and put.json()["value"] == "black"
    prefs = api.get("/v1/preferences?user_id=jason", headers=headers).json()["items"]
    assert [(p["key"], p["value"]) for p in prefs] == [("coffee", "black")]
    assert api.get("/v1/preferences/Coffee?user_id=jason", headers=headers).status_code == 200
    assert api.get("/v1/preferences/tea", headers=headers).status_code == 404


def test_a_users_memories_include_the_shared_ones_as_search_does(api: TestClient) -> None:
    from sqlalchemy import select, update

    from continuum.store.engine import session_scope
    from continuum.store.models import Memory

    seed("pearl", sessions=1, turns=2)  # two memories of jason's
    with session_scope() as db:
        first = db.scalars(select(Memory.id).order_by(Memory.id)).first()
        db.execute(update(Memory).where(Memory.id == first).values(user_id=None))
    headers = bearer("pearl")
    jason = api.get("/v1/memories?user_id=jason", headers=headers).json()["items"]
    assert len(jason) == 2 and first in {item["id"] for item in jason}
    maria = api.get("/v1/memories?user_id=maria", headers=headers).json()["items"]
    assert [item["id"] for item in maria] == [first]  # the shared one, not jason's


def test_sync_problems_are_listed_for_the_token_s_instances(api: TestClient, tmp_path: Any) -> None:
    home = tmp_path / "home"
    shutil.copytree(ADVERSARIAL, home)
    sync(home, feed_capture=False)
    assert api.get("/v1/sync/problems").status_code == 401
    found = api.get("/v1/sync/problems", headers=bearer("default")).json()
    assert {p["kind"] for p in found["items"]} == {"binary_file", "malformed_json", "not_an_object"}
    [gzip] = [p for p in found["items"] if p["kind"] == "binary_file"]
    assert gzip["source_path"].endswith(f"{GZIP}.jsonl") and gzip["location"] == "file"
    assert api.get("/v1/sync/problems", headers=bearer("codex")).json()["items"] == []
    later = api.get("/v1/sync/problems?since=2999-01-01", headers=bearer("default")).json()
    assert later["items"] == []


def test_a_database_that_does_not_answer_is_a_503_not_a_500(
    api: TestClient, settings_env: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Postgres stopped or failing over: a read is answered 503 with Retry-After, as when
    Redis is down (it was a 500), and neither the answer nor the log holds the statement."""
    from tests.support.net import free_port

    headers = bearer("pearl")
    assert api.get("/v1/me", headers=headers).status_code == 200
    settings_env(database_url=f"postgresql+psycopg://postgres@127.0.0.1:{free_port()}/continuum")
    answer = api.get("/v1/memories", headers=headers, params={"q": "private words"})
    assert answer.status_code == 503 and answer.headers["Retry-After"] == "5"
    assert answer.json()["detail"][0]["type"] == "service_unavailable"
    assert "database does not answer" in answer.text
    for text in (answer.text, caplog.text):
        assert "SELECT" not in text and "private words" not in text
