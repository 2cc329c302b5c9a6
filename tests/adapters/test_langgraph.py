"""The LangGraph store on Continuum, against the real API (uvicorn on loopback) and servers.

langgraph and langgraph-checkpoint ship no store conformance suite, so these tests hold the
store to `BaseStore`'s documented contract, as LangGraph's own store tests phrase it: items
round-trip, puts replace and deletes remove, namespaces are validated and listed by prefix,
suffix, wildcard, depth and page, filters compare values with `$eq $ne $gt $gte $lt $lte`,
a query ranks by meaning (Continuum's hybrid search) and `index=False` items are found only
by filter; batches answer in order, async as sync. Then how items map onto Continuum: a
document memory per item, its user from `user_label`, forgotten with that user, sealed at
rest for an encrypted tenant. And the example agent runs."""

from __future__ import annotations

import asyncio
import importlib.util
import time
from typing import Any

import pytest
from langgraph.store.base import GetOp, InvalidNamespaceError, ListNamespacesOp, PutOp, SearchOp

from continuum.adapters.langgraph import ContinuumStore
from continuum.pipeline.outbox import embed_pending
from continuum.sdk import AsyncClient, Client
from continuum.security.tokens import create_token
from tests.support.paths import ROOT

DOCS = [
    ("doc1", {"text": "red apple", "color": "red", "score": 4.5}),
    ("doc2", {"text": "red car", "color": "red", "score": 3.0}),
    ("doc3", {"text": "green apple", "color": "green", "score": 4.0}),
    ("doc4", {"text": "blue car", "color": "blue", "score": 3.5}),
]


def _store(api_url: str, namespace: str = "pearl", **options: Any) -> ContinuumStore:
    token = create_token([namespace])[0]
    return ContinuumStore(Client(api_url, token), async_client=AsyncClient(api_url, token),
                          **options)  # fmt: skip


@pytest.fixture
def store(db: Any, api_url: str) -> ContinuumStore:
    return _store(api_url, index={"dims": 384, "embed": "unused", "fields": ["text"]})


def test_items_round_trip_replace_and_delete(store: ContinuumStore) -> None:
    assert store.get(("users", "jason"), "prefs") is None
    store.put(("users", "jason"), "prefs", {"theme": "dark", "nested": {"size": [1, 2]}})
    first = store.get(("users", "jason"), "prefs")
    assert first is not None and first.value == {"theme": "dark", "nested": {"size": [1, 2]}}
    assert (first.namespace, first.key) == (("users", "jason"), "prefs")
    time.sleep(0.01)
    store.put(("users", "jason"), "prefs", {"theme": "light"})
    second = store.get(("users", "jason"), "prefs")
    assert second is not None and second.value == {"theme": "light"}
    assert second.created_at == first.created_at and second.updated_at > first.updated_at
    assert store.get(("users",), "prefs") is None  # the namespace is exact
    store.delete(("users", "jason"), "prefs")
    assert store.get(("users", "jason"), "prefs") is None
    store.delete(("users", "jason"), "prefs")  # deleting nothing is no error
    odd = "key with spaces/slashes?&=#%"
    store.put(("a",), odd, {"ok": True})
    assert store.get(("a",), odd).value == {"ok": True}  # type: ignore[union-attr]


def test_namespaces_are_validated(store: ContinuumStore) -> None:
    for bad in ((), ("the", "thing.about"), ("some", "fun", ""), ("langgraph", "foo")):
        with pytest.raises(InvalidNamespaceError):
            store.put(bad, "foo", {"foo": "bar"})
    with pytest.raises(InvalidNamespaceError):  # past the public API too
        store.batch([PutOp(("a.b",), "k", {"x": 1})])
    store.put(("foo", "langgraph", "foo"), "bar", {"foo": "bar"})
    assert store.search(("foo", "langgraph", "foo"))[0].value == {"foo": "bar"}


