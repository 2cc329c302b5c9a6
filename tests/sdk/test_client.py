"""The Python HTTP client against the real API (uvicorn on loopback), real servers and a real
worker: every route of the OpenAPI document has a typed method and model, lists iterate
across pages, refusals raise errors naming their fields, 429/503 are retried after
`Retry-After`, and the async client serves the same surface."""

from __future__ import annotations

import asyncio
import inspect
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from continuum.api import create_app
from continuum.sdk import (
    AsyncClient,
    Client,
    Forbidden,
    InvalidRequest,
    NotFound,
    RateLimited,
    Retries,
    Unauthorized,
)
from continuum.sdk.client import _Endpoint, _Listing, _Routes
from continuum.sdk.models import SCHEMAS
from continuum.sdk.routes import ROUTES
from continuum.security.tokens import create_token
from tests.support.events import turn
from tests.support.seed import seed
from tests.support.wait import wait_for

# Parameters a method never takes: the client's instance, and the offset its pages follow.
CLIENT_PARAMS = {"instance", "offset"}
NOT_API = {"/", "/static"}


def _spec() -> dict[str, Any]:
    return create_app().openapi()


def _token(*namespaces: str) -> str:
    return create_token(list(namespaces))[0]


@pytest.fixture
def client(db: Any, api_url: str) -> Any:
    with Client(api_url, _token("pearl"), retries=Retries(attempts=0)) as sdk:
        yield sdk


def test_every_route_has_a_method_taking_its_parameters() -> None:
    spec = _spec()
    routes = {
        (method.upper(), path): operation
        for path, operations in spec["paths"].items()
        for method, operation in operations.items()
        if path not in NOT_API
    }
    assert set(ROUTES) == set(routes), "routes without a client method, or methods without a route"
    schemas = spec["components"]["schemas"]
    for key, operation in routes.items():
        taken = set(inspect.signature(ROUTES[key]).parameters)
        wanted = {p["name"] for p in operation.get("parameters", [])} - CLIENT_PARAMS
        body = operation.get("requestBody", {}).get("content", {}).get("application/json", {})
        ref = body.get("schema", {}).get("$ref", "")
        if ref:
            wanted |= set(schemas[ref.rsplit("/", 1)[1]]["properties"])
        assert wanted <= taken, f"{key}: {sorted(wanted - taken)} not taken"
    served = {
        attr.build for attr in vars(_Routes).values() if isinstance(attr, _Endpoint | _Listing)
    }
    assert served == set(ROUTES.values()), "a route function neither client serves"


def test_every_model_has_the_fields_of_its_openapi_schema() -> None:
    schemas = _spec()["components"]["schemas"]
    for model, name in SCHEMAS.items():
        assert set(model.model_fields) == set(schemas[name]["properties"]), name


