"""The query-embedding thread works in a forked child too (Celery prefork, API workers)."""

from __future__ import annotations

import os
import signal

import pytest

from continuum import embedding


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