def test_list_namespaces_by_prefix_suffix_wildcard_depth_and_page(store: ContinuumStore) -> None:
    spaces = [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f"),
              ("a", "c", "f"), ("b", "a", "f"), ("users", "123"), ("users", "456", "settings"),
              ("admin", "users", "789")]  # fmt: skip
    store.batch([PutOp(ns, f"id_{i}", {"data": f"value_{i:02d}"}) for i, ns in enumerate(spaces)])
    assert store.list_namespaces(prefix=("a", "b")) == [
        ("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f")]  # fmt: skip
    assert store.list_namespaces(suffix=("f",)) == [
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
    ]
    assert store.list_namespaces(prefix=("a",), suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(prefix=("a", "b"), max_depth=3) == [
        ("a", "b", "c"), ("a", "b", "d"), ("a", "b", "f")]  # fmt: skip
    assert store.list_namespaces(prefix=("a", "b"), limit=2) == [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
    ]
    assert store.list_namespaces(prefix=("a", "b"), offset=2) == [
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
    ]
    assert store.list_namespaces(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(suffix=("*", "f")) == [
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
    ]
    assert store.list_namespaces(prefix=("nonexistent",)) == []
    assert store.list_namespaces(prefix=("users", "123")) == [("users", "123")]
    assert store.list_namespaces(max_depth=1) == [("a",), ("admin",), ("b",), ("users",)]
    assert len(store.list_namespaces()) == len(spaces)


def test_search_filters_pages_and_ranks_by_meaning(store: ContinuumStore, worker: Any) -> None:
    for key, value in DOCS:
        store.put(("test",), key, value)
    store.put(("other",), "doc9", {"text": "red apple", "color": "red"})
    assert {i.key for i in store.search(("test",), filter={"color": "red"})} == {"doc1", "doc2"}
    assert {i.key for i in store.search(("test",), filter={"score": {"$gt": 3.2}})} == {
        "doc1", "doc3", "doc4"}  # fmt: skip
    both = store.search(("test",), filter={"score": {"$gte": 4.0}, "color": "green"})
    assert [i.key for i in both] == ["doc3"]
    assert {i.key for i in store.search(("test",), filter={"color": {"$ne": "red"}})} == {
        "doc3", "doc4"}  # fmt: skip
    newest_first = [i.key for i in store.search(("test",))]
    assert newest_first == ["doc4", "doc3", "doc2", "doc1"]
    pages = [store.search(("test",), limit=2, offset=o) for o in (0, 2)]
    assert [i.key for page in pages for i in page] == newest_first
    assert {i.key for i in store.search(())} == {"doc1", "doc2", "doc3", "doc4", "doc9"}

    embed_pending()  # what the embed worker's sweep does within a minute
    apple = store.search(("test",), query="apple", filter={"color": "red"})
    assert [i.key for i in apple][:1] == ["doc1"] and all(i.value["color"] == "red" for i in apple)
    fruit = store.search(("test",), query="a fruit that grows on trees", limit=2)
    assert {i.key for i in fruit} <= {"doc1", "doc3"} and fruit[0].score is not None
    car = [i.key for i in store.search(("test",), query="car", filter={"color": "red"})]
    assert car[0] == "doc2" and set(car) <= {"doc1", "doc2"}  # ranked, the filter still holds

    store.put(("test",), "doc5", {"text": "red apple pie"}, index=False)
    embed_pending()
    assert "doc5" not in {i.key for i in store.search(("test",), query="red apple pie")}
    assert "doc5" in {i.key for i in store.search(("test",), filter={"text": "red apple pie"})}
    store.put(("test",), "doc1", {"text": "new text about dogs", "color": "red"})
    embed_pending()
    assert store.search(("test",), query="dogs")[0].key == "doc1"  # updated text, new vector


def test_batches_answer_in_order_async_as_sync(store: ContinuumStore) -> None:
    results = store.batch(
        [
            PutOp(("test",), "a", {"n": 1}),
            GetOp(("test",), "a"),
            SearchOp(("test",), {"n": 1}),
            ListNamespacesOp(),
            PutOp(("test",), "a", None),
            GetOp(("test",), "a"),
        ]
    )
    assert results[0] is None and results[1].value == {"n": 1}  # type: ignore[union-attr]
    assert [i.key for i in results[2]] == ["a"]  # type: ignore[union-attr]
    assert results[3] == [("test",)] and results[4] is None and results[5] is None

    async def run() -> None:
        await asyncio.gather(*(store.aput(("async",), f"k{i}", {"i": i}) for i in range(5)))
        got = await asyncio.gather(*(store.aget(("async",), f"k{i}") for i in range(5)))
        assert [item.value["i"] for item in got if item] == [0, 1, 2, 3, 4]
        assert len(await store.asearch(("async",), filter={"i": {"$lt": 3}})) == 3
        assert await store.alist_namespaces(prefix=("async",)) == [("async",)]
        await store.adelete(("async",), "k0")
        assert await store.aget(("async",), "k0") is None

    asyncio.run(run())


def test_items_are_document_memories_of_their_user(db: Any, api_url: str) -> None:
    """An item is a memory of kind `document` (path tags, value in details) owned by the
    user its path names; maintenance never merges two alike; forgetting the user removes
    theirs."""
    from continuum.maintenance.run import maintain
    from continuum.security.forget import forget_user

    store = _store(api_url, user_label=1)
    sdk = store.client
    for path in (
        ("memories", "jason", "home"),
        ("memories", "jason", "work"),
        ("memories", "maria"),
    ):
        store.put(path, "color", {"text": "likes green"})
    home = next(
        iter(sdk.memories(kind="document", user_id="jason", tag=["store-path:memories.jason.home"]))
    )
    assert home.user_id == "jason" and home.key is None
    assert home.details["document"]["value"] == {"text": "likes green"}
    assert {"store-in:memories", "store-in:memories.jason"} <= set(home.tags)
    embed_pending()
    maintain("pearl", force=True)  # near-identical memories of one user: documents stay apart
    assert store.get(("memories", "jason", "home"), "color") is not None
    assert store.get(("memories", "jason", "work"), "color") is not None
    assert forget_user("pearl", "jason").complete
    assert store.list_namespaces() == [("memories", "maria")]


def test_an_encrypted_tenants_items_are_sealed_at_rest(
    db: Any, api_url: str, encrypted: str
) -> None:
    from sqlalchemy import text

    store = _store(api_url, encrypted, user_label=1)
    store.put(("memories", "jason"), "pin", {"text": "the gate code is 4411"})
    assert store.get(("memories", "jason"), "pin").value == {"text": "the gate code is 4411"}  # type: ignore[union-attr]
    assert [i.key for i in store.search(("memories",), query="gate code")] == ["pin"]
    with db.begin() as conn:
        raw = conn.execute(
            text("SELECT content, details::text FROM memories WHERE kind = 'document'")
        ).one()
    assert "4411" not in raw.content and "4411" not in raw.details


def test_the_example_agent_remembers_across_threads(db: Any, api_url: str) -> None:
    spec = importlib.util.spec_from_file_location(
        "langgraph_agent", ROOT / "examples" / "langgraph_agent.py"
    )
    assert spec and spec.loader
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    answers = example.demo(_store(api_url, user_label=1))
    assert answers == [
        "Noted: your favorite color is green.",
        "Your favorite color is green.",
    ]
