"""The query-embedding thread: it batches the queries that wait while it encodes, gives each
caller its own vector (or the batch's failure), keeps a held query for the next encode until
it is hurried or awaited, and works in a forked child too (Celery prefork, API workers). The
embedder behind it is loaded once per process."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor

import pytest

from continuum.config import get_settings
from continuum.inference import embedding
from tests.support.wait import query_thread_settled, wait_for


class _LengthEmbedder:
    model_name = "length"
    dim = 1

    def embed(self, texts: list[str]) -> list[list[float]]:
        return [[float(len(t))] for t in texts]


class _GatedEmbedder(_LengthEmbedder):
    """Records each call's texts; the first call waits until `gate` is set."""

    def __init__(self, fail: bool = False) -> None:
        self.calls: list[list[str]] = []
        self.gate = threading.Event()
        self.fail = fail

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        if len(self.calls) == 1:
            assert self.gate.wait(timeout=5)
        if self.fail:
            raise embedding.EmbeddingError("endpoint down")
        return super().embed(texts)


def _submit_while_busy(
    monkeypatch: pytest.MonkeyPatch, embedder: _GatedEmbedder, queries: list[str]
) -> list[Future[list[float]]]:
    """Submit "first" (the thread starts encoding it and blocks), then `queries` from
    concurrent threads, then let the thread go on."""
    monkeypatch.setattr(embedding, "get_embedder", lambda: embedder)
    embedding._query_batcher.cache_clear()
    first = embedding.embed_query_soon("first")
    wait_for(lambda: embedder.calls, timeout=5)  # the thread is busy with "first"
    with ThreadPoolExecutor(len(queries)) as callers:
        futures = list(callers.map(embedding.embed_query_soon, queries))
    embedder.gate.set()
    return [f for f in [first, *futures] if f is not None]


def test_queries_waiting_on_the_thread_are_embedded_in_one_batch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    embedder = _GatedEmbedder()
    queries = ["a" * n for n in range(1, 9)]
    futures = _submit_while_busy(monkeypatch, embedder, queries)
    try:
        vectors = [future.result(timeout=5) for future in futures]
        counted = embedding.query_batching()  # what the API bench reports
    finally:
        embedding._query_batcher.cache_clear()
    assert vectors == [[5.0]] + [[float(n)] for n in range(1, 9)]  # each caller its own
    assert counted == (9, 2)
    assert embedder.calls[0] == ["first"]
    assert sorted(embedder.calls[1], key=len) == queries and len(embedder.calls) == 2


def test_a_failed_batch_fails_every_caller_in_it(monkeypatch: pytest.MonkeyPatch) -> None:
    embedder = _GatedEmbedder(fail=True)
    futures = _submit_while_busy(monkeypatch, embedder, ["x", "yy", "zzz"])
    try:
        errors = [future.exception(timeout=5) for future in futures]
    finally:
        embedding._query_batcher.cache_clear()
    assert all(isinstance(e, embedding.EmbeddingError) for e in errors) and len(errors) == 4


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> Iterator[_GatedEmbedder]:
    """An embedder recording each encode's texts, behind a fresh query thread."""
    embedder = _GatedEmbedder()
    embedder.gate.set()
    monkeypatch.setattr(embedding, "get_embedder", lambda: embedder)
    embedding._query_batcher.cache_clear()
    yield embedder
    embedding._query_batcher.cache_clear()


def test_a_held_query_starts_no_encode_and_rides_with_the_next(
    recorded: _GatedEmbedder,
) -> None:
    held = embedding.embed_query_soon("held", hold=True)
    query_thread_settled()
    assert held is not None and not held.done() and recorded.calls == []
    due = embedding.embed_query_soon("due")
    assert due is not None and due.result(timeout=5) == [3.0]
    assert held.done() and held.result() == [4.0]
    assert recorded.calls == [["due", "held"]]  # one encode: the due query first


def test_a_held_query_is_encoded_once_hurried_or_awaited(recorded: _GatedEmbedder) -> None:
    hurried = embedding.embed_query_soon("hurried", hold=True)
    awaited = embedding.embed_query_soon("awaited!", hold=True)
    assert hurried is not None and awaited is not None
    hurried.hurry()
    query_thread_settled()
    assert hurried.result(timeout=0) == [7.0] and awaited.done()  # it rode along
    assert recorded.calls == [["hurried", "awaited!"]]
    alone = embedding.embed_query_soon("alone", hold=True)
    assert alone is not None and alone.result(timeout=5) == [5.0]  # asking hurries it
    alone.hurry()  # done already: no encode
    query_thread_settled()
    assert recorded.calls == [["hurried", "awaited!"], ["alone"]]


def test_held_queries_are_encoded_together_once_enough_wait(recorded: _GatedEmbedder) -> None:
    queries = [f"held {n}" for n in range(embedding.HELD_BATCH)]
    vectors = []
    for query in queries:
        query_thread_settled()
        assert recorded.calls == []  # fewer wait: none is encoded yet
        vectors.append(embedding.embed_query_soon(query, hold=True))
    query_thread_settled()
    assert len(recorded.calls) == 1 and sorted(recorded.calls[0]) == queries  # one encode
    assert all(v is not None and v.done() for v in vectors)


def test_query_embedding_runs_in_a_forked_child(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embedding, "get_embedder", _LengthEmbedder)
    future = embedding.embed_query_soon("abc")
    assert future is not None and future.result(timeout=5) == [3.0]  # the parent's thread
    pid = os.fork()
    if pid == 0:  # an inherited pool would block here forever; the alarm ends the child
        signal.alarm(5)
        child = embedding.embed_query_soon("abcd")
        os._exit(0 if child is not None and child.result() == [4.0] else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_query_thread_runs_torch_on_its_own_thread_count(monkeypatch: pytest.MonkeyPatch) -> None:
    """One short query gains nothing from more threads, which would fight the database for
    the cores; the setting applies to the query thread alone, not to batch embedding."""
    torch = pytest.importorskip("torch")
    local = embedding.LocalEmbedder.__new__(embedding.LocalEmbedder)  # no model needed
    monkeypatch.setattr(embedding, "get_embedder", lambda: local)
    monkeypatch.setenv("CONTINUUM_QUERY_EMBED_THREADS", "3")  # not any default count
    caller = torch.get_num_threads()
    get_settings.cache_clear()
    embedding._query_batcher.cache_clear()
    try:
        query_threads = (
            embedding._query_batcher().pool.submit(torch.get_num_threads).result(timeout=5)
        )
    finally:
        embedding._query_batcher.cache_clear()
        get_settings.cache_clear()
    assert query_threads == 3
    assert torch.get_num_threads() == caller


def test_callers_that_arrive_while_the_embedder_loads_wait_for_that_one_load(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The first searches of an API worker and its settling thread call at once: one model
    loads, and all of them get it (not a model each, seconds of CPU and its memory again)."""
    loads: list[float] = []

    def load() -> _LengthEmbedder:
        loads.append(time.monotonic())
        time.sleep(0.3)  # a model takes seconds to load
        return _LengthEmbedder()

    monkeypatch.setattr(embedding, "_loaded", [])  # this process's own stays as it is
    monkeypatch.setattr(embedding, "_configured_embedder", load)
    with ThreadPoolExecutor(8) as callers:
        found = list(callers.map(lambda _: embedding.get_embedder(), range(8)))
    assert len(loads) == 1
    assert all(embedder is found[0] for embedder in found)
    embedding.forget_embedder()
    assert embedding.get_embedder() is not found[0] and len(loads) == 2