def test_the_sdk_imports_no_server_code() -> None:
    """A fresh interpreter importing the SDK loads no database, broker or model code."""
    import subprocess
    import sys

    probe = (
        "import sys, continuum.sdk, continuum.sdk.routes; "
        "print(','.join(m for m in ('sqlalchemy', 'redis', 'celery', 'fastapi', 'torch', "
        "'continuum.store', 'continuum.pipeline', 'continuum.recall', 'continuum.api') "
        "if m in sys.modules))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert loaded == ""


def test_reads_and_writes_every_area(client: Client, worker: Any) -> None:
    assert client.me().namespaces == ["pearl"]
    sent = client.emit(
        [turn("We'll use Postgres for the event store.", message_id="m1", session_id="s1"),
         turn("Sounds good.", role="assistant", at=2, message_id="m2", session_id="s1")]
    )  # fmt: skip
    assert sent.enqueued == 2
    landed = wait_for(lambda: list(client.messages("event store")))
    assert [(m.message_id, m.role) for m in landed] == [("m1", "user")]
    assert [t.message_id for t in client.session_turns("s1")] == ["m1", "m2"]
    assert [t.message_id for t in client.session_turns("s1", order="newest", limit=1)][:1] == ["m2"]
    assert client.session("s1") is not None and client.session("nope") is None
    assert "s1" in {s.session_id for s in client.sessions()}
    assert client.erase_session_turns("s1", ["m2"]) == 1
    assert [t.message_id for t in client.session_turns("s1")] == ["m1"]
    hits = list(client.search("event store", limit=5))
    assert hits and hits[0].source in ("memory", "message")
    assert "Postgres" in client.context("event store", user_id="jason").block

    stored = client.store_memory("preference", "favorite_tea", "Earl Grey", user_id="jason")
    assert stored.success and stored.memoryId and stored.reminder is None
    updated = client.update_memory("favorite_tea", "Assam", user_id="jason")
    assert (updated.action, updated.previousMemoryId) == ("updated", stored.memoryId)
    assert [m.content for m in client.memories(kind="preference", user_id="jason")] == [
        "Favorite tea: Assam"
    ]
    edited = client.edit_memory(updated.memoryId, "Favorite tea: Darjeeling", user_id="jason")
    assert edited.success and edited.previousMemoryId == updated.memoryId
    assert list(client.conflicts()) == [] and "tenant" in client.status()
    versions = [stored.memoryId, updated.memoryId, edited.memoryId]  # every version of the key
    assert client.mark_private("favorite_tea", user_id="jason").memoryIds == versions
    assert client.forget_memory("favorite_tea", user_id="jason").success
    with pytest.raises(NotFound):
        client.forget_memory("favorite_tea", user_id="jason")
    assert "preference" in {k.kind for k in client.memory_kinds()}

    pref = client.set_preference("editor", "vim", user_id="jason", category="tools")
    assert client.preference("Editor", user_id="jason") == pref
    assert client.preference("shell", user_id="jason") is None
    assert [p.key for p in client.preferences("jason")] == ["editor"]

    task = client.create_task(
        "Call Hoffmann", user_id="jason", due_at=datetime.now(UTC) + timedelta(days=1)
    )
    assert client.set_task_status(task.task_id[:8], "done").status == "done"
    assert [t.title for t in client.tasks("jason", active_only=False)] == ["Call Hoffmann"]
    assert list(client.task_suggestions("jason")) == []

    client.send_handoff("jason", "voice", "Talking about the garden.", to_channel="discord")
    assert client.check_handoff("jason", channel="discord", consume=False) is not None
    assert client.check_handoff("jason", channel="discord") is not None
    assert client.check_handoff("jason", channel="discord") is None
    assert isinstance(client.active_sessions(), list)
    assert client.cron_names() == [] and list(client.cron_reports()) == []
    assert list(client.sync_problems()) == []
    assert "continuum_source_up" in client.metrics()

    doc = client.put_document(["prefs", "jason"], "theme", {"mode": "dark"}, text="dark mode")
    assert client.get_document(["prefs", "jason"], "theme") == doc
    assert client.document_namespaces(prefix=["prefs"]) == [("prefs", "jason")]
    found = client.search_documents(["prefs"], filter={"mode": "dark"})
    assert [d.key for d in found] == ["theme"]
    assert client.delete_document(["prefs", "jason"], "theme") is True
    assert client.get_document(["prefs", "jason"], "theme") is None

    report = client.forget_user("jason")
    assert report.complete and report.user_id == "jason"


def test_lists_iterate_across_pages(client: Client) -> None:
    seed("pearl", sessions=3, turns=10)
    pager = client.messages(role="user", limit=4, order="oldest")
    pages = list(pager.pages())
    assert [len(p.items) for p in pages] == [4, 4, 4, 3]
    seen = [(m.session_id, m.message_id) for m in client.messages(role="user", limit=4)]
    assert len(seen) == len(set(seen)) == 15


def test_refusals_raise_errors_naming_their_fields(db: Any, api_url: str) -> None:
    with Client(api_url, _token("pearl"), retries=Retries(attempts=0)) as sdk:
        with pytest.raises(InvalidRequest) as bad:
            sdk.emit([turn("fine"), {**turn("x"), "content": "   ", "role": "robot"}])
        assert sorted(bad.value.fields) == ["body.1.content", "body.1.role"]
        assert "body.1.role" in str(bad.value)
        with pytest.raises(InvalidRequest) as page:
            list(sdk.messages(limit=1000))
        assert page.value.fields == ["query.limit"]
        with pytest.raises(Forbidden) as foreign:
            sdk.emit(turn("a", namespace="entrepreneur"))
        assert foreign.value.fields == ["body.namespace"]
        with pytest.raises(InvalidRequest) as doc:
            sdk.put_document(["a.b"], "k", {"x": 1})
        assert doc.value.fields == ["body.namespace.0"]
        for nested in ({"x": {"$eq": 1, "$bogus": 2}}, {"a": {"b": {"$bogus": 1}}}):
            for query in (None, "anything"):  # listed or searched: refused, never a 500
                with pytest.raises(InvalidRequest) as operator:
                    sdk.search_documents(["prefs"], query=query, filter=nested)
                assert operator.value.fields == ["body.filter"]
    with Client(api_url, "ctm_wrong") as stranger, pytest.raises(Unauthorized) as who:
        stranger.me()
    assert "continuum tokens create" in str(who.value)
    with Client(api_url, _token("pearl", "entrepreneur"), instance="entrepreneur") as other:
        assert other.me().namespaces == ["pearl", "entrepreneur"]
        sent = other.emit({k: v for k, v in turn("hello").items() if k != "namespace"})
        assert sent.enqueued == 1  # the client's instance named the event's namespace
    outside = Client(api_url, _token("pearl"), instance="entrepreneur")
    with outside, pytest.raises(NotFound):
        outside.me()


def test_429_and_503_are_retried_after_retry_after(db: Any) -> None:
    """Scripted answers (httpx's own mock transport): the client waits what `Retry-After`
    says, else backs off exponentially, and gives up after its attempts."""
    answers = [
        httpx.Response(503, headers={"Retry-After": "1"}, json={"detail": "Redis down"}),
        httpx.Response(429, json={"detail": "slow down"}),
        httpx.Response(200, json={"token_id": 1, "name": "t", "namespaces": ["pearl"]}),
    ]
    sent: list[float] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(time.monotonic())
        return answers[len(sent) - 1]

    http = httpx.Client(base_url="http://api", transport=httpx.MockTransport(answer))
    client = Client(http=http, retries=Retries(attempts=2, backoff_s=0.2))
    assert client.me().namespaces == ["pearl"]
    assert sent[1] - sent[0] >= 1.0  # Retry-After: 1
    assert 0.4 <= sent[2] - sent[1] < 1.0  # no Retry-After: 0.2 * 2**1
    sent.clear()
    answers[:] = [httpx.Response(429, headers={"Retry-After": "0"}, json={"detail": "no"})] * 3
    with pytest.raises(RateLimited) as limited:
        client.me()
    assert len(sent) == 3 and limited.value.retry_after == 0


def test_the_async_client_serves_the_same_surface(db: Any, api_url: str) -> None:
    seed("pearl", sessions=2, turns=6)
    token = _token("pearl")

    async def run() -> None:
        async with AsyncClient(api_url, token) as sdk:
            assert (await sdk.me()).namespaces == ["pearl"]
            seen = [m.message_id async for m in sdk.messages(session_id="pearl-voice-0", limit=4)]
            assert len(seen) == 6
            pages = [len(page.items) async for page in sdk.messages(limit=5).pages()]
            assert pages == [5, 5, 2]
            hits = [hit async for hit in sdk.search("Hoffmann", limit=3)]
            assert hits and "Hoffmann" in hits[0].content
            with pytest.raises(InvalidRequest) as bad:
                await sdk.emit({**turn("x"), "role": "robot"})
            assert bad.value.fields == ["body.role"]
            await sdk.put_document(["notes"], "n1", {"text": "buy seeds"}, text="buy seeds")
            assert (await sdk.get_document(["notes"], "n1")) is not None

    asyncio.run(run())
