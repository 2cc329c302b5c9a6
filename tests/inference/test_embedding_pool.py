"""The query-embedding thread works in a forked child too (Celery prefork, API workers)."""

from __future__ import annotations

import os
import signal

import pytest

from continuum.config import get_settings
from continuum.inference import embedding


class _LengthEmbedder:
    model_name = "length"
    dim = 1

    def embed(self, texts: list[str]) -> list[list[float]]:
        return [[float(len(t))] for t in texts]


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
    embedding._query_pool.cache_clear()
    try:
        query_threads = embedding._query_pool().submit(torch.get_num_threads).result(timeout=5)
    finally:
        embedding._query_pool.cache_clear()
        get_settings.cache_clear()
    assert query_threads == 3
    assert torch.get_num_threads() == caller
